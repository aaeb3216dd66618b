"""The emulated dog's body: R-CODE 1.2 statements played on a simulated ERS-210
(docs/protocols/aibo.md §4).

No sockets, threads or rclpy: `Dog.run(line, now)` answers one statement, `Dog.advance(now)`
plays the action queue up to now. Actions queue behind the one playing (`Wait` counts them);
STOP_WALK ends a playing walk or turn; STOP empties the queue and lets the playing action
finish; QUIT and `!` end everything at once (the posture is then undefined); an action that
needs another posture first moves into it (a WALK while sitting stands up first). The pose
moves at the gait speeds, the leg joints swing while walking, the head follows MOVE_HEAD.
Head moves play beside the legs (R-CODE 1.2 has per-part WAIT masks such as MOTION_HEAD; an
assumption: the references do not say whether MOVE_HEAD waits behind a WALK): a new MOVE_HEAD
starts at once from where the head is, and `Wait` counts it while the head moves.
"""

import collections
import dataclasses
import math
import re

from . import rcode

GAITS = {  # the emulated dog's true speeds: m/s and rad/s (the driver's defaults estimate them)
    'WALK': ('walk', 0.06),
    'MOVE.MOVE.NORMAL': ('walk', 0.06),
    'MOVE.MOVE.SLOW': ('walk', 0.03),
    'TURN': ('turn', 0.5),
    'MOVE.TURN.NORMAL': ('turn', 0.5),
    'MOVE.TURN.SLOW': ('turn', 0.25),
}
POSTURES = {'SIT': 'sit', 'STAND': 'stand', 'LIE': 'lie', 'CHGPOS.STATR.NORMAL': 'lie'}
POSTURE_SECONDS = 1.5
ACTION_SECONDS = 1.0  # KICK, TOUCH, CONTACT.*, PALONE.*, SMESS.*, SEARCH, TRACK_HEAD
OTHER_ACTIONS = re.compile(
    r'^(KICK|TOUCH|CONTACT\.[A-Z.]+|PALONE\.AUTO\.[A-Z]+|SMESS\.[A-Z0-9.]+|SEARCH(\.[A-Z.]+)?|'
    r'TRACK_HEAD|CHGPOS\.WALK\.NORMAL)$'
)
HEAD_SPEED = 120.0  # degrees per second of MOVE_HEAD
STEP_PERIOD = 0.6  # s per gait cycle
LEG_POSES = {  # (xxLeg_1, xxLeg_2, xxLeg_3) in degrees, every leg alike
    'stand': (0, 10, 30),
    'sit': (60, 10, 110),
    'lie': (90, 20, 130),
    'undefined': (0, 10, 30),
}
LATCHED = ('Head_ON', 'Head_LONG', 'Head_Pat', 'Head_Hit', 'Back_ON', 'Back_LONG', 'Jaw_ON')
ROOM = 1.5  # m: the room's walls at ±1.5 m (the IR range finder sees them)


@dataclasses.dataclass
class Action:
    name: str
    arguments: tuple
    kind: str  # walk, turn, posture, other
    start: float = None
    duration: float = 0.0
    speed: float = 0.0


class Dog:
    """An ERS-210 playing R-CODE actions in real (or scaled) time."""

    def __init__(self, model='ers210', speed_scale=1.0, echo=True, controls=True, variables=None):
        self.model = model
        self.speed_scale = speed_scale  # > 1 plays everything faster (tests)
        self.echo = echo
        self.controls = controls
        self.x = self.y = self.yaw = 0.0
        self.posture = 'stand'
        self.head = {'Head_Pan': 0.0, 'Head_Tilt': 0.0}
        self._head_from = dict(self.head)
        self._head_to = dict(self.head)
        self.head_move = None  # (start, duration) of the head move under way
        self.queue = collections.deque()
        self.playing = None
        self.walk_phase = 0.0  # gait cycles walked
        self.walking = False
        self.lines = []  # every statement played
        self.variables = {
            'AiboType': 210,
            'AiboId': 100,
            'Status': 0,
            'Batt_Rest': 87,
            'Batt_Temp': 34,
            'Body_Temp': 31,
            'Brightness': 120,
            **{name: 0 for name in LATCHED},
            **(variables or {}),
        }
        self.time = 0.0

    # ---- statements ---------------------------------------------------------------------------
    def run(self, line, now):
        """One statement → the lines the dog prints (echo first when echo is on)."""
        self.advance(now)
        self.lines.append(line)
        printed = [line] if self.echo else []
        if not line.strip():
            return printed
        try:
            reply = self._statement(line.strip(), now)
        except (ValueError, IndexError) as exc:
            reply = f'ERROR: {exc}'
        if reply:
            printed.append(reply)
        return printed

    def _statement(self, line, now):
        if len(line.encode('latin-1', 'replace')) + 2 > rcode.MAX_LINE_BYTES:
            return 'ERROR: line too long'
        if line in ('!', '!!', '!!!'):
            self._quit(now)
            return rcode.ACK if self.controls else ''
        tokens = re.findall(r'"[^"]*"|[^:\s]+', line)
        verb = tokens[0].upper()
        if verb == 'PLAY' and len(tokens) >= 3 and tokens[1].upper() == 'ACTION':
            return self._play(tokens[2], tokens[3:], now)
        if verb == 'PRINT' and len(tokens) >= 2 and tokens[1].startswith('"'):
            return self._print(tokens[1].strip('"'), tokens[2:], now)
        if verb == 'VDUMP' and len(tokens) == 2:
            return f'{tokens[1]} = {self.value(tokens[1], now)}'
        if verb == 'GET' and len(tokens) == 2:
            return str(self.value(tokens[1], now))
        if verb == 'SET' and len(tokens) == 3:
            self.variables[tokens[1]] = self.value(tokens[2], now)
            return ''
        if verb == 'CLR' and len(tokens) == 2 and tokens[1].upper() == 'SENSORS':
            for name in LATCHED:
                self.variables[name] = 0
            return ''
        if verb == 'STOP' and len(tokens) == 1:
            self.queue.clear()  # the playing action finishes
            return ''
        if verb == 'QUIT' and len(tokens) == 1:
            self._quit(now)
            return ''
        if verb in ('WAIT', 'EDIT', 'END', 'RUN', 'EXIT', 'SYNC'):
            return ''
        return f'ERROR: unknown command {tokens[0]}'

    def _print(self, fmt, names, now):
        if len(names) > rcode.MAX_PRINT_VARIABLES:
            return f'ERROR: PRINT takes at most {rcode.MAX_PRINT_VARIABLES} variables'
        values = tuple(self.value(name, now) for name in names)
        try:
            return fmt % values
        except (TypeError, ValueError):
            return f'ERROR: PRINT format does not match its {len(values)} values'

    def value(self, token, now):
        """A variable's value (integer), or the token as a number; ValueError for neither."""
        if token in self.variables:  # what SET gave, and the dog's fixed readings
            return self.variables[token]
        if token == 'Wait':
            return len(self.queue) + (self.playing is not None) + (self.head_move is not None)
        if token == 'Clock':
            return int(now / 0.032) & 0x7FFF
        if token == 'Distance':
            return self.distance()
        joints = self.joints(now)
        if token in joints:
            return int(joints[token])
        try:
            return int(token, 0)
        except ValueError:
            raise ValueError(f'unknown variable {token}') from None

    def _play(self, name, arguments, now):
        upper = name.upper()
        try:
            numbers = tuple(int(a, 0) for a in arguments)
        except ValueError:
            return f'ERROR: bad argument in {name}'
        if upper == rcode.STOP_WALK:
            if self.playing is not None and self.playing.kind in ('walk', 'turn'):
                self._finish(now)
            return ''
        if upper in GAITS:
            kind, speed = GAITS[upper]
            expected = 2 if kind == 'walk' else 1
            if len(numbers) != expected:
                return f'ERROR: {upper} takes {expected} arguments'
            self._queue(Action(upper, numbers, kind, speed=speed), now)
        elif upper == 'MOVE_HEAD' or upper.startswith('MOVE.HEAD.'):
            if len(numbers) != 2:
                return f'ERROR: {upper} takes 2 arguments'
            self._move_head(*numbers, now)
        elif upper in POSTURES:
            self._queue(Action(upper, (), 'posture'), now)
        elif OTHER_ACTIONS.match(upper):
            self._queue(Action(upper, numbers, 'other'), now)
        else:
            return f'ERROR: unknown action {name}'
        return ''

    def _queue(self, action, now):
        self.queue.append(action)
        self.advance(now)

    def _quit(self, now):
        self.queue.clear()
        self.head_move = None
        if self.playing is not None:
            self._finish(now)
            self.posture = 'undefined'

    # ---- time ---------------------------------------------------------------------------------
    def advance(self, now):
        """Play the queue up to now: finished actions end, the next starts when one ends."""
        while True:
            if self.playing is None:
                if not self.queue:
                    break
                action = self.queue.popleft()
                if action.kind in ('walk', 'turn') and self.posture != 'stand':
                    self.queue.appendleft(action)  # the dog stands up first (aibo.md §4.5)
                    action = Action('STAND', (), 'posture')
                self._start(action, self.time)
            end = self.playing.start + self.playing.duration
            if end > now:
                self._move(now)
                break
            self._move(end)
            self._finish(end)
        self._advance_head(now)
        self.time = max(self.time, now)

    def _start(self, action, at):
        action.start = at
        scale = self.speed_scale
        if action.kind == 'walk':
            action.duration = abs(action.arguments[1]) / 1000.0 / action.speed / scale
        elif action.kind == 'turn':
            action.duration = math.radians(abs(action.arguments[0])) / action.speed / scale
        elif action.kind == 'posture':
            action.duration = (
                POSTURE_SECONDS / scale
                if self.posture != POSTURES.get(action.name, self.posture)
                else 0.0
            )
        else:
            action.duration = ACTION_SECONDS / scale
        self.playing = action
        self._moved_to = at

    def _move_head(self, pan, tilt, now):
        pan, tilt = self._clamped_head(pan, tilt)
        self._head_from = dict(self.head)
        self._head_to = {'Head_Pan': pan, 'Head_Tilt': tilt}
        travel = max(abs(pan - self.head['Head_Pan']), abs(tilt - self.head['Head_Tilt']))
        self.head_move = (now, travel / HEAD_SPEED / self.speed_scale)
        self._advance_head(now)

    def _advance_head(self, now):
        if self.head_move is None:
            return
        start, duration = self.head_move
        share = 1.0 if duration <= 0 else min(1.0, max(0.0, (now - start) / duration))
        for name in self.head:
            self.head[name] = self._head_from[name] + share * (
                self._head_to[name] - self._head_from[name]
            )
        if share >= 1.0:
            self.head_move = None

    def _clamped_head(self, pan, tilt):
        joints = {j.variable: j for j in rcode.MODELS[self.model]}
        pan_joint, tilt_joint = joints['Head_Pan'], joints['Head_Tilt']
        return (
            min(max(pan, pan_joint.lower), pan_joint.upper),
            min(max(tilt, tilt_joint.lower), tilt_joint.upper),
        )

    def _move(self, until):
        """Move the body (walk, turn) or the head from the last move up to until."""
        action = self.playing
        dt = until - self._moved_to
        if dt <= 0:
            return
        self._moved_to = until
        speed = action.speed * self.speed_scale
        if action.kind == 'walk':
            heading = self.yaw + math.radians(action.arguments[0])
            step = speed * dt * (1 if action.arguments[1] >= 0 else -1)
            self.x += step * math.cos(heading)
            self.y += step * math.sin(heading)
            self.walk_phase += dt * self.speed_scale / STEP_PERIOD
        elif action.kind == 'turn':
            sign = 1 if action.arguments[0] >= 0 else -1
            self.yaw = _wrap(self.yaw + sign * speed * dt)
            self.walk_phase += dt * self.speed_scale / STEP_PERIOD

    def _finish(self, at):
        action = self.playing
        self._move(at)
        if action.kind == 'posture':
            self.posture = POSTURES[action.name]
        self.playing = None
        self.time = max(self.time, at)

    # ---- what the dog reports -------------------------------------------------------------------
    @property
    def moving(self):
        return self.playing is not None and self.playing.kind in ('walk', 'turn')

    def joints(self, now):
        """Every joint of the model in degrees (the legs swing while walking or turning)."""
        hip, side, knee = LEG_POSES[self.posture]
        values = {
            'Head_Tilt': self.head['Head_Tilt'],
            'Head_Pan': self.head['Head_Pan'],
            'Head_Roll': 0.0,
            'Head_Tilt_2': 0.0,
            'Mouth': -5.0,
            'Tail_Pan': 0.0,
            'Tail_Tilt': 10.0,
        }
        for n, leg in enumerate(rcode.LEGS):
            swing = 0.0
            lift = 0.0
            if self.moving:
                phase = 2 * math.pi * (self.walk_phase + (0.5 if n in (1, 2) else 0.0))
                swing, lift = 25.0 * math.sin(phase), 20.0 * max(0.0, math.cos(phase))
            values[f'{leg}Leg_1'] = hip + swing
            values[f'{leg}Leg_2'] = side
            values[f'{leg}Leg_3'] = knee + lift
        names = {j.variable for j in rcode.MODELS[self.model]}
        return {name: value for name, value in values.items() if name in names}

    def distance(self):
        """IR range (mm) from the head to the room's walls along the head's heading, 0..600."""
        heading = self.yaw + math.radians(self.head['Head_Pan'])
        c, s = math.cos(heading), math.sin(heading)
        ranges = [
            (ROOM * (1 if d > 0 else -1) - p) / d
            for p, d in ((self.x, c), (self.y, s))
            if abs(d) > 1e-9
        ]
        return int(min(600.0, 1000.0 * max(0.0, min(ranges))))


def _wrap(angle):
    return math.atan2(math.sin(angle), math.cos(angle))
