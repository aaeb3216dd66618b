"""Decoded iPaq records → ROS messages (plain functions, testable without a graph)."""

import math

import numpy as np
from sensor_msgs.msg import Range

from legacy_robot_common.messages import image_msg
from legacy_robot_interfaces.msg import TrackingResult, WheelPower

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
