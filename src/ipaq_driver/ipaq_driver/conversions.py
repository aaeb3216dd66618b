"""Decoded iPaq records → ROS messages (plain functions, testable without a graph)."""

import math

import numpy as np
from sensor_msgs.msg import JointState, Range

from legacy_robot_common.messages import image_msg
from legacy_robot_interfaces.msg import TrackingResult, WheelPower

from . import description
from .units import wrap_angle


def range_msg(raw, units, header, field_of_view):
    """IR range byte → sensor_msgs/Range (+inf when nothing is within range, REP-117)."""
    low, high = units.range_limits
    return Range(
        header=header,
        radiation_type=Range.INFRARED,
        field_of_view=field_of_view,
        min_range=low,
        max_range=high,
        range=float(units.range_metres(raw)),
    )


def neck_joints_msg(pan, tilt, units, header):
    """joint_states of the neck from raw servo settings (None: not known)."""
    raw = {description.PAN_JOINT: pan, description.TILT_JOINT: tilt}
    names = [name for name, value in raw.items() if value is not None]
    return JointState(
        header=header, name=names, position=[units.raw_to_servo(raw[name]) for name in names]
    )


def pan_tilt_raw(msg, units):
    """A JointState naming 'pan' and/or 'tilt' (rad) → raw (pan, tilt), None where not given;
    None for any other name or none at all."""
    angles = dict(zip(msg.name, msg.position, strict=False))
    if not angles or set(angles) - {'pan', 'tilt'}:
        return None
    raw = {name: units.servo_to_raw(value) for name, value in angles.items()}
    return raw.get('pan'), raw.get('tilt')


def unsigned_power_hint(response, units):
    """A wheel power word with its top bit set, read unsigned, is almost surely a negative
    value: the parameter to set, or None."""
    for name, word, signed in (
        ('voltage', response.wheel_voltage, units.voltage_signed),
        ('current', response.wheel_current, units.current_signed),
    ):
        if word >= 0x8000 and not signed:
            return (
                f'wheel {name} word 0x{word:04X} reads as a large positive value: a robot '
                f'that reports negative values (reversing) needs {name}_signed:=true'
            )
    return None


def wheel_power_msg(response, units, header):
    voltage, current = units.wheel_power(response.wheel_voltage, response.wheel_current)
    return WheelPower(header=header, voltage=voltage, current=current)


def tracking_msg(packet, header):
    return TrackingResult(
        header=header,
        pan=packet.pan,
        tilt=packet.tilt,
        x=packet.x,
        y=packet.y,
        width=packet.width,
        height=packet.height,
        pixels=packet.pixels,
        confidence=packet.confidence,
    )


def bitmap_msg(bitmap, header):
    """Line-mode bitmap (0/1) → mono8 Image, tracked pixels white."""
    return image_msg(bitmap.pixels * np.uint8(255), 'mono8', header)


def frame_msg(dump, header, double_width=True, flip_vertical=False):
    """Frame dump → rgb8 Image. CMUcam1 samples every other column (80 for 160 pixels),
    so double_width restores the aspect ratio; flip_vertical for upside-down mounts."""
    pixels = dump.pixels
    if double_width:
        pixels = np.repeat(pixels, 2, axis=1)
    if flip_vertical:
        pixels = pixels[::-1]
    return image_msg(pixels, 'rgb8', header)


class PoseTracker:
    """The iPaq's integrated pose (raw words) → odometry pose plus velocities from successive
    polls."""

    def __init__(self, units):
        self.units = units
        self.pose = None  # (x, y, yaw) m, rad
        self.linear = self.angular = 0.0
        self._time = None

    def update(self, response, now):
        pose = self.units.pose_from_raw(response.x, response.y, response.theta)
        if self.pose is not None and now > self._time:
            dt = now - self._time
            dx, dy = pose[0] - self.pose[0], pose[1] - self.pose[1]
            heading = self.pose[2]
            self.linear = (dx * math.cos(heading) + dy * math.sin(heading)) / dt
            self.angular = wrap_angle(pose[2] - heading) / dt
        self.pose, self._time = pose, now
        return pose
