"""The robot's host in a two-host test: bringup's composition of one robot with its emulator
(legacy_robot_bringup.compose.running, as `bringup ROBOT --sim`), plus what only this host can
see: the emulator's true pose and speed, and when each cmd_vel arrived here.

    python robot_host.py p2os [--period 0.05] [--peers ADDR ...] [-- ROS arguments]

Prints one JSON line per period: {"t": monotonic s, "x": m, "y": m, "v": m/s (true speed),
"setpoint": m/s (what the robot was last told), "cmd_vel": monotonic s of the newest cmd_vel
received here, or null, "received": cmd_vels received so far}. Ends on SIGINT.
"""

import argparse
import json
import sys
import time

from geometry_msgs.msg import Twist

from legacy_robot_bringup.compose import running
from legacy_robot_bringup.registry import discover_plugins, select
from legacy_robot_common.middleware import static_peers, use_static_peers


def true_state(name, emulator):
    """(x m, y m, speed m/s, setpoint m/s) from a robot's emulator (bringup's DemoEmulator)."""
    if name == 'p2os':
        robot = emulator.emulator.robot
        with robot.lock:
            return (robot.pose[0] / 1000, robot.pose[1] / 1000, robot.v / 1000,
                    robot.vel_setpoint / 1000)  # fmt: skip
    trike = emulator.emulator.trike
    with trike.lock:
        return trike.x, trike.y, trike.v, trike.v_setpoint


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ros = argv[argv.index('--') + 1 :] if '--' in argv else []
    own = argv[: argv.index('--')] if '--' in argv else argv
    parser = argparse.ArgumentParser()
    parser.add_argument('robot', choices=('p2os', 'ipaq'))
    parser.add_argument('--period', type=float, default=0.05)
    parser.add_argument('--namespace', default='')
    parser.add_argument('--peers', nargs='*', default=[])
    args = parser.parse_args(own)
    if args.peers:
        use_static_peers(static_peers(args.peers))
    plugins = select(discover_plugins(), [args.robot])
    received = []
    with running(plugins, extra_ros_args=ros, sim=True, namespace=args.namespace) as composition:
        node = composition.nodes[args.robot]
        node.create_subscription(Twist, 'cmd_vel', lambda _: received.append(time.monotonic()), 10)
        emulator = composition.emulators[args.robot]

        def report():
            x, y, v, setpoint = true_state(args.robot, emulator)
            last = received[-1] if received else None
            line = {'t': time.monotonic(), 'x': x, 'y': y, 'v': v, 'setpoint': setpoint}
            print(json.dumps({**line, 'cmd_vel': last, 'received': len(received)}), flush=True)

        print(json.dumps({'running': args.robot}), flush=True)
        next_report = time.monotonic()

        def tick():
            nonlocal next_report
            if time.monotonic() >= next_report:
                next_report += args.period
                report()

        composition.spin(on_tick=tick, tick=args.period / 2)


if __name__ == '__main__':
    main()
