"""Odometry arithmetic, the model table and the simulated robot (no I/O)."""

import math

import pytest

from p2os_driver.emulator import P2osEmulator, sip_body
from p2os_driver.models import MODELS, find_model
from p2os_driver.odometry import Odometry
from p2os_driver.protocol import decode_sip
from p2os_driver.simulation import Room, SimulatedPioneer


def test_model_lookup_is_case_insensitive_and_falls_back_to_p2dx():
    assert find_model('P2PB') == (MODELS['p2pb'], True)
    assert find_model('box') == (MODELS['p2dx'], False)  # MobileSim's "box"
    assert len(MODELS['p2pb'].sonar) == 24 and len(MODELS['amigo'].sonar) == 8
    assert MODELS['amigo'].vel_conv == 0.6154 and MODELS['p2at'].dist_conv == 1.32


def test_factor_overrides_replace_only_positive_values():
    model = MODELS['p2dx'].with_overrides(dist_conv=0.5, vel_conv=0.0, range_conv=None)
    assert (model.dist_conv, model.vel_conv, model.range_conv) == (0.5, 1.0, 0.268)


def emulated_sips(robot, emulator, seconds, cycle=0.1):
    """Step a robot and encode a SIP per cycle, as the emulator does."""
    for _ in range(int(round(seconds / cycle))):
        robot.step(cycle)
        yield decode_sip(sip_body(robot, emulator.options))


def test_odometry_follows_a_fast_robot_across_many_15_bit_wraps():
    """1.5 m/s at 10 Hz is 150 mm per SIP: Player/ROS p2os freeze there; we must not."""
    emulator = P2osEmulator()
    robot = emulator.robot
    robot.room = Room(1e9, 1e9)  # no walls: the robot drives a long circle
    robot.enabled = True
    robot.set_acceleration(3000)
    robot.set_velocity(1500)
    robot.set_rotation(10)
    odometry = Odometry(MODELS['p2dx'])
    for sip in emulated_sips(robot, emulator, 60.0):
        odometry.update(sip)
    x, y, th = robot.odometry
    assert odometry.distance == pytest.approx(89.0, abs=1.5)  # 60 s at 1.5 m/s, minus the ramp
    assert (odometry.x, odometry.y) == (
        pytest.approx(x / 1000, abs=0.05),
        pytest.approx(y / 1000, abs=0.05),
    )
    assert math.cos(odometry.yaw - th) > 0.999
    assert odometry.linear == pytest.approx(1.5, abs=0.01)
    assert odometry.angular == pytest.approx(math.radians(10), abs=0.01)


def test_odometry_resume_keeps_the_pose_and_zero_restarts_it():
    emulator = P2osEmulator()
    robot = emulator.robot
    robot.enabled = True
    robot.set_velocity(400)
    odometry = Odometry(MODELS['p2dx'])
    sips = emulated_sips(robot, emulator, 3.0)
    for sip in sips:
        odometry.update(sip)
    before = odometry.x
    odometry.resume()
    odometry.update(next(emulated_sips(robot, emulator, 0.1)))
    assert odometry.x == pytest.approx(before)
    odometry.zero()
    robot.set_odometry_origin()
    odometry.update(next(emulated_sips(robot, emulator, 0.1)))
    assert abs(odometry.x) < 0.05


def make_robot(model='p2dx', **kwargs):
    robot = SimulatedPioneer(MODELS[model], **kwargs)
    robot.enabled = True
    return robot


def test_velocity_ramps_with_the_acceleration_limit():
    robot = make_robot()
    robot.set_velocity(600)
    robot.step(1.0)
    assert robot.v == pytest.approx(300, abs=1)  # default 300 mm/s²
    robot.step(2.0)
    assert robot.v == pytest.approx(600)
    robot.emergency_stop()
    assert robot.v == 0


def test_disabled_motors_do_not_move():
    robot = make_robot()
    robot.enabled = False
    robot.set_velocity(500)
    robot.step(2.0)
    assert robot.pose[:2] == [0.0, 0.0]


def test_vel2_wheel_mode_turns_in_place():
    robot = make_robot()
    robot.set_wheels(-5, 5)  # left back, right forward: counter-clockwise
    robot.step(3.0)
    assert abs(robot.v) < 1 and robot.w == pytest.approx(100 * MODELS['p2dx'].diff_conv, rel=0.01)
    left, right = robot.wheel_velocities()
    assert (left, right) == (pytest.approx(-100), pytest.approx(100))


def test_move_and_head_reach_their_targets():
    robot = make_robot()
    robot.move(500)
    robot.step(6.0)
    assert robot.pose[0] == pytest.approx(500, abs=15)
    robot.head(90)
    robot.step(4.0)
    assert robot.pose[2] == pytest.approx(math.pi / 2, abs=0.02)


def test_position_moves_follow_the_acceleration_profile_and_stop_on_target():
    """MOVE and HEAD/DHEAD ramp with SETA/SETRA, cruise at SETV/SETRV and decelerate onto
    the target, as the firmware does (no proportional creep)."""
    robot = make_robot(room=Room(20000, 20000))
    robot.set_max(400)
    robot.set_acceleration(200)  # mm/s², accel
    robot.move(1000)
    speeds = []
    for _ in range(300):
        robot.step(0.05)
        speeds.append(robot.v)
    assert speeds[19] == pytest.approx(200, abs=1)  # 1 s at 200 mm/s²
    assert max(speeds) == pytest.approx(400)  # the SETV top
    assert robot.v == 0 and robot.pose[0] == pytest.approx(1000, abs=2)
    robot.set_max(45, rotational=True)
    robot.head(45, relative=True)
    turns = []
    for _ in range(200):
        robot.step(0.05)
        turns.append(robot.w)
    assert max(turns) == pytest.approx(math.radians(45))
    assert robot.w == 0 and robot.pose[2] == pytest.approx(math.pi / 4, abs=math.radians(0.5))
    robot.head(-90)  # absolute, the short way round
    robot.step(6.0)
    assert robot.w == 0 and robot.pose[2] == pytest.approx(-math.pi / 2, abs=math.radians(0.5))


def test_wall_stops_the_robot_with_stall_and_front_bumpers():
    robot = make_robot('p2pb', room=Room(2000, 2000))
    robot.set_velocity(500)
    robot.step(6.0)
    assert robot.pose[0] == pytest.approx(1000 - MODELS['p2pb'].radius, abs=20)
    assert robot.stalled and robot.bumped_front and robot.v == 0


def test_sonar_measures_the_distance_to_the_walls():
    robot = make_robot(room=Room(4000, 4000))
    robot.sonar_enabled = True
    readings = dict(robot.next_sonar_readings() + robot.next_sonar_readings())
    assert readings[3] == pytest.approx(2000 - 166, abs=30)  # front disc, 10° off axis
    assert readings[0] == pytest.approx(2000 - 136, abs=1)  # left side disc


def test_gripper_store_then_deploy_takes_travel_time():
    robot = make_robot()
    robot.gripper.command(7)  # store
    robot.step(0.5)
    assert robot.gripper.paddles_moving and robot.gripper.sip_byte() & 0x04
    robot.step(1.5)
    assert robot.gripper.sip_byte() == 0b00010010  # closed and up, nothing moving
    robot.gripper.command(16)
    robot.gripper.value(40)
    assert robot.gripper.grasp_time == 40


def test_battery_drains_over_time():
    robot = make_robot()
    robot.step(100.0)
    assert 12.9 < robot.battery < 13.0


def test_emulated_sip_reports_new_sonar_readings_only():
    emulator = P2osEmulator()
    emulator.robot.sonar_enabled = True
    sips = list(emulated_sips(emulator.robot, emulator, 0.4))
    discs = [d for sip in sips for d, _ in sip.sonar]
    assert discs == list(range(16))  # 4 new discs per cycle, in order


@pytest.mark.parametrize('model', sorted(MODELS))
def test_every_model_turns_to_a_heading(model):
    robot = make_robot(model, room=Room(20000, 20000))
    robot.head(90, relative=True)
    robot.step(5.0)
    assert robot.w == 0 and robot.pose[2] == pytest.approx(math.pi / 2, abs=math.radians(0.5))
    robot.move(-300)
    robot.step(5.0)
    assert robot.v == 0 and robot.pose[1] == pytest.approx(-300, abs=2)
