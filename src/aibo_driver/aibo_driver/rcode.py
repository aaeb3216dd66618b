"""R-CODE 1.2 (ERS-210/220/31x) over the text pipe, TCP 21002: lines out, replies in.

No sockets, threads or rclpy. Section numbers refer to docs/protocols/aibo.md. §4: motion is
`PLAY:ACTION:<name>[:args]` (never the ERS-110 `MOVE:LEGS:`/`MOVE:HEAD:` forms), lines are at
most 127 bytes with their newline, values are read with `PRINT:"fmt":var…` (at most 5
variables, integer degrees), the dog may echo each line, print `ERROR: …` and `Stopped.`, and
send the control bytes ACK 0x06, NAK 0x15 and SYN 0x16.
"""

import dataclasses
import math
import re

from . import models

MAX_LINE_BYTES = 127  # §4.1: counting the newline
NEWLINE = b'\r\n'  # §6.2 (not stated for the 2xx): the ERS-7 interpreter parses CR+LF
MAX_PRINT_VARIABLES = 5
INT16 = (-32768, 32767)  # §4.1: 16-bit variables on the 2xx
ACK, NAK, SYN = '\x06', '\x15', '\x16'
CONTROL_BYTES = ACK + NAK + SYN
_WORD = re.compile(r'^[A-Za-z0-9_.+\-]+$')


class LineRefused(ValueError):
    """A line the dog would not take (too long, bad characters): never sent."""


# ---- building lines ----------------------------------------------------------------------------
def _word(value):
    if isinstance(value, bool):
        raise LineRefused(f'not an R-CODE word: {value!r}')
    if isinstance(value, int):
        if not INT16[0] <= value <= INT16[1]:
            raise LineRefused(f'{value} is outside the 16-bit range of R-CODE 1.2')
        return str(value)
    text = str(value)
    if not text or not _WORD.match(text):
        raise LineRefused(f'not an R-CODE word: {text!r} (letters, digits, _ . + - only)')
    return text


def _quoted(text):
    if '"' in text or any(c in text for c in '\r\n') or not text.isascii():
        raise LineRefused(
            f'a quoted R-CODE string holds no quotes, line breaks or non-ASCII: {text!r}'
        )
    return f'"{text}"'


def check_line(line):
    """The line (ASCII, one line, with its newline at most 127 bytes) or LineRefused."""
    if any(c in line for c in '\r\n') or not line.isascii():
        raise LineRefused('an R-CODE line is one line of ASCII text')
    size = len(line.encode('ascii')) + len(NEWLINE)
    if size > MAX_LINE_BYTES:
        raise LineRefused(
            f'R-CODE line of {size} bytes with its newline: the dog takes at most '
            f'{MAX_LINE_BYTES} (docs/protocols/aibo.md §4.1)'
        )
    return line


def line(*words):
    """Words joined by ':' (R-CODE's separator), checked: line('PLAY', 'ACTION', 'SIT')."""
    return check_line(':'.join(_word(w) for w in words))


def play(action, *arguments):
    """PLAY:ACTION:<action>[:args], the arguments integers (degrees, millimetres)."""
    return line('PLAY', 'ACTION', action, *(int(round(a)) for a in arguments))


def print_line(fmt, variables):
    """PRINT:"fmt":v1:…:v5 (§4.1, §4.6)."""
    if len(variables) > MAX_PRINT_VARIABLES:
        raise LineRefused(
            f'PRINT takes at most {MAX_PRINT_VARIABLES} variables, not {len(variables)}'
        )
    return check_line(':'.join(['PRINT', _quoted(fmt), *(_word(v) for v in variables)]))


# ---- motion and actions (§4.4, §4.5) ------------------------------------------------------------
WALK_ACTIONS = {'normal': 'WALK', 'slow': 'MOVE.MOVE.SLOW'}
TURN_ACTIONS = {'normal': 'TURN', 'slow': 'MOVE.TURN.SLOW'}
STOP_WALK = 'STOP_WALK'
MAX_WALK_MM = INT16[1]  # §6.2: the 16-bit limit caps a walk's distance


def walk(direction_deg, distance_mm, gait='normal'):
    """A walk in direction_deg (0 ahead, +90 left, ±180 back) for distance_mm."""
    direction = int(round(direction_deg))
    direction = (direction + 180) % 360 - 180
    return play(WALK_ACTIONS[gait], direction, min(int(round(distance_mm)), MAX_WALK_MM))


def turn(angle_deg, gait='normal'):
    """A turn on the spot, positive = counter-clockwise (left)."""
    return play(TURN_ACTIONS[gait], int(round(angle_deg)))


def stop_walk():
    return play(STOP_WALK)


def move_head(pan_deg, tilt_deg):
    """MOVE_HEAD:<pan>:<tilt>, pan positive left, tilt positive up (§4.4)."""
    return play('MOVE_HEAD', pan_deg, tilt_deg)


# play_action's names → what is sent; the lower-case names are the service's vocabulary
ACTIONS = {
    'sit': 'SIT',
    'stand': 'STAND',
    'lie': 'LIE',
    'lie_down_2': 'CHGPOS.STATR.NORMAL',
    'walk_posture': 'CHGPOS.WALK.NORMAL',
    'kick': 'KICK:0:100',
    'touch': 'CONTACT.RIGHT.TOUCH',
    'head_ball': 'CONTACT.FRONT.HEAD',
    'tail_wag_vertical': 'PALONE.AUTO.TAILV',
    'tail_wag_horizontal': 'PALONE.AUTO.TAILH',
    'tail_rotate': 'PALONE.AUTO.TAILROT',
    'tail_down': 'PALONE.AUTO.TAILD',
    'tail_up': 'PALONE.AUTO.TAILUP',
    'tail_stop': 'PALONE.AUTO.TAILSTOP',
    'ears': 'PALONE.AUTO.EAR',
    'ear_left': 'PALONE.AUTO.EARL',
    'ear_right': 'PALONE.AUTO.EARR',
    'ears_stop': 'PALONE.AUTO.EARSTOP',
    'search_ball': 'SEARCH:PINK_BALL',
    'track_ball': 'TRACK_HEAD:PINK_BALL',
    'stop': None,  # STOP: empties the queue, lets the playing action finish (§4.4)
}


def action_line(name):
    """play_action's name → its R-CODE line; ValueError listing the valid names."""
    key = name.strip().lower()
    if key not in ACTIONS:
        raise ValueError(f'unknown action {name!r}; valid: {", ".join(ACTIONS)}')
    if ACTIONS[key] is None:
        return 'STOP'
    action, *arguments = ACTIONS[key].split(':')
    return line(
        'PLAY', 'ACTION', action, *(int(a) if a.lstrip('-').isdigit() else a for a in arguments)
    )


# ---- joints per model (§4.6, §4.7) --------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Joint:
    variable: str  # the R-CODE variable (integer degrees)
    lower: float  # degrees: the tighter of the AMS range and Tekkotsu's mechanical limit
    upper: float

    @property
    def limits(self):
        return math.radians(self.lower), math.radians(self.upper)


LEGS = ('LF', 'LR', 'RF', 'RR')
# the joints R-CODE 1.2 polls, per model, from the model tables (models.py): the ERS-2xx and 31x
MODELS = {
    name: tuple(Joint(j.rcode, j.lower, j.upper) for j in model.joints if j.rcode)
    for name, model in models.MODELS.items()
    if 'rcodeplus' in model.protocols
}
HEAD_PAN, HEAD_TILT = 'Head_Pan', 'Head_Tilt'


def joint_of(model, variable):
    return next(j for j in MODELS[model] if j.variable == variable)


# ---- polling with PRINT -------------------------------------------------------------------------
SENSOR_VARIABLES = (
    'Wait',
    'Status',
    'Distance',
    'Batt_Rest',
    'Batt_Temp',
)
TOUCH_VARIABLES = {
    'ers210': ('Head_ON', 'Back_ON', 'Jaw_ON', 'Head_Pat', 'Head_Hit'),
    'ers220': ('Head_ON', 'Back_ON', 'Jaw_ON', 'Head_Pat', 'Head_Hit'),
    'ers31x': ('Head_ON', 'Back_ON', 'Head_Pat', 'Head_Hit'),
}


@dataclasses.dataclass(frozen=True)
class Poll:
    """One PRINT line: its tag (the first word of the dog's answer) and the variables after it."""

    tag: str
    variables: tuple

    @property
    def line(self):
        return print_line(' '.join([self.tag] + ['%d'] * len(self.variables)), self.variables)

    def parse(self, text):
        """The dog's answer → {variable: int}, or None when the text is not this poll's answer."""
        words = strip_controls(text).split()
        if len(words) != len(self.variables) + 1 or words[0] != self.tag:
            return None
        try:
            return dict(zip(self.variables, (int(w) for w in words[1:]), strict=True))
        except ValueError:
            return None


def polls(tag, variables):
    """Variables → PRINT polls of at most 5 variables each, tagged tag0, tag1, …"""
    return [
        Poll(f'{tag}{n}', tuple(variables[i : i + MAX_PRINT_VARIABLES]))
        for n, i in enumerate(range(0, len(variables), MAX_PRINT_VARIABLES))
    ]


def joint_polls(model):
    return polls('J', [j.variable for j in MODELS[model]])


# ---- the greeting ------------------------------------------------------------------------------
AUTH_HINT = (
    "authentication is on: the dog greeted as Sony's R-CODE 2.0 (ERS-7) and waits for its "
    "owner's password, whose handshake is not documented, so the driver cannot log in. On the "
    'memory stick, delete /OPEN-R/APP/DATA/P/OWNER.TXT and create an empty '
    '/OPEN-R/APP/PC/AMS/NOAUTH.CFG, then restart the dog'
)
_VERSION_2 = re.compile(r'R-CODE\s+ver\s*2', re.IGNORECASE)


def greeting_needs_auth(lines):
    """True when the greeting is R-CODE 2.0's (or asks for a password) and never said <READY>:
    the ERS-7's R-CODE with authentication on."""
    text = ' '.join(strip_controls(line) for line in lines)
    if '<READY>' in text:
        return False
    return bool(_VERSION_2.search(text)) or 'password' in text.lower()


def mwcid_line(model, motion):
    """PLAY:MWCID:<id> of a motion by name (SIT, STAND, ...) in the model's numbering: the
    ERS-7 renumbered postures and head moves."""
    ids = models.MODELS[model].motion_ids
    if motion not in ids:
        raise ValueError(f'unknown motion {motion!r}; valid: {", ".join(ids)}')
    return line('PLAY', 'MWCID', ids[motion])


# ---- matching replies ---------------------------------------------------------------------------
def strip_controls(text):
    return ''.join(c for c in text if c not in CONTROL_BYTES).strip()


@dataclasses.dataclass
class Reply:
    """What the dog printed for one line: its echo, output, an ERROR and the control bytes."""

    echoed: bool = False
    lines: list = dataclasses.field(default_factory=list)
    error: str = ''
    stopped: bool = False
    controls: str = ''
    values: dict = None  # a poll's variables, once its answer came

    @property
    def text(self):
        return '\n'.join(self.lines)


class Exchange:
    """One line sent and the dog's lines read back until its answer is complete.

    feed(line) → True when complete: a poll when its tagged answer (or an ERROR) came; any
    other line when an ERROR came (the echo alone says only that the line arrived). A line
    that completes nothing is left to the caller's quiet time."""

    def __init__(self, sent, poll=None):
        self.sent = sent
        self.poll = poll
        self.reply = Reply()
        self._echo = normal_line(sent)

    def feed(self, raw):
        reply = self.reply
        reply.controls += ''.join(c for c in raw if c in CONTROL_BYTES)
        text = strip_controls(raw)
        if not text:
            return False
        if not reply.echoed and normal_line(text) == self._echo:
            reply.echoed = True
            return False
        reply.lines.append(text)
        if text.upper().startswith('ERROR'):
            reply.error = text
            return True
        if text == 'Stopped.':
            reply.stopped = True
            return False
        if self.poll is not None:
            values = self.poll.parse(text)
            if values is not None:
                reply.values = values
                return True
        return False

    def feed_preview(self, text):
        """True when text (controls stripped) is this exchange's echo or its poll's answer."""
        if not self.reply.echoed and normal_line(text) == self._echo:
            return True
        return self.poll is not None and self.poll.parse(text) is not None


def normal_line(text):
    """A line as the dog may echo it: separators ':', spaces and tabs all alike."""
    return ' '.join(re.findall(r'"[^"]*"|[^:\s]+', text))
