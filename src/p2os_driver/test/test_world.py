"""Worlds (docs/protocols/p2os.md §5.1): ArMap and ROS map parsing, ray casting against hand-worked
distances, contact and stall, and the world commands' bad input (exit code 2)."""

import math

import numpy as np
import pytest

from p2os_driver import emulator, world
from p2os_driver.models import MODELS
from p2os_driver.simulation import Room, SharedWorld, SimulatedPioneer
from p2os_driver.world import World, WorldError, parse_armap

# an example map of every kind of line (§5.1), its sections in another order and with junk lines
EXAMPLE = """2D-Map
MinPos: -1000 0
MaxPos: 3020 1000
NumPoints: 6
PointsAreSorted: false
Resolution: 20
LineMinPos: -2000 -1500
LineMaxPos: 4000 2500
NumLines: 6
LinesAreSorted: false
Display: "example"
Sources: laser
OriginLatLongAlt: 0 0 0
MapInfo: GoalType Name=Goal "Label=Goal"
MapInfo: SectorType Name=Crate
ObjectInfo: ignored by ARIA
Cairn: RobotHome 0 0 0 "" ICON "Home"
Cairn: Goal 3000 1500 0 "" ICON "Corner"
Cairn: ForbiddenLine 0 0 0 "" ICON "" 1000 -1500 1000 -500
Cairn: Reflector 0 0 0 "" ICON "" 3990 -500 3990 500
Cairn: Crate 0 0 0 "" ICON "crate1" 2000 1000 2500 1500
DATA
3000 0
3020 0
3000 20
3020 20
-1000 1000
-980 1000
3000.5 7
 12 12
LINES
-2000 -1500 4000 -1500
4000 -1500 4000 2500
4000 2500 -2000 2500
-2000 2500 -2000 -1500
1500 -200 2500 -200
2500 -200 2500 300
1 2 3
99999999 0 0 0
Cairn: Dock 5 5 0 "" ICON
"""


def test_every_header_key_cairns_and_sections_in_any_order():
    m = parse_armap(EXAMPLE)
    assert m.category == '2D-Map'
    for key in (
        'MinPos',
        'MaxPos',
        'NumPoints',
        'PointsAreSorted',
        'Resolution',
        'LineMinPos',
        'LineMaxPos',
        'NumLines',
        'LinesAreSorted',
        'Display',
        'Sources',
        'OriginLatLongAlt',
    ):
        assert key in m.header, key
    assert m.header['Display'] == ['example']
    assert m.resolution == 20
    assert len(m.points) == 6 and len(m.lines) == 6
    assert [c.type for c in m.cairns] == [
        'RobotHome',
        'Goal',
        'ForbiddenLine',
        'Reflector',
        'Crate',
    ]
    assert m.cairns[3].from_to == (3990, -500, 3990, 500)
    assert m.start_pose() == (0.0, 0.0, 0.0)
    assert [c.type for c in m.forbidden()] == ['ForbiddenLine']
    assert m.sector_types() == {'Crate': {}}
    # two bad DATA lines, two bad LINES lines, one cairn with 6 arguments
    assert m.skipped == 5
    assert m.skipped_examples[0].startswith('29: 3000.5 7')


def test_start_pose_dock_when_no_home_and_write_round_trip():
    text = EXAMPLE.replace('Cairn: RobotHome 0 0 0 "" ICON "Home"\n', '')
    text = text.replace(
        'Cairn: Goal 3000', 'Cairn: dock 500 -700 90 "" ICON "d"\nCairn: Goal 3000'
    )
    m = parse_armap(text)
    assert m.start_pose() == pytest.approx((500, -700, math.pi / 2))
    again = parse_armap(world.write_armap(m))
    assert np.array_equal(again.points, m.points) and np.array_equal(again.lines, m.lines)
    assert [c.type for c in again.cairns] == [c.type for c in m.cairns]
    assert again.header['NumPoints'] == ['6'] and again.skipped == 0


def test_not_a_map_and_no_walls():
    with pytest.raises(WorldError, match='not an ARIA map'):
        parse_armap('P5\n1 1\n255\n')
    with pytest.raises(WorldError, match='no walls'):
        World.from_armap(parse_armap('2D-Map\nDATA\n1.5 2\n'))


def _cast(w, x, y, degrees, max_range=32767.0, sensor='laser'):
    return w.cast(x, y, np.radians(degrees), max_range, sensor)[0]


def test_ray_cast_exact_and_amrisim_grid_against_hand_worked_distances():
    m = parse_armap(EXAMPLE)
    exact = World.from_armap(m)
    grid = World.from_armap(m, 'grid')
    # from Home (0, 0): -90° to y = -1500, 180° to x = -2000, 0° to the L wall at x = 2500
    assert _cast(exact, 0, 0, [-90, 180, 0]) == pytest.approx([1500, 2000, 2500])
    # the grid: a wall seen from its cell's far side reads 20 mm short (§5.2)
    assert _cast(grid, 0, 0, [-90, 180, 0]) == pytest.approx([1480, 1980, 2500])
    # the point (-1000, 1000): exact, a 20 mm square around it; grid, the cell [-1000, -980)
    assert _cast(exact, -1000, 0, [90]) == pytest.approx([990])
    assert _cast(grid, -990, 0, [90]) == pytest.approx([1000])
    # the reflector strip (20 mm thick around x = 3990) returns 2; from (3000, -300)
    r, ret, _ = exact.cast(3000, -300, [0.0], 32767)
    assert r[0] == pytest.approx(980) and ret[0] == 2
    # the crate box blocks the ray along y at x = 2200 (box from y = 1000)
    assert _cast(exact, 2200, 300, [90]) == pytest.approx(700)
    # the forbidden line at x = 1000 is not solid; diagonal to the corner (4000, 2500) from Home
    assert _cast(exact, 0, 0, [math.degrees(math.atan2(-1500, 1000))]) == pytest.approx(
        math.hypot(1000, 1500)
    )
    # many rays at once equal one at a time (the bucket walk misses nothing)
    angles = np.linspace(-math.pi, math.pi, 721)
    together = exact.cast(100, 50, angles, 32767)[0]
    single = [exact.cast(100, 50, [a], 32767)[0][0] for a in angles[::60]]
    assert together[::60] == pytest.approx(single)


def test_ray_cast_max_range_min_range_and_sonar_visibility():
    walls = World([(-5000, -5000, 5000, -5000)])
    assert _cast(walls, 0, 0, [90], 5000) == pytest.approx([5000])  # nothing: max range
    r = walls.cast(0, -4950, [-math.pi / 2], 5000, min_range=100)[0]
    assert r[0] == 100
    hidden = World([(1000, -100, 1000, 100)], segment_returns=[(1, 0, 1)])
    assert _cast(hidden, 0, 0, [0], 5000, 'sonar') == pytest.approx([5000])
    assert _cast(hidden, 0, 0, [0], 5000, 'laser') == pytest.approx([1000])


def test_sector_attributes_each_count():
    text = EXAMPLE.replace(
        'MapInfo: SectorType Name=Crate',
        'MapInfo: SectorType Name=Crate Sim.LaserReflect=3 Sim.Obstacle=no',
    )
    w = World.from_armap(parse_armap(text))
    r, ret, _ = w.cast(2200, 300, [math.pi / 2], 32767)
    assert r[0] == pytest.approx(700) and ret[0] == 4
    assert w.contact(2250, 1250, 100) is None  # no obstacle: the robot may pass through


def test_ros_map_yaml_pgm_and_png(tmp_path):
    image = np.full((40, 60), 254, np.uint8)
    image[:, 50] = 0  # a wall at column 50: x = -1 + 50 * 0.05 = 1.5 m
    (tmp_path / 'map.pgm').write_bytes(b'P5\n# comment\n60 40\n255\n' + image.tobytes())
    (tmp_path / 'map.yaml').write_text(
        'image: map.pgm\nresolution: 0.05\norigin: [-1.0, -1.0, 0.0]\nnegate: 0\n'
        'occupied_thresh: 0.65\nfree_thresh: 0.196\n'
    )
    w = world.load_world(str(tmp_path / 'map.yaml'))
    assert _cast(w, 0, 0, [0]) == pytest.approx([1500])
    from PIL import Image

    Image.fromarray(image).save(tmp_path / 'map.png')
    (tmp_path / 'png.yaml').write_text('image: map.png\nresolution: 0.05\norigin: [-1, -1, 0]\n')
    assert _cast(world.load_world(str(tmp_path / 'png.yaml')), 0, 0, [0]) == pytest.approx([1500])


def test_world_to_map_converts_both_ways(tmp_path):
    source = tmp_path / 'example.map'
    source.write_text(EXAMPLE)
    assert world.world_to_map_main([str(source), str(tmp_path / 'out.yaml')]) == 0
    back = tmp_path / 'back.map'
    assert world.world_to_map_main([str(tmp_path / 'out.yaml'), str(back)]) == 0
    w = world.load_world(str(back))
    # walls survive the trip to within a cell (50 mm)
    assert _cast(w, 0, 0, [-90])[0] == pytest.approx(1500, abs=60)


def _bad_ros_map(tmp_path):
    (tmp_path / 'short.pgm').write_bytes(b'P5\n60 40\n255\n' + bytes(100))
    (tmp_path / 'short.yaml').write_text('image: short.pgm\nresolution: 0.05\n')
    return tmp_path / 'short.yaml'


def test_bad_world_files_exit_2(tmp_path, capsys):
    not_map = tmp_path / 'notes.map'
    not_map.write_text('hello\n')
    empty = tmp_path / 'empty.map'
    empty.write_text('2D-Map\nNumPoints: 0\nDATA\n1 x\n')
    absurd = tmp_path / 'absurd.map'
    absurd.write_text('2D-Map\nLINES\n0 0 99000000 0\n')
    cases = [
        (['--world', str(tmp_path / 'missing.map')], 'does not exist'),
        (['--world', str(not_map)], 'not an ARIA map'),
        (['--world', str(empty)], 'no walls'),
        (['--world', str(absurd)], 'no walls'),
        (['--world', str(_bad_ros_map(tmp_path))], 'PGM header says 60x40'),
        (['--world', 'default', '--start=-10000,0,0'], 'inside or touching a wall'),
        (['--world', 'default', '--start', '1,2'], 'start pose looks like'),
        (['--world', 'default', '--start', '1e12,0,0'], 'not a place in a building'),
    ]
    for arguments, message in cases:
        assert emulator.main(['--no-tcp', '--pty', *arguments]) == 2, arguments
        assert message in capsys.readouterr().err, arguments
    assert world.world_to_map_main([str(not_map), str(tmp_path / 'x.yaml')]) == 2
    assert 'not an ARIA map' in capsys.readouterr().err


def test_default_world_loads_with_home_and_shipped_features():
    w = world.load_world(world.default_world_path())
    assert w.armap.skipped == 0
    assert w.start == (-8500.0, 0.0, 0.0)
    assert w.contact(*w.start[:2], MODELS['p3dx'].radius) is None
    assert {c.type for c in w.armap.cairns} >= {'RobotHome', 'Dock', 'Reflector', 'ForbiddenArea'}


def _robot(room, model='p3dx', **options):
    r = SimulatedPioneer(MODELS[model], room, noise=False, **options)
    r.enabled = True
    return r


def test_stall_at_a_wall_turning_allowed_and_bumper_option():
    w = World([(1000, -2000, 1000, 2000)])
    robot = _robot(w, 'p2pb')  # a PeopleBot: 5 front and 5 rear bumper switches
    robot.set_velocity(400)
    for _ in range(100):
        robot.step(0.05)
    assert robot.pose[0] == pytest.approx(1000 - robot.model.radius, abs=10)
    assert robot.stalled
    body = emulator.sip_body(robot, emulator.EmulatorOptions(model='p2pb'))
    stall_word = int.from_bytes(body[12:14], 'little')
    assert stall_word & 0x0101 == 0x0101
    assert stall_word >> 8 & 0xFE == 0b1000  # the middle switch of the front bar (5 switches)
    robot.set_velocity(0)
    robot.set_rotation(60)
    heading = robot.pose[2]
    for _ in range(10):
        robot.step(0.05)
    assert robot.pose[2] != pytest.approx(heading)  # turning in place at the wall happens
    assert not robot.stalled
    quiet = _robot(World([(1000, -2000, 1000, 2000)]), bumpers=False)
    quiet.set_velocity(400)
    for _ in range(100):
        quiet.step(0.05)
    assert quiet.stalled and quiet.bumper_bits == (0, 0)  # AMRISim: stall, no bumpers


def test_odometry_error_options():
    robot = _robot(Room(1e6, 1e6), odometry_scale=0.1, odometry_drift=0.01)
    robot.set_velocity(500)
    for _ in range(40):
        robot.step(0.05)
    assert robot.odometry[0] == pytest.approx(robot.pose[0] * 1.1, rel=0.01)
    assert robot.odometry[2] > 0.005 and robot.pose[2] == 0


def test_sonar_from_the_model_table_and_cone():
    w = World([(2000, -3000, 2000, 3000)])
    robot = _robot(w)
    robot.pose = [0.0, 0.0, 0.0]
    sx = MODELS['p3dx'].sonar[3][0]  # disc 3 at 10°, x 166
    ranges = robot.sonar_ranges([3, 0])
    assert ranges[0] == pytest.approx((2000 - sx) / math.cos(math.radians(10)), abs=1)
    assert ranges[1] == 5000  # disc 0 looks sideways: no echo
    cone = _robot(w, sonar_beam=30)
    assert cone.sonar_ranges([3])[0] < ranges[0]  # the beam's edge ray is shorter


def test_set_true_pose_refuses_walls_and_absurd_places():
    robot = _robot(Room(4000, 4000))
    assert robot.set_true_pose(500, 500, 1.0)
    assert robot.pose == pytest.approx([500, 500, 1.0]) and robot.laser.moved
    assert not robot.set_true_pose(1990, 0, 0)
    assert not robot.set_true_pose(float('nan'), 0, 0)
    assert robot.pose[0] == 500


@pytest.mark.parametrize('bucket', world.BUCKETS)
@pytest.mark.parametrize('geometry', ['exact', 'grid'])
def test_the_bucket_index_misses_nothing_against_brute_force(geometry, bucket, monkeypatch):
    """A random map with a dense wall (merged point squares) cast through the index, at each
    bucket size, equals every ray tested against every primitive."""
    monkeypatch.setattr(world, 'BUCKETS', (bucket,))
    rng = np.random.default_rng(5)
    armap = world.ArMap()
    walls = [rng.integers(-6000, 6000, 2) + np.outer(np.arange(300), rng.integers(-20, 21, 2))]
    armap.points = np.concatenate(walls + [rng.integers(-6000, 6000, (3000, 2))])
    armap.lines = rng.integers(-6000, 6000, (40, 4))
    w = World.from_armap(armap, geometry)
    assert w.bucket == bucket
    angles = rng.uniform(-math.pi, math.pi, 300)
    fast = w.cast(150.0, -75.0, angles, 32767)[0]
    prims = np.arange(len(w.segments) + len(w.boxes))
    for angle, got in zip(angles[::10], fast[::10], strict=True):
        n = len(prims)
        t, _ = w._intersect(
            np.full(n, 150.0),
            np.full(n, -75.0),
            np.full(n, math.cos(angle)),
            np.full(n, math.sin(angle)),
            prims,
        )
        assert got == pytest.approx(min(t.min(), 32767))


@pytest.mark.parametrize('sensor', ['laser', 'sonar', 'obstacle'])
def test_a_small_world_cast_against_every_primitive_equals_the_index(sensor):
    """The office floor (lines, reflectors, sectors of every kind) is small enough to test every
    ray against every primitive at once; that answers as the bucket index does: distances,
    returns, incidence, and the nearest obstacle, rays along the axes included."""
    w = world.load_world(world.default_world_path())
    assert w.every_primitive
    rng = np.random.default_rng(11)
    xmin, ymin, xmax, ymax = w.bounds()
    axes = np.array([0.0, math.pi / 2, math.pi, -math.pi / 2])
    for _ in range(60):
        x, y = rng.uniform(xmin, xmax), rng.uniform(ymin, ymax)
        angles = np.concatenate([axes, rng.uniform(-math.pi, math.pi, 60)])
        casts = []
        for every in (True, False):
            w.every_primitive = every
            casts.append(w.cast(x, y, angles, 32767.0, sensor, min_range=100.0))
        for fast, indexed in zip(*casts, strict=True):
            np.testing.assert_allclose(fast, indexed, atol=1e-9)
        for reach in (250.0, 750.0):
            w.every_primitive = True
            fast = w.nearest(x, y, reach)
            w.every_primitive = False
            indexed = w.nearest(x, y, reach)
            assert fast.clearance == pytest.approx(indexed.clearance)
            if indexed.clearance < reach:
                assert fast.bearing == pytest.approx(indexed.bearing)


def _two_robots_facing(gap):
    """Two p3dx in a 20 x 20 m room on the x axis, noses gap mm apart, facing each other."""
    shared = SharedWorld(Room(20000, 20000))
    half = MODELS['p3dx'].length / 2
    a = shared.add(MODELS['p3dx'], start=(-half - gap / 2, 0.0, 0.0), noise=False)
    b = shared.add(MODELS['p3dx'], start=(half + gap / 2, 0.0, math.pi), noise=False)
    return shared, a, b


def test_robots_in_one_world_see_each_other_in_laser_and_sonar():
    shared, a, b = _two_robots_facing(1000)
    ranges, reflect = a.laser_scan()
    angles = a.laser.angles()
    half, width = MODELS['p3dx'].length / 2, MODELS['p3dx'].width
    nose = 1000 + half - a.laser.mount[0]  # from a's laser to the plane of b's nose
    edge = math.degrees(math.atan2(width / 2, nose))  # b's nose is width wide
    inside = np.abs(np.degrees(angles)) < edge - 2
    outside = np.abs(np.degrees(angles)) > edge + 2
    assert inside.sum() >= 15
    assert np.all(np.abs(ranges[inside] - nose / np.cos(angles[inside])) < 50)
    assert np.all(ranges[outside] > 5000)  # past b: the room's far wall
    assert not reflect[inside].any()
    # sonar disc 4 (10° right of ahead), from its mount to the plane of the other's nose
    shared, a, b = _two_robots_facing(600)
    sx, sy, sth = MODELS['p3dx'].sonar[4]
    expected = (600 + half - sx) / math.cos(math.radians(sth))
    assert a.sonar_ranges([4])[0] == pytest.approx(expected, abs=50)
    assert b.sonar_ranges([4])[0] == pytest.approx(expected, abs=50)
    lone = SharedWorld(Room(20000, 20000)).add(MODELS['p3dx'], noise=False)
    assert lone.sonar_ranges([4])[0] == 5000  # its own body is not an echo


def test_robots_stop_against_each_other_with_a_stall():
    shared, a, b = _two_robots_facing(600)
    a.enabled = True
    a.set_velocity(400)
    stalls = []
    for _ in range(150):
        shared.step(0.02)
        stalls.append(a.stalled)
    radius = MODELS['p3dx'].radius
    assert b.pose[0] - a.pose[0] == pytest.approx(2 * radius, abs=10)  # stopped at contact
    first = stalls.index(True)
    assert all(stalls[first:])  # and the stall holds while it pushes
    assert b.pose[:2] == pytest.approx(list(b.initial_pose[:2]))  # b is not pushed
    a.set_velocity(-200)
    for _ in range(20):
        shared.step(0.02)
    assert not a.stalled and b.pose[0] - a.pose[0] > 2 * radius


def test_the_shared_world_picture_shows_r2_in_r1s_scan(tmp_path):
    from p2os_driver import shared_world_picture as picture

    office = world.load_world(world.default_world_path())
    _, robots, paths = picture.drive_two(office)
    assert robots['r1'].stalled and robots['r2'].stalled  # they met and push against each other
    sx, sy = picture.scan_points(robots['r1'])
    x2, y2 = robots['r2'].pose[0] / 1000.0, robots['r2'].pose[1] / 1000.0
    on_r2 = np.hypot(sx - x2, sy - y2) < 0.35  # within r2's footprint's half diagonal
    assert on_r2.sum() >= 10
    assert picture.main([str(tmp_path / 'shared.png')]) == 0
    assert (tmp_path / 'shared.png').stat().st_size > 10_000


def test_a_robot_scraping_a_wall_still_stops_at_another_robot():
    """Leaving a wall it touches is no licence to drive into a robot: walls and robots are
    each asked whether the step nears them."""
    shared = SharedWorld(World([(-5000, 240, 5000, 240), (-5000, -3000, 5000, -3000)]))
    a = shared.add(MODELS['p3dx'], start=(0.0, 40.0, 0.0), noise=False)  # 200 mm from the wall
    b = shared.add(MODELS['p3dx'], start=(1200.0, 0.0, 0.0), noise=False)
    a.enabled = True
    a.set_velocity(300)
    for _ in range(300):
        shared.step(0.02)
    gap = math.hypot(b.pose[0] - a.pose[0], b.pose[1] - a.pose[1])
    assert gap == pytest.approx(2 * MODELS['p3dx'].radius, abs=10) and a.stalled
