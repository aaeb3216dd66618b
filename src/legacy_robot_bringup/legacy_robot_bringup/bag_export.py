"""A recording's ROS messages as a rosbag2 (MCAP storage): what the driver publishes when the
recording is replayed into it, written with rosbags (metadata.yaml, message definitions, QoS).

The bag's message times are the recorded clock: each message gets the recorded time of the
newest robot chunk the replay had sent when the driver published it.

A bag holds every message the driver publishes. Its topics are the driver node's own
publishers: read from the ROS graph instead, under load some appeared too late and the bag went
without them (a Pleo bag with no joint_states at all). The subscriptions keep all messages, so
an executor that lags far behind the link threads (--speed 0) drops none, and the export waits
until the bag stops growing. What still goes missing between a publisher's first message and
its newest (a gap in its sequence numbers) is counted per topic and reported.
"""

import os
import time

from rclpy.node import Node
from rclpy.qos import HistoryPolicy
from rclpy.topic_or_service_is_hidden import topic_or_service_is_hidden
from rosbags.interfaces import (
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag2 import StoragePlugin, Writer

from legacy_robot_common.message_definitions import MessageDefinitions
from legacy_robot_common.topics import matching_qos

DISCOVERY_TIME = 2.0  # s the bag's subscriptions get to match the driver's publishers
NOT_EXPORTED = ('/rosout', '/parameter_events')  # every node's; not the robot's data
BAG_VERSION = 9
NEVER = QosTime(sec=0, nsec=0)
NO_SEQUENCE = (0, 2**64 - 1)  # what an RMW without publication sequence numbers gives


def check_bag_path(path):
    """A bag is a new folder: refuse an existing one, or one whose parent is missing."""
    if os.path.exists(path):
        raise ValueError(f'{path} exists: a bag is written to a new folder')
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f'cannot write {path}: no folder {parent}')


def _bag_qos(profile):
    """rclpy's QoS profile → rosbags' (the offered_qos_profiles of metadata.yaml)."""
    return Qos(
        history=QosHistory(int(profile.history)),
        depth=profile.depth,
        reliability=QosReliability(int(profile.reliability)),
        durability=QosDurability(int(profile.durability)),
        deadline=NEVER,
        lifespan=NEVER,
        liveliness=QosLiveliness.AUTOMATIC,
        liveliness_lease_duration=NEVER,
        avoid_ros_namespace_conventions=False,
    )


def _type_name(msg_type):
    """A message class → 'package/msg/Name'."""
    return f'{msg_type.__module__.split(".")[0]}/msg/{msg_type.__name__}'


def _from_the_driver(info, driver_gids):
    """Whether a message came from one of the driver's publishers. Jazzy's MessageInfo (rclpy
    7) has no publisher_gid: there every message counts as the driver's (README: export in a
    ROS domain of its own when other nodes publish /tf)."""
    if 'publisher_gid' not in info:
        return True
    return bytes((info['publisher_gid'] or {}).get('data', b'')) in driver_gids


class SequenceGaps:
    """Messages lost on their way, from the publication sequence numbers of what arrived: the
    numbers between a publisher's first and newest that never came. Kept per (topic,
    publisher) where the RMW names the publisher (Kilted); on Jazzy per topic, where two
    publishers of one topic can hide each other's gaps but never invent one."""

    def __init__(self):
        self._seen = {}  # (topic, publisher) → (first, newest, messages)

    def record(self, key, number):
        if number in NO_SEQUENCE:
            return
        first, newest, count = self._seen.get(key, (number, number, 0))
        self._seen[key] = (min(first, number), max(newest, number), count + 1)

    def lost(self):
        """{topic: messages lost} for the topics that lost any."""
        lost = {}
        for (topic, _), (first, newest, count) in self._seen.items():
            missing = newest - first + 1 - count
            if missing > 0:
                lost[topic] = lost.get(topic, 0) + missing
        return lost


class BagCapture(Node):
    """Subscribes (raw CDR) to every topic a driver node publishes and writes each message to a
    rosbag2 as it arrives, stamped by clock() (recorded time, ns)."""

    def __init__(self, driver, path, clock, context):
        """driver: the node replayed into (its namespace is left out of the bag's topic names:
        they are the ones the driver publishes at the root)."""
        super().__init__('bag_export', context=context)
        self._namespace = driver.get_namespace().rstrip('/')
        self._clock = clock
        self._definitions = MessageDefinitions()
        self.writer = Writer(path, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
        self.writer.open()
        self.counts = {}
        self.bytes = 0
        self.last_write = time.monotonic()  # when the newest message was written
        self._gaps = SequenceGaps()
        self._subscribe_to(driver)

    @property
    def lost(self):
        """{bag topic: messages lost on the way} for the topics that lost any."""
        return self._gaps.lost()

    def _driver_topics(self, driver):
        """{topic: [the driver's publishers of it]}, from the driver node itself: the graph
        showed some of them late under load, and the bag went without those topics."""
        topics = {}
        for publisher in driver.publishers:
            topic = publisher.topic_name
            # hidden topics (an action's _action/feedback and status) stay out, as
            # `ros2 bag record -a` leaves them out
            if topic not in NOT_EXPORTED and not topic_or_service_is_hidden(topic):
                topics.setdefault(topic, []).append(publisher)
        return topics

    def _subscribe_to(self, driver):
        for topic, publishers in sorted(self._driver_topics(driver).items()):
            type_name = _type_name(publishers[0].msg_type)
            qos = matching_qos(publishers)
            qos.history = HistoryPolicy.KEEP_ALL  # however far the executor lags behind
            self._definitions.add(type_name)
            connection = self.writer.add_connection(
                self._bag_name(topic),
                type_name,
                typestore=self._definitions.typestore,
                offered_qos_profiles=[_bag_qos(publishers[0].qos_profile)],
            )
            self.counts[connection.topic] = 0
            self.create_subscription(
                publishers[0].msg_type,
                topic,
                self._writer_for(connection, topic, driver),
                qos,
                raw=True,
            )

    def _driver_gids(self, topic, driver):
        """The gids of the driver's publishers of topic, as the graph knows them so far."""
        return {
            bytes(p.endpoint_gid)
            for p in self.get_publishers_info_by_topic(topic)
            if (p.node_name, p.node_namespace) == (driver.get_name(), driver.get_namespace())
        }

    def _bag_name(self, topic):
        inside = self._namespace and topic.startswith(self._namespace + '/')
        return topic[len(self._namespace) :] if inside else topic

    def _writer_for(self, connection, topic, driver):
        driver_gids = set()

        def write(data, info):
            if not _from_the_driver(info, driver_gids):
                driver_gids.update(self._driver_gids(topic, driver))  # the graph caught up?
                if not _from_the_driver(info, driver_gids):  # another node's (/tf)
                    return
            self.writer.write(connection, self._clock(), data)
            self.counts[connection.topic] += 1
            self.bytes += len(data)
            self.last_write = time.monotonic()
            publisher = bytes((info.get('publisher_gid') or {}).get('data', b''))
            self._gaps.record(
                (connection.topic, publisher), info.get('publication_sequence_number', 0)
            )

        return write

    def close(self):
        self.writer.close()
