"""An AIBO with the URBI stick, on TCP 54000, for users and tests.

    ros2 run aibo_driver aibo_emulator --protocol urbi --model ers7

Plays the URBI 1.x server as the stick's 2006 kernel does: the banner and ident lines, tagged
replies `[ts:tag] body`, `!!!` errors (unknown identifiers, syntax), BIN frames (JPEG pictures
of a room with a pink ball, looking where the dog looks; 2048-byte microphone buffers of two
tones), tagged `loop {...}` and `every(Nms)` jobs ended by `stop tag`, `stopall`, `ping`,
`motor on/off`, the model's devices (joints, accelerometer, distance sensors, buttons, LEDs,
`power()`), the walking scripts (`robot.walk(ms)`, `robot.turn(ms)`, `robot.stopwalk()`,
postures) moving a pose, and `speaker.val = BIN n wav;` taking exactly n bytes.

Only the subset of urbiscript a driver sends is understood; anything else is a syntax error.
No rclpy here.
"""

import dataclasses
import io
import math
import re
import threading
import time
import wave

import numpy as np

from legacy_robot_common.emulator import TcpEmulatorServer
from legacy_robot_common.errors import ConnectionLost

from . import models, urbi
from . import protocol as p
from .scene import Scene, audio_chunk

KERNEL = 'URBI Kernel version 1.0 rev. 153'
CYCLE = 0.032  # s: the kernel's cycle on the dog, one loop turn each
WALK_SPEED = 0.06  # m/s at the default step period
TURN_RATE = 0.5  # rad/s
POSTURE_SECONDS = 1.0
STAND_DEGREES = (0.0, 10.0, 30.0)  # J1, J2, J3 of every leg standing
SIT_DEGREES = (60.0, 10.0, 110.0)
ROOM = 1.5  # m: walls at ±1.5 m
MAX_PENDING_TEXT = 8 * 1024 * 1024  # bytes of a statement (with a BIN payload) still unended
_IDENT = r'[A-Za-z_][A-Za-z0-9_]*'
_TAGGED = re.compile(rf'^({_IDENT})\s*:(?!:)\s*(.*)$', re.DOTALL)
_CALL = re.compile(rf'^robot\.({_IDENT})\s*\(\s*(-?\d+(?:\.\d+)?)?\s*\)$')
_ASSIGN = re.compile(rf'^({_IDENT}(?:\.{_IDENT})?)\s*=\s*(.+)$', re.DOTALL)
_NAME = re.compile(rf'^{_IDENT}(?:\.{_IDENT})*$')
_BIN = re.compile(r'^BIN\s+(\d+)\s+(\w+)')
_EVERY = re.compile(r'^every\s*\(\s*(\d+)\s*ms\s*\)\s*(.+)$', re.DOTALL)
_LOOP = re.compile(r'^loop\s*\{(.*)\}$', re.DOTALL)


@dataclasses.dataclass
class UrbiOptions:
    host: str = '127.0.0.1'
    port: int = urbi.PORT
    model: str = 'ers7'
    speed_scale: float = 1.0  # > 1: walks, turns and postures play faster (tests)
    ball_period: float = 8.0
    jpeg_quality: int = 80
    error_prefix: str = '!!!'  # the 2006 kernel; '***' plays the 2005 manual's examples
    cycle: float = CYCLE
    bad_length_every: int = 0  # fault: every nth camera frame's BIN header lies about its length

    def __post_init__(self):
        models.check_combination(self.model, 'urbi')
        if self.error_prefix not in ('!!!', '***'):
            raise ValueError('error_prefix must be !!! or ***')


def split_statements(text):
    """Top-level statements with their terminators: 'a; b, c' → [('a', ';'), ('b', ','), ...];
    the unterminated rest is returned apart. Braces, parentheses and quotes nest."""
    statements, start = [], 0
    for i in _terminators(text):
        statements.append((text[start:i].strip(), text[i]))
        start = i + 1
    return statements, text[start:]


def _terminators(text):
    """Indices of text's top-level ';' and ','."""
    depth, quoted = 0, False
    for i, char in enumerate(text):
        if char == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif char in '{(':
            depth += 1
        elif char in '})':
            depth = max(0, depth - 1)
        elif char in ';,' and depth == 0:
            yield i


class UrbiDog:
    """The dog's state (pure but for the clock it is given): joints, pose, walking, sensors."""

    def __init__(self, model='ers7', speed_scale=1.0):
        self.model = models.MODELS[model]
        self.speed_scale = speed_scale
        self.joints = {j.urbi: 0.0 for j in self.model.joints}
        self._set_legs(STAND_DEGREES)
        self.switches = {name: 0.0 for name in self.model.switches}
        self.leds = {name: 0.0 for name in self.model.leds}
        self.buttons = {name: 0.0 for name in self.model.touch_sensors}
        self.x = self.y = self.yaw = 0.0
        self.walk = None  # (direction ±1, end time)
        self.turning = None
        self.motors = True
        self.battery = 0.83
        self.sounds = []  # every WAV the speaker took
        self.posture = 'stand'
        self.time = None

    def _set_legs(self, degrees):
        for joint in self.model.joints:
            if joint.role[-1:] in '123' and joint.role[:2] in ('LF', 'LR', 'RF', 'RR'):
                self.joints[joint.urbi] = degrees[int(joint.role[-1]) - 1]

    def advance(self, now):
        if self.time is None:
            self.time = now
        dt, self.time = max(0.0, now - self.time), now
        scale = self.speed_scale
        if self.walk is not None:
            direction, end = self.walk
            step = max(0.0, min(dt, end - (now - dt))) * scale
            self.x += direction * WALK_SPEED * step * math.cos(self.yaw)
            self.y += direction * WALK_SPEED * step * math.sin(self.yaw)
            if now >= end:
                self.walk = None
        if self.turning is not None:
            direction, end = self.turning
            step = max(0.0, min(dt, end - (now - dt))) * scale
            self.yaw = math.atan2(
                math.sin(self.yaw + direction * TURN_RATE * step),
                math.cos(self.yaw + direction * TURN_RATE * step),
            )
            if now >= end:
                self.turning = None

    def start_walk(self, milliseconds, now, turn=False):
        """robot.walk(ms) / robot.turn(ms): ms of stepping, negative backward / clockwise;
        returns the seconds it takes."""
        seconds = abs(milliseconds) / 1000.0 / self.speed_scale
        motion = (1 if milliseconds >= 0 else -1, now + seconds)
        if turn:
            self.turning = motion
        else:
            self.walk = motion
        self.posture = 'stand'
        self._set_legs(STAND_DEGREES)
        return seconds

    def set_posture(self, name):
        self.walk = self.turning = None
        self.posture = name
        self._set_legs(SIT_DEGREES if name in ('sit', 'lay', 'beg') else STAND_DEGREES)
        return POSTURE_SECONDS / self.speed_scale

    def set_joint(self, name, value):
        joint = self.model.joint(name)
        self.joints[joint.urbi], _ = joint.clamp(value)

    def heading(self):
        pan = math.radians(self.joints.get('headPan', 0.0))
        return self.yaw + pan

    def tilt(self):
        return sum(
            math.radians(self.joints.get(j.urbi, 0.0))
            for j in self.model.joints
            if j.role in ('tilt', 'nod')
        )

    def wall_distance(self):
        """m from the head to the room's walls along where it looks."""
        c, s = math.cos(self.heading()), math.sin(self.heading())
        ranges = [
            (ROOM * (1 if d > 0 else -1) - q) / d
            for q, d in ((self.x, c), (self.y, s))
            if abs(d) > 1e-9
        ]
        return max(0.0, min(ranges))

    def sensor(self, name):
        """A sensor's value, or None when the model has no such device."""
        if name in ('accelX', 'accelY'):
            return 0.0
        if name == 'accelZ':
            return -9.81 if self.posture != 'lay' else -9.5
        limits = self.model.distance_sensors.get('distance' if name == 'distanceFar' else name)
        if limits is not None:
            if name == 'distanceChest':
                return limits[1]  # the floor ahead is clear
            return min(max(100.0 * self.wall_distance(), limits[0]), limits[1])
        if name in self.buttons:
            return self.buttons[name]
        return None


class UrbiEmulator:
    def __init__(self, options=None):
        self.options = o = options or UrbiOptions()
        self.model = models.MODELS[o.model]
        self.dog = UrbiDog(o.model, o.speed_scale)
        self.scene = Scene(o.ball_period)
        self.server = TcpEmulatorServer(self._serve, o.host, o.port, name='aibo-urbi')
        self.commands = []  # every statement received
        self.errors = 0  # error replies sent
        self.frames_sent = 0  # camera frames (counted for the bad-length fault)
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self._connections = 0
        self._frames = {}
        self.stalled = threading.Event()  # fault: statements are read but never run

    # ---- life cycle ---------------------------------------------------------------------------
    def start(self):
        self.server.start()
        self._started = time.monotonic()
        return self

    def stop(self):
        self.server.stop()

    def drop_clients(self):
        self.server.drop_clients()

    @property
    def parameters(self):
        return {
            'host': self.options.host,
            'urbi_port': self.server.port,
            'protocol': 'urbi',
            'model': self.options.model,
        }

    @property
    def description(self):
        return f'AIBO {self.options.model} with URBI on {self.options.host}:{self.server.port}'

    def now_ms(self):
        return int((time.monotonic() - self._started) * 1000)

    def pose(self):
        with self._lock:
            self.dog.advance(time.monotonic())
            return self.dog.x, self.dog.y, self.dog.yaw

    # ---- one connection -----------------------------------------------------------------------
    def _serve(self, stream, stop):
        connection = _Connection(self, stream, stop)
        connection.greet()
        try:
            connection.run()
        finally:
            connection.close()

    # ---- values -------------------------------------------------------------------------------
    def camera_jpeg(self):
        """The picture the dog sees now, JPEG at the model's size."""
        width, height = self.model.camera
        with self._lock:
            self.dog.advance(time.monotonic())
            heading, tilt = self.dog.heading(), self.dog.tilt()
        rate = 1.0 / self.options.cycle
        lap = max(1, round(self.options.ball_period * rate))
        number = int((time.monotonic() - self._started) * rate) % lap
        key = (number, self.scene.view(heading, tilt))
        data = self._frames.get(key)
        if data is None:
            rgb = self.scene.render(number / rate, heading, tilt)
            rows = np.arange(height) * p.CAMERA_HEIGHT // height
            columns = np.arange(width) * p.CAMERA_WIDTH // width
            data = p.encode_jpeg(
                np.ascontiguousarray(rgb[rows][:, columns]), self.options.jpeg_quality
            )
            if len(self._frames) > 4 * lap:
                self._frames.clear()
            self._frames[key] = data
        return data

    def micro(self):
        """The latest 2048-byte buffer: 16 kHz stereo 16-bit, two tones."""
        chunk = int((time.monotonic() - self._started) / p.CHUNK_SECONDS)
        return audio_chunk(chunk).astype('<i2').tobytes()


class _Connection:
    """One client: its statements, its jobs (loops, every) and its replies."""

    def __init__(self, emulator, stream, stop):
        self.emulator, self.stream, self.stop = emulator, stream, stop
        self.dog = emulator.dog
        self.jobs = {}  # tag → (period s, statements, next time)
        self.frozen = set()
        self._write_lock = threading.Lock()
        self._jobs_lock = threading.Lock()
        self._closed = threading.Event()
        with emulator._lock:
            emulator._connections += 1
            self.ident = f'U{100000 + emulator._connections}'
        self._runner = threading.Thread(target=self._run_jobs, daemon=True, name='urbi-jobs')

    def send(self, data):
        with self._write_lock:
            self.stream.write(data)

    def reply(self, tag, body):
        self.send(urbi.message(self.emulator.now_ms(), tag or 'notag', body))

    def error(self, tag, text):
        with self.emulator._lock:
            self.emulator.errors += 1
        self.reply(tag or 'notag', f'{self.emulator.options.error_prefix} {text}')

    def greet(self):
        for line in (
            '*** ' + '*' * 50,
            f'*** {KERNEL} ',
            f'*** Engine: Aibo {self.emulator.model.name.upper()} (emulated)',
            '*** ' + '*' * 50,
        ):
            self.reply('start', line)
        self.reply('ident', f'*** ID: {self.ident}')
        self.reply('power', f'*** Battery at {round(self.dog.battery * 100)} %')
        self._runner.start()

    def close(self):
        self._closed.set()
        if self._runner.is_alive():
            self._runner.join(1.0)

    # ---- reading ------------------------------------------------------------------------------
    def run(self):
        text = ''
        while not self.stop.is_set():
            data = self.stream.read(65536, 0.2)
            if not data:
                continue
            text += data.decode('latin-1')
            text = self._consume(text)

    def _consume(self, text):
        """Run every complete statement of text; a binary assignment waits for its bytes."""
        while True:
            try:
                at = _statement_end(text)
            except ValueError:
                if len(text) > MAX_PENDING_TEXT:
                    self.error('error', 'Syntax error')  # a statement that never ends
                    return ''
                return text
            statement, end = text[:at].strip(), text[at]
            value = statement.split('=', 1)[1].strip() if '=' in statement else ''
            binary = _BIN.match(value)
            if binary is not None and end == ';':
                size = int(binary.group(1))
                if size > urbi.MAX_BINARY_BYTES:
                    self.error('error', f'BIN of {size} bytes refused')
                    return ''  # what follows is the refused payload: nothing to resume from
                if len(text) - at - 1 < size:
                    return text  # the rest of the bytes is still on its way
                self._assign_binary(statement, text[at + 1 : at + 1 + size].encode('latin-1'))
                text = text[at + 1 + size :]
                continue
            text = text[at + 1 :]
            self.run_statement(statement, end)

    # ---- statements ---------------------------------------------------------------------------
    def run_statement(self, statement, end):
        if self.emulator.stalled.is_set():
            return  # a stuck interpreter: its running jobs go on, new commands do nothing
        with self.emulator._lock:
            self.emulator.commands.append(statement)
        if not statement:
            return
        tag = None
        tagged = _TAGGED.match(statement)
        if tagged and not statement.startswith(('robot.', 'stop ')):
            tag, statement = tagged.group(1), tagged.group(2).strip()
        try:
            self._statement(tag, statement, end)
        except ConnectionLost:
            raise
        except (ValueError, KeyError, IndexError):
            self.error('error', 'Syntax error')

    def _statement(self, tag, statement, end):
        every = _EVERY.match(statement)
        loop = _LOOP.match(statement)
        if every or loop:
            body = (every.group(2) if every else loop.group(1)).strip()
            if body.startswith('{') and body.endswith('}'):
                body = body[1:-1]  # every(...) { a; b }
            period = int(every.group(1)) / 1000.0 if every else self.emulator.options.cycle
            inner = [s for s, _ in split_statements(body + ';')[0] if s and s != 'noop']
            with self._jobs_lock:
                self.jobs[tag or f'job{len(self.jobs)}'] = [period, inner, time.monotonic()]
            return
        words = statement.split()
        if words[0] == 'stop' and len(words) == 2:
            with self._jobs_lock:
                for name in [t for t in self.jobs if t.split('.')[0] == words[1]]:
                    del self.jobs[name]
            if words[1] in ('walk', 'turn'):
                self._robot(None, 'stopwalk' if words[1] == 'walk' else 'stopturn', None, ';')
            return
        if words[0] in ('freeze', 'unfreeze') and len(words) == 2:
            (self.frozen.add if words[0] == 'freeze' else self.frozen.discard)(words[1])
            return
        if statement == 'stopall':
            with self._jobs_lock:
                self.jobs.clear()
            self._robot(None, 'stopwalk', None, ';')
            self.reply(tag, '*** All commands cleared')
            return
        if statement == 'ping':
            self.reply(tag, f'*** pong time={self.emulator.now_ms()}')
            return
        if statement in ('motor on', 'motor off'):
            with self.emulator._lock:
                self.dog.motors = statement == 'motor on'
            return
        if statement in ('motoron', 'motoroff'):
            self.error(tag, 'This command is no longer valid. Please use "motor on" instead')
            return
        call = _CALL.match(statement)
        if call:
            self._robot(tag, call.group(1), call.group(2), end)
            return
        assign = _ASSIGN.match(statement)
        if assign:
            self._assign(tag, assign.group(1), assign.group(2).strip())
            return
        self.evaluate(tag, statement)

    def evaluate(self, tag, expression):
        """A device read: its value, a BIN frame, or an unknown-identifier error."""
        name = expression[:-4] if expression.endswith('.val') else expression
        now = self.emulator.now_ms()
        if name == 'camera' and self._lie_now():
            jpeg = self.emulator.camera_jpeg()
            width, height = self.emulator.model.camera
            header = urbi.message(
                now, tag or 'notag', f'BIN {len(jpeg) + 7} jpeg {width} {height} '
            )
            self.send(header + jpeg)
            return
        if name == 'camera':
            self.send(
                urbi.binary(
                    now,
                    tag or 'notag',
                    'jpeg',
                    self.emulator.camera_jpeg(),
                    *self.emulator.model.camera,
                )
            )
            return
        if name == 'micro':
            self.send(
                urbi.binary(now, tag or 'notag', 'raw', self.emulator.micro(), 2, 16000, 16, 1)
            )
            return
        if name == 'power()':
            self.reply(tag, urbi.number(self.dog.battery))
            return
        if not _NAME.match(name):
            self.error('error', 'Syntax error')
            return
        value = self._value(name)
        if value is None:
            self.error(tag, f'Unknown identifier: {self.ident}.{expression}')
            return
        self.reply(tag, urbi.number(value))

    def _lie_now(self):
        every = self.emulator.options.bad_length_every
        if not every:
            return False
        with self.emulator._lock:
            self.emulator.frames_sent += 1
            return self.emulator.frames_sent % every == 0

    def _value(self, name):
        with self.emulator._lock:
            self.dog.advance(time.monotonic())
            if name in self.dog.joints:
                return self.dog.joints[name]
            for table in (self.dog.switches, self.dog.leds):
                if name in table:
                    return table[name]
            if name in ('camera.width', 'camera.height'):
                return self.emulator.model.camera[name.endswith('height')]
            if name == 'speaker.remain':
                return 0.0
            return self.dog.sensor(name)

    def _assign(self, tag, target, value):
        device = target[:-4] if target.endswith('.val') else target
        number = float(value)
        with self.emulator._lock:
            if device in self.dog.joints:
                self.dog.set_joint(device, number)
            elif device in self.dog.switches:
                self.dog.switches[device] = 1.0 if number else 0.0
            elif device in self.dog.leds:
                self.dog.leds[device] = min(max(number, 0.0), 1.0)
            elif device in ('robot.walkspeed', 'robot.turnspeed', 'speaker.volume'):
                pass
            else:
                device = None
        if device is None:
            self.error(tag, f'Unknown identifier: {self.ident}.{target}')

    def _assign_binary(self, statement, payload):
        target = statement.split('=', 1)[0].strip()
        if _TAGGED.match(target):
            self.error('error', 'Syntax error')  # a tagged binary assignment (2006 grammar)
            return
        if target not in ('speaker', 'speaker.val'):
            self.error('error', f'Unknown identifier: {self.ident}.{target}')
            return
        try:
            with wave.open(io.BytesIO(payload)) as reader:
                fmt = (reader.getframerate(), reader.getsampwidth() * 8)
        except (wave.Error, EOFError):
            fmt = None
        if fmt not in ((16000, 16), (8000, 8)):
            self.error('notag', 'Sound conversion failed')
            return
        with self.emulator._lock:
            self.dog.sounds.append(payload)

    def _robot(self, tag, name, argument, end):
        with self.emulator._lock:
            now = time.monotonic()
            self.dog.advance(now)
            if name in ('walk', 'turn') and argument is not None:
                seconds = self.dog.start_walk(float(argument), now, turn=name == 'turn')
            elif name == 'stopwalk':
                self.dog.walk, seconds = None, 0.0
            elif name == 'stopturn':
                self.dog.turning, seconds = None, 0.0
            elif name in urbi.POSTURES and argument is None:
                seconds = self.dog.set_posture(name)
            else:
                seconds = None
        if seconds is None:
            self.error(tag, f'Unknown identifier: {self.ident}.robot.{name}')
        elif end == ';' and seconds:
            self.stop.wait(seconds)  # a foreground walk holds the connection, as on the dog

    # ---- jobs ---------------------------------------------------------------------------------
    def _run_jobs(self):
        while not self._closed.is_set() and not self.stop.is_set():
            now = time.monotonic()
            with self._jobs_lock:
                due = [
                    (tag, job)
                    for tag, job in self.jobs.items()
                    if job[2] <= now and tag not in self.frozen
                ]
                for _, job in due:
                    job[2] = max(job[2] + job[0], now - job[0])
            try:
                for tag, (_, statements, _) in due:
                    for statement in statements:
                        inner = _TAGGED.match(statement)
                        if inner and not statement.startswith('robot.'):
                            self.evaluate(inner.group(1), inner.group(2).strip())
                        else:
                            self.evaluate(tag, statement)
            except (ConnectionLost, OSError):
                return
            with self._jobs_lock:
                wake = min((job[2] for job in self.jobs.values()), default=now + 0.05)
            self._closed.wait(max(0.001, min(0.05, wake - time.monotonic())))


def _statement_end(text):
    """Index of the first top-level ';' or ','."""
    for i in _terminators(text):
        return i
    raise ValueError('no statement end')
