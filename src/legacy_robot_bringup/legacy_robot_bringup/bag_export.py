"""A recording's ROS messages as a rosbag2 (MCAP storage): what the driver publishes when the
recording is replayed into it, written with rosbags (metadata.yaml, message definitions, QoS).

The bag's message times are the recorded clock: each message gets the recorded time of the
newest robot chunk the replay had sent when the driver published it.
"""

import os
import time

from rclpy.node import Node
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
from legacy_robot_common.topics import import_type, matching_qos

DISCOVERY_TIME = 2.0  # s the driver's publishers get to appear in the graph
NOT_EXPORTED = ('/rosout', '/parameter_events')  # every node's; not the robot's data
BAG_VERSION = 9
NEVER = QosTime(sec=0, nsec=0)


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


def _from_the_driver(info, driver_gids):
    """Whether a message came from one of the driver's publishers. Jazzy's MessageInfo (rclpy
    7) has no publisher_gid: there every message counts as the driver's (README: export in a
    ROS domain of its own when other nodes publish /tf)."""
    if 'publisher_gid' not in info:
        return True
    return bytes((info['publisher_gid'] or {}).get('data', b'')) in driver_gids


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
        self._subscribe_to(driver)

    def _driver_topics(self, driver):
        name, namespace = driver.get_name(), driver.get_namespace()
        deadline = time.monotonic() + DISCOVERY_TIME
        topics, seen = {}, -1
        while time.monotonic() < deadline:  # until the graph stops growing
            topics = {
                topic: types[0]
                for topic, types in self.get_publisher_names_and_types_by_node(name, namespace)
                if len(types) == 1
                and topic not in NOT_EXPORTED
                # hidden topics (an action's _action/feedback and status) stay out, as
                # `ros2 bag record -a` leaves them out
                and not topic_or_service_is_hidden(topic)
            }
            if len(topics) == seen:
                break
            seen = len(topics)
            time.sleep(0.2)
        return topics

    def _subscribe_to(self, driver):
        for topic, type_name in sorted(self._driver_topics(driver).items()):
            publishers = [
                p
                for p in self.get_publishers_info_by_topic(topic)
                if (p.node_name, p.node_namespace) == (driver.get_name(), driver.get_namespace())
            ]
            offered = publishers[0].qos_profile if publishers else None
            qos = matching_qos(publishers, depth=1000)  # a burst at --speed 0 fits
            self._definitions.add(type_name)
            connection = self.writer.add_connection(
                self._bag_name(topic),
                type_name,
                typestore=self._definitions.typestore,
                offered_qos_profiles=[_bag_qos(offered)] if offered else [],
            )
            self.counts[connection.topic] = 0
            self.create_subscription(
                import_type(type_name),
                topic,
                self._writer_for(connection, {bytes(p.endpoint_gid) for p in publishers}),
                qos,
                raw=True,
            )

    def _bag_name(self, topic):
        inside = self._namespace and topic.startswith(self._namespace + '/')
        return topic[len(self._namespace) :] if inside else topic

    def _writer_for(self, connection, driver_gids):
        def write(data, info):
            if not _from_the_driver(info, driver_gids):  # another node on a shared topic (/tf)
                return
            self.writer.write(connection, self._clock(), data)
            self.counts[connection.topic] += 1
            self.bytes += len(data)

        return write

    def close(self):
        self.writer.close()
