"""iPaq clients: the control connection (port 5000) and the two stream ports (5001, 5002).

No rclpy here. ControlClient sends one command at a time and matches each
response to it; between commands it polls with a P packet (mask = what the
drive state needs) whose FullResponse carries range, wheel power and pose.
StreamClient reads one stream port and recognises what it carries by content.
Section numbers (§) refer to docs/protocols/ipaq.md.
"""

import collections
import dataclasses
import threading
import time

from legacy_robot_common.client import ReconnectingClient
from legacy_robot_common.errors import LinkTimeout, MalformedFrame
from legacy_robot_common.streams import SocketStream
from legacy_robot_common.velocity import VelocityWatchdog

from . import protocol as p

MIN_WAIT = 0.002  # s; shortest read wait of the control loop


class CommandFailed(Exception):
    """The iPaq answered with a non-zero status: nothing was done (§2.3)."""

    def __init__(self, status):
        super().__init__(f'status {status}: {p.status_text(status)}')
        self.status = status


@dataclasses.dataclass
class Settings:
    host: str = 'localhost'
    control_port: int = 5000
    stream_ports: tuple = (5001, 5002)
    poll_period: float = 0.1  # s between P polls for range, wheel power and pose
    response_timeout: float = 1.0  # s to wait for each response
    missed_responses: int = 3  # consecutive timeouts before reconnecting
    framed_responses: bool = True  # §4.1: responses framed like commands (unconfirmed)
    checksum_over_stuffed: bool = False  # §4.1: checksum before stuffing (inferred)
    mask_bits: p.MaskBits = p.MaskBits()
    camera: p.CameraFormat = p.CameraFormat()
    vel_timeout: int = -1  # raw vel_timeout sent with each drive command; -1 = none
    stop_velocity: int = 0  # raw vel that means standing still (units.py)
    motion_timeout: float = 0.5  # s without set_drive() before the drive stops; 0 = never

    def __post_init__(self):
        for label, port in (
            ('control_port', self.control_port),
            *(('stream port', port) for port in self.stream_ports),
        ):
            if not 0 < port < 65536:
                raise ValueError(f'{label} must be within 1..65535, got {port}')
        if not -1 <= self.vel_timeout <= 255:
            raise ValueError('vel_timeout must be -1 (not sent) or a raw byte 0..255')


@dataclasses.dataclass
class _Request:
    make_packet: object  # () -> bytes, called when the request goes out
    kind: p.ResponseKind
    resolve: object  # (record or Exception) -> None; None for the poll
    label: str
    deadline: float = 0.0
    late: bool = False  # timed out; its reply may still come before the next one's


@dataclasses.dataclass
class Drive:
    """What the next P packets carry: raw vel/dir while driving, servo settings once."""

    vel: int = 0
    direction: int = 0
    active: bool = False  # vel/dir bits set in P packets
    pan: int = None  # pending camera servo settings (sent once)
    tilt: int = None
    extra_bits: int = 0  # one-shot kill-motor / init-BrainStem bits


@dataclasses.dataclass
class Connected:
    """First record of every control session (the iPaq may have restarted: settings are lost)."""

    address: str


class ControlClient(ReconnectingClient):
    """Port 5000: one command in flight; responses matched in order; P polls for telemetry."""

    def __init__(self, settings, **kwargs):
        super().__init__(
            'ipaq-control', self._open, read_timeout=settings.response_timeout, **kwargs
        )
        self.settings = settings
        # the drive rides on the polls; set_drive() keeps it alive, one stop when it goes stale
        self.motion = VelocityWatchdog(
            self._drive_to, self._drive_stopped, timeout=settings.motion_timeout
        )
        self.timeouts = 0
        self.failed_commands = 0
        self.stray_responses = 0
        self.late_responses = 0  # replies that came after their command timed out
        self.responses = 0  # replies that parsed (0 with bytes in: a framing setting)
        self._lock = threading.RLock()
        self._queue = collections.deque()
        self._in_flight = None
        self._drive = Drive()
        self._stop_pending = False
        self._last_poll = 0.0
        self._missed = 0
        self._receiver = p.FrameReceiver()
        self._unframed = bytearray()

    def _open(self):
        return SocketStream.connect(self.settings.host, self.settings.control_port)

    # ---- session ---------------------------------------------------------------------
    def run_session(self, link):
        self._receiver = p.FrameReceiver()
        self._unframed.clear()
        self._missed = 0
        address = f'{self.settings.host}:{self.settings.control_port}'
        self.mark_connected(address)
        self.deliver(Connected(address))
        try:
            self._poll()
            while True:
                try:
                    data = link.read(self._next_wait())
                except LinkTimeout:
                    data = b''
                for body in self._bodies(data):
                    if isinstance(body, bytes):
                        self._on_response(body)
                    else:
                        self._on_unreadable(body)
                self._check_deadline()
                self.motion.poll()
                if time.monotonic() - self._last_poll >= self.settings.poll_period:
                    self._poll()
        finally:
            self._fail_all(ConnectionError('link lost'))

    def _next_wait(self):
        now = time.monotonic()
        waits = [self._last_poll + self.settings.poll_period - now]
        with self._lock:
            if self._in_flight is not None:
                waits.append(self._in_flight.deadline - now)
        waits.append(self.motion.seconds_left())
        return max(MIN_WAIT, min(waits))

    def _bodies(self, data):
        """Response bodies in the received bytes (framed, or by expected length when unframed),
        in order with a MalformedFrame for each that does not parse."""
        if self.settings.framed_responses:
            return [
                item
                if isinstance(item, (bytes, MalformedFrame))
                else MalformedFrame('terminate code from the iPaq')
                for item in self._receiver.feed(data)
            ]
        self._unframed += data
        bodies = []
        while self._unframed:
            with self._lock:
                kind = self._in_flight.kind if self._in_flight else p.ResponseKind.MINI
            length = p.unframed_response_length(kind, self._unframed)
            if length is None or len(self._unframed) < length:
                break
            bodies.append(bytes(self._unframed[:length]))
            del self._unframed[:length]
        return bodies

    def _on_response(self, body):
        try:
            response = p.decode_response(body, self.settings.checksum_over_stuffed)
        except MalformedFrame as exc:
            self._on_unreadable(exc)
            return
        self.responses += 1
        with self._lock:
            request = self._in_flight
            if request is None or not _answers(request.kind, response):
                self.stray_responses += 1
                self.log.warning(
                    'stray',
                    f'ipaq: response {type(response).__name__} matches no '
                    f'command in flight ({self.stray_responses} so far)',
                )
                return
            self._in_flight = None
        self._missed = 0
        if isinstance(response, p.FullResponse) and response.status == p.Status.OK:
            self.deliver(response)  # range, wheel power and pose: telemetry
        if request.late:
            self.late_responses += 1  # its caller was told of the timeout already
            self._send_next()
            return
        if response.status != p.Status.OK:
            self.failed_commands += 1
            self.log.warning(
                'status-' + request.label,
                f'ipaq: {request.label} refused: {p.status_text(response.status)}',
            )
        if request.resolve is not None:
            request.resolve(
                response if response.status == p.Status.OK else CommandFailed(response.status)
            )
        self._send_next()

    def _on_unreadable(self, error):
        """A response that does not parse: counted, and the command in flight fails with it
        (the iPaq answers in order: it was that command's reply)."""
        self.reject(error, 'response')
        with self._lock:
            request = self._in_flight
            self._in_flight = None
        if request is not None and request.resolve is not None:
            request.resolve(error)
        self._send_next()

    def _check_deadline(self):
        """A command without a response by its deadline fails with TimeoutError but stays in
        flight for one more response_timeout: the iPaq answers in order, so a late reply is
        this command's and must not be taken for the next one's."""
        with self._lock:
            request = self._in_flight
            if request is None or time.monotonic() < request.deadline:
                return
            expired = request.late  # no late reply either: the next command goes out
            if expired:
                self._in_flight = None
            else:
                request.late = True
                request.deadline += self.settings.response_timeout
                resolve, request.resolve = request.resolve, None
        if expired:
            self._send_next()
            return
        self.timeouts += 1
        self._missed += 1
        if resolve is not None:
            resolve(
                TimeoutError(
                    f'no response to {request.label} within {self.settings.response_timeout:.1f} s'
                )
            )
        if self._missed >= self.settings.missed_responses:
            raise LinkTimeout(f'{self._missed} commands in a row without a response')

    # ---- requests (any thread) ---------------------------------------------------------
    def request(self, packet, resolve, label=None):
        """Queue a command packet; resolve(response or exception) runs in the link thread.

        Exceptions: CommandFailed (status ≠ 0), MalformedFrame (a reply that does not parse),
        TimeoutError, ConnectionError.
        """
        letter = p.command_letter(packet)
        self._submit(
            _Request(lambda: packet, p.response_kind(letter), resolve, label or letter.name)
        )

    # ---- commands in robot terms (any thread) --------------------------------------------
    # Each queues one command, encoded with this link's framing options; resolve(response or
    # exception) runs in the link thread, as for request(). Raw units: see units.py.
    def _command(self, letter, fields, resolve, label=None):
        self.request(p.encode_command(letter, fields, self._over_stuffed), resolve, label)

    @property
    def _over_stuffed(self):
        return self.settings.checksum_over_stuffed

    def stop_tracking(self, resolve):
        self._command(p.Letter.STOP_TRACKING, b'', resolve)

    def dump_frame(self, resolve):
        """One camera frame; it arrives on a stream port as a FrameDump."""
        self._command(p.Letter.DUMP_FRAME, b'', resolve)

    def set_pose(self, x, y, theta, mask, resolve):
        """Overwrite the integrated pose words selected by mask (bit 0 x, 1 y, 2 theta)."""
        packet = p.encode_set_integration(x, y, theta, mask, self._over_stuffed)
        self.request(packet, resolve)

    def start_color_tracking(self, motion, bounds, resolve):
        """motion: p.TRACKING_MOTION index; bounds: rmin rmax gmin gmax bmin bmax."""
        self.request(p.encode_color_tracking(motion, bounds, self._over_stuffed), resolve)

    def start_window_tracking(self, motion, resolve):
        self.request(p.encode_window_tracking(motion, self._over_stuffed), resolve)

    def set_safety_distance(self, raw, resolve, label=None):
        """Stop when the range byte passes raw (0 = off)."""
        self.request(p.encode_safety(raw, self._over_stuffed), resolve, label)

    def cmucam(self, text, resolve):
        """One CMUcam command line (its CR is added by the iPaq); the reply is its text."""
        packet = p.encode_pass_through(p.Letter.CMUCAM, text.rstrip('\r'), self._over_stuffed)
        self.request(packet, resolve)

    def brainstem(self, data, resolve):
        """BrainStem packet bytes, passed through; the reply carries the BrainStem's bytes."""
        packet = p.encode_pass_through(p.Letter.BRAINSTEM, bytes(data), self._over_stuffed)
        self.request(packet, resolve)

    def _submit(self, request):
        if not self.connected:
            if request.resolve is not None:
                request.resolve(ConnectionError(f'{self.name}: not connected'))
            return
        with self._lock:
            self._queue.append(request)
            if self._in_flight is None:
                self._send_next()

    def _send_next(self):
        with self._lock:
            if self._in_flight is not None or not self._queue:
                return
            request = self._queue.popleft()
            request.deadline = time.monotonic() + self.settings.response_timeout
            self._in_flight = request
            packet = request.make_packet()
        try:
            self.send(packet)
        except ConnectionError as exc:
            with self._lock:
                self._in_flight = None
            if request.resolve is not None:
                request.resolve(exc)

    def _fail_all(self, error):
        with self._lock:
            pending = ([self._in_flight] if self._in_flight else []) + list(self._queue)
            self._in_flight = None
            self._queue.clear()
        for request in pending:
            if request.resolve is not None:
                request.resolve(error)

    # ---- drive, camera servos, telemetry poll ----------------------------------------------
    def set_drive(self, vel, direction):
        """Raw vel/dir to keep sending; they stop after motion_timeout without a new call
        (self.motion, a VelocityWatchdog: timeouts counts the stops).

        A change goes out at once; a repeated command rides on the next poll.
        """
        self.motion.command((vel, direction))

    def _drive_to(self, velocity):
        vel, direction = velocity
        with self._lock:
            d = self._drive
            changed = not d.active or (d.vel, d.direction) != (vel, direction)
            d.vel, d.direction, d.active = vel, direction, True
        if changed:
            self._poll()

    def set_camera(self, pan=None, tilt=None):
        with self._lock:
            if pan is not None:
                self._drive.pan = pan
            if tilt is not None:
                self._drive.tilt = tilt
        self._poll()

    def set_parameter_bits(self, *names, resolve=None):
        """A P packet now with one-shot bits ('kill_motor', 'init_brainstem'); kill: no drive."""
        if 'kill_motor' in names:
            self.motion.clear()
        with self._lock:
            self._drive.extra_bits |= self.settings.mask_bits.mask(*names)
            if 'kill_motor' in names:
                self._drive.active = False
        self._submit(
            _Request(self._parameters_packet, p.ResponseKind.FULL, resolve, '+'.join(names))
        )

    def _drive_stopped(self):
        """No drive command for motion_timeout: the next P carries the stop velocity."""
        with self._lock:
            self._drive.vel = self.settings.stop_velocity
            self._drive.active = False
            self._stop_pending = True  # the next P still carries vel (now: stop)
        self.log.info(
            'motion-timeout',
            f'ipaq: no drive command for {self.motion.timeout:.2f} s: velocity set to zero',
        )
        self._poll()

    def _poll(self):
        """Queue a P packet unless one is already waiting to go out."""
        with self._lock:
            self._last_poll = time.monotonic()
            if any(r.make_packet == self._parameters_packet for r in self._queue):
                return
        self._submit(_Request(self._parameters_packet, p.ResponseKind.FULL, None, 'poll'))

    def _parameters_packet(self):
        """The P packet for the current drive state, built as it goes out."""
        bits = self.settings.mask_bits
        with self._lock:
            d = self._drive
            names = []
            if d.active or self._stop_pending:
                names += ['vel', 'direction']
                if self.settings.vel_timeout >= 0:
                    names.append('vel_timeout')
                self._stop_pending = False
            if d.pan is not None:
                names.append('pan')
            if d.tilt is not None:
                names.append('tilt')
            params = p.SetParameters(
                max(0, self.settings.vel_timeout),
                d.vel,
                d.direction,
                d.pan or 0,
                d.tilt or 0,
                bits.mask(*names) | d.extra_bits,
            )
            d.pan = d.tilt = None
            d.extra_bits = 0
        return p.encode_set_parameters(params, self.settings.checksum_over_stuffed)

    def close_session(self, link):
        """On stop: the wheel to standstill and tracking off (responses are not awaited)."""
        stop = p.SetParameters(
            vel=self.settings.stop_velocity, mask=self.settings.mask_bits.mask('vel')
        )
        link.write(p.encode_set_parameters(stop, self.settings.checksum_over_stuffed))
        link.write(
            p.encode_command(p.Letter.STOP_TRACKING, b'', self.settings.checksum_over_stuffed)
        )

    def terminate_server(self):
        """255,54: end the iPaq's control program (only ever on request)."""
        self.send(p.TERMINATE)


def _answers(kind, response):
    """Whether response can be the answer to a command expecting kind (Mini = parse error)."""
    if isinstance(response, p.MiniResponse):
        return kind is p.ResponseKind.MINI or response.status != p.Status.OK
    return isinstance(
        response,
        {p.ResponseKind.FULL: p.FullResponse, p.ResponseKind.STRING: p.StringResponse}.get(
            kind, ()
        ),
    )


class StreamClient(ReconnectingClient):
    """One stream port: tracking packets, bitmaps and frame dumps, told apart by content (§3.4)."""

    SILENCE = 1.0  # s between checks while the port is quiet (quiet is normal: nothing tracked)

    def __init__(self, settings, port, **kwargs):
        super().__init__(f'ipaq-{port}', self._open, read_timeout=self.SILENCE, **kwargs)
        self.settings = settings
        self.port = port
        self.carries = collections.Counter()  # item type name → count

    def _open(self):
        return SocketStream.connect(self.settings.host, self.port)

    def run_session(self, link):
        decoder = p.StreamDecoder(self.settings.camera, self.settings.checksum_over_stuffed)
        self.mark_connected(f'{self.settings.host}:{self.port}')
        while True:
            try:
                data = link.read()
            except LinkTimeout:
                continue
            for item in decoder.feed(data):
                if isinstance(item, MalformedFrame):
                    self.reject(item, 'stream item')
                else:
                    self.carries[type(item).__name__] += 1
                    self.deliver(item)
