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

For a desk that is slow or goes away (hosts_bench --desk-gone): --foxglove URL also watches
every channel of a Foxglove relay (as the pseudo-topic "foxglove"); --slow S takes S seconds
over each message (a sleep in each callback; the Foxglove client then reads one frame per S,
its receive queue bounded, so the relay meets a slow reader). {"seen": topic, "first": s} is
printed at each topic's first message, {"all_seen": s} once every topic has delivered, and
--until-all-seen ends the meter then. --watch-values KEY ... prints {"t": s, "values":
{KEY: value}} for every /diagnostics status holding one of them (the robot host's queues,
read there).
"""

import argparse
import json
import sys
import threading
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Twist
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy

from legacy_robot_bringup.foxglove_client import FoxgloveClient
from legacy_robot_common.middleware import use_our_dds_profiles
from legacy_robot_common.topics import import_type

COMMAND_PERIOD = 0.1  # s
FOXGLOVE = 'foxglove'  # the pseudo-topic of --foxglove's messages


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
    parser.add_argument('--foxglove', metavar='URL', help='watch every channel of this relay')
    parser.add_argument('--slow', type=float, default=0.0, help='s taken over each message')
    parser.add_argument('--until-all-seen', action='store_true', help='end once all arrived')
    parser.add_argument('--watch-values', nargs='*', default=[], metavar='KEY')
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
    topics += [FOXGLOVE] if args.foxglove else []
    arrivals = {topic: [] for topic in topics}  # (monotonic, age s)
    pending = list(args.topics)
    all_seen = False
    unseen = list(topics)

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
            if args.slow:
                time.sleep(args.slow)

        return callback

    def watch(msg):
        for status in msg.status:
            values = {v.key: v.value for v in status.values if v.key in args.watch_values}
            if values:
                t = round(time.monotonic() - start, 2)
                print(json.dumps({'t': t, 'name': status.name, 'values': values}), flush=True)

    if args.watch_values:
        node.create_subscription(DiagnosticArray, '/diagnostics', watch, 50)
    if args.foxglove:
        end = window[1]
        threading.Thread(
            target=watch_foxglove, args=(args.foxglove, arrivals[FOXGLOVE], args.slow, end),
            daemon=True,
        ).start()  # fmt: skip

    if args.commands_in:
        node.create_subscription(Twist, args.commands_in, record(args.commands_in), 10)
    while time.monotonic() < window[1]:
        executor.spin_once(timeout_sec=0.02)
        for topic in [t for t in unseen if arrivals[t]]:
            unseen.remove(topic)
            t = round(arrivals[topic][0][0] - start, 2)
            print(json.dumps({'seen': topic, 'first': t}), flush=True)
        if not all_seen and not unseen:
            all_seen = True
            print(json.dumps({'all_seen': round(time.monotonic() - start, 2)}), flush=True)
            if args.until_all_seen:
                break
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
            'rate': round(len(inside) / args.window, 2) if args.window else None,
            'age_p50': round(percentile(ages, 0.5), 1) if ages else None,
            'age_p99': round(percentile(ages, 0.99), 1) if ages else None,
        }
    print(json.dumps(result), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


def watch_foxglove(url, arrivals, slow, end):
    """Subscribe to every channel of the relay at url (connecting until it answers) and note
    each message's arrival; with slow, one frame per slow s."""
    client = failure = None
    while client is None and time.monotonic() < end:
        try:
            client = FoxgloveClient(url, ping_interval=None, open_timeout=2)
        except Exception as exc:  # refused, or a handshake error: the relay is not up yet
            failure = exc
            time.sleep(0.5)
    if client is None:
        print(f'stream_meter: foxglove: {failure!r}', file=sys.stderr, flush=True)
    if client is not None:
        print(f'stream_meter: foxglove: connected to {url}', file=sys.stderr, flush=True)
    subscribed = set()
    while client is not None and time.monotonic() < end:
        received = client.received
        try:
            client.receive_one(min(1.0, max(0.01, end - time.monotonic())))
        except Exception as exc:  # the relay closed the connection (e.g. a control queue full)
            print(f'stream_meter: foxglove: {exc!r}', file=sys.stderr, flush=True)
            return
        if client.received > received:
            arrivals.append((time.monotonic(), None))
        # by channel id: a topic the relay lost from the graph for a moment comes back as a
        # new channel, which a client must subscribe to again (Foxglove's apps do)
        for topic, channel in list(client.channels.items()):
            if channel['id'] not in subscribed:
                client.subscribe(topic, decode=False)
                subscribed.add(channel['id'])
                said = f'subscribed to {topic} (channel {channel["id"]})'
                print(f'stream_meter: foxglove: {said}', file=sys.stderr, flush=True)
        client.messages.clear()  # only arrivals are kept
        if slow:
            time.sleep(slow)


if __name__ == '__main__':
    sys.exit(main())
