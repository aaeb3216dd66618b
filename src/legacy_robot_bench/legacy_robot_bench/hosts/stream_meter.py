"""The desk's meter in the across-hosts benchmark: subscribes to topics once they appear and
measures, per topic, when the first message came, how many came in a window and how old they
were (header stamp → arrival; both hosts share this machine's clock).

    python -m legacy_robot_bench.hosts.stream_meter --settle 10 --window 10
        [--best-effort TOPIC ...] [--profile lossy] TOPIC ...

With --command TOPIC it also publishes zero-velocity Twists there at 10 Hz, each with its send
time (wall clock) in linear.z, which planar robots ignore (the drivers' cmd_vel type, so they
keep their subscription): a meter on the robot's host (--commands-in) measures their age.
Prints one JSON line at the end: {topic: {"first": s after start or null, "rate": /s,
"age_p50": ms, "age_p99": ms}}.
"""

import argparse
import json
import sys
import time

import rclpy
from geometry_msgs.msg import Twist
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy

from legacy_robot_common.middleware import use_our_dds_profiles
from legacy_robot_common.topics import import_type

COMMAND_PERIOD = 0.1  # s


def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('topics', nargs='*')
    parser.add_argument('--settle', type=float, default=10.0)
    parser.add_argument('--window', type=float, default=10.0)
    parser.add_argument('--best-effort', nargs='*', default=[], help='topics to take best-effort')
    parser.add_argument('--profile', help='our DDS profile for this process')
    parser.add_argument(
        '--command',
        metavar='TOPIC',
        help='publish zero cmd_vels (send time in linear.z) there at 10 Hz',
    )
    parser.add_argument(
        '--commands-in', metavar='TOPIC', help="measure --command's cmd_vels arriving there"
    )
    args = parser.parse_args(argv)
    if args.profile:
        use_our_dds_profiles(args.profile)
    rclpy.init()
    node = rclpy.create_node('stream_meter')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    command = node.create_publisher(Twist, args.command, 10) if args.command else None
    next_command = start = time.monotonic()
    window = (start + args.settle, start + args.settle + args.window)
    topics = args.topics + ([args.commands_in] if args.commands_in else [])
    arrivals = {topic: [] for topic in topics}  # (monotonic, age s)
    pending = list(args.topics)

    def record(topic):
        def callback(msg):
            now = time.monotonic()
            header = getattr(msg, 'header', None)
            age = None
            if isinstance(msg, Twist) and msg.linear.z:
                age = time.time() - msg.linear.z
            elif header is not None and header.stamp.sec:
                age = time.time() - (header.stamp.sec + header.stamp.nanosec * 1e-9)
            arrivals[topic].append((now, age))

        return callback

    if args.commands_in:
        node.create_subscription(Twist, args.commands_in, record(args.commands_in), 10)
    while time.monotonic() < window[1]:
        executor.spin_once(timeout_sec=0.02)
        if command is not None and time.monotonic() >= next_command:
            next_command += COMMAND_PERIOD
            message = Twist()  # zero velocity; linear.z, which planar robots ignore: sent at
            message.linear.z = time.time()
            command.publish(message)
        if pending:
            types = dict(node.get_topic_names_and_types())
            for topic in [t for t in pending if t in types]:
                reliability = (
                    ReliabilityPolicy.BEST_EFFORT
                    if topic in args.best_effort
                    else ReliabilityPolicy.RELIABLE
                )
                qos = QoSProfile(depth=10, reliability=reliability)
                node.create_subscription(import_type(types[topic][0]), topic, record(topic), qos)
                pending.remove(topic)
    result = {}
    for topic, items in arrivals.items():
        inside = [(t, a) for t, a in items if window[0] <= t < window[1]]
        ages = [a * 1000 for _, a in inside if a is not None]
        result[topic] = {
            'first': round(items[0][0] - start, 2) if items else None,
            'rate': round(len(inside) / args.window, 2),
            'age_p50': round(percentile(ages, 0.5), 1) if ages else None,
            'age_p99': round(percentile(ages, 0.99), 1) if ages else None,
        }
    print(json.dumps(result), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
