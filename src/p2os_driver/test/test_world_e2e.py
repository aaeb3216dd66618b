"""The driver against the emulator's world (docs/protocols/p2os.md §5): LaserScan against the
world's true geometry, ground_truth and set_pose, end to end over TCP and DDS (one short run)."""

import math

import numpy as np
import pytest
from nav_msgs.msg import Odometry
from ros_observer import DriverProcesses
from sensor_msgs.msg import LaserScan

from legacy_robot_interfaces.srv import SetPose
from p2os_driver import protocol as p
from p2os_driver.emulator import EmulatorOptions, P2osEmulator
from p2os_driver.world import default_world_path


@pytest.fixture
def office():
    drivers = DriverProcesses()
    options = EmulatorOptions(
        model='p3dx', world=default_world_path(), noise=False, laser_mount=(0, 0, 0)
    )
    emulator = P2osEmulator(options)
    port = emulator.start_tcp()
    yield drivers.start(
        'p2os_driver.node',
        '/pioneer',
        emulator,
        {'port': f'tcp://127.0.0.1:{port}', 'laser_mount': [0.0, 0.0, 0.0]},
    )
    drivers.stop_all()


def expected_ranges(world, x, y, th):
    """The true distances (m) along the rays the simulator casts for -90..90 by 1°."""
    first, step, count = p.laser_angles(-90, 90, 1.0)
    angles = th + np.radians(first + step * np.arange(count))
    return world.cast(x, y, angles, 32767)[0].astype(int) / 1000.0


def test_scan_ground_truth_and_set_pose_against_the_world(office):
    emulator, process, ros = office
    scans = ros.listen(LaserScan, 'scan')
    truth = ros.listen(Odometry, 'ground_truth')
    assert ros.spin_until(lambda: scans and truth, 20), 'no scan or ground truth'
    scan, pose = scans[-1], truth[-1]
    assert scan.header.frame_id.endswith('laser') and len(scan.ranges) == 181
    assert scan.angle_min == pytest.approx(-math.pi / 2)
    assert scan.angle_increment == pytest.approx(math.radians(180 / 181))
    assert pose.header.frame_id == 'map'
    assert (pose.pose.pose.position.x, pose.pose.pose.position.y) == (-8.5, 0.0)
    # at Home (-8.5, 0) in the corridor: the scan is the world's geometry
    want = expected_ranges(emulator.world, -8500, 0, 0.0)
    got = np.array(scan.ranges)
    assert got == pytest.approx(want, abs=0.0015)
    assert scan.intensities[90] == 32  # the reflector at the corridor's east end
    # move the robot: the next ground truth and scans follow, odometry does not
    reply = ros.call(
        SetPose,
        'set_pose',
        SetPose.Request(x=-5.0, y=0.2, theta=math.pi / 2, set_x=True, set_y=True, set_theta=True),
    )
    assert reply.success, reply.message
    assert ros.spin_until(lambda: truth[-1].pose.pose.position.x == -5.0, 10)
    assert truth[-1].pose.pose.position.y == pytest.approx(0.2)
    count = len(scans)
    assert ros.spin_until(lambda: len(scans) > count + 1, 10)
    want = expected_ranges(emulator.world, -5000, 200, math.pi / 2)
    assert np.array(scans[-1].ranges) == pytest.approx(want, abs=0.0015)
    # only theta: x and y stay where ground truth says
    reply = ros.call(SetPose, 'set_pose', SetPose.Request(theta=0.0, set_theta=True))
    assert reply.success, reply.message
    assert ros.spin_until(lambda: abs(truth[-1].pose.pose.orientation.z) < 1e-6, 10)
    assert truth[-1].pose.pose.position.x == -5.0
    # a pose in a wall: the emulator ignores it (and says so), the driver keeps running
    reply = ros.call(SetPose, 'set_pose', SetPose.Request(x=-10.0, set_x=True))
    assert reply.success  # sent; the simulator decides
    assert ros.spin_until(lambda: emulator.bad_sim_commands == 1, 10)
    assert process.poll() is None
