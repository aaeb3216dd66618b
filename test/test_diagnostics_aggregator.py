"""config/diagnostics_aggregator.yaml (diagnostic_aggregator's analyzers, for rqt_robot_monitor):
every status the running drivers publish on /diagnostics falls in exactly one of its groups,
and every group gets some, matched as diagnostic_aggregator's GenericAnalyzer matches names."""

import re
import time

import rclpy
import yaml
from diagnostic_msgs.msg import DiagnosticArray
from helpers import ROOT

from legacy_robot_bringup.compose import running
from legacy_robot_bringup.registry import discover_plugins
from pleo_driver.builder_node import UrfBuilderNode

CONFIG = ROOT / 'config' / 'diagnostics_aggregator.yaml'
ANALYZER = 'diagnostic_aggregator/GenericAnalyzer'
# a GenericAnalyzer's ways of matching a status name (any one matches), and its other keys
MATCHERS = {
    'startswith': lambda name, value: name.startswith(value),
    'contains': lambda name, value: value in name,
    'name': lambda name, value: name == value,
    'expected': lambda name, value: name == value,
    'regex': lambda name, value: re.fullmatch(value, name) is not None,
}
OTHER_KEYS = {'type', 'path', 'timeout', 'num_items', 'discard_stale', 'remove_prefix'}


def analyzer_groups():
    """{group: {matcher: [values]}} of the file (the aggregator node's parameters)."""
    [(key, node)] = yaml.safe_load(CONFIG.read_text()).items()
    assert key == '/**/analyzers'  # aggregator_node's node name, under any namespace
    parameters = node['ros__parameters']
    groups = {}
    for name, group in parameters.items():
        if name in ('path', 'pub_rate', 'base_path'):
            continue
        assert group['type'] == ANALYZER and group['path'], (name, group)
        assert set(group) <= set(MATCHERS) | OTHER_KEYS, (name, group)
        groups[name] = {k: v for k, v in group.items() if k in MATCHERS}
    return groups


def groups_of(status_name, groups):
    return [
        group
        for group, matchers in groups.items()
        if any(
            MATCHERS[k](status_name, value) for k, values in matchers.items() for value in values
        )
    ]


def published_status_names(duration):
    """Every DiagnosticStatus name on /diagnostics while all robots run with their emulators
    (namespaced, as all_robots.launch.py runs them), and the PDK builder node beside them."""
    names = set()
    with running(list(discover_plugins().values()), sim=True, namespace_per_robot=True) as comp:
        builder = UrfBuilderNode(namespace='/pleo')
        listener = rclpy.create_node('diagnostics_listener')
        listener.create_subscription(
            DiagnosticArray,
            '/diagnostics',
            lambda msg: names.update(status.name for status in msg.status),
            50,
        )
        for node in (builder, listener):
            comp.executor.add_node(node)
        deadline = time.monotonic() + duration
        while time.monotonic() < deadline:
            comp.executor.spin_once(timeout_sec=0.1)
        for node in (builder, listener):
            comp.executor.remove_node(node)
            node.destroy_node()
    return names


def test_every_status_the_drivers_publish_is_in_exactly_one_group():
    groups = analyzer_groups()
    names = published_status_names(15.0)
    robots = {plugin.node_name for plugin in discover_plugins().values()} | {'urf_builder'}
    seen = {name.split(': ', 1)[0].rsplit('/', 1)[-1] for name in names}
    assert robots <= seen, f'no status from {robots - seen}: {sorted(names)}'
    placed = {name: groups_of(name, groups) for name in names}
    assert {name: found for name, found in placed.items() if len(found) != 1} == {}
    used = {found[0] for found in placed.values()}
    assert used == set(groups), f'groups no status falls in: {set(groups) - used}'


def test_a_status_of_another_node_falls_in_no_group():
    """The groups name our nodes, not whatever shares /diagnostics (nav2, a camera driver)."""
    groups = analyzer_groups()
    assert groups_of('controller_server: Controller', groups) == []
    assert groups_of('p2os/p2os_driver: link', groups) == ['p2os']
    assert groups_of('urf_builder: builds', groups) == ['pleo']
