"""The move and turn actions: position moves the robot executes itself (MOVE #8, HEAD #12,
DHEAD #13 at the top speed SETV #6 / SETRV #10, with the robot's own acceleration).

The SIP has no motion-done bit (docs/p2os.md, "Position moves"): ARIA's isMoveDone and
isHeadingDone compare odometry with the goal (40 mm, 3°). A goal here succeeds when odometry
is within move_done_tolerance / heading_done_tolerance of its target and the SIP's wheel
velocities are both zero, so the result is where the robot came to rest.
"""

import dataclasses
import math
import time

from legacy_robot_common.actions import ABORTED, SUCCEEDED, ExclusiveGoals
from legacy_robot_common.errors import ConnectionLost
from legacy_robot_interfaces.action import Move, Turn

from .odometry import normalize_angle

MOVE_MAX_MM = 32767  # MOVE's argument: ARIA sends a signed 16-bit mm value
DEFAULT_ROT_TOP = 360  # deg/s when the CONFIG packet has no RotVelTop
DEFAULT_ROT_MAX = 100  # deg/s when the CONFIG packet has no RotVelMax
TIMEOUT_SLACK = 5.0  # s a goal may take beyond its distance at top speed, times 2
# s the wheels may stand still short of the target, after moving, before the goal aborts (the
# robot gave up: a stall or bumper the SIPs did not catch, a stop from elsewhere)
REST_SHORT_SECONDS = 1.0


@dataclasses.dataclass
class MoveState:
    start: tuple  # odometry (x, y) in m when the goal began
    distance: float  # m, signed
    moved: bool = False  # a SIP has shown the wheels turning
    rest_since: float = None  # monotonic time the wheels stopped, short of the target


@dataclasses.dataclass
class TurnState:
    target: float  # rad, odometry frame
    moved: bool = False
    rest_since: float = None


def motion_trouble(sip, model):
    """Why a position move must end at this SIP (motors off, a wheel stalled, a bumper
    pressed), or None."""
    if not sip.motors_enabled:
        return 'the motors are off or disabled'
    if sip.left_stall or sip.right_stall:
        return 'stalled'
    front, rear = sip.bumpers(model.front_bumpers, model.rear_bumpers)
    if any(front) or any(rear):
        return 'bumper contact'
    return None


class PositionMoves:
    """node: the P2OS driver (client, odometry, identity, last_config, log)."""

    def __init__(self, node, move_tolerance, heading_tolerance):
        self.node = node
        self.move_tolerance = move_tolerance  # m
        self.heading_tolerance = heading_tolerance  # rad
        self.goals = ExclusiveGoals(node, self._stop)

    def create(self):
        self.goals.add_server(Move, 'move', self.start_move, self.move_result)
        self.goals.add_server(Turn, 'turn', self.start_turn, self.turn_result)

    # ---- goals -------------------------------------------------------------------------
    def start_move(self, request, running):
        distance = request.distance_m
        refusal = self._refusal(distance, request.speed_m_s, request.timeout_s, 'distance_m')
        if refusal is None and abs(round(distance * 1000.0)) > MOVE_MAX_MM:
            refusal = (
                f"distance_m {distance} is beyond MOVE's signed 16-bit mm field "
                f'(±{MOVE_MAX_MM / 1000.0} m): send it as several goals'
            )
        if refusal is None and self.node.odometry is None:
            refusal = 'not connected to the robot'
        if refusal is not None:
            return None, refusal
        top = self._speed(request.speed_m_s * 1000.0, *self._linear_limits(), 'speed_m_s', 'mm/s')
        o = self.node.odometry
        running.state = MoveState((o.x, o.y), distance)
        timeout = request.timeout_s or 2 * (abs(distance) * 1000.0 / top + TIMEOUT_SLACK)
        return self._send(
            running, lambda: self.node.client.move(round(distance * 1000.0), top), timeout
        )

    def start_turn(self, request, running):
        relative = request.mode == Turn.Goal.RELATIVE
        if request.mode not in (Turn.Goal.ABSOLUTE, Turn.Goal.RELATIVE):
            return None, f'mode {request.mode} is neither ABSOLUTE (0) nor RELATIVE (1)'
        name = 'angle_rad' if relative else 'heading_rad'
        angle = request.angle_rad if relative else request.heading_rad
        refusal = self._refusal(angle, request.speed_rad_s, request.timeout_s, name)
        if refusal is None and relative and abs(angle) > math.pi:
            refusal = f'angle_rad {angle} is beyond ±pi (the robot turns the short way)'
        if refusal is None and self.node.odometry is None:
            refusal = 'not connected to the robot'
        if refusal is not None:
            return None, refusal
        top = self._speed(
            math.degrees(request.speed_rad_s), *self._rotation_limits(), 'speed_rad_s', 'deg/s'
        )
        degrees = round(math.degrees(angle if relative else normalize_angle(angle)))
        yaw = self.node.odometry.yaw
        target = normalize_angle((yaw if relative else 0.0) + math.radians(degrees))
        running.state = TurnState(target)
        remaining = abs(normalize_angle(target - yaw))
        timeout = request.timeout_s or 2 * (math.degrees(remaining) / top + TIMEOUT_SLACK)
        return self._send(running, lambda: self.node.client.turn(degrees, top, relative), timeout)

    def _send(self, running, send, timeout):
        try:
            send()
        except (ConnectionLost, ValueError) as exc:
            return None, str(exc)
        return timeout, None

    def _refusal(self, value, speed, timeout, name):
        for field, number in ((name, value), ('speed', speed), ('timeout_s', timeout)):
            if not math.isfinite(number):
                return f'{field} is {number}'
        if speed < 0 or timeout < 0:
            return 'speed and timeout_s must not be negative'
        return None

    def _speed(self, asked, top, default, field, unit):
        """The top speed to send: asked (0 = the robot's default), clamped to the robot's top
        with a WARN."""
        speed = asked or default
        if speed > top:
            self.node.log.warning(
                f'{field}-clamp', f"{field} clamped to the robot's limit of {top} {unit}"
            )
            speed = top
        return max(1, int(round(speed)))

    def _config(self, name):
        config = self.node.last_config
        return config.values.get(name, 0) if config is not None else 0

    def _linear_limits(self):
        """(top, default) mm/s: the CONFIG packet's TransVelTop and TransVelMax."""
        model_top = int(self.node.identity.model.max_velocity)
        top = self._config('trans_vel_top') or model_top
        return top, min(top, self._config('trans_vel_max') or model_top)

    def _rotation_limits(self):
        top = self._config('rot_vel_top') or DEFAULT_ROT_TOP
        return top, min(top, self._config('rot_vel_max') or DEFAULT_ROT_MAX)

    # ---- the robot's side ----------------------------------------------------------------
    def on_sip(self, sip):
        """At every SIP: feedback, and the goal's end when the robot is done or in trouble."""
        running = self.goals.running
        if running is None:
            return
        trouble = motion_trouble(sip, self.node.identity.model)
        if trouble is not None:
            self._stop()
            running.end(ABORTED, trouble)
            return
        remaining = self._remaining(running.state)
        running.feedback(self._feedback(running.state, remaining))
        state = running.state
        settled = sip.left_velocity == 0 and sip.right_velocity == 0
        state.moved = state.moved or not settled
        tolerance = self.move_tolerance if isinstance(state, MoveState) else self.heading_tolerance
        if settled and abs(remaining) <= tolerance:
            self._restore_speeds()
            running.end(SUCCEEDED, 'done: the robot reports it has stopped at the target')
        elif self._rested_short(state, settled):
            self._stop()
            unit = 'm' if isinstance(state, MoveState) else 'rad'
            running.end(
                ABORTED, f'the robot stopped short of the target: {remaining:.3f} {unit} left'
            )

    def _rested_short(self, state, settled):
        if not (settled and state.moved):
            state.rest_since = None
            return False
        now = time.monotonic()
        if state.rest_since is None:
            state.rest_since = now
        return now - state.rest_since >= REST_SHORT_SECONDS

    def on_link_lost(self, reason):
        self.goals.end(ABORTED, f'link lost: {reason}')

    def on_cmd_vel(self):
        if self.goals.running is not None:
            self.goals.end(ABORTED, 'pre-empted by cmd_vel')
            self._restore_speeds()

    def _remaining(self, state):
        o = self.node.odometry
        if isinstance(state, MoveState):
            travelled = math.hypot(o.x - state.start[0], o.y - state.start[1])
            return math.copysign(abs(state.distance) - travelled, state.distance)
        return normalize_angle(state.target - o.yaw)

    def _feedback(self, state, remaining):
        if isinstance(state, MoveState):
            travelled = abs(state.distance) - abs(remaining)
            return Move.Feedback(remaining_m=remaining, travelled_m=travelled)
        return Turn.Feedback(remaining_rad=remaining, heading_rad=self.node.odometry.yaw)

    def move_result(self, request, running, outcome):
        result = Move.Result()
        if isinstance(running.state, MoveState) and self.node.odometry is not None:
            o, start = self.node.odometry, running.state.start
            result.travelled_m = math.hypot(o.x - start[0], o.y - start[1])
        return result

    def turn_result(self, request, running, outcome):
        odometry = self.node.odometry
        return Turn.Result(heading_rad=odometry.yaw if odometry is not None else math.nan)

    def _stop(self):
        """STOP (not a zero move), then the robot's default top speeds back."""
        try:
            self.node.client.stop_motion()
            self._restore_speeds()
        except ConnectionLost:
            pass

    def _restore_speeds(self):
        try:
            self.node.client.set_top_speeds(self._linear_limits()[1], self._rotation_limits()[1])
        except ConnectionLost:
            pass
