"""bringup p2os --sim --world: the world as nav_msgs/OccupancyGrid on map (transient local) and
map → odom at the start pose, seen from another process; --world's bad input."""

import math

import pytest
from helpers import listening_node, run_module, spin_until, start_module
from nav_msgs.msg import OccupancyGrid
from tf2_msgs.msg import TFMessage

from legacy_robot_common.tf import TF_STATIC_LISTENER_QOS
from legacy_robot_common.world_map import MAP_QOS

BRINGUP = 'legacy_robot_bringup.compose'
ROOM = """2D-Map
Cairn: RobotHome 1000 500 90 "" ICON "Home"
LINES
-2000 -1500 4000 -1500
4000 -1500 4000 2500
4000 2500 -2000 2500
-2000 2500 -2000 -1500
"""


@pytest.fixture
def listener():
    with listening_node('world_map_listener') as pair:
        yield pair


def test_bringup_publishes_the_world_map_and_map_to_odom(listener, tmp_path):
    node, executor = listener
    world = tmp_path / 'room.map'
    world.write_text(ROOM)
    maps, static = [], []
    process = start_module(BRINGUP, 'p2os', '--sim', '--world', str(world), '--duration', '30')
    try:
        # published once at start: it arrives only because it is latched (transient local)
        node.create_subscription(OccupancyGrid, '/map', maps.append, MAP_QOS)
        node.create_subscription(TFMessage, '/tf_static', static.append, TF_STATIC_LISTENER_QOS)

        def map_to_odom():
            return [
                t
                for m in static
                for t in m.transforms
                if (t.header.frame_id, t.child_frame_id) == ('map', 'odom')
            ]

        assert spin_until(executor, lambda: maps and map_to_odom(), 30), (
            process.stderr.read() if process.poll() is not None else 'no map'
        )
    finally:
        process.terminate()
        process.communicate(timeout=20)
    grid = maps[-1]
    assert grid.header.frame_id == 'map' and grid.info.resolution == pytest.approx(0.05)
    # the 6 m x 4 m room plus the 0.5 m margin on each side, in 5 cm cells
    assert (grid.info.width, grid.info.height) == (140, 100)
    assert grid.info.origin.position.x == pytest.approx(-2.5)
    cells = list(grid.data)
    assert cells.count(100) > 300 and set(cells) == {0, 100}
    transform = map_to_odom()[-1].transform
    assert (transform.translation.x, transform.translation.y) == pytest.approx((1.0, 0.5))
    assert 2 * math.atan2(transform.rotation.z, transform.rotation.w) == pytest.approx(math.pi / 2)


def test_world_needs_sim_and_a_readable_map(tmp_path):
    result = run_module(BRINGUP, 'p2os', '--world', 'x.map', '--duration', '1')
    assert result.returncode == 2 and '--world needs --sim' in result.stderr
    result = run_module(
        BRINGUP, 'p2os', '--sim', '--world', str(tmp_path / 'none.map'), '--duration', '1'
    )
    assert result.returncode == 2 and 'does not exist' in result.stderr


def test_several_robots_share_one_world_one_map_and_their_own_map_to_odom(listener, tmp_path):
    """bringup p2os:r1 p2os:r2 p2os:r3 --sim --world: one emulator world; the grid once on /map,
    and map → <robot>/odom at each robot's own start (--start, else spread out from RobotHome)."""
    node, executor = listener
    world = tmp_path / 'room.map'
    world.write_text(ROOM)
    maps, robot_maps, static = [], [], []
    process = start_module(
        BRINGUP,
        'p2os:r1',
        'p2os:r2',
        'p2os:r3',
        '--sim',
        '--world',
        str(world),
        '--start',
        'r3=-1000,1500,90',
        '--duration',
        '30',
    )
    try:
        node.create_subscription(OccupancyGrid, '/map', maps.append, MAP_QOS)
        node.create_subscription(OccupancyGrid, '/r1/map', robot_maps.append, MAP_QOS)
        node.create_subscription(OccupancyGrid, '/r2/map', robot_maps.append, MAP_QOS)
        node.create_subscription(OccupancyGrid, '/r3/map', robot_maps.append, MAP_QOS)
        node.create_subscription(TFMessage, '/tf_static', static.append, TF_STATIC_LISTENER_QOS)

        def map_to_odom():
            return {
                t.child_frame_id: t.transform.translation
                for m in static
                for t in m.transforms
                if t.header.frame_id == 'map' and t.child_frame_id.endswith('odom')
            }

        assert spin_until(executor, lambda: maps and len(map_to_odom()) == 3, 30), (
            process.stderr.read() if process.poll() is not None else f'{map_to_odom()}'
        )
        spin_until(executor, lambda: robot_maps, 1.0)  # none expected
    finally:
        process.terminate()
        output, _ = process.communicate(timeout=20)
    assert not robot_maps and len(maps) == 1
    starts = map_to_odom()
    assert sorted(starts) == ['r1/odom', 'r2/odom', 'r3/odom'], starts
    r1, r2, r3 = starts['r1/odom'], starts['r2/odom'], starts['r3/odom']
    assert (r1.x, r1.y) == pytest.approx((1.0, 0.5))  # the first robot at RobotHome
    assert math.hypot(r2.x - r1.x, r2.y - r1.y) > 0.5  # the second one clear of it
    assert (r3.x, r3.y) == pytest.approx((-1.0, 1.5))  # where --start put it
    assert 'shared by 3 robots' in output


@pytest.mark.parametrize(
    'arguments, message',
    [
        (['--start', 'r1=0,0,0', '--start', 'r2=100,0,0'], 'robot r2: its start pose'),
        (['--start', 'r2=3950,0,0'], 'robot r2: the start pose'),
        (['--start', 'r9=0,0,0'], '--start r9: not a robot in a shared world'),
    ],
)
def test_shared_world_start_poses_bad_input(tmp_path, arguments, message):
    world = tmp_path / 'room.map'
    world.write_text(ROOM)
    result = run_module(
        BRINGUP,
        'p2os:r1',
        'p2os:r2',
        '--sim',
        '--world',
        str(world),
        *arguments,
        '--duration',
        '1',
    )
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_several_p2os_robots_under_sim_share_the_office_world():
    result = run_module(BRINGUP, 'p2os:r1', 'p2os:r2', '--sim', '--duration', '2')
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('in a world shared by 2 robots, office.map') == 2, result.stdout
