"""all_robots: no two robots share a topic or service name (they did: /odom had two publishers,
/play_sound two service types). Checked on a live graph of every robot with its emulator,
namespaced as all_robots.launch.py namespaces them by default."""

import itertools
import time

import pytest
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from ros_observer import LinkLevels

from legacy_robot_bringup.compose import running
from legacy_robot_bringup.launch_plan import per_robot_by_default
from legacy_robot_bringup.registry import discover_plugins
from legacy_robot_common.driver_node import RCLError

# one per graph by design: every node publishes diagnostics and TF to the same topics
SHARED_BY_DESIGN = {'/diagnostics', '/tf', '/tf_static', '/rosout', '/parameter_events'}


def names_per_robot(per_robot, robots=None):
    """{robot: {(kind, name)}} of every topic and service its node offers or uses."""
    plugins = [p for name, p in discover_plugins().items() if robots is None or name in robots]
    with running(plugins, sim=True, namespace_per_robot=per_robot) as composition:
        found = {}
        for robot, node in composition.nodes.items():
            name, namespace = node.get_name(), node.get_namespace()
            entries = set()
            for kind, listing in (
                ('topic', node.get_publisher_names_and_types_by_node(name, namespace)),
                ('topic', node.get_subscriber_names_and_types_by_node(name, namespace)),
                ('service', node.get_service_names_and_types_by_node(name, namespace)),
            ):
                entries |= {(kind, topic) for topic, _ in listing if topic not in SHARED_BY_DESIGN}
            found[robot] = entries
    return found


def collisions(found):
    return {
        (a, b): sorted(found[a] & found[b])
        for a, b in itertools.combinations(found, 2)
        if found[a] & found[b]
    }


def test_all_robots_share_no_topic_or_service_name():
    found = names_per_robot(per_robot_by_default([]))
    assert len(found) == len(discover_plugins()) and all(found.values())
    assert collisions(found) == {}
    assert ('topic', '/p2os/odom') in found['p2os'] and ('topic', '/ipaq/odom') in found['ipaq']


def test_the_launch_tests_readiness_rule_holds_for_every_robot_here():
    """test_launch_pytest.py (skipped here) waits for LinkLevels.up(): the same rule, checked on
    the same robots and emulators composed in one process, so its expectations are the real
    ones."""
    plugins = discover_plugins()
    expected = {plugin.node_name for plugin in plugins.values()}
    links = LinkLevels()
    with running(list(plugins.values()), sim=True, namespace_per_robot=True) as composition:
        listener = rclpy.create_node('readiness_listener')
        listener.create_subscription(DiagnosticArray, '/diagnostics', links, 10)
        composition.executor.add_node(listener)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and links.up(expected) != expected:
            composition.spin(0.5)
        listener.destroy_node()
    assert links.up(expected) == expected, links.latest
    assert ('nabaztag_bridge', 'http server') in links.latest


def test_without_namespaces_the_check_finds_the_collisions():
    [shared] = collisions(names_per_robot(False, ('p2os', 'ipaq'))).values()
    assert ('topic', '/odom') in shared and ('topic', '/cmd_vel') in shared
    # two service types under one name: DDS refuses the second server outright
    with pytest.raises(RCLError, match='play_sound'):
        names_per_robot(False)
