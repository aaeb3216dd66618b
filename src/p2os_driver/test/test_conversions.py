"""Records → ROS messages without a running graph."""

import math

import numpy as np
import pytest
from std_msgs.msg import Header

from p2os_driver import conversions as convert
from p2os_driver import protocol as p
from p2os_driver.client import Identity
from p2os_driver.models import MODELS, wheel_units
from p2os_driver.position import motion_trouble


def sip(**fields):
    values = dict(
        moving=False,
        x=0,
        y=0,
        theta=0,
        left_velocity=0,
        right_velocity=0,
        battery_decivolts=121,
        stall_bumpers=0x0101 | 0b100 << 8,
        control=0,
        flags=1,
        compass=0,
        sonar=[],
        analog_port=5,
        gripper_state=0,
        analog=255,
        digital_inputs=0x0A,
        digital_outputs=0x05,
    )
    values.update(fields)
    return p.StandardSip(**values)


def test_state_messages_from_a_sip():
    header = Header(frame_id='base_link')
    record = sip()
    assert convert.battery_msg(record, header).voltage == pytest.approx(12.1)
    motors = convert.motor_state_msg(record, header)
    assert motors.motors_enabled and motors.left_wheel_stalled and motors.right_wheel_stalled
    bumpers = convert.bumper_msg(record, MODELS['p2pb'], header)
    assert list(bumpers.front) == [False, True, False, False, False] and not any(bumpers.rear)
    io = convert.sip_io_msg(record, header)
    assert bytes(io.digital_inputs) == b'\x0a' and list(io.analog_inputs) == [pytest.approx(5.0)]
    assert io.selected_analog_port == 5


def test_battery_prefers_the_later_firmware_decivolt_field():
    later = sip(tail={'battery_x10': 262})  # a 26.2 V robot: more than the byte holds
    assert convert.battery_msg(later, Header()).voltage == pytest.approx(26.2)


def test_io_packet_and_gripper_messages():
    io = convert.io_packet_msg(p.IoPacket(b'\x01', b'\x02', [0, 2047]), Header())
    assert list(io.analog_inputs) == [0.0, pytest.approx(5.0)] and io.selected_analog_port == -1
    reading = p.read_sip_gripper_byte(0b00010010)
    msg = convert.gripper_msg(reading, 0b00010010, Header(), source=0)
    assert (msg.paddles, msg.lift) == (convert.PADDLES['closed'], convert.LIFT['up'])
    assert not msg.inner_beam_broken and msg.raw_state == 0b00010010


def test_sonar_points_use_only_fresh_in_range_readings():
    model = MODELS['amigo']
    ranges = [1.0, 2.0, 9.0] + [math.nan] * 5
    points = convert.sonar_points(model, ranges, [True, False, True] + [False] * 5, 0.1, 5.0)
    x, y, heading = model.sonar[0]  # only disc 0: disc 1 is stale, disc 2 out of range
    assert points == [(pytest.approx(x / 1000), pytest.approx(y / 1000 + 1.0), 0.0)]


def test_robot_info_carries_identity_factors_and_config():
    identity = Identity('rob', 'Pioneer', 'P2DX', MODELS['p2dx'], True, 'tcp://x:1')
    config = p.decode_config(p.encode_config({'name': 'rob', 'watchdog': 2000}))
    values = {kv.key: kv.value for kv in convert.robot_info_msg(identity, config, Header()).values}
    assert values['dist_conv factor'] == '0.84' and values['config watchdog'] == '2000'


def test_wheel_units_split_and_clamp():
    model = MODELS['p2dx']
    assert wheel_units(model, 400.0, 0.0) == (20, 20)
    left, right = wheel_units(model, 0.0, 0.56)  # (R-L)/2 = 100 mm/s
    assert (left, right) == (-5, 5)
    assert wheel_units(model, 5000.0, 0.0) == (127, 127)


def test_the_demo_wall_follower_turns_away_and_keeps_its_distance():
    from p2os_driver.plugin import WALL_DISTANCE, follow_wall

    angles = np.radians(np.arange(-90, 91))

    def scan(ahead, left):
        return np.where(np.abs(angles) < np.radians(40), ahead, np.where(angles > 0, left, 5.0))

    increment = math.radians(1)
    linear, angular = follow_wall(scan(0.5, 1.0), -math.pi / 2, increment, 32.0)
    assert angular < 0 and linear < 0.1  # a wall ahead: turn right
    linear, angular = follow_wall(scan(5.0, WALL_DISTANCE + 0.3), -math.pi / 2, increment, 32.0)
    assert angular > 0 and linear > 0.2  # too far from the left wall: steer left
    linear, angular = follow_wall(scan(5.0, WALL_DISTANCE - 0.1), -math.pi / 2, increment, 32.0)
    assert angular < 0  # too close: steer right


def test_laser_scan_from_a_simulator_scan_stage_and_ideal_spacing():
    scan = p.LaserPacket(p.PacketType.LASER_EXTENDED, 181, 0, [1500] * 180 + [32767], [0] * 181)
    msg = convert.laser_scan_msg(scan, (-90, 90, 1.0, False), Header(frame_id='laser'), 32.767)
    assert msg.angle_min == pytest.approx(-math.pi / 2)
    assert msg.angle_increment == pytest.approx(math.radians(180 / 181))
    assert msg.angle_max == pytest.approx(math.radians(89.0055), abs=1e-6)
    assert msg.ranges[0] == pytest.approx(1.5) and math.isinf(msg.ranges[-1])
    assert len(msg.intensities) == 181
    ideal = convert.laser_scan_msg(scan, (-90, 90, 1.0, True), Header(), 32.767)
    assert ideal.angle_max == pytest.approx(math.pi / 2)


def test_ground_truth_from_simstat():
    stat = p.SimStat(true_x=-8500, true_y=250, true_th=90)
    msg = convert.ground_truth_msg(stat, Header(frame_id='map'), 'base_link')
    assert (msg.pose.pose.position.x, msg.pose.pose.position.y) == (-8.5, 0.25)
    assert msg.pose.pose.orientation.z == pytest.approx(math.sqrt(0.5))
    assert msg.child_frame_id == 'base_link'


@pytest.mark.parametrize(
    'fields, reason',
    [
        ({'flags': 0x01, 'stall_bumpers': 0}, None),
        ({'flags': 0x00, 'stall_bumpers': 0}, 'the motors are off or disabled'),
        ({'flags': 0x01, 'stall_bumpers': 0x0001}, 'stalled'),  # left wheel
        ({'flags': 0x01, 'stall_bumpers': 0x0100}, 'stalled'),  # right wheel
        ({'flags': 0x01, 'stall_bumpers': 0x0200}, 'bumper contact'),  # front bar, switch 0
        ({'flags': 0x01, 'stall_bumpers': 0x0002}, 'bumper contact'),  # rear bar, switch 0
    ],
)
def test_what_ends_a_position_move(fields, reason):
    assert motion_trouble(sip(**fields), MODELS['p2pb']) == reason  # 5 + 5 bumpers
