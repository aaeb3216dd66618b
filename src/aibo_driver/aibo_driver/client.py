"""AIBO clients: the binary telemetry pipe (TCP 21001) and the RCODE text pipe (TCP 21002).

No rclpy here. TelemetryClient keeps one request at a time on its socket and
interleaves the polls by priority and rate: audio first (the dog keeps only 15
chunks), then operations asked for by the node (SETPROPERTY, RPUT), then camera,
colour image, voice and semantic data. Section numbers refer to docs/protocols/aibo.md.
"""

import collections
import dataclasses
import threading
import time

from legacy_robot_common.client import ReconnectingClient
from legacy_robot_common.errors import ConnectionLost, LinkTimeout, MalformedFrame
from legacy_robot_common.streams import SocketStream
from legacy_robot_common.velocity import VelocityWatchdog

from . import protocol as p
from . import rcode
from .motion import WalkPlanner, plan

Op = p.Op
RETRY_DELAY = 0.02  # s before asking again after "no new data yet" (size 0)
MAX_HOLD = 0.01  # s a record may wait for the rest of its round of requests
# s early a poll may go out to join the round under way: the link thread then wakes once for
# audio, camera and colour instead of once for each (the schedule keeps every poll's rate)
ROUND_AHEAD = 0.03
UNAVAILABLE_PERIOD = 5.0  # s between polls of a feature that never answered with data
CAMERA_MODES = ('yuv10', 'jpeg', 'off')


@dataclasses.dataclass
class Settings:
    host: str = 'localhost'
    telemetry_port: int = 21001
    rcode_port: int = 21002
    product: str = 'auto'  # auto (from bType), rcodeplus, lifeplus
    type_values: dict = dataclasses.field(  # §3.3: bType values unknown (assumption: 0, 1)
        default_factory=lambda: {p.Product.RCODEPLUS: 0, p.Product.LIFEPLUS: 1}
    )
    version_size_prefix: bool = False  # §6.1: AiboPet's page says it has none
    opcodes: p.OpcodeMap = dataclasses.field(default_factory=p.OpcodeMap)
    camera_mode: str = 'yuv10'
    image_rate: float = 10.0  # requests per second while frames keep coming
    color_rate: float = 10.0  # 0 = off
    audio: bool = True
    audio_poll_rate: float = 10.0  # GETAUDIO requests per second (15-chunk ring: ≥ 3)
    voice_rate: float = 2.0  # LifePlus only; 0 = off
    semantic_rate: float = 2.0  # LifePlus only; 0 = off
    yuv10: p.Yuv10Format = p.Yuv10Format()
    right_channel_first: bool = True
    signed_sensor_words: bool = False
    decode_jpeg: bool = True  # also publish JPEG frames as raw images
    reply_timeout: float = 2.0
    unavailable_after: float = 10.0  # s of size-0 replies before a feature is unavailable
    rput: p.RputLayout = None  # None = RPUT disabled (experimental)
    rput_reply: str = 'none'  # none or standard (a size-prefixed reply follows)

    def __post_init__(self):
        for label, port in (
            ('telemetry_port', self.telemetry_port),
            ('rcode_port', self.rcode_port),
        ):
            if not 0 < port < 65536:
                raise ValueError(f'{label} must be within 1..65535, got {port}')
        if self.product not in ('auto', 'rcodeplus', 'lifeplus'):
            raise ValueError(f'product must be auto, rcodeplus or lifeplus, got {self.product!r}')
        check_camera(self.camera_mode, self.image_rate, self.color_rate)
        if not 3.0 <= self.audio_poll_rate <= 1000.0:
            raise ValueError(
                'audio_poll_rate must be within 3..1000 per second: the dog keeps '
                'only 15 chunks (0.48 s) and returns at most 10 per reply'
            )
        if self.rput_reply not in ('none', 'standard'):
            raise ValueError('rput_reply must be none or standard')


def check_camera(mode, image_rate, color_rate):
    if mode not in CAMERA_MODES:
        raise ValueError(f'camera mode must be one of {", ".join(CAMERA_MODES)}, got {mode!r}')
    for label, rate in (('image rate', image_rate), ('colour rate', color_rate)):
        if not 0.0 <= rate <= 10000.0:
            raise ValueError(f'{label} must be within 0..10000 per second, got {rate}')


# ---- records handed to the node ---------------------------------------------------------------
@dataclasses.dataclass
class Connected:
    version: p.Version
    product: p.Product
    polled: tuple  # the operations this session polls
    camera_mode: str


@dataclasses.dataclass
class CameraFrame:
    rgb: object  # 144×176×3 uint8 (None when a JPEG is not decoded)
    jpeg: bytes  # the dog's JFIF bytes, unchanged (None for YUV10)
    received: float  # time.time() at reception
    yuv10: bytes = None  # the dog's YUV10 bytes, unchanged (None for JPEG): for calibration


@dataclasses.dataclass
class ColorFrame:
    mask: object
    received: float


@dataclasses.dataclass
class AudioReply:
    chunks: list  # [p.AudioChunk]
    missing: list  # chunks lost just before each chunk
    received: float


@dataclasses.dataclass
class VoiceRecord:
    matches: list
    received: float


@dataclasses.dataclass
class SemanticRecords:
    records: list  # [(sequence, raw)]
    received: float


@dataclasses.dataclass
class Poller:
    """One request polled on the telemetry pipe: its rate and whether it ever answers."""

    op: p.Op
    period: float
    retry: float = None  # s after a size-0 reply; None = the period
    first_request: float = None
    has_answered: bool = False
    available: bool = True
    next_due: float = 0.0
    requests: int = 0
    replies_with_data: int = 0

    def schedule(self, now, got_data, full=False, unavailable_after=10.0):
        if self.first_request is None:
            self.first_request = now
        if got_data:
            self.has_answered = self.available = True
            self.replies_with_data += 1
            # a full audio/semantic reply may leave more waiting: ask again at once
            self.next_due = now if full else max(self.next_due + self.period, now)
            return
        if not self.has_answered and now - self.first_request >= unavailable_after:
            self.available = False
        retry = self.period if self.retry is None else min(self.period, self.retry)
        self.next_due = now + (UNAVAILABLE_PERIOD if not self.available else retry)


@dataclasses.dataclass
class _Operation:
    request: bytes
    resolve: object  # (text or Exception) -> None
    reads_reply: bool = False
    done: str = ''
    op: Op = None


class TelemetryClient(ReconnectingClient):
    def __init__(self, settings, **kwargs):
        super().__init__(
            'aibo-telemetry', self._open, read_timeout=settings.reply_timeout, **kwargs
        )
        self.settings = settings
        self.decoder = p.Yuv10Decoder(settings.yuv10)
        self.audio_sequence = p.SequenceTracker()
        self._unanswered = []  # requests written since the last complete reply
        self.closed_after = []  # those the dog dropped the link after (diagnostics)
        self.version = None
        self.product = None
        self.pollers = {}
        self.camera_mode = settings.camera_mode
        self.camera_note = ''
        self._lock = threading.Lock()
        self._operations = collections.deque()
        self._camera_request = None
        self._last_voice = None
        self._last_semantic = None
        self._held = []
        self._held_since = float('inf')
        self._in_round = False  # a poll went out since the thread last slept

    def _open(self):
        return SocketStream.connect(self.settings.host, self.settings.telemetry_port)

    # ---- session ------------------------------------------------------------------------------
    def run_session(self, link):
        self._unanswered.clear()
        try:
            self._run_session(link)
        except LinkTimeout:
            raise  # a silent dog is not one that hung up
        except ConnectionLost:
            self.closed_after = list(self._unanswered)
            raise

    def _run_session(self, link):
        self.version = None
        self.version = self._read_version(link)
        self.closed_after = []
        self.product = self._product(self.version)
        self._build_pollers()
        self.audio_sequence.new_session()
        if Op.GET_AUDIO in self.pollers:
            self._write_request(link, Op.FLUSH_AUDIO)  # §2.2, §3.8
        self.mark_connected(
            f'AiboPet {self.version} ({self.product.value}, bType {self.version.type_byte})'
        )
        self.deliver(Connected(self.version, self.product, tuple(self.pollers), self.camera_mode))
        try:
            while True:
                self._apply_camera_request()
                operation = self._next_operation()
                if operation is not None:
                    self._run_operation(link, operation)
                    continue
                now = time.monotonic()
                poller = self._due_poller(now + ROUND_AHEAD if self._in_round else now)
                if poller is None or now - self._held_since >= MAX_HOLD:
                    self._release()
                if poller is None:
                    self._in_round = False
                    self.idle(self._next_due() - now)
                else:
                    self._in_round = True
                    self._poll(link, poller)
        finally:
            self._release()
            self._fail_operations(ConnectionError('link lost'))

    def _write_request(self, link, op, data=b''):
        """Every request goes out here: a dog that drops the link right after one is told apart."""
        self._unanswered.append(op)
        link.write(self.settings.opcodes.request(op) + data)

    def _read_version(self, link):
        self._write_request(link, Op.GET_VERSION)
        data = (
            self._read_reply(link)
            if self.settings.version_size_prefix
            else link.read_exact(p.VERSION_SIZE)
        )
        try:
            version = p.decode_version(data)
        except MalformedFrame as exc:
            self.reject(exc, 'version reply')
            raise
        if version.number < 250:
            self.log.warning(
                'old-version',
                f'aibo: AiboPet {version} is older than 2.50, which this driver is written for',
            )
        return version

    def _product(self, version):
        if self.settings.product != 'auto':
            return p.Product(self.settings.product)
        product = p.product_of(version, self.settings.type_values)
        if product is p.Product.UNKNOWN:
            self.log.warning(
                'btype',
                f'aibo: bType {version.type_byte} is neither configured '
                'value: polling every feature, those that never answer are '
                'reported unavailable',
            )
        return product

    def _build_pollers(self):
        s = self.settings
        supported = p.SUPPORTED[self.product]
        self.camera_note = ''
        if self.camera_mode == 'yuv10' and self.version.number < 251:
            self.camera_note = f'YUV10 needs AiboPet 2.51 or later ({self.version}): using JPEG'
            self.log.warning('yuv10-version', f'aibo: {self.camera_note}')
            self.camera_mode = 'jpeg'
        rates = {
            Op.GET_AUDIO: s.audio_poll_rate if s.audio else 0.0,
            Op.GET_YUV10: s.image_rate if self.camera_mode == 'yuv10' else 0.0,
            Op.GET_JPEG: s.image_rate if self.camera_mode == 'jpeg' else 0.0,
            Op.GET_COLOR_IMAGE: s.color_rate,
            Op.GET_VOICE_DATA: s.voice_rate,
            Op.GET_SEMANTIC: s.semantic_rate,
        }
        old = self.pollers
        # in priority order: audio first, so that the ring never overflows
        # image requests answer 0 until the next snapshot is ready: ask again soon
        self.pollers = {
            op: old.get(op) or Poller(op, 1.0 / rate, RETRY_DELAY if op in p.IMAGE_OPS else None)
            for op, rate in rates.items()
            if rate > 0 and op in supported
        }
        for op, rate in rates.items():
            if op in self.pollers:
                self.pollers[op].period = 1.0 / rate

    def _due_poller(self, now):
        for poller in self.pollers.values():
            if poller.next_due <= now:
                return poller
        return None

    def _next_due(self):
        return min(
            (poller.next_due for poller in self.pollers.values()), default=time.monotonic() + 1.0
        )

    def _poll(self, link, poller):
        self._write_request(link, poller.op)
        poller.requests += 1
        data = self._read_reply(link)
        full = False
        if data:
            try:
                full = self._deliver_reply(poller.op, data)
            except MalformedFrame as exc:
                self.reject(exc, f'{poller.op.value} reply')
        poller.schedule(time.monotonic(), bool(data), full, self.settings.unavailable_after)

    def _hold(self, record):
        if not self._held:
            self._held_since = time.monotonic()
        self._held.append(record)

    def _release(self):
        """Deliver the records of one round of requests together: the node then wakes once
        for audio, camera and colour instead of three times (each wake-up costs about 1 ms)."""
        held, self._held = self._held, []
        self._held_since = float('inf')
        for record in held:
            self.deliver(record)

    def _read_reply(self, link):
        try:
            size = p.reply_size(link.read_exact(4))
        except p.StreamLost as exc:
            self.reject(exc, 'reply')
            raise
        if not size:
            self._unanswered.clear()
            return b''
        try:
            data = link.read_exact(size)
            self._unanswered.clear()
            return data
        except LinkTimeout:
            # a reply cut short (bytes lost on the way) is a bad reply, not only a stall
            self.reject(MalformedFrame(f'reply of {size} bytes cut short'), 'reply')
            raise

    def _deliver_reply(self, op, data):
        """Decode one non-empty reply and deliver it; True when the reply was full."""
        p.check_size(op, len(data))
        received = time.time()
        if op is Op.GET_AUDIO:
            chunks = p.decode_audio(
                data, self.settings.right_channel_first, self.settings.signed_sensor_words
            )
            missing = [self.audio_sequence.update(chunk.sequence) for chunk in chunks]
            self._hold(AudioReply(chunks, missing, received))
            return len(chunks) == p.AUDIO_MAX_RECORDS
        if op is Op.GET_YUV10:
            self._hold(CameraFrame(self.decoder.decode(data), None, received, data))
        elif op is Op.GET_JPEG:
            p.check_jpeg(data)
            self._hold(
                CameraFrame(
                    p.decode_jpeg(data) if self.settings.decode_jpeg else None, data, received
                )
            )
        elif op is Op.GET_COLOR_IMAGE:
            self._hold(ColorFrame(p.decode_color_image(data), received))
        elif op is Op.GET_VOICE_DATA:
            matches = p.decode_voice(data)
            if matches != self._last_voice:  # the dog repeats its latest record
                self._last_voice = matches
                self._hold(VoiceRecord(matches, received))
        elif op is Op.GET_SEMANTIC:
            records = [
                r
                for r in p.decode_semantic(data)
                if self._last_semantic is None or r[0] != self._last_semantic
            ]
            if records:
                self._last_semantic = records[-1][0]
                self._hold(SemanticRecords(records, received))
        return False

    # ---- camera mode (any thread) ---------------------------------------------------------------
    def set_camera(self, mode, image_rate=0.0, color_rate=-1.0):
        """Switch the camera stream; a rate of 0 (image) or -1 (colour) keeps the current one."""
        image_rate = image_rate or self.settings.image_rate
        color_rate = self.settings.color_rate if color_rate < 0 else color_rate
        check_camera(mode, image_rate, color_rate)
        with self._lock:
            self._camera_request = (mode, image_rate, color_rate)
        self.poke()

    def _apply_camera_request(self):
        with self._lock:
            request, self._camera_request = self._camera_request, None
        if request is None:
            return
        self.camera_mode, self.settings.image_rate, self.settings.color_rate = request
        self._build_pollers()

    # ---- operations (any thread) ----------------------------------------------------------------
    def set_property(self, index, value, resolve):
        request = p.encode_set_property(self.settings.opcodes, index, value)
        self._submit(
            _Operation(
                request, resolve, done=f'property {index} set to {value}', op=Op.SET_PROPERTY
            )
        )

    def upload(self, name, contents, resolve):
        """TELEMOP_RPUT with the configured layout (experimental, RCodePlus only)."""
        if self.settings.rput is None:
            raise ValueError('RPUT is disabled (parameter rput_enabled)')
        if self.product is p.Product.LIFEPLUS:
            raise ValueError('LifePlus sticks have no RPUT (RCodePlus only)')
        request = self.settings.opcodes.request(Op.RPUT) + self.settings.rput.encode(
            name, contents
        )
        self._submit(
            _Operation(
                request,
                resolve,
                self.settings.rput_reply == 'standard',
                f'{len(contents)} bytes sent as {name}',
                Op.RPUT,
            )
        )

    def _submit(self, operation):
        if not self.connected:
            operation.resolve(ConnectionError(f'{self.name}: not connected'))
            return
        with self._lock:
            self._operations.append(operation)
        self.poke()

    def _next_operation(self):
        with self._lock:
            return self._operations.popleft() if self._operations else None

    def _run_operation(self, link, operation):
        self._unanswered.append(operation.op)
        link.write(operation.request)
        reply = operation.done
        if operation.reads_reply:
            data = self._read_reply(link)
            reply += f'; the dog answered {len(data)} bytes'
        operation.resolve(reply)

    def _fail_operations(self, error):
        with self._lock:
            pending = list(self._operations)
            self._operations.clear()
        for operation in pending:
            operation.resolve(error)


# ---- the RCODE text pipe (§4) -----------------------------------------------------------------
@dataclasses.dataclass
class RcodeLine:
    text: str


@dataclasses.dataclass
class PollValues:
    """The variables one PRINT poll read (integers as the dog printed them)."""

    values: dict
    polled_at: float  # time.monotonic() when the poll was sent
    received: float  # time.time() at its answer


@dataclasses.dataclass
class _Command:
    line: str
    resolve: object  # (Reply, text or exception) -> None; None for the client's own lines
    timeout: float
    quiet_time: float
    kind: str = 'user'  # user, motion, head, action, poll, urgent
    poll: rcode.Poll = None
    exchange: rcode.Exchange = None
    deadline: float = 0.0
    quiet_deadline: float = None
    sent_at: float = 0.0

    def __post_init__(self):
        self.exchange = rcode.Exchange(self.line, self.poll)


ECHO_SETTLE = 0.05  # s after the echo of a motion line that an ERROR would have come in
OWN_LINES = ('poll', 'motion', 'head')  # lines whose echo and answers are not RcodeLines


class RcodeClient(ReconnectingClient):
    """Port 21002: one RCODE line at a time, each reply matched to its line (echo, output,
    ERROR:, control bytes). Lines go in priority order: an emergency QUIT, then the walk
    planner's motion lines, the latest head target, actions and console lines, and last the
    PRINT polls, which run only while nothing else waits.

    Every line the dog prints is also delivered as an RcodeLine, except the echoes and answers
    of the client's own polls, motion and head lines (ERROR lines always); every poll's answer
    as PollValues.
    """

    SILENCE = 1.0  # s between looks at the queue while the dog is quiet (quiet is normal)

    def __init__(
        self,
        settings,
        quiet_time=0.3,
        motion=None,
        polls=(),
        poll_timeout=1.0,
        motion_timeout=0.5,
        **kwargs,
    ):
        super().__init__('aibo-rcode', self._open, read_timeout=self.SILENCE, **kwargs)
        self.settings = settings
        self.quiet_time = quiet_time
        self.poll_timeout = poll_timeout
        self.planner = WalkPlanner(motion)
        # cmd_vel_timeout: the shared rule; a walk segment needs no resending (the dog walks on)
        self.motion = VelocityWatchdog(
            self._plan_velocity, self._stop_velocity, timeout=motion_timeout
        )
        self._notes = []
        self._polls = [[poll, period, 0.0] for poll, period in polls]
        self._lock = threading.Lock()
        self._queue = collections.deque()  # actions and console lines, in order
        self._urgent = collections.deque()
        self._motion = collections.deque()
        self._head = None  # (pan, tilt) degrees not yet sent
        self._command = None
        self.poll_answers = 0
        self.poll_failures = 0  # polls the dog answered with an ERROR or not at all
        self.last_poll_failure = ''
        self.refused = 0  # lines the dog answered with ERROR
        self.last_refusal = ''
        self.late_answers = 0  # answers to own lines that came after their time
        self._held = None  # PollValues of the round of polls under way
        self._own_sent = collections.deque(maxlen=32)  # own lines as the dog may echo them

    def _open(self):
        return SocketStream.connect(self.settings.host, self.settings.rcode_port)

    def run_session(self, link):
        text = p.ConsoleText()
        self._read_greeting(link, text)
        with self._lock:
            self.planner.link_restarted(time.monotonic())
        self.mark_connected(f'{self.settings.host}:{self.settings.rcode_port}')
        try:
            while True:
                self.motion.poll()  # STOP_WALK once commands went stale
                self._start_next()
                try:
                    data = link.read(min(self._wait(), max(0.005, self.motion.seconds_left())))
                except LinkTimeout:
                    data = b''
                for line in text.feed(data):
                    self._on_line(line)
                self._finish_if_due()
        finally:
            self._fail_all(ConnectionError('link lost'))

    def _read_greeting(self, link, text, longest=2.0):
        """Whatever the dog prints on connecting, until it is quiet: not a command's reply.
        ConnectionLost saying what to put on the stick when the dog waits for a password."""
        give_up = time.monotonic() + longest
        greeting = []
        while time.monotonic() < give_up:
            try:
                data = link.read(self.quiet_time)
            except LinkTimeout:
                break
            for line in text.feed(data):
                if rcode.strip_controls(line):
                    greeting.append(line)
                    self.deliver(RcodeLine(line))
        if rcode.greeting_needs_auth(greeting):
            raise ConnectionLost(rcode.AUTH_HINT)

    # ---- what the node asks for (any thread) ----------------------------------------------------
    def command(self, line, resolve, timeout=3.0):
        """Queue one console line; resolve(printed text, echo left out, or exception) runs in
        the link thread."""
        line = line.strip()
        if not line or any(c in line for c in '\r\n'):
            raise ValueError('give one RCODE line (no line breaks)')
        rcode.check_line(line)
        self._submit(
            _Command(
                line,
                lambda r: resolve(r if isinstance(r, Exception) else r.text),
                timeout,
                self.quiet_time,
            )
        )

    def play(self, line, resolve):
        """Queue an action line (play_action, STOP); resolve(Reply or exception)."""
        self._submit(_Command(line, resolve, self.poll_timeout, self.quiet_time, 'action'))

    def emergency_stop(self, resolve):
        """QUIT before anything else: the dog's queue empties and it halts at once."""
        if not self.connected:
            resolve(ConnectionError(f'{self.name}: not connected'))
            return
        self.motion.clear()
        with self._lock:
            self._queue.clear()
            self._motion.clear()
            self._head = None
            self._urgent.append(
                _Command('QUIT', resolve, self.poll_timeout, self.quiet_time, 'urgent')
            )
        self._start_next()

    def drive(self, vx, vy, wz):
        """Walk at a body velocity (m/s, rad/s) → the planner's refusal notes; ValueError for
        NaN or inf. Without a new command for motion_timeout the dog gets STOP_WALK."""
        plan(vx, vy, wz, self.planner.settings)  # NaN or inf: refused before the watchdog
        self.motion.command((vx, vy, wz))
        notes, self._notes = self._notes, []
        self._start_next()
        return notes

    def _plan_velocity(self, velocity):
        with self._lock:
            self._notes = self.planner.command(*velocity, time.monotonic())

    def _stop_velocity(self):
        with self._lock:
            self.planner.stop(time.monotonic())

    def halt(self):
        """STOP_WALK if the dog walks or turns (zero velocity, the stop service, deactivate)."""
        self.motion.clear()
        self._stop_velocity()
        self._start_next()

    def look(self, pan_deg, tilt_deg):
        """MOVE_HEAD to (pan, tilt) degrees; a newer target replaces one not yet sent."""
        with self._lock:
            self._head = (pan_deg, tilt_deg)
        self._start_next()

    def odometry(self):
        """(x, y, yaw, (vx, vy, wz), (xy variance, yaw variance)) of the dead reckoning now."""
        with self._lock:
            velocity = self.planner.velocity(time.monotonic())
            o = self.planner.odometry
            return o.x, o.y, o.yaw, velocity, o.variances()

    def reset_odometry(self):
        with self._lock:
            self.planner.odometry.reset()
            self.planner.odometry.set_velocity(
                time.monotonic(), self.planner.velocity(time.monotonic())
            )

    def _submit(self, command):
        if not self.connected:
            command.resolve(ConnectionError(f'{self.name}: not connected'))
            return
        with self._lock:
            self._queue.append(command)
        self._start_next()  # from this thread: the link thread may be waiting for input

    # ---- the link thread ------------------------------------------------------------------------
    def _next_command(self, now):
        """The next line by priority (called with the lock held, nothing outstanding)."""
        if self._urgent:
            return self._urgent.popleft()
        if not self._motion:
            self._motion.extend(
                _Command(line, None, self.poll_timeout, self.quiet_time, 'motion')
                for line in self.planner.next_lines(now)
            )
        if self._motion:
            return self._motion.popleft()
        if self._head is not None:
            (pan, tilt), self._head = self._head, None
            return _Command(
                rcode.move_head(pan, tilt), None, self.poll_timeout, self.quiet_time, 'head'
            )
        if self._queue:
            return self._queue.popleft()
        for entry in self._polls:
            poll, period, due = entry
            if due <= now:
                # behind (a slow link, the start): the next one a period from now, no burst
                entry[2] = due + period if due + period > now else now + period
                return _Command(poll.line, None, self.poll_timeout, self.quiet_time, 'poll', poll)
        return None

    def _start_next(self):
        if not self.connected:
            return
        with self._lock:
            if self._command is not None:
                return
            now = time.monotonic()
            command = self._next_command(now)
            held = None
            if command is None:
                held, self._held = self._held, None
            else:
                self._command = command
                command.sent_at = now
                if command.kind in OWN_LINES:
                    self._own_sent.append(rcode.normal_line(command.line))
                command.deadline = now + command.timeout
                if command.kind != 'user':  # a console line may print late; others are short
                    command.quiet_deadline = now + command.quiet_time
        if command is None:
            if held is not None:
                self.deliver(held)  # the round of polls is done: the node wakes once for it
            return
        try:
            self.send(command.line.encode('ascii', 'replace') + rcode.NEWLINE)
        except ConnectionError as exc:
            with self._lock:
                self._command = None
            self._complete(command, exc)

    def _wait(self):
        with self._lock:
            command = self._command
            if command is None:
                due = min((entry[2] for entry in self._polls), default=None)
                if due is None:
                    return self.SILENCE
                return max(0.005, min(self.SILENCE, due - time.monotonic()))
        ends = [command.deadline] + ([command.quiet_deadline] if command.quiet_deadline else [])
        return max(0.005, min(ends) - time.monotonic())

    def _on_line(self, line):
        text = rcode.strip_controls(line)
        late = None
        with self._lock:
            command = self._command
            error = text.upper().startswith('ERROR')
            # the driver's own chatter (14 poll lines a second) stays off the console: the echo
            # and answer of its own line waiting now, or of one whose time ran out
            own = (
                command is not None
                and command.kind in OWN_LINES
                and command.exchange.feed_preview(text)
            )
            if text and not own and not error:
                late = self._late_answer(text, command)
            if text and (error or (not own and late is None)):
                self.deliver(RcodeLine(line))
            if command is None or late is not None:
                done = False  # a late answer is no part of the waiting command's reply
            else:
                done = command.exchange.feed(line)
                now = time.monotonic()
                if (
                    command.kind in ('motion', 'head', 'action', 'urgent')
                    and command.exchange.reply.echoed
                ):
                    command.quiet_deadline = now + min(self.quiet_time, ECHO_SETTLE)
                else:
                    command.quiet_deadline = now + command.quiet_time
                if done:
                    self._command = None
        if isinstance(late, PollValues):
            self.deliver(late)
        if done:
            self._complete(command)

    def _hold_values(self, values, polled_at):
        """A round of polls due together (the motion poll and the four joint polls) reaches
        the node as one PollValues: one executor wake-up instead of five."""
        with self._lock:
            if self._held is None:
                self._held = PollValues(dict(values), polled_at, time.time())
            else:
                self._held.values.update(values)
                self._held.received = time.time()

    def _late_answer(self, text, command):
        """A line that answers one of the client's own lines after its time ran out (a slow
        link): its echo (→ True) or a poll's tagged answer (→ PollValues, with no send time:
        its Wait is too old for the planner); None for any other line."""
        if command is not None and command.exchange.feed_preview(text):
            return None  # the line of the command that waits now
        for poll, _period, _due in self._polls:
            values = poll.parse(text)
            if values is not None:
                self.late_answers += 1
                return PollValues(values, float('-inf'), time.time())
        if rcode.normal_line(text) in self._own_sent:
            self.late_answers += 1
            return True
        return None

    def _finish_if_due(self):
        now = time.monotonic()
        with self._lock:
            command = self._command
            if command is None or not (
                now >= command.deadline
                or (command.quiet_deadline and now >= command.quiet_deadline)
            ):
                return
            self._command = None
        self._complete(command)

    def _complete(self, command, failure=None):
        """A line's reply is in (or the line failed): tell whoever waits for it."""
        reply = command.exchange.reply
        now = time.monotonic()
        if reply.error:
            self.refused += 1
            self.last_refusal = f'{command.line} → {reply.error}'
            self.log.warning('rcode-error', f'aibo: the dog refused {self.last_refusal}')
        if command.kind == 'motion':
            with self._lock:
                self.planner.sent(command.line, reply.error or str(failure or ''), now)
        elif command.kind == 'urgent' and failure is None:
            with self._lock:
                self.planner.halted(now)
        elif command.kind == 'poll':
            if reply.values is None:
                self.poll_failures += 1
                self.last_poll_failure = (
                    reply.error
                    or str(failure or '')
                    or (f'no answer to {command.line} within {command.timeout:.1f} s')
                )
                self.log.warning('rcode-poll', f'aibo: poll failed: {self.last_poll_failure}')
            else:
                self.poll_answers += 1
                if 'Wait' in reply.values:
                    with self._lock:
                        self.planner.on_wait(reply.values['Wait'], command.sent_at, now)
                self._hold_values(reply.values, command.sent_at)
        if command.resolve is not None:
            command.resolve(failure or reply)

    def _fail_all(self, error):
        with self._lock:
            pending = [self._command] if self._command else []
            pending += list(self._urgent) + list(self._queue)
            self._command = None
            self._queue.clear()
            self._urgent.clear()
            self._motion.clear()
        for command in pending:
            if command.resolve is not None:
                command.resolve(error)
