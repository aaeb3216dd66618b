"""The demo's picture of Pioneers sharing a world: which scan points fall on another robot's
body (hand-worked geometry), and the picture and summary lines from the demo scripts."""

import math
import types

import numpy as np
import pytest
from helpers import listening_node, spin_until
from nav_msgs.msg import Odometry
from sensor_msgs.msg import LaserScan

from legacy_robot_common.world_map import WorldMap, WorldMapNode
from p2os_driver import fleet_picture
from p2os_driver.plugin import OfficeTour, write_shared_world
from p2os_driver.world import default_world_path, load_world

BOX = types.SimpleNamespace(length=600.0, width=400.0)  # mm: 0.3 m and 0.2 m half sizes


@pytest.mark.parametrize(
    ('point', 'on'),
    [
        ((0.0, 0.0), True),  # the centre
        ((0.29, 0.19), True),  # inside, by a corner
        ((0.34, 0.0), True),  # 4 cm past the front
        ((0.36, 0.0), False),  # 6 cm past it
        ((0.0, -0.249), True),  # 4.9 cm past a side
        ((0.0, -0.251), False),
        ((0.33, 0.23), True),  # 3 cm past the corner each way: 4.2 cm from it
        ((0.34, 0.24), False),  # 4 cm each way: 5.7 cm
    ],
)
def test_a_point_is_on_a_body_within_5_cm_of_its_outline(point, on):
    assert bool(fleet_picture.on_body([point], (0.0, 0.0, 0.0), BOX)[0]) is on


def test_the_body_turns_and_moves_with_its_pose():
    pose = (2.0, 1.0, math.pi / 2)  # facing +y: the 0.6 m length now lies along y
    points = [(2.0, 1.34), (2.0, 1.36), (2.24, 1.0), (2.26, 1.0)]
    assert fleet_picture.on_body(points, pose, BOX).tolist() == [True, False, True, False]
    corners = fleet_picture.body_corners(pose, BOX)
    assert corners[0] == pytest.approx([1.8, 1.3])  # front left: +y ahead, -x on its left
    xs, ys = fleet_picture.body_outline(pose, BOX)
    assert len(xs) == 5 and (xs[0], ys[0]) == (xs[-1], ys[-1])


def truth(x, y, th, stamp):
    msg = Odometry()
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int(stamp % 1 * 1e9)
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    msg.pose.pose.orientation.z, msg.pose.pose.orientation.w = math.sin(th / 2), math.cos(th / 2)
    return msg


def scan_of_a_face(distance, half_width, stamp):
    """181 rays over ±90°: those whose line meets the plane x = distance within half_width + 0.1
    m end there, the others see nothing (range_max)."""
    msg = LaserScan()
    msg.header.stamp.sec = int(stamp)
    msg.header.stamp.nanosec = int(stamp % 1 * 1e9)
    msg.angle_min, msg.angle_increment, msg.range_max = -math.pi / 2, math.pi / 180, 30.0
    angles = msg.angle_min + msg.angle_increment * np.arange(181)
    with np.errstate(divide='ignore'):
        across = distance * np.tan(angles)
    face = (np.abs(angles) < math.pi / 3) & (np.abs(across) <= half_width + 0.1)
    msg.ranges = np.where(face, distance / np.cos(angles), msg.range_max).tolist()
    return msg, int((np.abs(across[face]) <= half_width + fleet_picture.ON_BODY).sum())


def test_the_scan_points_on_another_robot_are_counted_at_the_scans_time(tmp_path):
    """r1 at the origin facing +x scans r2, which stood 2 m ahead facing back when r1 scanned
    and has driven off since: r1's points on r2's near face are counted (r2's pose nearest in
    time to the scan), the rays past the face's side by 5 cm or more are not."""
    r1, r2 = OfficeTour(), OfficeTour()
    r1.on_message('ground_truth', truth(0.0, 0.0, 0.0, 100.0))
    r2.on_message('ground_truth', truth(2.0, 0.0, math.pi, 100.0))
    r2.on_message('ground_truth', truth(2.0, 3.0, math.pi / 2, 105.0))  # gone
    half_length, half_width = r2.model.length / 2000.0, r2.model.width / 2000.0
    scan, expected = scan_of_a_face(2.0 - half_length, half_width, 100.1)
    r1.on_message('scan', scan)
    assert 5 < expected < int((np.asarray(scan.ranges) < 30.0).sum())  # some rays miss
    hits = fleet_picture.scan_hits({'r1': r1, 'r2': r2})
    assert hits == {('r1', 'r2'): expected}  # r2 has no scan: it sees nobody
    assert fleet_picture.hit_lines(hits) == [
        f"r1's last scan has {expected} points on r2 (within 5 cm of its body)"
    ]
    paths, lines = write_shared_world({'r1': r1, 'r2': r2}, tmp_path)
    assert lines == fleet_picture.hit_lines(hits)
    assert paths[0] == tmp_path / 'shared_world.png' and paths[0].stat().st_size > 10_000
    assert paths[1].read_text().splitlines() == ['scan_of,points_on,count', f'r1,r2,{expected}']


def test_no_scan_on_another_robot_is_said_so():
    r1, r2 = OfficeTour(), OfficeTour()
    r1.on_message('ground_truth', truth(0.0, 0.0, 0.0, 100.0))
    r2.on_message('ground_truth', truth(0.0, 3.0, 0.0, 100.0))  # beside r1, off its face
    r1.on_message('scan', scan_of_a_face(1.0, 0.3, 100.0)[0])
    hits = fleet_picture.scan_hits({'r1': r1, 'r2': r2})
    assert hits == {('r1', 'r2'): 0}
    assert fleet_picture.hit_lines(hits) == ["no robot's last scan saw another robot"]


def odom(x, y, frame):
    msg = Odometry()
    msg.header.frame_id = frame
    msg.pose.pose.position.x, msg.pose.pose.position.y = x, y
    return msg


def test_the_odometry_path_starts_at_the_robots_own_start_pose_in_a_shared_world():
    """In a shared world the second robot starts away from the map's home: bringup's map → odom
    transform (world_map, on /tf_static) says where, and the picture's odometry path starts
    there, turned by the start heading, not at the home."""
    world = load_world(default_world_path())
    start = (world.start[0] / 1000.0 + 3.0, world.start[1] / 1000.0 - 1.5, math.pi / 2)
    tour = OfficeTour()
    with listening_node('demo_monitor') as (node, executor):
        grid = WorldMap(np.zeros((4, 4), np.int8), 0.5, (0.0, 0.0), start)
        world_map = WorldMapNode(grid, 'r2/odom', '/r2', map_topic=None, context=node.context)
        executor.add_node(world_map)
        tour.setup(node, '/r2')
        assert spin_until(executor, lambda: 'r2/odom' in tour.odom_origins, 10)
        world_map.destroy_node()
    assert tour.odom_origins['r2/odom'] == pytest.approx(start)
    for x, y in ((0.0, 0.0), (1.0, 0.0), (1.0, 0.5)):
        tour.on_message('odom', odom(x, y, 'r2/odom'))
    xs, ys = tour.odometry_in_map(world)
    # 1 m ahead of a robot facing +y is 1 m up the map; 0.5 m to its left is 0.5 m to -x
    assert xs == pytest.approx([start[0], start[0], start[0] - 0.5])
    assert ys == pytest.approx([start[1], start[1] + 1.0, start[1] + 1.0])
    alone = OfficeTour()  # no transform (a robot run without bringup's map): the home
    alone.on_message('odom', odom(0.0, 0.0, 'odom'))
    assert alone.odometry_in_map(world) == ([world.start[0] / 1000.0], [world.start[1] / 1000.0])
