"""Real `ros2 launch` of all_robots.launch.py with sim:=true, on a full ROS 2 install.

launch_pytest (and launch, launch_ros) have no PyPI wheels, so on the project's
own machines this module is skipped, and says so.
"""
import pathlib
import time

import pytest

launch_pytest = pytest.importorskip(
    'launch_pytest', reason='launch_pytest is not installable here (no wheel on PyPI); '
                            'this test runs on a full ROS 2 install')

import launch  # noqa: E402
from launch.actions import IncludeLaunchDescription  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
import rclpy  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402

from legacy_robot_bringup.registry import discover_plugins  # noqa: E402
from ros_observer import LinkLevels  # noqa: E402


@launch_pytest.fixture
def all_robots_sim():
    path = pathlib.Path(get_package_share_directory('legacy_robot_bringup')) / 'launch' / \
        'all_robots.launch.py'
    return launch.LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(str(path)),
                                 launch_arguments={'sim': 'true'}.items()),
        launch_pytest.actions.ReadyToTest(),
    ])


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
    assert links.up(expected) == expected, \
        f'links not up: {sorted(expected - links.up(expected))}; seen: {links.latest}'
