"""Real `ros2 launch` of all_robots.launch.py with sim:=true, on a full ROS 2 install.

launch_pytest (and launch, launch_ros) have no PyPI wheels, so on the project's
own machines this module is skipped, and says so.
"""

import pathlib
import time

import pytest
import rclpy
from ament_index_python.packages import get_package_share_directory
from diagnostic_msgs.msg import DiagnosticArray
from helpers import wait_for
from ros_observer import LinkLevels

from legacy_robot_bringup.registry import discover_plugins

launch_pytest = pytest.importorskip(
    'launch_pytest',
    reason='launch_pytest is not installable here (no wheel on PyPI); '
    'this test runs on a full ROS 2 install',
)
# launch comes with launch_pytest: imported only past the skip
launch = pytest.importorskip('launch')
IncludeLaunchDescription = pytest.importorskip('launch.actions').IncludeLaunchDescription
PythonLaunchDescriptionSource = pytest.importorskip(
    'launch.launch_description_sources'
).PythonLaunchDescriptionSource


@launch_pytest.fixture
def all_robots_sim():
    path = (
        pathlib.Path(get_package_share_directory('legacy_robot_bringup'))
        / 'launch'
        / 'all_robots.launch.py'
    )
    return launch.LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(str(path)), launch_arguments={'sim': 'true'}.items()
            ),
            launch_pytest.actions.ReadyToTest(),
        ]
    )


@pytest.mark.launch(fixture=all_robots_sim)
def test_every_robot_reports_its_links_up():
    expected = {plugin.node_name for plugin in discover_plugins().values()}
    links = LinkLevels()
    rclpy.init()
    node = rclpy.create_node('launch_test_listener')
    node.create_subscription(DiagnosticArray, '/diagnostics', links, 10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and links.up(expected) != expected:
        rclpy.spin_once(node, timeout_sec=0.2)
    node.destroy_node()
    rclpy.shutdown()
    assert links.up(expected) == expected, (
        f'links not up: {sorted(expected - links.up(expected))}; seen: {links.latest}'
    )


# ---- two Pioneers with different ports and an iPaq, from one launch command ------------------
@pytest.fixture(scope='module')
def three_robots(tmp_path_factory):
    """Emulators on free ports in this process, and the parameter file that points each
    driver at its own: /r1/p2os_driver, /r2/p2os_driver, /ipaq/ipaq_driver."""
    from ipaq_driver.emulator import EmulatorOptions as IpaqOptions
    from ipaq_driver.emulator import IpaqEmulator
    from p2os_driver.emulator import EmulatorOptions, P2osEmulator

    pioneers = [P2osEmulator(EmulatorOptions()) for _ in range(2)]
    ports = [pioneer.start_tcp() for pioneer in pioneers]
    ipaq = IpaqEmulator(IpaqOptions(control_port=0, frame_dump_port=0, tracking_port=0)).start()
    params = tmp_path_factory.mktemp('launch') / 'robots.yaml'
    lines = []
    for name, port in zip(('r1', 'r2'), ports, strict=False):
        lines += [
            f'/{name}/p2os_driver:',
            '  ros__parameters:',
            f'    port: tcp://127.0.0.1:{port}',
        ]
    lines += ['/ipaq/ipaq_driver:', '  ros__parameters:']
    lines += [f'    {key}: {value}' for key, value in ipaq.parameters.items()]
    params.write_text('\n'.join(lines) + '\n')
    yield pioneers, ipaq, params
    for emulator in (*pioneers, ipaq):
        emulator.stop()


@launch_pytest.fixture
def three_robots_launch(three_robots):
    _, _, params = three_robots
    path = (
        pathlib.Path(get_package_share_directory('legacy_robot_bringup'))
        / 'launch'
        / 'all_robots.launch.py'
    )
    return launch.LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(str(path)),
                launch_arguments={
                    'robots': 'p2os:r1,p2os:r2,ipaq',
                    'use_sim_time': 'true',
                    'params_file': str(params),
                }.items(),
            ),
            launch_pytest.actions.ReadyToTest(),
        ]
    )


@pytest.mark.launch(fixture=three_robots_launch)
def test_two_pioneers_on_their_own_ports_and_an_ipaq_from_one_launch(three_robots):
    from rcl_interfaces.srv import GetParameters

    pioneers, ipaq, _ = three_robots
    wait_for(lambda: all(p.received_commands() for p in pioneers) and ipaq.received_commands(), 30)
    assert all(p.received_commands() for p in pioneers), 'a Pioneer was not reached on its port'
    assert ipaq.received_commands(), 'the iPaq was not reached'
    rclpy.init()
    node = rclpy.create_node('launch_parameter_check')
    try:
        for fqn in ('/r1/p2os_driver', '/r2/p2os_driver', '/ipaq/ipaq_driver'):
            client = node.create_client(GetParameters, f'{fqn}/get_parameters')
            assert client.wait_for_service(timeout_sec=10), fqn
            future = client.call_async(
                GetParameters.Request(names=['use_sim_time', 'frame_prefix'])
            )
            rclpy.spin_until_future_complete(node, future, timeout_sec=10)
            sim_time, prefix = future.result().values
            assert sim_time.bool_value and prefix.string_value == fqn.split('/')[1] + '/'
    finally:
        node.destroy_node()
        rclpy.shutdown()
