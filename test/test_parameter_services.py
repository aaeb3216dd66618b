"""Every driver answers get_parameters for all the names its list_parameters gives, as
rqt_reconfigure and `ros2 param dump` ask (all names in one request), through the real
services. rclpy answers such a request with an empty list when one name is unset: P2OS's
laser_mount used to be (declared with a type and no value), and rqt_reconfigure showed a
blank page."""

import time

import pytest
import rclpy
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters, ListParameters

from legacy_robot_bringup.compose import running
from legacy_robot_bringup.registry import discover_plugins
from pleo_driver.builder_node import UrfBuilderNode


def call(node, executor, kind, service, request, timeout=20.0):
    client = node.create_client(kind, service)
    try:
        deadline = time.monotonic() + timeout
        while not client.service_is_ready() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert client.service_is_ready(), f'{service}: no server'
        future = client.call_async(request)
        while not future.done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
        assert future.done(), f'{service}: no answer in {timeout} s'
        return future.result()
    finally:
        node.destroy_client(client)


@pytest.fixture(scope='module')
def answers():
    """{node's full name: (listed names, get_parameters' values)} for every driver run with
    its emulator, and the PDK builder node."""
    found = {}
    plugins = list(discover_plugins().values())
    with running(plugins, sim=True, namespace_per_robot=True) as composition:
        builder = UrfBuilderNode(namespace='/pleo')
        asker = rclpy.create_node('parameter_asker')
        executor = composition.executor
        for node in (builder, asker):
            executor.add_node(node)
        for node in [*composition.nodes.values(), builder]:
            name = node.get_fully_qualified_name()
            listed = call(
                asker,
                executor,
                ListParameters,
                f'{name}/list_parameters',
                ListParameters.Request(),
            ).result.names
            values = call(
                asker,
                executor,
                GetParameters,
                f'{name}/get_parameters',
                GetParameters.Request(names=list(listed)),
            ).values
            found[name] = (list(listed), list(values))
        for node in (builder, asker):
            executor.remove_node(node)
            node.destroy_node()
    return found


def test_every_driver_answers_get_parameters_for_all_its_names(answers):
    plugins = discover_plugins().values()
    assert {name.rsplit('/', 1)[-1] for name in answers} == {p.node_name for p in plugins} | {
        'urf_builder'
    }
    for name, (listed, values) in answers.items():
        assert len(listed) > 5, name
        assert len(values) == len(listed), f'{name}: {len(values)} values for {len(listed)} names'
        unset = [
            n
            for n, v in zip(listed, values, strict=True)
            if v.type == ParameterType.PARAMETER_NOT_SET
        ]
        assert unset == [], f'{name}: unset {unset}'


def test_p2os_laser_mount_is_shown_as_an_empty_list_meaning_the_models(answers):
    [(listed, values)] = [found for name, found in answers.items() if name.endswith('p2os_driver')]
    mount = values[listed.index('laser_mount')]
    assert (
        mount.type == ParameterType.PARAMETER_DOUBLE_ARRAY and list(mount.double_array_value) == []
    )
