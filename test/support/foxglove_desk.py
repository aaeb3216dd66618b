"""A Foxglove client on the desk's host in a two-host test: it tries to drive a Pioneer.

    python foxglove_desk.py URL [--namespace p2os] [--seconds 3]

Waits for the robot's channels and services, calls enable_motors, then advertises cmd_vel
and publishes 0.3 m/s at 10 Hz for --seconds, watching odom and motor_state. Prints one JSON
line: {"call": response text or failure text, "statuses": [server status texts],
"moved": metres odom advanced, "motors": whether the motors were on at the end}.
"""

import argparse
import json

from geometry_msgs.msg import Twist, Vector3
from rclpy.serialization import serialize_message
from std_srvs.srv import Trigger

from legacy_robot_bringup.foxglove_client import FoxgloveClient

STARTUP = 30.0  # s for the robot's channels and services to appear


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('url')
    parser.add_argument('--namespace', default='p2os')
    parser.add_argument('--seconds', type=float, default=3.0)
    args = parser.parse_args()
    odom, motors = f'/{args.namespace}/odom', f'/{args.namespace}/enable_motors'
    motor_state = f'/{args.namespace}/motor_state'
    client = FoxgloveClient(args.url)
    try:
        ready = client.wait_for(
            lambda: odom in client.channels and motors in client.services, STARTUP
        )
        if not ready:
            raise SystemExit(f'no {odom} or {motors} from {args.url}')
        client.subscribe(odom)
        client.subscribe(motor_state)
        client.wait_for(
            lambda: odom in client.messages and motor_state in client.messages, STARTUP
        )
        answer = client.call(motors, serialize_message(Trigger.Request()))
        call = answer if isinstance(answer, str) else 'answered'
        start = client.messages[odom][-1].pose.pose.position.x
        channel = client.advertise(f'/{args.namespace}/cmd_vel', 'geometry_msgs/msg/Twist')
        forward = serialize_message(Twist(linear=Vector3(x=0.3)))
        for _ in range(round(args.seconds * 10)):
            client.publish(channel, forward)
            client.receive(0.1)
        moved = client.messages[odom][-1].pose.pose.position.x - start
        motors_on = client.messages[motor_state][-1].motors_enabled
        result = {'call': call, 'statuses': client.statuses, 'moved': moved, 'motors': motors_on}
        print(json.dumps(result), flush=True)
    finally:
        client.close()


if __name__ == '__main__':
    main()
