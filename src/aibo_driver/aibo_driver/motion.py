"""Velocity commands → R-CODE walk segments, and dead-reckoning odometry of what was told.

No sockets, threads or rclpy: the driver feeds in commands, the dog's `Wait` and the outcome
of each line sent; the planner answers with the lines to send and the body velocity the dog is
believed to move at. docs/protocols/aibo.md §4.4 and §4.8:

- the dog has no velocity interface: a velocity becomes a WALK in the direction of travel
  (atan2(y, x), 0 = ahead, +90 = left) over a long distance, so it keeps walking while the
  commands keep coming; rotation becomes TURN chunks on the spot (no continuous turn);
- two speeds only: the SLOW or NORMAL gait, whichever is nearer the asked speed;
- no arcs: with both a translation and a rotation the larger (relative to the normal gait)
  wins; what is left out is reported as a refusal;
- a second WALK queues behind the first, so a change of direction (beyond a threshold) or of
  gait sends STOP_WALK and then the new segment; zero (or no command for cmd_vel_timeout)
  sends STOP_WALK;
- nothing piles up in the dog's queue: while a line is in flight, or the dog's `Wait` says
  more than the playing action is queued, no new segment is sent; the latest command waits.
"""

import dataclasses
import math

from . import rcode

IDLE = None
RETRY_AFTER = 2.0  # s before a motion the dog refused (ERROR) is asked for again


@dataclasses.dataclass
class MotionSettings:
    """Gait speeds are ESTIMATES (the references give no stride figures): measure them on the
    floor with aibo_calibrate --gait and set the parameters of the same names."""

    normal_speed: float = 0.06  # m/s, WALK (normal gait)
    slow_speed: float = 0.03  # m/s, MOVE.MOVE.SLOW
    normal_turn_rate: float = 0.5  # rad/s, TURN
    slow_turn_rate: float = 0.25  # rad/s, MOVE.TURN.SLOW
    segment_mm: int = 10000  # one WALK's distance (the Maze sample's 10 m); ≤ 32767 (16 bits)
    turn_chunk_deg: int = 45  # one TURN's angle; the next is sent when the dog's queue is empty
    direction_threshold_deg: float = 20.0  # a smaller change of direction keeps the walk
    min_speed: float = 0.005  # m/s below which a translation is zero
    min_turn_rate: float = 0.02  # rad/s below which a rotation is zero

    def __post_init__(self):
        for name in ('normal_speed', 'slow_speed', 'normal_turn_rate', 'slow_turn_rate'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f'{name} must be a positive number, got {value}')
        if self.slow_speed > self.normal_speed or self.slow_turn_rate > self.normal_turn_rate:
            raise ValueError('the slow gait cannot be faster than the normal one')
        if not 100 <= self.segment_mm <= rcode.MAX_WALK_MM:
            raise ValueError(f'segment_mm must be within 100..{rcode.MAX_WALK_MM}')
        if not 5 <= self.turn_chunk_deg <= 360:
            raise ValueError('turn_chunk_deg must be within 5..360')
        if not 1.0 <= self.direction_threshold_deg <= 180.0:
            raise ValueError('direction_threshold_deg must be within 1..180')

    def walk_speed(self, gait):
        return self.normal_speed if gait == 'normal' else self.slow_speed

    def turn_rate(self, gait):
        return self.normal_turn_rate if gait == 'normal' else self.slow_turn_rate


@dataclasses.dataclass(frozen=True)
class Motion:
    """What the dog is asked to do: walk (direction in degrees) or turn (sign ±1), a gait."""

    kind: str  # 'walk' or 'turn'
    gait: str
    direction: float = 0.0  # degrees (walk); +1 / -1 (turn)

    def line(self, settings):
        if self.kind == 'walk':
            return rcode.walk(self.direction, settings.segment_mm, self.gait)
        return rcode.turn(self.direction * settings.turn_chunk_deg, self.gait)

    def velocity(self, settings):
        """Body (vx, vy, wz) at this gait."""
        if self.kind == 'walk':
            speed = settings.walk_speed(self.gait)
            angle = math.radians(self.direction)
            return speed * math.cos(angle), speed * math.sin(angle), 0.0
        return 0.0, 0.0, self.direction * settings.turn_rate(self.gait)

    def extent(self, settings):
        """How far one line of it goes: metres (walk) or radians (turn)."""
        if self.kind == 'walk':
            return settings.segment_mm / 1000.0
        return math.radians(settings.turn_chunk_deg)

    def same_as(self, other, settings):
        if other is None or other.kind != self.kind or other.gait != self.gait:
            return False
        if self.kind == 'turn':
            return self.direction == other.direction
        change = abs((self.direction - other.direction + 180.0) % 360.0 - 180.0)
        return change <= settings.direction_threshold_deg


def plan(vx, vy, wz, settings):
    """A velocity → (Motion or IDLE, [refusal keys and texts]). ValueError for NaN or inf."""
    if not all(math.isfinite(v) for v in (vx, vy, wz)):
        raise ValueError(f'cmd_vel with a non-finite value ({vx}, {vy}, {wz}): ignored')
    notes = []
    speed = math.hypot(vx, vy)
    walking = speed >= settings.min_speed
    turning = abs(wz) >= settings.min_turn_rate
    if walking and turning:
        keep_walk = speed / settings.normal_speed >= abs(wz) / settings.normal_turn_rate
        notes.append(
            (
                'arc',
                f'the AIBO cannot walk an arc: {"walking" if keep_walk else "turning"} only '
                f'(asked {speed:.3f} m/s and {wz:.3f} rad/s together)',
            )
        )
        walking, turning = keep_walk, not keep_walk
    if walking:
        gait = _gait(speed, settings.slow_speed, settings.normal_speed, 'm/s', 'walking', notes)
        return Motion('walk', gait, math.degrees(math.atan2(vy, vx))), notes
    if turning:
        rate = settings.slow_turn_rate, settings.normal_turn_rate
        gait = _gait(abs(wz), *rate, 'rad/s', 'turning', notes)
        return Motion('turn', gait, 1.0 if wz > 0 else -1.0), notes
    return IDLE, notes


def _gait(value, slow, normal, unit, doing, notes):
    """The gait nearer value; a note when value is well over the normal gait's speed."""
    if value > normal * 1.25:
        notes.append(
            (
                'too-fast',
                f'{value:.3f} {unit} is faster than the normal gait ({normal:.3f} {unit}): '
                f'{doing} at it',
            )
        )
    return 'slow' if value < (slow + normal) / 2 else 'normal'


# ---- odometry ---------------------------------------------------------------------------------
@dataclasses.dataclass
class OdometryModel:
    """Variances that grow with what was walked: legs slip (estimates; see docs/aibo.md)."""

    slip: float = 0.2  # standard deviation of the distance walked, as a fraction of it
    turn_slip: float = 0.2  # the same for the angle turned
    drift: float = 0.1  # rad of heading uncertainty per metre walked
    floor: float = 1e-4  # variance at the start (m², rad²)


class DeadReckoning:
    """Pose in the odom frame, integrated from a piecewise-constant body velocity."""

    def __init__(self, model=None):
        self.model = model or OdometryModel()
        self.reset()

    def reset(self):
        self.x = self.y = self.yaw = 0.0
        self.distance = self.turned = 0.0
        self.velocity = (0.0, 0.0, 0.0)
        self.time = None

    def advance(self, now):
        """Integrate the current velocity up to now."""
        if self.time is not None and now <= self.time:
            return
        if self.time is not None:
            dt = now - self.time
            vx, vy, wz = self.velocity
            if wz:
                # exact for a constant body velocity: the heading turns while walking
                yaw1 = self.yaw + wz * dt
                s0, c0, s1, c1 = (
                    math.sin(self.yaw),
                    math.cos(self.yaw),
                    math.sin(yaw1),
                    math.cos(yaw1),
                )
                self.x += (vx * (s1 - s0) + vy * (c1 - c0)) / wz
                self.y += (vx * (c0 - c1) + vy * (s1 - s0)) / wz
                self.yaw = math.atan2(math.sin(yaw1), math.cos(yaw1))
            else:
                c, s = math.cos(self.yaw), math.sin(self.yaw)
                self.x += (vx * c - vy * s) * dt
                self.y += (vx * s + vy * c) * dt
            self.distance += math.hypot(vx, vy) * dt
            self.turned += abs(wz) * dt
        self.time = now

    def set_velocity(self, now, velocity):
        self.advance(now)
        self.velocity = tuple(velocity)

    def variances(self):
        """(xy, yaw) variances for this distance walked and angle turned."""
        m = self.model
        xy = m.floor + (m.slip * self.distance) ** 2
        yaw = m.floor + (m.turn_slip * self.turned) ** 2 + (m.drift * self.distance) ** 2
        return xy, yaw


# ---- the planner --------------------------------------------------------------------------------
class WalkPlanner:
    """The driver's side of the dog's action queue.

    command(vx, vy, wz, now) and stop(now) set what is wanted; next_lines(now) gives the lines
    to send now (at most one batch in flight); sent(line, error, now) reports each one's outcome;
    on_wait(wait, now) the dog's `Wait` from a poll sent after the last motion line finished.
    """

    def __init__(self, settings=None, odometry=None):
        self.settings = settings or MotionSettings()
        self.odometry = odometry or DeadReckoning()
        self.wanted = IDLE  # the latest command's motion
        self.current = IDLE  # what the dog was told and confirmed (its line took no ERROR)
        self.started = None  # when current was confirmed
        self.in_flight = []  # lines handed out, not yet reported by sent()
        self.wait = 0  # the dog's queue as last polled
        self.motion_done_at = float('-inf')  # when the last motion line's outcome came
        self.stop_pending = False
        self.last_motion = IDLE  # the last walk or turn confirmed
        self.segments = 0  # walk or turn lines sent
        self.stops = 0  # STOP_WALK lines sent
        self.errors = 0  # motion lines the dog answered with ERROR
        self.last_error = ''
        self.refused = None  # (motion, when): not asked again for RETRY_AFTER s

    # ---- inputs ---------------------------------------------------------------------------
    def command(self, vx, vy, wz, now):
        """A velocity (m/s, rad/s); → refusal notes [(key, text)]. ValueError for NaN/inf."""
        motion, notes = plan(vx, vy, wz, self.settings)
        self.wanted = motion
        self.stop_pending = motion is IDLE and self.moving
        return notes

    def stop(self, now):
        """Zero (a timeout, a stop request, deactivation)."""
        self.wanted = IDLE
        self.stop_pending = self.moving

    @property
    def moving(self):
        return self.current is not IDLE or self.wait > 0 or bool(self.in_flight)

    def sent(self, line, error, now):
        """The outcome of a line from next_lines (error: '' or the dog's ERROR text)."""
        self._expire(now)
        if line in self.in_flight:
            self.in_flight.remove(line)
        self.motion_done_at = now
        if error:
            self.errors += 1
            self.last_error = error
            if line != rcode.stop_walk():
                self._set_current(IDLE, now)
                if self._pending_motion is not None:
                    self.refused = (self._pending_motion, now)
                    self._pending_motion = None
            return
        if line == rcode.stop_walk():
            self._set_current(IDLE, now)
            self.last_motion = IDLE  # ended by us: the next segment needs no drain
            self.wait = max(0, self.wait - 1)  # our walk was one of the queued actions
        elif self._pending_motion is not None and line == self._pending_motion.line(self.settings):
            self._set_current(self._pending_motion, now)
            self._pending_motion = None

    _pending_motion = None

    def on_wait(self, wait, polled_at, now):
        """The dog's Wait from a poll sent at polled_at (ignored: a motion line finished since)."""
        if polled_at < self.motion_done_at or self.in_flight:
            return
        self.wait = wait
        if wait == 0 and self.current is not IDLE:
            self._set_current(IDLE, now)  # the segment ran out (a turn chunk, a long walk)

    def halted(self, now):
        """QUIT or `!` emptied the dog's queue and stopped it."""
        self.wanted = IDLE
        self.stop_pending = False
        self.in_flight = []
        self.wait = 0
        self.motion_done_at = now
        self._set_current(IDLE, now)

    def link_restarted(self, now):
        """A new connection: what was in flight is unknown, the dog may still be walking."""
        self.in_flight = []
        self._set_current(IDLE, now)
        self.wait = 1  # unknown: the next segment starts with STOP_WALK
        self.last_motion = IDLE
        self.stop_pending = True
        self.motion_done_at = now

    # ---- outputs ----------------------------------------------------------------------------
    def next_lines(self, now):
        """The motion lines to send now ([] while a batch is in flight or nothing changed)."""
        if self.in_flight:
            return []
        self._expire(now)
        lines = []
        if self.wanted is IDLE:
            if self.stop_pending or self.current is not IDLE:
                lines = [rcode.stop_walk()]
                self.stops += 1
                self.stop_pending = False
        elif not self.wanted.same_as(self.current, self.settings):
            if (
                self.refused is not None
                and self.wanted.same_as(self.refused[0], self.settings)
                and now - self.refused[1] < RETRY_AFTER
            ):
                return []  # refused a moment ago: no storm of the same ERROR
            if (
                self.current is IDLE
                and self.wait > 0
                and self.wanted.same_as(self.last_motion, self.settings)
            ):
                return []  # the last segment is still playing out: the next follows its end
            if self.current is not IDLE or self.wait > 0:
                if self.wait > 1:
                    # something else is queued or playing (an action, a head move): end our
                    # walk so that it can drain, and send the new segment once it has
                    if self.current is IDLE:
                        return []
                    self.stops += 1
                    self.in_flight = [rcode.stop_walk()]
                    return list(self.in_flight)
                lines.append(rcode.stop_walk())
                self.stops += 1
            lines.append(self.wanted.line(self.settings))
            self._pending_motion = self.wanted
            self.segments += 1
        self.in_flight = list(lines)
        return lines

    def _expire(self, now):
        """A segment that must have ended by now (its distance or angle walked) ends."""
        if self.current is IDLE or self.started is None:
            return
        vx, vy, wz = self.current.velocity(self.settings)
        rate = math.hypot(vx, vy) or abs(wz)
        if (now - self.started) * rate >= self.current.extent(self.settings):
            self._set_current(IDLE, self.started + self.current.extent(self.settings) / rate)

    def velocity(self, now):
        """Body (vx, vy, wz) the dog is believed to move at now (odometry advanced to now)."""
        self._expire(now)
        self.odometry.advance(now)
        return self.odometry.velocity

    def _set_current(self, motion, now):
        self.current = motion
        self.started = now if motion is not IDLE else None
        self.odometry.set_velocity(
            now, (0.0, 0.0, 0.0) if motion is IDLE else motion.velocity(self.settings)
        )
        if motion is not IDLE:
            self.wait = max(self.wait, 1)
            self.last_motion = motion
