"""Raw ↔ SI units and record → message conversions, without a running graph."""

import math

import numpy as np
import pytest
from sensor_msgs.msg import Range
from std_msgs.msg import Header

from ipaq_driver import conversions as convert
from ipaq_driver import protocol as p
from ipaq_driver.units import INCH, Units, gp2d02_inches
from legacy_robot_common.messages import image_to_array


@pytest.mark.parametrize(
    'raw, inches',
    [
        (210, 3.0),
        (151, 5.95),
        (150, 6.5),
        (116, 9.9),
        (115, 18.5 - 26 / 2.8),
        (90, 18.5 - 1 / 2.8),
        (89, None),
        (0, None),
    ],
)
def test_gp2d02_conversion_from_the_spec(raw, inches):
    result = gp2d02_inches(raw)
    assert result == (None if inches is None else pytest.approx(inches))


def test_range_round_trip_and_out_of_range():
    units = Units()
    for metres in (0.1, 0.2, 0.3, 0.4):
        assert units.range_metres(units.range_to_raw(metres)) == pytest.approx(metres, abs=0.01)
    assert units.range_to_raw(2.0) == 0 and units.range_metres(0) == math.inf
    assert units.range_limits == (pytest.approx(3 * INCH), pytest.approx(18.5 * INCH))
    linear = Units(range_conversion='linear', range_scale=0.02)
    assert linear.range_metres(50) == pytest.approx(1.0) and linear.range_to_raw(1.0) == 50


@pytest.mark.parametrize('signed', [True, False])
def test_velocity_encoding_both_ways(signed):
    units = Units(velocity_signed=signed)
    for speed in (-1.27, -0.3, 0.0, 0.25, 1.27, 5.0):
        raw = units.velocity_to_raw(speed)
        assert 0 <= raw <= 255
        assert units.raw_to_velocity(raw) == pytest.approx(max(-1.27, min(1.27, speed)))
    assert units.velocity_to_raw(0.0) == (0 if signed else 128)


def test_steering_and_servos_clamp_to_the_servo_range():
    units = Units()
    assert units.steering_to_raw(0.0) == 128
    assert units.steering_to_raw(10.0) == 255 and units.steering_to_raw(-10.0) == 1  # symmetric
    assert units.servo_to_raw(0.5) == 128 + round(0.5 / 0.0123)
    assert units.raw_to_servo(units.servo_to_raw(-0.3)) == pytest.approx(-0.3, abs=0.007)


def test_turning_on_the_spot_is_impossible_so_only_the_wheel_turns():
    units = Units()
    vel, direction = units.twist_to_drive(0.0, 1.0)
    assert units.raw_to_velocity(vel) == 0.0 and direction == 255
    assert units.twist_to_drive(0.0, 0.0) == (0, 128)
    vel, direction = units.twist_to_drive(-0.5, 0.3)  # reversing: same turn rate formula
    v, steer = units.raw_to_velocity(vel), units.raw_to_steering(direction)
    assert v * math.tan(steer) / units.wheelbase == pytest.approx(0.3, rel=0.05)


@pytest.mark.parametrize('signed', [True, False])
def test_pose_words(signed):
    units = Units(pose_signed=signed)
    pose = (-1.5, 2.25, -3.0) if signed else (1.5, 2.25, 3.0)
    assert units.pose_from_raw(*units.pose_to_raw(*pose)) == pytest.approx(pose)
    assert units.pose_to_raw(100.0, 0, 0)[0] == (0x7FFF if signed else 0xFFFF)  # clamped


@pytest.mark.parametrize(
    'bad', [dict(range_conversion='sonar'), dict(velocity_scale=0), dict(steering_center=300)]
)
def test_bad_units_are_refused(bad):
    with pytest.raises(ValueError):
        Units(**bad)


def test_range_and_wheel_power_messages():
    units = Units()
    header = Header(frame_id='ir_range')
    msg = convert.range_msg(units.range_to_raw(0.2), units, header, 0.1)
    assert msg.radiation_type == Range.INFRARED and msg.range == pytest.approx(0.2, abs=0.01)
    assert msg.min_range < msg.range < msg.max_range
    assert convert.range_msg(0, units, header, 0.1).range == math.inf
    power = convert.wheel_power_msg(p.FullResponse(0, 0, 7200, 450, 0, 0, 0), units, header)
    assert power.voltage == pytest.approx(7.2) and power.current == pytest.approx(0.45)


def test_tracking_bitmap_and_frame_messages():
    header = Header(frame_id='camera')
    tracking = convert.tracking_msg(p.TrackingPacket(1, 2, 3, 4, 5, 6, 7, 8), header)
    assert (tracking.pan, tracking.confidence) == (1, 8)
    bits = np.zeros((48, 80), dtype=np.uint8)
    bits[5, 7] = 1
    image = convert.bitmap_msg(p.Bitmap(bits), header)
    assert image.encoding == 'mono8' and image_to_array(image)[5, 7] == 255
    pixels = np.arange(143 * 80 * 3, dtype=np.uint32).reshape(143, 80, 3).astype(np.uint8)
    frame = convert.frame_msg(p.FrameDump(pixels), header)
    array = image_to_array(frame)
    assert array.shape == (143, 160, 3)
    np.testing.assert_array_equal(array[:, ::2], pixels)
    np.testing.assert_array_equal(array[:, 1::2], pixels)
    flipped = image_to_array(convert.frame_msg(p.FrameDump(pixels), header, False, True))
    np.testing.assert_array_equal(flipped, pixels[::-1])


def test_pose_tracker_derives_body_velocities():
    units = Units()
    tracker = convert.PoseTracker(units)
    tracker.update(p.FullResponse(0, 0, 0, 0, *units.pose_to_raw(0.0, 0.0, 0.0)), 10.0)
    tracker.update(p.FullResponse(0, 0, 0, 0, *units.pose_to_raw(0.05, 0.0, 0.02)), 10.1)
    assert tracker.linear == pytest.approx(0.5) and tracker.angular == pytest.approx(0.2)
    assert tracker.pose == pytest.approx((0.05, 0.0, 0.02))
