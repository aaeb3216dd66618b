"""UMF3, the Pleo's motion file, and csv2umf's conversion from exported CSV
(docs/protocols/pleo.md §2.5).

csv2umf turns per-frame joint angles into straight-line "vectors" (start frame,
goal frame, velocity, final angle): a joint's vector grows frame by frame until
the acceleration, the fit error, the speed class or the length says stop, and
the next vector starts on the last frame of the previous one.
"""

import csv
import dataclasses
import io
import math
import os
import struct
from typing import Dict, List

from .errors import BuildError, MalformedResource
from .joints import CODE_TO_KEY, UMF_JOINTS, UMF_ORDER
from .py2 import c_div

MAGIC = b'UGMF'
VERSION = 3
HEADER = struct.Struct('<4sB32sBBBIh')
VECTOR = struct.Struct('<Hhhhhh')
VECTOR_TAG = 0xF00D
END_TAG = struct.pack('<H', 0xDEAD)

ACCELERATION_LIMIT = 1600.0  # deg/s²
ACCELERATION_LIMIT_SPECIAL = 2000.0
RMS_LIMIT = 3.0  # deg
RMS_LIMIT_SPECIAL = 6.0
SPEED_CLASS_TOLERANCE = 500.0  # deg/s
MINIMUM_SPEED = 1.0  # deg/s; slower counts as standing still
LONGEST_VECTOR = 2.0  # s
MOTOR_SPEEDS = (0, 5, 10, 50, 100, 200)
DEFAULT_RATE = 30


@dataclasses.dataclass
class MotionCsv:
    rate: int
    used: List[str]  # used joint keys, in csv2umf's visiting order
    rows: List[Dict[str, str]]  # one dict per frame: joint key → cell


@dataclasses.dataclass
class Vector:
    joint: str
    start: int
    samples: List[float] = dataclasses.field(default_factory=list)
    goal: int = 0
    velocity: float = 0.0
    position: float = 0.0


def motion_name(path):
    """The header name: the base name without any "csv", "." or "mot_"."""
    return os.path.basename(path).replace('csv', '').replace('.', '').replace('mot_', '')


def read_csv(text):
    """Exported motion CSV → header values, used joints and frame rows."""
    lines = io.StringIO(text.replace('\r\n', '\n').replace('\r', '\n'))
    reader = csv.reader(lines)
    header = {}
    for line_number, row in enumerate(reader, 1):
        if not row:
            raise BuildError(f'motion CSV line {line_number}: blank line before "Body"')
        first = row[0].strip()
        if first in ('Body', 'Data'):
            break
        key, _, value = first.partition('=')
        header[key.strip()] = value.strip()
    else:
        raise BuildError('motion CSV has no "Body" line')
    names = next(reader, None)
    if not names:
        raise BuildError('motion CSV has no column names after "Body"')
    while names and not names[-1].strip():
        names.pop()
    if 'Frame' not in names:
        raise BuildError('motion CSV has no "Frame" column')
    rows = [dict(zip(names, row, strict=False)) for row in reader if row]
    rate = _rate(header.get('rate'))
    return MotionCsv(rate, _used_joints(names, rows, header.get('used')), rows)


def _rate(text):
    if text is None:
        return DEFAULT_RATE
    try:
        rate = int(float(text))
    except ValueError:
        raise BuildError(f'motion CSV: rate={text!r} is not a number') from None
    if not 1 <= rate <= 1000:
        raise BuildError(f'motion CSV: rate={rate} is not 1..1000 frames/s')
    return rate


def _used_joints(names, rows, used_header):
    present = [key for key in UMF_ORDER if key in names]
    if used_header is not None:
        return [key for key in present if key in used_header]
    return [
        key
        for key in present
        if key not in ('TR', 'SD') or any(not _is_zero(row.get(key)) for row in rows)
    ]


def _is_zero(cell):
    try:
        return float(cell) == 0.0
    except (TypeError, ValueError):
        return False


def _angle(row, key, frame):
    try:
        return float(row.get(key))
    except (TypeError, ValueError):
        raise BuildError(
            f'motion CSV frame {frame}: {key} = {row.get(key)!r} is not an angle'
        ) from None


class Segmenter:
    """csv2umf's vector fitting for one motion."""

    def __init__(self, rate, sound_ids):
        self.rate = rate
        self.time_base = 1000.0 / rate
        self.sound_ids = sound_ids  # name → ID (command enum first, then sound)
        self.vectors: List[Vector] = []
        self.warnings: List[str] = []

    def run(self, motion):
        open_vectors, speeds = {}, {}
        previous = {}
        for frame, row in enumerate(motion.rows):
            for key in motion.used:
                if key == 'SD':
                    self._sound(row.get(key), frame)
                    continue
                angle = _angle(row, key, frame)
                vector = open_vectors.get(key)
                if vector is None:
                    vector = open_vectors[key] = Vector(key, frame)
                vector.samples.append(angle)
                speed = acceleration = 0.0
                if frame > 0:
                    speed = (angle - previous[key]) * self.rate
                    if abs(speed) < MINIMUM_SPEED:
                        speed = 0.0
                    acceleration = (speed - speeds[key]) * self.rate
                if not self._fits(vector, acceleration):
                    vector.samples.pop()
                    self._close(vector)
                    open_vectors[key] = Vector(key, frame - 1, [previous[key], angle])
                speeds[key], previous[key] = speed, angle
        for key in motion.used:
            vector = open_vectors.get(key)
            if vector is not None and len(vector.samples) > 1:
                self._close(vector)
        self.vectors.sort(key=lambda v: v.start)
        return self.vectors

    def _fit(self, vector):
        """(goal, velocity, position, rms error) of the straight line through the samples."""
        samples = vector.samples
        count = len(samples)
        # the PDK's own expression: at 30 fps 1000.0 / time_base is 29.999999999999996, so
        # where the exact velocity is whole it writes one less than "* rate" would
        # (docs/protocols/pleo.md §2.5)
        velocity = (samples[-1] - samples[0]) * (1000.0 / self.time_base) / (count - 1)
        position = samples[-1]
        # the PDK measures the fit one frame late (count - k, not count - 1 - k): kept
        squares = sum(
            (position - velocity * (count - k) * self.time_base / 1000.0 - sample) ** 2
            for k, sample in enumerate(samples)
        )
        return vector.start + count - 1, velocity, position, math.sqrt(squares / count)

    def _fits(self, vector, acceleration):
        if len(vector.samples) <= 1:
            return True
        special = UMF_JOINTS[vector.joint][2]
        if abs(acceleration) > (ACCELERATION_LIMIT_SPECIAL if special else ACCELERATION_LIMIT):
            return False
        _, velocity, _, rms = self._fit(vector)
        if rms > (RMS_LIMIT_SPECIAL if special else RMS_LIMIT):
            return False
        speed = abs(velocity)
        speed_class = next((s for s in MOTOR_SPEEDS if s >= speed), MOTOR_SPEEDS[-1])
        if abs(speed - speed_class) > SPEED_CLASS_TOLERANCE:
            return False
        return (len(vector.samples) - 2) * self.time_base / 1000.0 <= LONGEST_VECTOR

    def _close(self, vector):
        if len(vector.samples) > 1:
            vector.goal, vector.velocity, vector.position, _ = self._fit(vector)
        self.vectors.append(vector)

    def _sound(self, cell, frame):
        sound = self._sound_id(cell, frame)
        if sound > 0:
            self.vectors.append(Vector('SD', frame - 1, [sound], 0, 0, sound))

    def _sound_id(self, cell, frame):
        text = (cell or '').strip()
        try:
            return int(float(text)) if text else 0
        except ValueError:
            pass
        if text in self.sound_ids:
            return self.sound_ids[text]
        self.warnings.append(f'missing sound {text!r} at frame {frame}')
        return 0


def write(name, motion, vectors):
    joints = b''.join(struct.pack('<H', UMF_JOINTS[key][0]) for key in motion.used)
    head = HEADER.pack(
        MAGIC,
        VERSION,
        name.encode('latin-1')[:32],
        len(motion.used),
        1,
        1000 // motion.rate,
        len(vectors),
        len(motion.rows),
    )
    body = b''.join(_pack_vector(v) for v in vectors)
    return head + joints + body + END_TAG


def _pack_vector(vector):
    start = vector.start
    if start != 0 and start != vector.goal:
        start += 1
    return VECTOR.pack(
        VECTOR_TAG,
        UMF_JOINTS[vector.joint][0],
        start,
        vector.goal,
        _short(vector.velocity),
        _short(vector.position),
    )


def _short(value):
    value = int(value)  # truncates toward zero, as struct.pack did in Python 2
    if not -32768 <= value <= 32767:
        raise BuildError(f'motion value {value} does not fit a 16-bit field')
    return value


def summary(vectors, frames):
    """csv2umf's closing log line."""
    count = len(vectors)
    average = c_div(sum(len(v.samples) for v in vectors), count) if count else 0
    return (
        f'done writing umf3 file; average vector length={average}, count={count}; frames={frames}'
    )


def csv_to_umf(text, name, sound_ids=None):
    """Motion CSV text → (UMF bytes, log lines)."""
    motion = read_csv(text)
    segmenter = Segmenter(motion.rate, sound_ids or {})
    vectors = segmenter.run(motion)
    return write(name, motion, vectors), segmenter.warnings + [summary(vectors, len(motion.rows))]


@dataclasses.dataclass(frozen=True)
class Umf:
    name: str
    joints: List[str]
    angle_range: int
    timebase_ms: int
    end_time: int
    vectors: List[tuple]  # (joint key, start, goal, velocity, position)


def parse(data):
    if len(data) < HEADER.size or data[:4] != MAGIC:
        raise MalformedResource('not a UMF file (no UGMF header)')
    _, version, name, count, angle_range, timebase, vector_count, end = HEADER.unpack_from(data)
    if version != VERSION:
        raise MalformedResource(f'UMF version {version}; only UMF3 is known')
    offset = HEADER.size + 2 * count
    if len(data) < offset + VECTOR.size * vector_count + 2:
        raise MalformedResource(
            f'UMF file of {len(data)} bytes is too short for {count} '
            f'joints and {vector_count} vectors'
        )
    codes = struct.unpack_from(f'<{count}H', data, HEADER.size)
    vectors = []
    for index in range(vector_count):
        tag, code, start, goal, velocity, position = VECTOR.unpack_from(
            data, offset + index * VECTOR.size
        )
        if tag != VECTOR_TAG:
            raise MalformedResource(f'UMF vector {index} has tag 0x{tag:04X}, not 0xF00D')
        vectors.append(
            (
                CODE_TO_KEY.get(code & 0xFFFF, f'0x{code & 0xFFFF:04X}'),
                start,
                goal,
                velocity,
                position,
            )
        )
    if data[offset + VECTOR.size * vector_count :][:2] != END_TAG:
        raise MalformedResource('UMF vectors do not end with 0xDEAD')
    return Umf(
        name.rstrip(b'\0').decode('latin-1'),
        [CODE_TO_KEY.get(c, f'0x{c:04X}') for c in codes],
        angle_range,
        timebase,
        end,
        vectors,
    )
