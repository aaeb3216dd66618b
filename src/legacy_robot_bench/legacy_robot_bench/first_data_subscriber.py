"""The waiting subscriber of first_data_bench: a process of its own that subscribes to one
topic and waits for its first message.

    python -m legacy_robot_bench.first_data_subscriber TOPIC [--type nav_msgs/msg/Odometry]
        [--profile ours|none] [--timeout 30] [--keep]

Prints JSON lines with CLOCK_MONOTONIC times (the same clock in every process of this host):
{"ready": t} once the subscription exists, {"matched": t} when it first matches a publisher,
{"first": t} at the first message, or {"timeout": t} when none came within --timeout s; then it
ends, or with --keep goes on receiving until SIGINT (for a CPU measurement).
--profile ours loads our Fast DDS profiles as every process of ours does (a profiles file
named in the environment still wins); none takes Fast DDS's defaults (a tool that does not
know this project).
"""

import argparse
import json
import os
import sys
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile

from legacy_robot_common.middleware import PROFILES_VARIABLES, use_our_dds_profiles
from legacy_robot_common.topics import import_type

SPIN = 0.01  # s: the executor's wait; the arrival time is taken in the callback


def say(key, value):
    print(json.dumps({key: value}), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='first_data_subscriber', description=__doc__)
    parser.add_argument('topic')
    parser.add_argument('--type', default='nav_msgs/msg/Odometry', help="the topic's type")
    parser.add_argument('--profile', choices=('ours', 'none'), default='ours')
    parser.add_argument('--timeout', type=float, default=30.0, help='s to wait for a message')
    parser.add_argument('--keep', action='store_true', help='receive on until SIGINT')
    args = parser.parse_args(argv)
    if args.profile == 'ours':
        use_our_dds_profiles()
    else:
        for name in PROFILES_VARIABLES:
            os.environ.pop(name, None)
    rclpy.init()
    node = rclpy.create_node('first_data_subscriber')
    arrivals = []
    subscription = node.create_subscription(
        import_type(args.type),
        args.topic,
        lambda _: arrivals.append(time.monotonic()),
        QoSProfile(depth=10),  # reliable, volatile: what rviz and `ros2 topic echo` take
    )
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    say('ready', time.monotonic())
    deadline = time.monotonic() + args.timeout
    matched = False
    try:
        while not arrivals and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=SPIN)
            if not matched and subscription.get_publisher_count():
                matched = True
                say('matched', time.monotonic())
        if arrivals:
            say('first', arrivals[0])
        else:
            say('timeout', time.monotonic())
        while args.keep:
            executor.spin_once(timeout_sec=1.0)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0 if arrivals else 1


if __name__ == '__main__':
    sys.exit(main())
