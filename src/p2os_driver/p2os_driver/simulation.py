"""The physical robot behind the emulator: motion, odometry, sonar, bumpers, battery, gripper, AUX.

No I/O and no protocol framing: the emulator turns commands into calls here and
reads the state back into packets. World units are mm, mm/s and radians; the
room is a rectangle centred on the robot's start pose.
"""

import dataclasses
import math
import threading

from .odometry import normalize_angle

MAX_SONAR_RANGE = 5000.0  # mm; further echoes are reported at this range
SUBSTEP = 0.02  # s; motion integration step


@dataclasses.dataclass
class Room:
    width: float = 10000.0  # mm, along x
    height: float = 8000.0  # mm, along y

    def ray_distance(self, x, y, angle):
        """Distance from (x, y) along angle to the first wall."""
        distances = []
        c, s = math.cos(angle), math.sin(angle)
        for wall, position, direction in (
            (self.width / 2, x, c),
            (-self.width / 2, x, c),
            (self.height / 2, y, s),
            (-self.height / 2, y, s),
        ):
            if abs(direction) > 1e-9:
                t = (wall - position) / direction
                if t > 0:
                    distances.append(t)
        return min(distances) if distances else MAX_SONAR_RANGE

    def clearance(self, x, y):
        return min(self.width / 2 - abs(x), self.height / 2 - abs(y))


class Gripper:
    """Paddles (0 open … 1 closed) and lift (0 down … 1 up) that move at a fixed speed."""

    TRAVEL_TIME = 1.5  # s for a full paddle or lift stroke

    def __init__(self):
        self.paddles = 0.0
        self.lift = 0.0
        self.paddle_target = None
        self.lift_target = None
        self.grasp_time = 0
        self.awaiting_value = None  # GRIPpress / LIFTcarry wait for GRIPPERVAL (§2.11)

    def command(self, code):
        targets = {
            1: ('paddle', 0.0),
            2: ('paddle', 1.0),
            3: ('paddle', None),
            4: ('lift', 1.0),
            5: ('lift', 0.0),
            6: ('lift', None),
        }
        if code in targets:
            which, target = targets[code]
            setattr(self, which + '_target', target)
        elif code == 7:  # store: close paddles and raise the lift
            self.paddle_target, self.lift_target = 1.0, 1.0
        elif code == 8:  # deploy: lower the lift and open the paddles
            self.paddle_target, self.lift_target = 0.0, 0.0
        elif code == 15:  # halt both
            self.paddle_target = self.lift_target = None
        elif code in (16, 17):
            self.awaiting_value = code

    def value(self, value):
        """GRIPPERVAL: completes the preceding GRIPpress or LIFTcarry; ignored otherwise."""
        if self.awaiting_value == 16:
            self.grasp_time = max(0, min(100, value))
            self.paddle_target = 1.0
        elif self.awaiting_value == 17:
            stroke = value * 0.020 / self.TRAVEL_TIME
            self.lift_target = max(0.0, min(1.0, self.lift + stroke))
        self.awaiting_value = None

    def step(self, dt):
        stroke = dt / self.TRAVEL_TIME
        self.paddles, self.paddle_target = _approach(self.paddles, self.paddle_target, stroke)
        self.lift, self.lift_target = _approach(self.lift, self.lift_target, stroke)

    @property
    def paddles_moving(self):
        return self.paddle_target is not None

    @property
    def lift_moving(self):
        return self.lift_target is not None

    def sip_byte(self):
        """GRIP16 Table 4: bit = 1 means open / closed / moving / up / down / lift moving."""
        return (
            int(self.paddles <= 0.0)
            | int(self.paddles >= 1.0) << 1
            | int(self.paddles_moving) << 2
            | int(self.lift >= 1.0) << 4
            | int(self.lift <= 0.0) << 5
            | int(self.lift_moving) << 6
        )

    def packet_byte(self):
        """PB49 Table 10, active-low limits; no object, so the break beams stay clear."""
        closed = self.paddles >= 1.0
        return (
            int(self.paddles > 0.0)
            | int(0.0 < self.lift < 1.0) << 1
            | 1 << 2
            | 1 << 3
            | int(not closed) << 4
            | int(not closed) << 5
            | int(self.lift_moving) << 6
            | int(self.paddles_moving) << 7
        )


def _approach(value, target, stroke):
    """(new value, target or None once reached)."""
    if target is None:
        return value, None
    if abs(target - value) <= stroke:
        return target, None
    return value + math.copysign(stroke, target - value), target


class SimulatedPioneer:
    """A differential-drive P2OS robot in a rectangular room. Thread-safe through .lock."""

    def __init__(self, model, room=None, battery=13.0, sonar_per_cycle=4):
        self.model = model
        self.room = room or Room()
        self.lock = threading.RLock()
        self.pose = [0.0, 0.0, 0.0]  # world x, y (mm), heading (rad)
        self.odometry = [0.0, 0.0, 0.0]  # the robot's own integration, reset by SETO
        self.v = 0.0  # mm/s
        self.w = 0.0  # rad/s
        self.encoders = [0.0, 0.0]  # ticks (left, right)
        self.battery = battery  # volts
        self.gripper = Gripper()
        self.sonar_per_cycle = sonar_per_cycle
        self.aux_buffer = bytearray()
        self.digital_outputs = 0
        self.analog_port = 5
        self.bump_stall = 0
        self.sound = None
        self.tunes = []
        self.stalled = False
        self.bumped_front = self.bumped_rear = False
        self.time = 0.0
        self._next_sonar = 0
        self.axle = 2.0 / model.diff_conv  # mm between the wheels, from DiffConvFactor
        self.disconnect()

    # ---- commands ------------------------------------------------------------
    def disconnect(self):
        """State at connection start and after CLOSE: motors and sonar off, no motion (§3.1)."""
        self.enabled = False
        self.sonar_enabled = False
        self.halted = False
        self.trans_mode, self.rot_mode, self.wheel_mode = 'vel', 'vel', False
        self.vel_setpoint = 0.0
        self.rvel_setpoint = 0.0
        self.wheel_setpoints = (0.0, 0.0)
        self.move_remaining = 0.0
        self.heading_target = 0.0
        self.max_velocity = float(self.model.max_velocity)
        self.max_rot_velocity = math.radians(100.0)
        self.trans_accel = self.trans_decel = 300.0  # mm/s²
        self.rot_accel = self.rot_decel = math.radians(100.0)  # rad/s²

    def set_velocity(self, mm_s):
        self.wheel_mode, self.trans_mode = False, 'vel'
        self.vel_setpoint = _clamp(mm_s, self.max_velocity)

    def set_rotation(self, deg_s):
        self.wheel_mode, self.rot_mode = False, 'vel'
        self.rvel_setpoint = _clamp(math.radians(deg_s), self.max_rot_velocity)

    def set_wheels(self, left_units, right_units):
        """VEL2: wheel mode, each byte × Vel2Divisor mm/s; drops the trans/rot setpoints."""
        self.wheel_mode = True
        self.wheel_setpoints = (
            left_units * self.model.vel2_divisor,
            right_units * self.model.vel2_divisor,
        )

    def move(self, mm):
        self.wheel_mode, self.trans_mode = False, 'move'
        self.move_remaining = float(mm)

    def head(self, degrees, relative=False):
        self.wheel_mode, self.rot_mode = False, 'heading'
        base = self.odometry[2] if relative else 0.0
        self.heading_target = normalize_angle(base + math.radians(degrees))

    def stop(self):
        self.wheel_mode, self.trans_mode, self.rot_mode = False, 'vel', 'vel'
        self.vel_setpoint = self.rvel_setpoint = 0.0

    def emergency_stop(self):
        self.stop()
        self.v = self.w = 0.0

    def set_odometry_origin(self):
        self.odometry = [0.0, 0.0, 0.0]

    def set_acceleration(self, value, rotational=False):
        """SETA / SETRA: positive sets acceleration, negative deceleration."""
        size = math.radians(abs(value)) if rotational else float(abs(value))
        if size == 0:
            return
        prefix = 'rot' if rotational else 'trans'
        setattr(self, f'{prefix}_{"accel" if value > 0 else "decel"}', size)

    def set_max(self, value, rotational=False):
        if rotational:
            self.max_rot_velocity = math.radians(max(0, value))
        else:
            self.max_velocity = float(min(max(0, value), self.model.max_velocity))

    def set_digital_outputs(self, mask, values):
        self.digital_outputs = (self.digital_outputs & ~mask | values & mask) & 0xFF

    # ---- time ----------------------------------------------------------------
    def step(self, dt):
        remaining = dt
        while remaining > 1e-9:
            part = min(SUBSTEP, remaining)
            self._substep(part)
            remaining -= part
        self.gripper.step(dt)
        self.battery = max(9.0, self.battery - dt * (0.0004 + 0.0006 * abs(self.v) / 1000.0))
        self.time += dt

    def _substep(self, dt):
        target_v, target_w = self._targets()
        self.v = _ramp(self.v, target_v, self.trans_accel, self.trans_decel, dt)
        self.w = _ramp(self.w, target_w, self.rot_accel, self.rot_decel, dt)
        distance, turn = self.v * dt, self.w * dt
        x, y, th = self.pose
        heading = th + turn / 2
        nx, ny = x + distance * math.cos(heading), y + distance * math.sin(heading)
        blocked = self.room.clearance(nx, ny) < self.model.radius and self.room.clearance(
            nx, ny
        ) < self.room.clearance(x, y)
        self.stalled = blocked and self.enabled
        self.bumped_front = blocked and distance > 0
        self.bumped_rear = blocked and distance < 0
        if blocked:
            distance, self.v = 0.0, 0.0
            nx, ny = x, y
            if self.trans_mode == 'move':
                self.move_remaining = 0.0
        self.pose = [nx, ny, normalize_angle(th + turn)]
        ox, oy, oth = self.odometry
        oheading = oth + turn / 2
        self.odometry = [
            ox + distance * math.cos(oheading),
            oy + distance * math.sin(oheading),
            normalize_angle(oth + turn),
        ]
        if self.trans_mode == 'move':
            self.move_remaining -= distance
        half_track = self.w * self.axle / 2 * dt
        self.encoders[0] += (distance - half_track) / self.model.dist_conv
        self.encoders[1] += (distance + half_track) / self.model.dist_conv

    def _targets(self):
        if not self.enabled or self.halted:
            return 0.0, 0.0
        if self.wheel_mode:
            left, right = self.wheel_setpoints
            return (left + right) / 2, (right - left) / 2 * self.model.diff_conv
        if self.trans_mode == 'move':
            speed = min(
                self.max_velocity, math.sqrt(2 * self.trans_decel * abs(self.move_remaining))
            )
            target_v = (
                math.copysign(speed, self.move_remaining) if abs(self.move_remaining) > 1 else 0.0
            )
        else:
            target_v = self.vel_setpoint
        if self.rot_mode == 'heading':
            error = normalize_angle(self.heading_target - self.odometry[2])
            target_w = _clamp(3.0 * error, self.max_rot_velocity)
        else:
            target_w = self.rvel_setpoint
        return target_v, target_w

    # ---- readings ------------------------------------------------------------
    @property
    def moving(self):
        return abs(self.v) > 0.5 or abs(self.w) > 0.001

    def wheel_velocities(self):
        """(left, right) in mm/s."""
        spin = self.w / self.model.diff_conv  # (R-L)/2 = w / DiffConvFactor
        return self.v - spin, self.v + spin

    def next_sonar_readings(self):
        """[(disc, range mm)] for the next discs in the firing order, while sonar is on."""
        discs = self.model.sonar
        if not self.sonar_enabled or not discs:
            return []
        readings = []
        for _ in range(min(self.sonar_per_cycle, len(discs))):
            index = self._next_sonar
            self._next_sonar = (index + 1) % len(discs)
            readings.append((index, self.sonar_range(index)))
        return readings

    def sonar_range(self, index):
        sx, sy, sth = self.model.sonar[index]
        x, y, th = self.pose
        wx = x + sx * math.cos(th) - sy * math.sin(th)
        wy = y + sx * math.sin(th) + sy * math.cos(th)
        return min(MAX_SONAR_RANGE, self.room.ray_distance(wx, wy, th + math.radians(sth)))

    def analog_value(self, port):
        """A slowly varying 0-1 reading per analog port (port 5 follows the battery)."""
        if port == 5:
            return min(1.0, self.battery / 15.0)
        return 0.5 + 0.4 * math.sin(self.time * 0.5 + port)

    def digital_inputs(self):
        """ID0: paddles fully open, ID1: lift at a limit (PBAROS54 wiring)."""
        g = self.gripper
        return int(g.paddles <= 0.0) | int(g.lift in (0.0, 1.0)) << 1

    def take_aux(self, count):
        """Up to count bytes from the AUX buffer (None if fewer have arrived)."""
        if len(self.aux_buffer) < count:
            return None
        data = bytes(self.aux_buffer[:count])
        del self.aux_buffer[:count]
        return data


def _clamp(value, limit):
    return max(-limit, min(limit, value))


def _ramp(current, target, accel, decel, dt):
    """Move current toward target: accel when speeding up, decel when slowing down."""
    speeding_up = abs(target) > abs(current) and (target * current >= 0)
    step = (accel if speeding_up else decel) * dt
    if abs(target - current) <= step:
        return target
    return current + math.copysign(step, target - current)
