"""The physical robot behind the emulator: motion, odometry, sonar, bumpers, battery, gripper, AUX.

No I/O and no protocol framing: the emulator turns commands into calls here and
reads the state back into packets. Section numbers (§) refer to
docs/protocols/p2os.md. World units are mm, mm/s and radians; the
room is a rectangle centred on the robot's start pose.
"""

import dataclasses
import math
import random
import threading

import numpy as np

from .odometry import normalize_angle
from .protocol import laser_angles
from .world import Contact, World

MAX_SONAR_RANGE = 5000.0  # mm; further echoes are reported at this range
MIN_SONAR_RANGE = 100.0  # mm; closer echoes read this (AMRISim's sview, §5.3)
SONAR_NOISE = 0.5  # mm, uniform ± (Stage's ranger noise 0.0005 m)
LASER_MAX_RANGE = 32767.0  # mm (SICK LMS200 in AMRISim, §5.5)
SEARCH = 500.0  # mm beyond the robot's radius a contact query looks (fewer queries)
SUBSTEP = 0.02  # s; motion integration step
MOVE_DEADBAND = 1.0  # mm: a MOVE this close to its end stops
HEADING_DEADBAND = math.radians(0.25)  # a HEAD / DHEAD this close to its heading stops


@dataclasses.dataclass
class Room:
    """A rectangular room centred on the origin (`--room`), with the World interface."""

    width: float = 10000.0  # mm, along x
    height: float = 8000.0  # mm, along y
    start: tuple = (0.0, 0.0, 0.0)
    name: str = 'room'

    def ray_distance(self, x, y, angle):
        """Distance from (x, y) along angle to the first wall."""
        return float(self.cast(x, y, [angle], MAX_SONAR_RANGE)[0][0])

    def cast(self, x, y, angles, max_range, sensor='laser', min_range=0.0):
        """The World.cast answer for the four walls (walls return 1, so reflectance 0)."""
        angles = np.atleast_1d(np.asarray(angles, np.float64))
        c, s = np.cos(angles), np.sin(angles)
        best = np.full(len(angles), float(max_range))
        incidence = np.zeros(len(angles))
        for wall, position, direction in (
            (self.width / 2, x, c),
            (-self.width / 2, x, c),
            (self.height / 2, y, s),
            (-self.height / 2, y, s),
        ):
            with np.errstate(divide='ignore', invalid='ignore'):
                t = (wall - position) / direction
            hit = (np.abs(direction) > 1e-9) & (t > 0) & (t < best)
            best = np.where(hit, t, best)
            incidence = np.where(hit, np.arccos(np.clip(np.abs(direction), 0, 1)), incidence)
        return np.maximum(best, min_range), np.where(best < max_range, 1, 0), incidence

    def clearance(self, x, y, radius=None):
        return min(self.width / 2 - abs(x), self.height / 2 - abs(y))

    def contact(self, x, y, radius):
        walls = (
            (self.width / 2 - x, 0.0),
            (self.width / 2 + x, math.pi),
            (self.height / 2 - y, math.pi / 2),
            (self.height / 2 + y, -math.pi / 2),
        )
        distance, bearing = min(walls)
        return Contact(distance, bearing) if distance < radius else None

    def world(self):
        """The same room as a World (for the map viewers see)."""
        return World.room(self.width, self.height)


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


@dataclasses.dataclass
class SimLaser:
    """The simulated SICK laser's settings (commands 35-38 / 230-233, §4.2)."""

    packet: int = 0  # 0 off, else the packet type it sends: 0x60 or 0x61
    start: float = -90.0  # degrees
    end: float = 90.0
    increment: float = 1.0  # degrees
    mount: tuple = (0.0, 0.0, 0.0)  # x mm, y mm, heading rad in the robot frame
    ideal_spacing: bool = False  # rays at start + k·increment, not Stage's fov/samples
    noise: float = 5.0  # mm, uniform ±, only below the maximum range
    angle_error: float = 0.0007  # rad, uniform ± per ray
    moved: bool = False  # a SIM_SET_POSE since the last scan (0x61 flags bit 0)

    def angles(self):
        """Ray angles in the laser frame (rad), in the order the readings go out."""
        first, step, count = laser_angles(self.start, self.end, self.increment, self.ideal_spacing)
        return np.radians(first + step * np.arange(count))


def reflectance(returns, ranges, incidence):
    """Stage's LMS200 rules (§5.5): a return > 1 beyond 30 m or over 45° off the normal
    becomes 1; return 2 becomes 33; the value sent is return - 1 when over 1, else 0."""
    ret = np.where((returns > 1) & ((ranges > 30000) | (incidence > math.pi / 4)), 1, returns)
    ret = np.where(ret == 2, 33, ret)
    return np.where(ret > 1, ret - 1, 0).astype(np.int64)


class SimulatedPioneer:
    """A differential-drive P2OS robot in a world (a Room or a World). Thread-safe through .lock.

    bumpers: set the bumper bit of the bar that touches (a real robot; AMRISim sets none).
    sonar_beam: 0 = one ray per transducer (AMRISim); else the beam width in degrees, read as
    the nearest of rays 6° apart across it. odometry_scale / odometry_drift: odometry error, the
    fraction by which odometry overstates distance and the heading error (rad) per metre.
    """

    def __init__(
        self,
        model,
        room=None,
        battery=13.0,
        sonar_per_cycle=4,
        *,
        start=None,
        bumpers=True,
        sonar_beam=0.0,
        noise=True,
        odometry_scale=0.0,
        odometry_drift=0.0,
        laser_mount=(0.0, 0.0, 0.0),
        laser_ideal_spacing=False,
        seed=None,
    ):
        self.model = model
        self.room = room or Room()
        self.lock = threading.RLock()
        start = start if start is not None else getattr(self.room, 'start', (0.0, 0.0, 0.0))
        self.initial_pose = tuple(float(v) for v in start)
        self.pose = list(self.initial_pose)  # world x, y (mm), heading (rad)
        self.bumpers = bumpers
        self.sonar_beam = sonar_beam
        self.noise = noise
        self.odometry_scale = odometry_scale
        self.odometry_drift = odometry_drift
        self.random = random.Random(seed)
        self.rng = np.random.default_rng(seed)
        self.laser = SimLaser(mount=tuple(laser_mount), ideal_spacing=laser_ideal_spacing)
        if not self.noise:
            self.laser.noise = self.laser.angle_error = 0.0
        self.laser_defaults = dataclasses.replace(self.laser)
        self.bumper_bits = (0, 0)  # (front, rear) switch bits of the bars that touch
        self._free_space = (0.0, 0.0, 0.0)  # (x, y, distance to the nearest obstacle) seen last
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
        if hasattr(self, 'laser_defaults'):
            self.laser = dataclasses.replace(self.laser_defaults)
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
        probe = distance
        if self.stalled and target_v:
            # pinned against an obstacle: test the step the command asks for, not the one ramped
            # up from the stop the stall forced (a slow or short step fits into the gap the
            # blocked one left, and the stall flag would flicker)
            probe = math.copysign(max(abs(distance), abs(target_v) * SUBSTEP), target_v)
        # a translation into an obstacle does not happen; turning in place always does
        blocked = bool(probe) and self._blocks(x, y, heading, probe, th)
        if not blocked:
            self.bumper_bits = (0, 0)
        self.stalled = blocked and self.enabled
        self.bumped_front = blocked and distance > 0
        self.bumped_rear = blocked and distance < 0
        if blocked:
            distance, self.v = 0.0, 0.0
            nx, ny = x, y
            if self.trans_mode == 'move':
                self.move_remaining = 0.0
        self.pose = [nx, ny, normalize_angle(th + turn)]
        # odometry: the wheels' account, with the optional scale and drift errors
        odistance = distance * (1.0 + self.odometry_scale)
        oturn = turn + self.odometry_drift * abs(distance) / 1000.0
        ox, oy, oth = self.odometry
        oheading = oth + oturn / 2
        self.odometry = [
            ox + odistance * math.cos(oheading),
            oy + odistance * math.sin(oheading),
            normalize_angle(oth + oturn),
        ]
        if self.trans_mode == 'move':
            self.move_remaining -= distance
        half_track = self.w * self.axle / 2 * dt
        self.encoders[0] += (odistance - half_track) / self.model.dist_conv
        self.encoders[1] += (odistance + half_track) / self.model.dist_conv

    def _blocks(self, x, y, heading, distance, th):
        """True when moving distance along heading from (x, y) runs into a wall or another
        robot (one the robot already touches may be left); sets the bumper bits of the contact.
        Walls and robots are asked apart: getting away from one is no licence to near the
        other."""
        radius = self.model.radius
        px, py = x + distance * math.cos(heading), y + distance * math.sin(heading)
        walls_at = getattr(self.room, 'wall_contact', self.room.contact)
        checks = [(self._contact_ahead(px, py, radius), walls_at)]
        robots_at = getattr(self.room, 'robot_contact', None)  # a SharedWorld's other robots
        if robots_at is not None:
            checks.append((robots_at(px, py, radius), robots_at))
        for ahead, contact_at in checks:
            if ahead is None:
                continue
            here = contact_at(x, y, radius)
            if here is None or ahead.clearance < here.clearance:
                self._touch(ahead, th)
                return True
        return False

    def _contact_ahead(self, x, y, radius):
        """room.contact(x, y, radius), asked only when the robot may have come within reach:
        a look SEARCH mm further tells how far it can go before the next one is needed."""
        fx, fy, free = self._free_space
        if math.hypot(x - fx, y - fy) < free - radius:
            return None
        nearest = getattr(self.room, 'nearest', None)
        if nearest is None:  # a Room: its walls are four comparisons
            return self.room.contact(x, y, radius)
        found = nearest(x, y, radius + SEARCH)
        self._free_space = (x, y, found.clearance)
        return found if found.clearance < radius else None

    def _touch(self, contact, heading):
        """Bumper bits for a contact: the front bar when the obstacle is ahead, else the rear;
        switch 1 (bit 1) at the bar's left end, the last at its right end."""
        if not self.bumpers:
            self.bumper_bits = (0, 0)
            return
        relative = normalize_angle(contact.bearing - heading)
        front = math.cos(relative) >= 0
        count = self.model.front_bumpers if front else self.model.rear_bumpers
        if not count:
            self.bumper_bits = (0, 0)
            return
        # across the bar from its left end (+90° front, -90° rear, seen from the robot)
        across = relative if front else normalize_angle(relative - math.pi)
        share = (math.pi / 2 - across) / math.pi  # 0 at the left end, 1 at the right end
        index = min(count - 1, max(0, int(share * count)))
        bit = 2 << index
        self.bumper_bits = (bit, 0) if front else (0, bit)

    # ---- simulator commands (§4.7) ----------------------------------------------------
    def set_true_pose(self, x, y, th):
        """SIM_SET_POSE: move the true pose (odometry unchanged). False (pose kept) when the
        place is absurd or inside an obstacle."""
        if not all(math.isfinite(v) for v in (x, y, th)) or max(abs(x), abs(y)) > 1e7:
            return False
        if self.room.contact(x, y, self.model.radius * 0.5) is not None:
            return False
        self.pose = [float(x), float(y), normalize_angle(th)]
        self.laser.moved = True
        return True

    def reset_simulation(self):
        """SIM_RESET: odometry to zero, the true pose back to the start pose."""
        self.pose = list(self.initial_pose)
        self.odometry = [0.0, 0.0, 0.0]
        self.v = self.w = 0.0

    def laser_scan(self):
        """(ranges mm as ints, reflectance values) of the laser's scan now, in send order."""
        laser = self.laser
        angles = laser.angles()
        if not len(angles):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        x, y, th = self.pose
        mx, my, mth = laser.mount
        lx = x + mx * math.cos(th) - my * math.sin(th)
        ly = y + mx * math.sin(th) + my * math.cos(th)
        world_angles = th + mth + angles
        if laser.angle_error:
            world_angles = world_angles + self.rng.uniform(
                -laser.angle_error, laser.angle_error, len(angles)
            )
        ranges, returns, incidence = self.room.cast(lx, ly, world_angles, LASER_MAX_RANGE)
        if laser.noise:
            near = ranges < LASER_MAX_RANGE
            ranges = np.where(
                near, ranges + self.rng.uniform(-laser.noise, laser.noise, len(ranges)), ranges
            )
        ranges = np.clip(ranges, 0, LASER_MAX_RANGE).astype(np.int64)  # truncated, as Stage
        laser.moved = False
        return ranges, reflectance(returns, ranges, incidence)

    def _targets(self):
        if not self.enabled or self.halted:
            return 0.0, 0.0
        if self.wheel_mode:
            left, right = self.wheel_setpoints
            return (left + right) / 2, (right - left) / 2 * self.model.diff_conv
        if self.trans_mode == 'move':
            target_v = _position_speed(
                self.move_remaining, self.max_velocity, self.trans_decel, MOVE_DEADBAND
            )
        else:
            target_v = self.vel_setpoint
        if self.rot_mode == 'heading':
            target_w = _position_speed(
                normalize_angle(self.heading_target - self.odometry[2]),
                self.max_rot_velocity,
                self.rot_decel,
                HEADING_DEADBAND,
            )
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
        indices = []
        for _ in range(min(self.sonar_per_cycle, len(discs))):
            indices.append(self._next_sonar)
            self._next_sonar = (self._next_sonar + 1) % len(discs)
        return list(zip(indices, self.sonar_ranges(indices), strict=True))

    def sonar_range(self, index):
        return self.sonar_ranges([index])[0]

    def sonar_ranges(self, indices):
        """Ranges (mm) of the given transducers now, all cast at once (§5.3)."""
        table = np.array([self.model.sonar[i] for i in indices], np.float64).reshape(-1, 3)
        x, y, th = self.pose
        c, s = math.cos(th), math.sin(th)
        wx = x + table[:, 0] * c - table[:, 1] * s
        wy = y + table[:, 0] * s + table[:, 1] * c
        axis = th + np.radians(table[:, 2])
        if self.sonar_beam > 0:  # Stage's "closest": ceil(beam / 6°) rays, the nearest wins
            rays = max(2, math.ceil(self.sonar_beam / 6.0))
            spread = np.radians(np.linspace(-self.sonar_beam / 2, self.sonar_beam / 2, rays))
            angles = (axis[:, None] + spread).ravel()
            ranges, _, _ = self.room.cast(
                np.repeat(wx, rays), np.repeat(wy, rays), angles, MAX_SONAR_RANGE, 'sonar'
            )
            ranges = ranges.reshape(-1, rays).min(axis=1)
        else:
            ranges, _, _ = self.room.cast(wx, wy, axis, MAX_SONAR_RANGE, 'sonar')
        if self.noise:
            near = ranges < MAX_SONAR_RANGE
            noise = self.rng.uniform(-SONAR_NOISE, SONAR_NOISE, len(ranges))
            ranges = np.where(near, ranges + noise, ranges)
        return [float(v) for v in np.clip(ranges, MIN_SONAR_RANGE, MAX_SONAR_RANGE)]

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


def _position_speed(remaining, top_speed, decel, deadband):
    """The speed of a position move (MOVE, HEAD, DHEAD) with remaining to go: the top speed
    until the deceleration ramp (v² = 2·decel·remaining) reaches it, so the robot stops on
    the target with its own acceleration profile; 0 inside the deadband."""
    if abs(remaining) <= deadband:
        return 0.0
    return math.copysign(min(top_speed, math.sqrt(2 * decel * abs(remaining))), remaining)


def _ramp(current, target, accel, decel, dt):
    """Move current toward target: accel when speeding up, decel when slowing down."""
    speeding_up = abs(target) > abs(current) and (target * current >= 0)
    step = (accel if speeding_up else decel) * dt
    if abs(target - current) <= step:
        return target
    return current + math.copysign(step, target - current)


class SharedWorld:
    """One world (a World or a Room) with several robots in it, as AMRISim runs them: each
    robot's sonar, laser and motion meet the others' bodies. Bodies are the model table's
    footprint (length × width, centred on the pose) for the sensors and its radius for
    contact, as for walls. add() gives each robot its own view, which leaves its own body out.
    """

    def __init__(self, world):
        self.world = world
        self.robots = []
        self._halves = np.zeros((0, 2))  # the bodies' sizes do not change: kept, not rebuilt
        self._radii = np.zeros(0)

    def add(self, model, start=None, **options):
        """A SimulatedPioneer of this model in the shared world (start: its pose, mm, rad)."""
        view = _RobotView(self, len(self.robots))
        robot = SimulatedPioneer(model, view, start=start, **options)
        self.robots.append(robot)
        self._halves = np.vstack([self._halves, [(model.length / 2, model.width / 2)]])
        self._radii = np.append(self._radii, float(model.radius))
        return robot

    def step(self, dt):
        """Every robot moves by dt, one after the other (each meets the others where they are
        now)."""
        for robot in self.robots:
            with robot.lock:
                robot.step(dt)

    def bodies(self, leave_out=None):
        """(poses (n, 3) mm / rad, half sizes (n, 2) along and across, radii (n,)) of every
        robot but leave_out (an index)."""
        if len(self.robots) < 2 and leave_out is not None:
            return np.zeros((0, 3)), np.zeros((0, 2)), np.zeros(0)
        poses = np.array([r.pose for r in self.robots], np.float64).reshape(-1, 3)
        if leave_out is None:
            return poses, self._halves, self._radii
        others = np.arange(len(self.robots)) != leave_out
        return poses[others], self._halves[others], self._radii[others]


class _RobotView:
    """The shared world as one robot sees it: the walls plus every other robot's body."""

    def __init__(self, shared, index):
        self._shared = shared
        self._index = index

    def __getattr__(self, name):  # start, name, segments, nearest, ...: the walls' own
        return getattr(self._shared.world, name)

    def cast(self, x, y, angles, max_range, sensor='laser', min_range=0.0):
        ranges, returns, incidence = self._shared.world.cast(x, y, angles, max_range, sensor)
        poses, halves, _ = self._shared.bodies(self._index)
        if len(poses):
            angles = np.atleast_1d(np.asarray(angles, np.float64))
            t, body_incidence = _ray_footprints(x, y, angles, poses, halves)
            nearer = t < ranges
            ranges = np.where(nearer, t, ranges)
            returns = np.where(nearer, 1, returns)  # a robot's body returns 1, as a wall
            incidence = np.where(nearer, body_incidence, incidence)
        return np.maximum(ranges, min_range), returns, incidence

    def robot_contact(self, x, y, radius):
        """The nearest other robot within radius of (x, y) (its contact circle), or None.
        Asked at every physics step: a loop over a few poses costs less than building arrays."""
        nearest = None
        for i, other in enumerate(self._shared.robots):
            if i == self._index:
                continue
            ox, oy = other.pose[0], other.pose[1]
            gap = math.hypot(ox - x, oy - y) - other.model.radius
            if gap < radius and (nearest is None or gap < nearest[0]):
                nearest = (gap, ox, oy)
        if nearest is None:
            return None
        gap, ox, oy = nearest
        return Contact(float(max(gap, 0.0)), math.atan2(oy - y, ox - x))

    def wall_contact(self, x, y, radius):
        return self._shared.world.contact(x, y, radius)

    def contact(self, x, y, radius):
        return _nearer(self.wall_contact(x, y, radius), self.robot_contact(x, y, radius))


def _nearer(a, b):
    if a is None or b is None:
        return a or b
    return a if a.clearance <= b.clearance else b


def _ray_footprints(x, y, angles, poses, halves):
    """(distance to the first footprint each ray meets, inf for none; incidence) for rays from
    (x, y) (scalars or arrays like angles) against boxes of half sizes halves at poses: every
    ray against every box at once, in each box's own frame (a slab test)."""
    n = len(angles)
    ox = np.broadcast_to(np.asarray(x, np.float64), (n,))[:, None]
    oy = np.broadcast_to(np.asarray(y, np.float64), (n,))[:, None]
    dx, dy = np.cos(angles)[:, None], np.sin(angles)[:, None]
    c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])
    rx, ry = ox - poses[:, 0], oy - poses[:, 1]
    px, py = rx * c + ry * s, -rx * s + ry * c  # ray origins in each box's frame
    ddx, ddy = dx * c + dy * s, -dx * s + dy * c
    a, b = halves[:, 0], halves[:, 1]
    with np.errstate(divide='ignore', invalid='ignore'):
        lo_x, hi_x = _slab(px, ddx, a)
        lo_y, hi_y = _slab(py, ddy, b)
    enter, leave = np.maximum(lo_x, lo_y), np.minimum(hi_x, hi_y)
    t = np.where((enter <= leave) & (enter >= 0), enter, np.inf)
    rows = np.arange(n)
    best = np.argmin(t, axis=1)
    # the incidence of the box each ray meets first, and only of that one: through an end
    # (x = ±half length) of the box, or through a side
    through_x = lo_x[rows, best] > lo_y[rows, best]
    incidence = np.arccos(
        np.clip(np.abs(np.where(through_x, ddx[rows, best], ddy[rows, best])), 0, 1)
    )
    return t[rows, best], incidence


def _slab(origin, direction, half):
    """(entry, exit) ray parameters of the slab -half..half; ±inf when parallel."""
    t1, t2 = (-half - origin) / direction, (half - origin) / direction
    lo, hi = np.minimum(t1, t2), np.maximum(t1, t2)
    parallel = direction == 0
    if parallel.any():  # rare (a ray exactly along a box's axis): not worth 4 passes
        inside = np.abs(origin) <= half
        lo = np.where(parallel, np.where(inside, -np.inf, np.inf), lo)
        hi = np.where(parallel, np.where(inside, np.inf, -np.inf), hi)
    return lo, hi
