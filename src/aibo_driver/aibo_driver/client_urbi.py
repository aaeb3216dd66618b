"""One connection to an AIBO's URBI server (TCP 54000): tagged loops in, commands out.

No rclpy. The server pushes nothing by itself: on connecting the client starts tagged jobs
(`drvcam: loop {camera.val; noop},`, `drvmic`, an `every(...)` for the joints, one for the
sensors, one for the battery) and decodes their replies into the records the node publishes:
CameraFrame and AudioReply (as from the telemetry link), JointValues, SensorValues, Touch,
Battery and UrbiError. Every job carries a tag of this client, is stopped before it is started
(a job of a lost connection may still run), and is stopped again on stop; the motors are
switched off on stop. A ping every ping_period with no pong within ping_timeout rebuilds the
link (a stuck interpreter still streams nothing useful). Joint targets beyond a joint's range
are clamped before they are sent, with a WARN.
"""

import dataclasses
import threading
import time

import numpy as np

from legacy_robot_common.client import ReconnectingClient
from legacy_robot_common.errors import LinkTimeout, MalformedFrame
from legacy_robot_common.streams import SocketStream

from . import models, urbi
from . import protocol as p
from .client import AudioReply, CameraFrame

TAGS = ('drvcam', 'drvmic', 'drvjoints', 'drvsensors', 'drvbattery')
PING_TAG = 'drvping'
READ_SLICE = 0.05  # s: how often the session looks at its timers
WALK_CHUNK_MS = 1000  # ms of stepping one robot.walk asks for; renewed while cmd_vel lasts


@dataclasses.dataclass
class UrbiSettings:
    host: str = 'localhost'
    port: int = urbi.PORT
    model: str = 'ers7'
    camera: bool = True
    audio: bool = True
    decode_jpeg: bool = True
    joint_rate: float = 10.0  # Hz (0 = off)
    sensor_rate: float = 10.0
    battery_period: float = 10.0  # s
    ping_period: float = 1.0
    ping_timeout: float = 3.0
    cmd_vel_timeout: float = 0.5  # s without drive() before the walk is stopped
    min_speed: float = 0.005  # m/s below which a translation is zero
    min_turn_rate: float = 0.02  # rad/s

    def __post_init__(self):
        models.check_combination(self.model, 'urbi')
        if self.ping_timeout <= self.ping_period * 0.5:
            raise ValueError('ping_timeout must exceed half the ping period')


@dataclasses.dataclass
class UrbiConnected:
    kernel: str  # the banner's kernel line
    ident: str  # the connection's U<number>


@dataclasses.dataclass
class JointValues:
    degrees: dict  # joint name (joint_states) → degrees
    received: float


@dataclasses.dataclass
class SensorValues:
    accel: tuple  # (x, y, z) m/s²
    ranges: dict  # URBI distance device → metres
    received: float


@dataclasses.dataclass
class Touch:
    sensor: str
    value: float
    received: float


@dataclasses.dataclass
class Battery:
    fraction: float
    received: float


@dataclasses.dataclass
class UrbiError:
    tag: str
    text: str


def job_commands(settings, model, streaming=True):
    """The tagged jobs a session starts, each preceded by its stop (only the stops when not
    streaming)."""
    out = [urbi.stop(tag) for tag in TAGS]
    if not streaming:
        return out
    if settings.camera:
        out.append(urbi.loop('drvcam', 'camera.val'))
    if settings.audio:
        out.append(urbi.loop('drvmic', 'micro.val'))
    if settings.joint_rate:
        reads = '; '.join(f'j_{j.urbi}: {j.urbi}.val' for j in model.joints)
        out.append(urbi.every('drvjoints', 1000 / settings.joint_rate, f'{{{reads}}}'))
    if settings.sensor_rate:
        devices = [*SENSOR_ACCEL, *model.distance_sensors, *model.touch_sensors]
        reads = '; '.join(f's_{d}: {d}.val' for d in devices)
        out.append(urbi.every('drvsensors', 1000 / settings.sensor_rate, f'{{{reads}}}'))
    if settings.battery_period:
        out.append(urbi.every('drvbattery', settings.battery_period * 1000, 'bat: power()'))
    return out


SENSOR_ACCEL = ('accelX', 'accelY', 'accelZ')
# play_action's names (as over R-CODE where one exists) → the stick's posture scripts
ACTIONS = {
    'sit': 'sit',
    'stand': 'stand',
    'lie': 'lay',
    'beg': 'beg',
    'stretch': 'stretch',
    'initial': 'initial',
    'stop': None,
}


def to_model_format(pcm, rate, fmt):
    """Mono int16 samples at rate → bytes in the speaker's format (rate, 16-bit signed or 8-bit
    unsigned), resampled linearly."""
    samples = np.asarray(pcm, dtype=np.float64)
    if rate != fmt.rate and samples.size:
        count = max(1, round(samples.size * fmt.rate / rate))
        samples = np.interp(np.arange(count) * rate / fmt.rate, np.arange(samples.size), samples)
    samples = np.clip(samples, -32768, 32767)
    if fmt.bits == 8:
        return (samples / 256 + 128).astype(np.uint8).tobytes()
    return samples.astype('<i2').tobytes()


class UrbiClient(ReconnectingClient):
    def __init__(self, settings, **kwargs):
        super().__init__(f'urbi {settings.host}:{settings.port}', self._open, **kwargs)
        self.settings = settings
        self.model = models.MODELS[settings.model]
        self.counters_extra = dict.fromkeys(
            ('errors', 'bad jpeg', 'clamped', 'audio gaps', 'pings lost'), 0
        )
        self.last_error_text = ''
        self._joints = {}
        self._sensors = {}
        self._touch = {}
        self._mic_time = None
        self._audio_sequence = 0
        self._velocity = (0.0, 0.0, 0.0)  # vx, wz, time of the command
        self._walking = None  # ('walk' | 'turn', sign, renew at)
        self._lock = threading.Lock()
        self._pong_seen = False
        self._streaming = True  # the node's lifecycle: jobs run while it is active
        self._last_joint = f'j_{self.model.joints[-1].urbi}'
        sensors = [*SENSOR_ACCEL, *self.model.distance_sensors, *self.model.touch_sensors]
        self._last_sensor = f's_{sensors[-1]}'

    def _open(self):
        return SocketStream.connect(self.settings.host, self.settings.port)

    # ---- session ------------------------------------------------------------------------------
    def run_session(self, link):
        decoder = urbi.StreamDecoder()
        kernel, ident = self._handshake(link, decoder)
        with self._lock:
            streaming = self._streaming
        for command in job_commands(self.settings, self.model, streaming):
            link.write(command)
        self.mark_connected(f'{kernel} as {ident}')
        self.deliver(UrbiConnected(kernel, ident))
        self._mic_time = None
        next_ping, pong_due = time.monotonic(), None
        while True:
            self._take(link, decoder)
            now = time.monotonic()
            if self._pong_seen:
                self._pong_seen, pong_due = False, None
            if pong_due is not None and now > pong_due:
                self.counters_extra['pings lost'] += 1
                raise LinkTimeout(f'no pong within {self.settings.ping_timeout} s')
            if now >= next_ping:
                link.write(urbi.ping(PING_TAG))
                next_ping = now + self.settings.ping_period
                pong_due = pong_due or now + self.settings.ping_timeout
            self._watch_velocity(link, now)

    def _handshake(self, link, decoder, timeout=5.0):
        """The banner up to the ident line: (kernel line, ident)."""
        deadline = time.monotonic() + timeout
        kernel = ''
        while time.monotonic() < deadline:
            decoder.feed(link.read(timeout=max(0.1, deadline - time.monotonic())))
            for record in decoder.records():
                if isinstance(record, urbi.Message) and record.tag == 'start':
                    if 'Kernel' in record.text:
                        kernel = record.text
                elif isinstance(record, urbi.Message) and record.text.startswith('ID:'):
                    return kernel or 'URBI', record.text[3:].strip()
        raise LinkTimeout(f'no URBI ident line within {timeout} s: is this an URBI server?')

    def _take(self, link, decoder):
        try:
            decoder.feed(link.read(timeout=READ_SLICE))
        except LinkTimeout:
            return  # a quiet slice; the ping watchdog judges silence
        while True:
            try:
                record = decoder.next_record()
            except MalformedFrame as exc:
                self.reject(exc)
                continue
            if record is None:
                return
            self._handle(record)

    def _handle(self, record):
        received = time.time()
        if isinstance(record, urbi.Binary):
            if record.tag == 'drvcam' and record.kind == 'jpeg':
                self._camera(record, received)
            elif record.tag == 'drvmic' and record.kind == 'raw':
                self._micro(record, received)
            return
        tag = record.tag
        if record.kind == 'error':
            self.counters_extra['errors'] += 1
            self.last_error_text = record.text
            self.log.warning('urbi-error', f'{self.name}: the dog says: {record.text} ({tag})')
            self.deliver(UrbiError(tag, record.text))
        elif tag == PING_TAG:
            self._pong_seen = True
        elif tag.startswith('j_'):
            self._joint(tag[2:], record.number(), tag == self._last_joint, received)
        elif tag.startswith('s_'):
            self._sensor(tag[2:], record.number(), tag == self._last_sensor, received)
        elif tag == 'bat' and record.number() is not None:
            self.deliver(Battery(record.number(), received))

    def _camera(self, record, received):
        rgb = None
        if self.settings.decode_jpeg:
            try:
                rgb = p.decode_jpeg(record.data)
            except ValueError as exc:
                self.counters_extra['bad jpeg'] += 1
                self.reject(exc, 'jpeg')
                return
        self.deliver(CameraFrame(rgb, record.data, received))

    def _micro(self, record, received):
        if record.channels != 2 or record.bits != 16 or len(record.data) % 4:
            self.reject(MalformedFrame(f'microphone chunk not 16-bit stereo: {record}'), 'audio')
            return
        pcm = np.frombuffer(record.data, '<i2').reshape(-1, 2)
        missing = 0
        if self._mic_time is not None:
            period = 1000 * pcm.shape[0] / max(1, record.rate)
            missing = max(0, round((record.timestamp - self._mic_time) / period) - 1)
            self.counters_extra['audio gaps'] += missing
        self._mic_time = record.timestamp
        self._audio_sequence += 1 + missing
        chunk = p.AudioChunk(self._audio_sequence, 0, 0, pcm)
        self.deliver(AudioReply([chunk], [missing], received))

    def _joint(self, device, value, last, received):
        if value is not None:
            try:
                self._joints[self.model.joint(device).name] = value
            except KeyError:
                pass
        if last and self._joints:
            self.deliver(JointValues(dict(self._joints), received))

    def _sensor(self, device, value, last, received):
        if value is None:
            return
        if device in self.model.touch_sensors:
            if self._touch.get(device) != value:
                self._touch[device] = value
                self.deliver(Touch(device, value, received))
        else:
            self._sensors[device] = value
        if last:
            accel = tuple(self._sensors.get(name, 0.0) for name in SENSOR_ACCEL)
            ranges = {
                name: self._sensors[name] / 100.0
                for name in self.model.distance_sensors
                if name in self._sensors
            }
            self.deliver(SensorValues(accel, ranges, received))

    def close_session(self, link):
        """Every job of ours stopped, the walk ended, the motors off."""
        for tag in TAGS:
            link.write(urbi.stop(tag))
        link.write(urbi.stop_walk())
        link.write(urbi.motors(False))

    # ---- commands (any thread) ----------------------------------------------------------------
    def set_streaming(self, on):
        """Start (activate) or stop (deactivate) every job of ours; kept across reconnects."""
        with self._lock:
            changed, self._streaming = self._streaming != on, on
        if changed and self.connected:
            commands = job_commands(self.settings, self.model, on)
            self.send(b''.join(commands))

    def drive(self, vx, wz):
        """Walk (vx m/s, + forward) or turn (wz rad/s, + left) while commands keep coming;
        the watchdog stops the dog cmd_vel_timeout after the last one."""
        with self._lock:
            self._velocity = (vx, wz, time.monotonic())
        self.poke()

    def _watch_velocity(self, link, now):
        with self._lock:
            vx, wz, at = self._velocity
        s = self.settings
        stale = s.cmd_vel_timeout and now - at > s.cmd_vel_timeout
        if abs(vx) >= s.min_speed and not stale:
            wanted = ('walk', 1 if vx > 0 else -1)
        elif abs(wz) >= s.min_turn_rate and not stale:
            wanted = ('turn', 1 if wz > 0 else -1)
        else:
            wanted = None
        current = self._walking[:2] if self._walking else None
        if wanted is None:
            if current is not None:
                link.write(urbi.stop_walk())
                self._walking = None
            return
        if wanted != current or now >= self._walking[2]:
            if current is not None and wanted != current:
                link.write(urbi.stop_walk())
            kind, sign = wanted
            encode = urbi.walk if kind == 'walk' else urbi.turn
            link.write(encode(sign * WALK_CHUNK_MS))
            self._walking = (kind, sign, now + WALK_CHUNK_MS / 1000.0 * 0.8)

    def halt(self):
        with self._lock:
            self._velocity = (0.0, 0.0, 0.0)
        self.send(urbi.stop_walk())
        self._walking = None

    def set_joint(self, name, degrees):
        """A joint's target, clamped to its range (WARN when clamped); False when clamped."""
        joint = self.model.joint(name)
        value, clamped = joint.clamp(degrees)
        if clamped:
            self.counters_extra['clamped'] += 1
            self.log.warning(
                'clamped',
                f'{self.name}: {joint.name} {degrees:.1f}° is outside '
                f'[{joint.lower}, {joint.upper}]: sent {value:.1f}°',
            )
        self.send(urbi.assign(joint.urbi, value))
        return not clamped

    def look(self, pan_deg, tilt_deg):
        """Head pan (+ left) and tilt (+ up): the model's pan and tilt joints."""
        roles = self.model.by_role()
        ok = self.set_joint(roles['pan'].name, pan_deg)
        return self.set_joint(roles['tilt'].name, tilt_deg) and ok

    def posture(self, name):
        self.send(urbi.posture(name))

    def play_action(self, name):
        """play_action's name → the stick's posture script (ValueError listing the names);
        'stop' ends walking and turning."""
        key = name.strip().lower()
        if key not in ACTIONS:
            raise ValueError(f'unknown action {name!r} over URBI; valid: {", ".join(ACTIONS)}')
        if ACTIONS[key] is None:
            self.halt()
            return 'robot.stopwalk(); robot.stopturn();'
        self.posture(ACTIONS[key])
        return f'robot.{ACTIONS[key]}()'

    def set_led(self, name, value):
        if name not in self.model.leds:
            raise ValueError(
                f'{self.model.name} has no LED {name!r}; valid: {", ".join(self.model.leds)}'
            )
        self.send(urbi.assign(name, value))

    def say(self, pcm, rate):
        """Mono int16 samples at rate → a WAV in the speaker's format, sent as one BIN."""
        fmt = self.model.speaker
        data = to_model_format(pcm, rate, fmt)
        self.send(urbi.speaker_wav(urbi.wav(data, fmt.rate, fmt.bits, 1)))
        return len(data) / fmt.bytes_per_second
