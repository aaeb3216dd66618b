"""Raw iPaq values ↔ SI units (REP-103), shared by the node and the emulator.

No document (docs/protocols/ipaq.md §4.2) gives units or signedness for vel, dir, the integrated
pose, the wheel voltage/current, range or vel_timeout: every factor here is a
parameter, and the emulator plays whatever the driver is configured for.
No ROS here.
"""

import dataclasses
import math

import numpy as np

INCH = 0.0254  # m


@dataclasses.dataclass(frozen=True)
class Units:
    velocity_scale: float = 0.01  # m/s per vel step
    velocity_signed: bool = True  # vel is a two's complement byte; False: 128 = stop
    steering_center: int = 128  # dir servo setting for straight ahead
    steering_scale: float = 0.006  # rad per dir step (positive = steer left)
    wheelbase: float = 0.35  # m, front (steered, driven) wheel to rear axle
    servo_center: int = 128  # pan/tilt servo setting looking straight ahead
    servo_scale: float = 0.0123  # rad per pan/tilt step (about 180° over 255 steps)
    pose_scale: float = 0.001  # m per integrated X/Y step
    pose_signed: bool = True  # integrated X/Y/TH are two's complement words
    theta_scale: float = 0.001  # rad per integrated TH step
    voltage_scale: float = 0.001  # V per wheel-voltage step
    voltage_signed: bool = False  # wheel voltage word is two's complement (negative reversing)
    current_scale: float = 0.001  # A per wheel-current step
    current_signed: bool = False  # wheel current word is two's complement
    range_conversion: str = 'gp2d02'  # 'gp2d02' (raw Sharp GP2D02 byte) or 'linear'
    range_scale: float = 0.01  # m per range step when linear
    vel_timeout_scale: float = 0.1  # s per vel_timeout step

    def __post_init__(self):
        if self.range_conversion not in ('gp2d02', 'linear'):
            raise ValueError(
                f'range_conversion must be gp2d02 or linear, not {self.range_conversion!r}'
            )
        for name in (
            'velocity_scale',
            'steering_scale',
            'wheelbase',
            'servo_scale',
            'pose_scale',
            'theta_scale',
            'voltage_scale',
            'current_scale',
            'range_scale',
            'vel_timeout_scale',
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f'{name} must be positive, got {getattr(self, name)}')
        for name in ('steering_center', 'servo_center'):
            if not 0 <= getattr(self, name) <= 255:
                raise ValueError(f'{name} must be a servo setting 0..255')

    # ---- drive ------------------------------------------------------------------
    def velocity_to_raw(self, metres_per_second):
        steps = clamp(round(metres_per_second / self.velocity_scale), -127, 127)
        return steps & 0xFF if self.velocity_signed else steps + 128

    def raw_to_velocity(self, raw):
        steps = _signed8(raw) if self.velocity_signed else raw - 128
        return steps * self.velocity_scale

    @property
    def max_steering(self):
        return min(self.steering_center, 255 - self.steering_center) * self.steering_scale

    def steering_to_raw(self, radians):
        steps = round(clamp(radians, -self.max_steering, self.max_steering) / self.steering_scale)
        return clamp(self.steering_center + steps, 0, 255)

    def raw_to_steering(self, raw):
        return (raw - self.steering_center) * self.steering_scale

    def twist_to_drive(self, linear, angular):
        """cmd_vel (m/s, rad/s) → (vel, dir) raw for a tricycle with a steered drive wheel.

        The steering angle that gives the turn rate is atan(wheelbase · ω / v); with
        no forward speed a tricycle cannot turn on the spot, so only the wheel turns.
        """
        if abs(linear) < 1e-6:
            steer = math.copysign(self.max_steering, angular) if angular else 0.0
        else:
            steer = math.atan(self.wheelbase * angular / linear)  # ω = v·tan(steer)/wheelbase
        return self.velocity_to_raw(linear), self.steering_to_raw(steer)

    # ---- camera servos ----------------------------------------------------------
    def servo_to_raw(self, radians):
        return clamp(self.servo_center + round(radians / self.servo_scale), 0, 255)

    def raw_to_servo(self, raw):
        return (raw - self.servo_center) * self.servo_scale

    # ---- integrated pose --------------------------------------------------------
    def pose_from_raw(self, x, y, theta):
        return (
            word_to_steps(x, self.pose_signed) * self.pose_scale,
            word_to_steps(y, self.pose_signed) * self.pose_scale,
            word_to_steps(theta, self.pose_signed) * self.theta_scale,
        )

    def pose_to_raw(self, x, y, theta):
        return (
            steps_to_word(round(x / self.pose_scale), self.pose_signed),
            steps_to_word(round(y / self.pose_scale), self.pose_signed),
            steps_to_word(round(theta / self.theta_scale), self.pose_signed),
        )

    # ---- wheel power, range ----------------------------------------------------------
    def wheel_power(self, voltage, current):
        """The response's wheel voltage and current words → (V, A)."""
        return (
            word_to_steps(voltage, self.voltage_signed) * self.voltage_scale,
            word_to_steps(current, self.current_signed) * self.current_scale,
        )

    def wheel_power_to_raw(self, volts, amps):
        """(V, A) → the two words (the emulator's side); unsigned words clamp at 0."""
        return (
            steps_to_word(round(volts / self.voltage_scale), self.voltage_signed),
            steps_to_word(round(amps / self.current_scale), self.current_signed),
        )

    @property
    def range_limits(self):
        """(min, max) metres the range sensor reports."""
        if self.range_conversion == 'gp2d02':
            return 3.0 * INCH, 18.5 * INCH
        return 0.0, 255 * self.range_scale

    def range_metres(self, raw):
        """Range byte → metres; +inf when the reading is out of range (REP-117)."""
        if self.range_conversion == 'linear':
            return raw * self.range_scale
        inches = gp2d02_inches(raw)
        return math.inf if inches is None else inches * INCH

    def range_to_raw(self, metres):
        """The range byte whose reading is nearest to metres (inverse of range_metres)."""
        if self.range_conversion == 'linear':
            return clamp(round(metres / self.range_scale), 0, 255)
        low, high = self.range_limits
        if metres > high:
            return 0  # nothing within range
        return int(np.argmin(np.abs(_GP2D02_METRES - max(metres, low))))


def gp2d02_inches(raw):
    """Acroname's conversion of a raw GP2D02 byte (docs/protocols/ipaq.md §2.8); None when out of
    range."""
    if raw > 150:
        return 6.0 - (raw - 150) / 20.0
    if raw > 115:
        return 10.0 - (raw - 115) / 10.0
    if raw > 89:
        return 18.5 - (raw - 89) / 2.8
    return None


_GP2D02_METRES = np.array([INCH * (gp2d02_inches(raw) or 1e6) for raw in range(256)])


def clamp(value, low, high):
    return max(low, min(high, value))


def wrap_angle(angle):
    """Radians → -π..π."""
    return math.atan2(math.sin(angle), math.cos(angle))


def _signed8(raw):
    return raw - 256 if raw >= 128 else raw


def word_to_steps(word, signed):
    """A 16-bit word as a two's complement number when signed, else as it is."""
    return word - 0x10000 if signed and word >= 0x8000 else word


def steps_to_word(steps, signed):
    low, high = (-0x8000, 0x7FFF) if signed else (0, 0xFFFF)
    return clamp(steps, low, high) & 0xFFFF
