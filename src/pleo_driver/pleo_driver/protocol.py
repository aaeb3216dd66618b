"""The Pleo's USB serial monitor, as text (docs/protocols/pleo.md §3.2, §3.3).

A command is one line (ISO-8859-1) ending in "\\n"; the answer ends when the
stream ends with the prompt "> ". Asynchronous log lines ("LEVEL: type: text")
and dump lines ("mu: sensor: <41 integers>", "mu: joint: <14 integers>") can
arrive at any time, also in the middle of an answer; the parser separates them.
No I/O here.
"""

import dataclasses
import math
import re
from typing import List, Optional, Tuple

from legacy_robot_common.errors import MalformedFrame

PROMPT = b'> '
ENCODING = 'latin-1'
MAX_LINE = 4096
MAX_ANSWER_LINES = 200  # an answer is a few lines; text with no prompt after it is stray
SENSOR_COUNT = 41
JOINT_COUNT = 14
LOG_LINE = re.compile(
    r'^(DEBUG|TRACE|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL):\s*'
    r'([^:]*?)\s*:\s?(.*)$'
)
DUMP_LINE = re.compile(r'^mu:\s*(sensor|joint):\s*(.*)$')
BATTERY = re.compile(r'Battery sensor value\s*=\s*(-?\d+)')
FAILED_ANSWER = re.compile(r'^\s*(unknown command|error|invalid|bad |usage)', re.I | re.M)


@dataclasses.dataclass(frozen=True)
class Joint:
    id: int
    name: str  # joint_states name
    ranges: Tuple[Tuple[int, int], ...]  # allowed degrees (the head has two: eyes, mouth)
    speed: Optional[float]  # deg/s from the joint table; None = unknown ("?")

    @property
    def low(self):
        return min(r[0] for r in self.ranges)

    @property
    def high(self):
        return max(r[1] for r in self.ranges)

    def allows(self, degrees):
        return any(low <= degrees <= high for low, high in self.ranges)


# Monitor joint IDs and limits, firmware 1.1 (docs/protocols/pleo.md §3.5)
JOINTS = (
    Joint(0, 'right_shoulder', ((-30, 55),), 30),
    Joint(1, 'right_elbow', ((0, 90),), 70),
    Joint(2, 'left_shoulder', ((-30, 55),), 30),
    Joint(3, 'left_elbow', ((0, 90),), 70),
    Joint(4, 'left_hip', ((-45, 40),), None),
    Joint(5, 'left_knee', ((-70, 0),), 50),
    Joint(6, 'right_hip', ((-45, 40),), None),
    Joint(7, 'right_knee', ((-70, 0),), 50),
    Joint(8, 'torso', ((-15, 15),), 20),
    Joint(9, 'tail_horizontal', ((-90, 90),), 200),
    Joint(10, 'tail_vertical', ((-90, 90),), 200),
    Joint(11, 'neck_horizontal', ((-65, 55),), None),
    Joint(12, 'neck_vertical', ((-75, 75),), 40),
    Joint(13, 'head', ((-80, -30), (25, 85)), 220),  # mouth −80..−30, eyes 25..85
)
JOINT_BY_NAME = {j.name: j for j in JOINTS}

# Sensor IDs 0..40 (PPG and pleo/sensors.inc); the dump's 41 values are taken to be these
# (docs/protocols/pleo.md §3.6)
SENSOR_NAMES = {
    2: 'battery',
    3: 'ir',
    4: 'ir_activity',
    6: 'head',
    7: 'chin',
    8: 'back',
    9: 'left_leg',
    10: 'right_leg',
    11: 'left_arm',
    12: 'right_arm',
    13: 'tail',
    14: 'front_left',
    15: 'front_right',
    16: 'back_left',
    17: 'back_right',
    18: 'card_detect',
    19: 'write_protect',
    20: 'left_loud',
    21: 'light',
    22: 'right_loud',
    23: 'object',
    24: 'mouth',
    26: 'sound_dir',
    27: 'light_change',
    28: 'sound_loud',
    29: 'tilt',
    30: 'terminal',
    31: 'power_detect',
    32: 'usb_detect',
    33: 'wakeup',
    34: 'battery_temp',
    35: 'charger_state',
    36: 'shake',
    37: 'sound_loud_change',
    38: 'beacon',
    39: 'battery_current',
    40: 'packet',
}
SENSOR_LABELS = tuple(SENSOR_NAMES.get(i, f'sensor_{i}') for i in range(SENSOR_COUNT))
TOUCH_SENSORS = range(6, 14)
FOOT_SENSORS = range(14, 18)
EVENT_SENSORS = {
    21: 'light',
    23: 'object',
    24: 'mouth',
    26: 'sound',
    27: 'light',
    28: 'sound',
    29: 'tilt',
    36: 'shake',
}


@dataclasses.dataclass(frozen=True)
class LogLine:
    level: str
    type: str
    text: str


@dataclasses.dataclass(frozen=True)
class SensorDump:
    values: Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class JointDump:
    degrees: Tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Prompt:
    """The prompt arrived: the lines printed since the last prompt (the answer)."""

    lines: Tuple[str, ...]


def find_joint(name_or_id):
    """A joint by its joint_states name or its monitor ID ("4" or "left_hip")."""
    text = str(name_or_id).strip().lower()
    if text.isdigit() and int(text) < len(JOINTS):
        return JOINTS[int(text)]
    if text in JOINT_BY_NAME:
        return JOINT_BY_NAME[text]
    raise ValueError(
        f'unknown joint {name_or_id!r}: use 0..13 or one of {", ".join(JOINT_BY_NAME)}'
    )


def encode_command(text):
    """One monitor command → bytes on the wire."""
    if '\n' in text or '\r' in text:
        raise ValueError('a monitor command is one line (no line breaks)')
    try:
        return text.encode(ENCODING) + b'\n'
    except UnicodeEncodeError:
        raise ValueError('a monitor command must be ISO-8859-1 text') from None


def joint_command(joint, degrees, wait, max_wait_ms=0, target_time_ms=0):
    """JOINT ANGLE (waits) or JOINT MOVE; ValueError outside the joint's limits."""
    value = int(round(degrees))
    if not joint.allows(value):
        ranges = ' or '.join(f'{low}..{high}' for low, high in joint.ranges)
        raise ValueError(f'{joint.name}: {value}° is outside its limits {ranges}°')
    if not wait:
        return f'JOINT MOVE {joint.id} {value}'
    extra = ''
    if max_wait_ms or target_time_ms:
        extra = f' {int(max_wait_ms)}' + (f' {int(target_time_ms)}' if target_time_ms else '')
    return f'JOINT ANGLE {joint.id} {value}{extra}'


def percent_command(prefix, percent):
    if not math.isfinite(percent) or not 0 <= percent <= 1000:
        raise ValueError(f'{percent} % is not 0..1000 (100 = normal)')
    return f'{prefix} {int(round(percent))}'


def name_argument(name, what):
    """A motion/sound/application name for a command line: one word, printable."""
    text = name.strip()
    if not text or any(c.isspace() for c in text) or not text.isprintable():
        raise ValueError(f'{what} name {name!r} must be one word without spaces')
    return text


def log_line(level, kind, text):
    """The monitor's asynchronous log line (as the emulator prints it)."""
    return f'{level}: {kind}: {text}'


def dump_line(record):
    """A SensorDump or JointDump as the monitor's "mu: …" line."""
    kind, values = (
        ('sensor', record.values) if isinstance(record, SensorDump) else ('joint', record.degrees)
    )
    return f'mu: {kind}: ' + ' '.join(str(int(v)) for v in values)


def battery_value(lines):
    for line in lines:
        match = BATTERY.search(line)
        if match:
            return int(match.group(1))
    return None


def answer_failed(lines):
    return any(FAILED_ANSWER.search(line) for line in lines)


def parse_line(line):
    """One complete line → LogLine / SensorDump / JointDump, or None (answer text).

    MalformedFrame for a dump line whose values are not the right integers.
    """
    dump = DUMP_LINE.match(line)
    if dump:
        kind, rest = dump.groups()
        try:
            values = tuple(int(v) for v in rest.split())
        except ValueError:
            raise MalformedFrame(f'{kind} dump with a non-integer value: {line[:80]!r}') from None
        wanted = SENSOR_COUNT if kind == 'sensor' else JOINT_COUNT
        if len(values) != wanted:
            raise MalformedFrame(f'{kind} dump with {len(values)} values, expected {wanted}')
        return SensorDump(values) if kind == 'sensor' else JointDump(values)
    log = LOG_LINE.match(line)
    if log:
        return LogLine(log.group(1), log.group(2), log.group(3))
    return None


class MonitorParser:
    """Bytes from the monitor → records (LogLine, SensorDump, JointDump, Prompt).

    feed() returns (records, errors): errors are MalformedFrame instances for
    bad dump lines and over-long lines, which the caller counts.
    """

    def __init__(self, max_line=MAX_LINE):
        self.max_line = max_line
        self._buffer = bytearray()
        self._answer: List[str] = []

    def reset(self):
        self._buffer.clear()
        self._answer = []

    def forget_answer(self):
        """Drop answer lines collected so far (text that came while no command ran)."""
        self._answer = []

    def feed(self, data):
        self._buffer += data
        records, errors = [], []
        while True:
            end = self._buffer.find(b'\n')
            if end < 0:
                break
            raw = bytes(self._buffer[:end]).rstrip(b'\r')
            del self._buffer[: end + 1]
            while raw.startswith(PROMPT):  # the prompt, then a line printed after it
                self._prompt(records)
                raw = raw[len(PROMPT) :]
            self._line(raw.decode(ENCODING), records, errors)
        if self._buffer.endswith(PROMPT):
            before = bytes(self._buffer[: -len(PROMPT)]).strip(b'\r')
            self._buffer.clear()
            if before.strip():
                self._line(before.decode(ENCODING), records, errors)
            self._prompt(records)
        elif len(self._buffer) > self.max_line:
            errors.append(MalformedFrame(f'line longer than {self.max_line} bytes dropped'))
            self._buffer.clear()
        return records, errors

    def _prompt(self, records):
        records.append(Prompt(tuple(self._answer)))
        self._answer = []

    def _line(self, line, records, errors):
        try:
            record = parse_line(line)
        except MalformedFrame as exc:
            errors.append(exc)
            return
        if record is None:
            if line.strip():
                self._answer.append(line)
                # bounded: with no command running nothing ends an answer, and a monitor that
                # prints other text (or noise that garbles a dump line's marker) would grow it
                del self._answer[:-MAX_ANSWER_LINES]
        else:
            records.append(record)
