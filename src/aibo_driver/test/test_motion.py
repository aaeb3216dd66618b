"""The walk planner and dead reckoning (pure): velocities → R-CODE segments, odometry."""

import math

import pytest

from aibo_driver import rcode
from aibo_driver.motion import DeadReckoning, MotionSettings, WalkPlanner, plan

S = MotionSettings()


def run(planner, now, error=''):
    """next_lines, each reported done at once (the dog took it)."""
    lines = planner.next_lines(now)
    for line in lines:
        planner.sent(line, error, now)
    return lines


def test_plan_direction_gait_arcs_and_bad_values():
    motion, notes = plan(0.06, 0.0, 0.0, S)
    assert (motion.kind, motion.gait, motion.direction, notes) == ('walk', 'normal', 0.0, [])
    motion, _ = plan(0.0, -0.02, 0.0, S)
    assert (motion.gait, motion.direction) == ('slow', -90.0)
    motion, _ = plan(-0.05, 0.0, 0.0, S)
    assert abs(motion.direction) == 180.0
    motion, notes = plan(0.0, 0.0, -0.3, S)
    assert (motion.kind, motion.direction, motion.gait) == ('turn', -1.0, 'slow')
    motion, notes = plan(0.06, 0.0, 0.1, S)  # an arc: the walk is the larger part
    assert motion.kind == 'walk' and notes[0][0] == 'arc'
    motion, notes = plan(0.01, 0.0, 0.5, S)
    assert motion.kind == 'turn' and 'turning only' in notes[0][1]
    motion, notes = plan(1.0, 0.0, 0.0, S)
    assert motion.gait == 'normal' and notes[0][0] == 'too-fast'
    assert plan(0.001, 0.0, 0.001, S) == (None, [])
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match='non-finite'):
            plan(bad, 0.0, 0.0, S)


def test_settings_are_validated():
    with pytest.raises(ValueError, match='positive'):
        MotionSettings(normal_speed=0.0)
    with pytest.raises(ValueError, match='slow gait'):
        MotionSettings(slow_speed=0.2)
    with pytest.raises(ValueError, match='segment_mm'):
        MotionSettings(segment_mm=40000)


def test_a_steady_command_sends_one_walk_a_new_direction_stops_first():
    planner = WalkPlanner()
    planner.command(0.06, 0.0, 0.0, 0.0)
    assert run(planner, 0.0) == ['PLAY:ACTION:WALK:0:10000']
    for t in (0.1, 0.2, 0.3):  # the same command again and again: nothing new is sent
        planner.command(0.06, 0.005, 0.0, t)
        assert run(planner, t) == []
    planner.command(0.0, 0.06, 0.0, 0.4)  # 90° off: STOP_WALK, then the new segment
    assert run(planner, 0.4) == [rcode.stop_walk(), 'PLAY:ACTION:WALK:90:10000']
    planner.command(0.0, 0.02, 0.0, 0.5)  # the same direction at the slow gait
    assert run(planner, 0.5) == [rcode.stop_walk(), 'PLAY:ACTION:MOVE.MOVE.SLOW:90:10000']
    planner.command(0.0, 0.0, 0.0, 0.6)
    assert run(planner, 0.6) == [rcode.stop_walk()]
    assert run(planner, 0.7) == [] and planner.current is None
    assert (planner.segments, planner.stops) == (3, 3)


def test_nothing_piles_up_while_a_line_is_in_flight_or_the_queue_is_busy():
    planner = WalkPlanner()
    planner.command(0.06, 0.0, 0.0, 0.0)
    first = planner.next_lines(0.0)
    planner.command(0.0, 0.06, 0.0, 0.05)  # the first is not answered yet
    assert planner.next_lines(0.05) == []
    planner.sent(first[0], '', 0.1)
    planner.on_wait(3, 0.15, 0.2)  # an action and a head move besides the walk
    # the walk ends so that the queue can drain; the new segment waits for it
    assert run(planner, 0.2) == [rcode.stop_walk()]
    planner.on_wait(2, 0.25, 0.3)
    assert run(planner, 0.3) == []
    planner.on_wait(0, 0.05, 0.35)  # a poll older than the last motion line: ignored
    assert planner.wait == 2
    planner.on_wait(1, 0.4, 0.4)  # one action left playing: the segment queues behind it
    assert run(planner, 0.4) == [rcode.stop_walk(), 'PLAY:ACTION:WALK:90:10000']


def test_turns_go_in_chunks_the_next_when_the_queue_is_empty():
    planner = WalkPlanner()
    planner.command(0.0, 0.0, 0.5, 0.0)
    assert run(planner, 0.0) == ['PLAY:ACTION:TURN:45']
    planner.on_wait(1, 0.5, 0.5)
    assert run(planner, 0.5) == []
    chunk = math.radians(45) / 0.5  # s per chunk at the normal turn rate
    assert run(planner, chunk + 0.1) == []  # believed finished, the dog still says Wait 1
    planner.on_wait(0, chunk + 0.2, chunk + 0.2)
    assert run(planner, chunk + 0.2) == ['PLAY:ACTION:TURN:45']
    assert planner.odometry.yaw == pytest.approx(math.radians(45))


def test_an_error_from_the_dog_counts_and_the_segment_is_not_believed():
    planner = WalkPlanner()
    planner.command(0.06, 0.0, 0.0, 0.0)
    run(planner, 0.0, error='ERROR: unknown action WALK')
    assert planner.errors == 1 and planner.current is None
    assert planner.velocity(1.0) == (0.0, 0.0, 0.0)
    planner.command(0.06, 0.0, 0.0, 1.0)
    assert planner.next_lines(1.0) == []  # not asked again at once (no storm of ERRORs)
    assert planner.next_lines(2.5) == ['PLAY:ACTION:WALK:0:10000']


def test_odometry_integrates_what_was_confirmed_with_growing_covariance():
    planner = WalkPlanner()
    planner.command(0.06, 0.0, 0.0, 0.0)
    run(planner, 1.0)  # confirmed at t = 1
    assert planner.velocity(11.0) == (pytest.approx(0.06), 0.0, 0.0)
    odometry = planner.odometry
    assert (odometry.x, odometry.y) == (pytest.approx(0.6), 0.0)
    small = odometry.variances()
    planner.command(0.0, 0.0, 0.0, 11.0)
    run(planner, 11.0)
    planner.velocity(20.0)
    assert odometry.x == pytest.approx(0.6) and odometry.variances() == small
    planner.command(0.0, 0.06, 0.0, 20.0)
    run(planner, 20.0)
    planner.velocity(30.0)
    assert odometry.y == pytest.approx(0.6) and odometry.variances()[0] > small[0]


def test_a_walk_ends_after_its_distance_and_dead_reckoning_turns_while_walking():
    settings = MotionSettings(segment_mm=600)
    planner = WalkPlanner(settings)
    planner.command(0.06, 0.0, 0.0, 0.0)
    run(planner, 0.0)
    planner.velocity(100.0)
    assert planner.odometry.x == pytest.approx(0.6) and planner.current is None
    reckoning = DeadReckoning()
    reckoning.set_velocity(0.0, (0.1, 0.0, math.pi / 10))
    reckoning.advance(10.0)  # half a circle of radius 1/π m
    assert (reckoning.x, reckoning.y) == (pytest.approx(0.0, abs=1e-9), pytest.approx(2 / math.pi))
