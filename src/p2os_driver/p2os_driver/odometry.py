"""Odometry from SIPs in SI units (REP-103: metres, radians, x forward, y left, CCW positive).

Pure arithmetic, no rclpy. Positions are 15-bit counters: deltas are unwrapped
the ARIA way and never rejected for being large (docs/protocols/p2os.md §3.7,
§6.2 item 2).
"""

import math

from .protocol import unwrap_15bit, unwrap_heading


def normalize_angle(angle):
    return math.atan2(math.sin(angle), math.cos(angle))


def signed_15bit(value):
    return value - 0x8000 if value & 0x4000 else value


class Odometry:
    """The robot's own odometry: the first SIP gives the pose, later SIPs add unwrapped deltas."""

    def __init__(self, model):
        self.model = model
        self.x = self.y = self.yaw = 0.0  # metres, radians
        self.linear = self.angular = 0.0  # m/s, rad/s
        self.distance = 0.0  # metres travelled (path length)
        self._previous = None
        self._started = False

    def resume(self):
        """After a reconnect: keep the pose, take the next SIP as the new base (no jump)."""
        self._previous = None

    def zero(self):
        """After SETO: the robot's counters restart at 0, and so does the pose."""
        self.x = self.y = self.yaw = 0.0
        self._previous = None
        self._started = False

    def update(self, sip):
        m = self.model
        if self._previous is not None:
            px, py, pth = self._previous
            dx = unwrap_15bit(px, sip.x) * m.dist_conv / 1000.0
            dy = unwrap_15bit(py, sip.y) * m.dist_conv / 1000.0
            self.x += dx
            self.y += dy
            self.distance += math.hypot(dx, dy)
            self.yaw = normalize_angle(self.yaw + unwrap_heading(pth, sip.theta) * m.angle_conv)
        elif not self._started:
            self.x = signed_15bit(sip.x) * m.dist_conv / 1000.0
            self.y = signed_15bit(sip.y) * m.dist_conv / 1000.0
            self.yaw = normalize_angle(sip.theta * m.angle_conv)
            self._started = True
        self._previous = (sip.x, sip.y, sip.theta)
        left = sip.left_velocity * m.vel_conv
        right = sip.right_velocity * m.vel_conv
        self.linear = (left + right) / 2000.0
        rotational_x10 = sip.tail.get('rotational_velocity_x10')
        if rotational_x10 is not None:
            self.angular = math.radians(rotational_x10 / 10.0)
        else:  # ARIA: rad2deg((R-L)/2 * DiffConvFactor) deg/s with R, L in mm/s
            self.angular = (right - left) / 2.0 * m.diff_conv
