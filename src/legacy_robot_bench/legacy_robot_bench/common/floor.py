"""The CPU floor under a driver: its ROS structure, publishing its messages, with no robot.

At a real robot's rate most of a driver's CPU is rclpy's: executor wake-ups, publishing,
the wait set of its services. An absolute CPU target is then mostly a statement about rclpy
and is missed by noise; a driver's distance from the possible is its CPU over that of a
process with the same structure doing nothing else. So a benchmark, in the same run:

1. captures the driver's shape while it runs (capture_shape): its node name, publishers
   (types, QoS, rates, and one message each, serialized), subscriptions and services, as
   the ROS graph shows them;
2. runs the floor (`python -m legacy_robot_bench.common.floor SHAPE.json --namespace NS`): a
   DriverNode with that name and those publishers, subscriptions and services, whose feeding
   thread hands the captured messages through the DriverNode's record queue and executor
   task at the captured rates, in bursts at the captured burst rate (a robot's packet
   gives several messages at once), spun by the drivers' executor;
3. runs the lean floor (`--lean`): a plain node, no services, a thread publishing the same
   messages directly: the cost of the structure itself is the difference.

Timers the driver keeps (diagnostics, watchdogs) do not show in the graph: the floor has the
DriverNode's own (diagnostics every second).
"""

import argparse
import base64
import collections
import json
import sys
import threading
import time

import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message

from legacy_robot_bringup.registry import discover_plugins
from legacy_robot_common.driver_node import (
    DriverNode,
    make_executor,
    prepare_process,
    spin,
    spin_until_shutdown,
)
from legacy_robot_common.memory import MallocTrim
from legacy_robot_common.topics import import_type

SKIPPED_TOPICS = ('/rosout', '/parameter_events', '/diagnostics')  # every node has these
SKIPPED_SERVICE_PACKAGES = ('rcl_interfaces', 'type_description_interfaces')
BURST_GAP = 0.003  # s between messages of one burst, as a subscriber sees them


def capture_shape(node, driver_name, namespace, seconds=2.0):
    """The shape of the running driver node driver_name in namespace, seen from node (an
    rclpy node spun elsewhere): {'name', 'namespace', 'publishers': [{topic, type, rate,
    reliable, transient_local, sample (base64)}], 'subscriptions': [{topic, type}],
    'services': [{name, type}]}. Subscribes to each publisher for seconds to count its rate
    and keep its last message; the subscriptions are gone before this returns."""
    publishers = [
        (topic, types[0])
        for topic, types in node.get_publisher_names_and_types_by_node(driver_name, namespace)
        if topic not in SKIPPED_TOPICS
    ]
    counts, samples, probes, arrivals = collections.Counter(), {}, [], []
    qos = {}
    for topic, type_name in publishers:
        endpoint = next(
            info
            for info in node.get_publishers_info_by_topic(topic)
            if info.node_name == driver_name
        )
        qos[topic] = endpoint.qos_profile
        profile = QoSProfile(
            depth=10,
            reliability=endpoint.qos_profile.reliability,
            durability=endpoint.qos_profile.durability,
        )

        def keep(data, topic=topic):
            counts[topic] += 1
            samples[topic] = data
            arrivals.append(time.monotonic())

        probes.append(
            node.create_subscription(import_type(type_name), topic, keep, profile, raw=True)
        )
    time.sleep(seconds)
    for probe in probes:
        node.destroy_subscription(probe)
    latched = {
        topic
        for topic, profile in qos.items()
        if profile.durability == DurabilityPolicy.TRANSIENT_LOCAL
    }
    return {
        'name': driver_name,
        'namespace': namespace,
        # a robot's packet becomes several messages at once, and the executor wakes once for
        # them: messages arriving within BURST_GAP of each other count as one burst
        'burst_rate': bursts(sorted(arrivals)) / seconds,
        'publishers': [
            {
                'topic': topic,
                'type': type_name,
                'rate': 0.0 if topic in latched else counts[topic] / seconds,
                'reliable': qos[topic].reliability == ReliabilityPolicy.RELIABLE,
                'transient_local': qos[topic].durability == DurabilityPolicy.TRANSIENT_LOCAL,
                'sample': base64.b64encode(samples.get(topic, b'')).decode(),
            }
            for topic, type_name in publishers
        ],
        'subscriptions': [
            {'topic': topic, 'type': types[0]}
            for topic, types in node.get_subscriber_names_and_types_by_node(driver_name, namespace)
            if topic not in SKIPPED_TOPICS
        ],
        'services': [
            {'name': name, 'type': types[0]}
            for name, types in node.get_service_names_and_types_by_node(driver_name, namespace)
            if types[0].split('/')[0] not in SKIPPED_SERVICE_PACKAGES
        ],
    }


def bursts(times, gap=None):
    """How many groups of times (sorted) lie within gap of their neighbours."""
    gap = BURST_GAP if gap is None else gap
    return sum(
        1
        for before, after in zip([None] + times, times, strict=False)
        if before is None or after - before > gap
    )


def moved(name, shape, namespace):
    """A driver's topic or service name, in the floor's namespace."""
    prefix = shape['namespace'].rstrip('/') + '/'
    if shape['namespace'] not in ('', '/') and name.startswith(prefix):
        return namespace.rstrip('/') + '/' + name[len(prefix) :]
    return name


def is_lifecycle(entry):
    """A managed node's own interface (change_state, transition_event, ...)."""
    return entry['type'].startswith('lifecycle_msgs/')


class Feed:
    """(publisher, message, rate) entries sent in bursts at burst_rate, each burst with every
    entry's share (rate / burst_rate, carried over as a fraction); rate 0: once at the start
    (latched topics). run(send) calls send(publisher, message) until stop is set."""

    def __init__(self, entries, burst_rate):
        self.once = [(publisher, message) for publisher, message, rate in entries if rate <= 0]
        self.shares = [
            (publisher, message, rate / burst_rate)
            for publisher, message, rate in entries
            if rate > 0 and burst_rate > 0
        ]
        self.period = 1.0 / burst_rate if burst_rate > 0 else None
        self.stop = threading.Event()

    def run(self, send):
        for publisher, message in self.once:
            send(publisher, message)
        if self.period is None:
            return
        credit = [0.0] * len(self.shares)
        due = time.monotonic()
        while not self.stop.wait(max(0.0, due - time.monotonic())):
            for index, (publisher, message, share) in enumerate(self.shares):
                credit[index] += share
                while credit[index] >= 1.0:
                    credit[index] -= 1.0
                    send(publisher, message)
            due += self.period


class FloorNode(DriverNode):
    """The driver's structure: records (publisher, message) through the DriverNode queue."""

    def __init__(self, shape, namespace):
        super().__init__(shape['name'], hardware_id='floor', namespace=namespace)
        self.feed = Feed(self.feed_entries(shape, namespace, self.publisher), shape['burst_rate'])
        for subscription in shape['subscriptions']:
            self.create_subscription(
                import_type(subscription['type']),
                moved(subscription['topic'], shape, namespace),
                lambda msg: None,
                10,
                callback_group=self.callback_group,
            )
        for service in shape['services']:
            if is_lifecycle(service):
                continue  # the floor is a managed node itself
            kind = import_type(service['type'])
            self.create_service(
                kind,
                moved(service['name'], shape, namespace),
                lambda request, response: response,
                callback_group=self.callback_group,
            )
        self.feeder = threading.Thread(
            target=self.feed.run, args=(lambda pub, msg: self._enqueue((pub, msg)),), daemon=True
        )
        self.begin()

    @staticmethod
    def feed_entries(shape, namespace, create):
        entries = []
        for entry in shape['publishers']:
            if is_lifecycle(entry):
                continue
            kind = import_type(entry['type'])
            qos = QoSProfile(
                depth=10,
                reliability=ReliabilityPolicy.RELIABLE
                if entry['reliable']
                else ReliabilityPolicy.BEST_EFFORT,
                durability=DurabilityPolicy.TRANSIENT_LOCAL
                if entry['transient_local']
                else DurabilityPolicy.VOLATILE,
            )
            message = (
                deserialize_message(base64.b64decode(entry['sample']), kind)
                if entry['sample']
                else kind()
            )
            entries.append(
                (
                    create(kind, moved(entry['topic'], shape, namespace), qos),
                    message,
                    entry['rate'],
                )
            )
        return entries

    def handle_record(self, record):
        publisher, message = record
        publisher.publish(message)


def lean_node(shape, namespace):
    """A plain node with the driver's publishers and no services; → (node, feed)."""
    node = rclpy.create_node(shape['name'], namespace=namespace, start_parameter_services=False)
    feed = Feed(
        FloorNode.feed_entries(shape, namespace, node.create_publisher), shape['burst_rate']
    )
    return node, feed


def main(argv=None):
    parser = argparse.ArgumentParser(prog='floor', description=__doc__.split('\n\n')[0])
    parser.add_argument('shape', help='JSON file written from capture_shape()')
    parser.add_argument('--namespace', default='/floor')
    parser.add_argument(
        '--lean',
        action='store_true',
        help='a thread publishing directly, no services (the leanest floor)',
    )
    args = parser.parse_args(argv)
    with open(args.shape) as source:
        shape = json.load(source)
    # as the driver it stands in for does, with what its plugin asks of the process
    plugins = [p for p in discover_plugins().values() if p.node_name == shape['name']]
    prepare_process(plugins)
    malloc_trim = MallocTrim()
    rclpy.init()
    try:
        if args.lean:
            node, feed = lean_node(shape, args.namespace)
            feeder = threading.Thread(
                target=feed.run, args=(lambda pub, msg: pub.publish(msg),), daemon=True
            )
        else:
            node = FloorNode(shape, args.namespace)
            feed, feeder = node.feed, node.feeder
        executor = make_executor()
        executor.add_node(node)
        feeder.start()
        with spin_until_shutdown():
            spin(executor, malloc_trim)
        feed.stop.set()
    finally:
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
