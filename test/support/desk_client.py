"""The desk's host in a two-host test: a ROS node that watches and steers a robot over the link.

    python desk_client.py [--namespace NS] [--topics T ...] [--trigger SERVICE]
                          [--drive M_S] [--profile lossy] [--peers ADDR ...]

Prints JSON lines: {"first": topic, "t": s} when a topic's first message arrives (any type,
raw), {"tenth": topic, "t": s} at its tenth; {"service": name, "success": bool, "message":
text, "t": s} for each answer of a Trigger service, called again until it succeeds;
{"odom": s, "x": m, "vx": m/s} for each odometry message. With --drive it publishes cmd_vel
(Twist, linear.x = M_S) at 10 Hz from the moment the service answered (or from the start),
for as long as it runs, and never stops on its own: the link under test does that.
With --tf it also prints {"tf": [parent, child], "static": bool} for each transform first
seen on /tf or /tf_static, and with --graph, once every --topics topic has arrived, one line
{"graph": {topic: number of publishers}} of every topic in the graph.
Times are CLOCK_MONOTONIC, the same clock as robot_host.py's on this machine.
"""

import argparse
import json
import sys
import time

import rclpy
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from legacy_robot_common.middleware import static_peers, use_our_dds_profiles, use_static_peers
from legacy_robot_common.tf import TF_QOS, TF_STATIC_LISTENER_QOS
from legacy_robot_common.topics import import_type

COMMAND_PERIOD = 0.1  # s: 10 Hz, as a teleop or Nav2 sends
TENTH = 10  # messages of a topic: then a line says so
RETRY = 0.5  # s between calls of a service that answered 'no'


def emit(**fields):
    print(json.dumps(fields), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--namespace', default='')
    parser.add_argument('--topics', nargs='*', default=[], help='relative names')
    parser.add_argument('--trigger', help='a std_srvs/Trigger service to call once')
    parser.add_argument('--drive', type=float, help='cmd_vel linear.x, m/s')
    parser.add_argument('--profile', help='our DDS profile (default: Fast DDS defaults)')
    parser.add_argument('--peers', nargs='*', default=[])
    parser.add_argument('--tf', action='store_true')
    parser.add_argument('--graph', action='store_true')
    args = parser.parse_args(argv)
    if args.profile:
        use_our_dds_profiles(args.profile)
    if args.peers:
        use_static_peers(static_peers(args.peers))
    rclpy.init()
    node = rclpy.create_node('desk', namespace=args.namespace or None)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    seen = set()
    pending = list(args.topics)

    counts = dict.fromkeys(args.topics, 0)

    def first(topic):
        def callback(_):
            counts[topic] += 1
            if topic not in seen:
                seen.add(topic)
                emit(first=topic, t=time.monotonic())
            if counts[topic] == TENTH:
                emit(tenth=topic, t=time.monotonic())

        return callback

    def on_odom(msg):
        emit(odom=time.monotonic(), x=msg.pose.pose.position.x, vx=msg.twist.twist.linear.x)

    node.create_subscription(Odometry, 'odom', on_odom, 10)
    if args.tf:
        frames = set()

        def on_tf(static):
            def callback(msg):
                for transform in msg.transforms:
                    pair = (transform.header.frame_id, transform.child_frame_id)
                    if (pair, static) not in frames:
                        frames.add((pair, static))
                        emit(tf=list(pair), static=static)

            return callback

        node.create_subscription(TFMessage, '/tf', on_tf(False), TF_QOS)
        node.create_subscription(TFMessage, '/tf_static', on_tf(True), TF_STATIC_LISTENER_QOS)
    graph_due = args.graph
    publisher = node.create_publisher(Twist, 'cmd_vel', 10) if args.drive is not None else None
    driving = args.drive is not None and args.trigger is None
    client = node.create_client(Trigger, args.trigger) if args.trigger else None
    future = None
    retry_at = 0.0
    next_command = time.monotonic()
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.02)
            for topic in list(pending):  # subscribe once the type is known
                types = dict(node.get_topic_names_and_types())
                full = node.resolve_topic_name(topic)
                if full in types:
                    kind = import_type(types[full][0])
                    node.create_subscription(kind, topic, first(topic), 10, raw=True)
                    pending.remove(topic)
            if graph_due and len(seen) == len(args.topics):
                graph_due = False
                topics = node.get_topic_names_and_types()
                emit(graph={name: node.count_publishers(name) for name, _ in topics})
            now = time.monotonic()
            if client is not None and future is None and now >= retry_at:
                if client.service_is_ready():
                    future = client.call_async(Trigger.Request())
            if future is not None and future.done():
                answer = future.result()
                emit(service=args.trigger, success=answer.success, message=answer.message, t=now)
                future, retry_at = None, now + RETRY
                if answer.success:  # else: the robot's link may not be up yet
                    client, driving = None, args.drive is not None
            if driving and time.monotonic() >= next_command:
                next_command += COMMAND_PERIOD
                command = Twist()
                command.linear.x = args.drive
                publisher.publish(command)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    sys.exit(main())
