"""Replaying a recording as the robot: the unchanged driver connects to it as to the robot.

Each recorded link is served at a TCP port (or a pseudo-terminal for serial links) in one
of two modes (the robot plugin says which, per link):

- ``stream``: the robot's output is played on its recorded timeline (``speed`` 1 = as
  recorded, 2 = twice as fast, 0 = as fast as possible). The timeline holds at the
  driver's requests the robot answers (``gate``: the handshake), until the driver sends
  the same bytes (or GATE_TIMEOUT passes), and goes on from there.
- ``reply``: each request the driver sends is answered at once with the reply recorded for
  the same request bytes, in recorded order. (Not at a recorded time: the recorded delays
  hold the recording driver's own latency, and a driver that polls by its clock and by what
  the replies say then falls behind the recorded schedule for good; seen with the AIBO,
  whose colour poll starved.) A request the recording cannot answer (never seen, or its
  recorded replies used up) is counted and reported, and gets no answer. With loop,
  used-up replies are given again from the first.

Connection k of the driver gets recorded connection k; later ones are accepted and stay
silent (with loop: recorded connection 1 again). A connection the robot side closed is
closed again at the same point; at the end of the recording the link stays open and silent
(with loop, it closes and starts again). No rclpy.
"""

import dataclasses
import threading
import time
from typing import Callable, Optional

from .emulator import PtyEmulatorPort, TcpEmulatorServer
from .errors import ConnectionLost
from .recording import FROM_ROBOT, TO_ROBOT

GATE_TIMEOUT = 2.0  # s the timeline waits for a request the driver does not send
CLOSED_BY_DRIVER = 'closed by the driver'  # the closed event's detail a driver writes
READ_SLICE = 0.05  # s between looks at the stop flag while waiting for the driver
INBOX_LIMIT = 1 << 16  # driver bytes kept for matching


@dataclasses.dataclass(frozen=True)
class ReplayLink:
    """How one recorded link is served, and which node parameter points the driver at it."""

    name: str  # the link's name in the recording
    parameter: str  # node parameter: 'telemetry_port', 'port', ...
    mode: str = 'stream'  # 'stream' or 'reply'
    serial: bool = False  # a pseudo-terminal instead of a TCP port
    address: str = '{port}'  # the parameter's value: '{port}' (an integer),
    #                                      'tcp://{host}:{port}' or '{device}'
    gate: Callable[[bytes], bool] = lambda data: True  # stream: requests the timeline holds at

    def __post_init__(self):
        if self.mode not in ('stream', 'reply'):
            raise ValueError(f'replay link {self.name}: mode must be stream or reply')


@dataclasses.dataclass
class ReplayOptions:
    speed: float = 1.0  # 0: as fast as possible
    loop: bool = False
    host: str = '127.0.0.1'
    delay: float = 0.0  # s after start() before the recording plays (like `ros2 bag
    #                           play --delay`: subscribers have time to find the driver)
    start_paused: bool = False  # play nothing until resume() (like `ros2 bag play
    #                           --start-paused`): the driver connects, its subscribers find it

    def __post_init__(self):
        if self.speed < 0:
            raise ValueError(
                f'--speed must be 0 (as fast as possible) or positive, got {self.speed}'
            )
        if self.delay < 0:
            raise ValueError(f'--delay must not be negative, got {self.delay}')


class PlayClock:
    """When a replay plays: options.delay after start() and, started paused, not before
    resume(). Every replay has one (.clock); the replay command resumes it."""

    def __init__(self, options):
        self.delay = options.delay
        self.playing = threading.Event()
        if not options.start_paused:
            self.playing.set()
        self.play_from = 0.0  # monotonic time, from start() on

    def start(self):
        self.play_from = time.monotonic() + self.delay

    def resume(self):
        self.playing.set()

    @property
    def paused(self):
        return not self.playing.is_set()

    def wait(self, idle):
        """True once it is time to play; idle(seconds) runs meanwhile, and once more at the
        end (it reads what the driver sends, or watches a stop flag: True gives up)."""
        while not self.playing.is_set():
            if idle(READ_SLICE):
                return False
        while (remaining := self.play_from - time.monotonic()) > 0:
            if idle(min(READ_SLICE, remaining)):
                return False
        return not idle(0.0)


@dataclasses.dataclass
class ReplayCounters:
    connections: int = 0
    chunks_sent: int = 0
    gates_met: int = 0
    gates_missed: int = 0  # requests the driver did not send in time
    answered: int = 0
    repeated: int = 0  # answers given again after the recorded ones ran out
    unanswered: int = 0  # requests the recording cannot answer
    unanswered_samples: list = dataclasses.field(default_factory=list)
    finished: bool = False  # the end of the last recorded connection was reached
    last_sent_ns: int = 0  # recorded time of the chunk sent last
    last_request_at: float = 0.0  # monotonic time the driver last sent a request it matched


class RecordingReplay:
    """A recording's links served back; start()/stop(), .parameters and .description like an
    emulator's, so bringup --sim, the demo and tests use either."""

    def __init__(self, recording, links, options=None):
        self.recording = recording
        self.options = options or ReplayOptions()
        known = {spec.name: spec for spec in links}
        unknown = sorted(set(recording.links) - set(known))
        if unknown:
            raise ValueError(
                f'{recording.path}: links {", ".join(unknown)} are not links of '
                f'{recording.node} (it has {", ".join(sorted(known))})'
            )
        self.clock = PlayClock(self.options)
        self.servers = {
            name: _LinkServer(known[name], link, self.options, self.clock)
            for name, link in recording.links.items()
        }

    def start(self):
        self.clock.start()
        for server in self.servers.values():
            server.start()
        return self

    def stop(self):
        for server in self.servers.values():
            server.stop()

    @property
    def finished(self):
        played_to = max(server.counters.last_sent_ns for server in self.servers.values())
        return all(
            server.counters.finished or self._left_behind(server, played_to)
            for server in self.servers.values()
        )

    def _left_behind(self, server, played_to):
        """As fast as possible no clock ends a reply link (at speed > 0 its recorded time
        does): it is done when the other links have played past its last chunk and its driver
        has asked for nothing for GATE_TIMEOUT. What is left are requests the driver does not
        send by itself (a command a user gave in the live run, like the AIBO's RCODE line)."""
        return (
            self.options.speed == 0
            and server.spec.mode == 'reply'
            and server.end_ns <= played_to
            and time.monotonic() - server.counters.last_request_at >= GATE_TIMEOUT
        )

    def recorded_time(self, link):
        """The recorded time of the chunk sent last on link (0 before the first)."""
        server = self.servers.get(link)
        return server.counters.last_sent_ns if server else 0

    @property
    def parameters(self):
        """The recorded node parameters, pointed at this replay instead of the robot."""
        parameters = {
            name: value
            for name, value in self.recording.parameters.items()
            # a parameter the driver left unset (None, e.g. P2OS laser_mount: the model's) or
            # empty stays unset: a file's null or [] is not a value of its type
            if name not in ('record_path', 'use_sim_time') and value not in ([], None)
        }
        if 'host' in parameters:
            parameters['host'] = self.options.host
        for server in self.servers.values():
            parameters[server.spec.parameter] = server.address
        return parameters

    @property
    def description(self):
        links = ', '.join(f'{name} {server.address}' for name, server in self.servers.items())
        speed = 'as fast as possible' if self.options.speed == 0 else f'x{self.options.speed:g}'
        return (
            f'replay of {self.recording.path} ({self.recording.node}, '
            f'{self.recording.duration:.1f} s, {speed}): {links}'
        )

    def report(self):
        """One line per link: what was served and what the recording could not answer."""
        lines = []
        for name, server in self.servers.items():
            c = server.counters
            line = (
                f'{name}: {c.connections} connections, {c.chunks_sent} chunks sent, '
                f'gates {c.gates_met} met / {c.gates_missed} missed, {c.answered} answered '
                f'({c.repeated} repeated), {c.unanswered} unanswered'
            )
            if c.unanswered_samples:
                line += ' e.g. ' + ', '.join(repr(s) for s in c.unanswered_samples)
            lines.append(line)
        return lines


class _LinkServer:
    """One link's port or pty; each driver connection plays the next recorded connection."""

    def __init__(self, spec, link, options, clock):
        self.spec = spec
        self.options = options
        self.clock = clock
        self.connections = [link.connections[n] for n in sorted(link.connections)]
        self.counters = ReplayCounters()
        self._lock = threading.Lock()
        self._next = 0
        self.transport = None
        last = self.connections[-1] if self.connections else None
        self.end_ns = last.chunks[-1].time_ns if last and last.chunks else 0

    def start(self):
        if self.spec.serial:
            self.transport = PtyEmulatorPort(self._serve, name=f'replay-{self.spec.name}')
        else:
            self.transport = TcpEmulatorServer(
                self._serve, host=self.options.host, name=f'replay-{self.spec.name}'
            )
        self.transport.start()

    def stop(self):
        if self.transport is not None:
            self.transport.stop()

    @property
    def address(self):
        if self.spec.serial:
            return self.spec.address.format(device=self.transport.device_path)
        if self.spec.address == '{port}':
            return self.transport.port
        return self.spec.address.format(host=self.options.host, port=self.transport.port)

    def _take_connection(self):
        with self._lock:
            self.counters.connections += 1
            if not self.connections:
                return None
            if self._next >= len(self.connections):
                if not self.options.loop:
                    return None  # the recording has ended: a silent robot
                self._next = 0
            connection = self.connections[self._next]
            self._next += 1
            return connection

    def _serve(self, stream, stop):
        peer = _Peer(stream, stop, self.options.speed)
        # paused, then --delay: what the driver sends meanwhile is kept; a driver that gave up
        # waiting and connected again leaves this connection unplayed (ConnectionLost)
        self.clock.wait(peer.receive)
        while True:
            connection = self._take_connection()
            if connection is None:  # nothing (more) to play: a silent robot
                self.counters.finished = True
                peer.hold()
                return
            last = connection is self.connections[-1]
            play = _play_replies if self.spec.mode == 'reply' else _play_stream
            try:
                play(peer, connection, self.spec, self.counters, last, self.options.loop)
            finally:  # played out, or the driver left the last one: either is the end
                self.counters.finished |= last
            if self.spec.serial and (self.options.loop or not last):
                continue  # a serial line has no connection to close: play on
            if not last and connection.closed != CLOSED_BY_DRIVER:
                return  # the robot side dropped this connection: so do we
            if last and self.options.loop:
                return  # the driver reconnects and gets the first one again
            peer.hold()  # silent until the driver leaves or we stop
            return


class _Peer:
    """The driver's side of one connection: bytes it sent (kept for matching), our writes,
    and the recorded clock scaled by speed."""

    def __init__(self, stream, stop, speed):
        self.stream = stream
        self.stop = stop
        self.speed = speed
        self.inbox = bytearray()
        self._anchor = None  # (monotonic time, recorded ns) the timeline counts from

    def anchor(self, recorded_ns):
        self._anchor = (time.monotonic(), recorded_ns)

    def due(self, recorded_ns):
        if self.speed == 0 or self._anchor is None:
            return time.monotonic()
        wall, recorded = self._anchor
        return wall + (recorded_ns - recorded) / 1e9 / self.speed

    def read_until(self, deadline):
        """Collect driver bytes until deadline (at least one look)."""
        while True:
            remaining = deadline - time.monotonic()
            self.receive(max(0.0, min(READ_SLICE, remaining)))
            if remaining <= 0:
                return

    def receive(self, timeout):
        """Whatever the driver sends within timeout (returns as soon as something arrives)."""
        if self.stop.is_set():
            raise ConnectionLost('replay stopped')
        data = self.stream.read(65536, timeout)
        if data:
            self.inbox += data
            del self.inbox[:-INBOX_LIMIT]

    def wait_for(self, request, timeout):
        """True once the driver has sent request (consumed up to its end); False on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            index = self.inbox.find(request)
            if index >= 0:
                del self.inbox[: index + len(request)]
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            self.receive(min(remaining, READ_SLICE))

    def send(self, chunk, counters):
        self.stream.write(chunk.data)
        counters.chunks_sent += 1
        counters.last_sent_ns = chunk.time_ns

    def hold(self):
        while True:
            self.read_until(time.monotonic() + READ_SLICE)
            self.inbox.clear()


def _play_stream(peer, connection, spec, counters, last, loop):
    peer.anchor(connection.start_ns)
    for chunk in connection.chunks:
        if chunk.direction == FROM_ROBOT:
            peer.read_until(peer.due(chunk.time_ns))
            peer.send(chunk, counters)
        elif spec.gate(chunk.data):
            if peer.wait_for(chunk.data, GATE_TIMEOUT):
                counters.gates_met += 1
            else:
                counters.gates_missed += 1
            peer.anchor(chunk.time_ns)


def _play_replies(peer, connection, spec, counters, last, loop):
    """Answers until the driver leaves. The end of the recording (on the last connection):
    every recorded reply given, or one the driver asks for used up, or (speed > 0) the
    recorded connection's time passed."""
    greeting, answers = exchanges(connection)
    unplayed = sum(len(replies) for replies in answers.values())
    end_ns = connection.chunks[-1].time_ns if connection.chunks else connection.start_ns
    peer.anchor(connection.start_ns)
    for chunk in greeting:
        peer.read_until(peer.due(chunk.time_ns))
        peer.send(chunk, counters)
    counters.finished |= last and unplayed == 0
    served = {request: 0 for request in answers}
    requests = sorted(answers, key=len, reverse=True)  # the longest match first
    while True:
        if last and peer.speed and time.monotonic() >= peer.due(end_ns):
            counters.finished = True
        request = _next_request(peer, requests, counters)
        if request is None:
            peer.receive(READ_SLICE)
            continue
        counters.last_request_at = time.monotonic()
        replies = answers[request]
        index = served[request]
        served[request] += 1
        if index >= len(replies) and not loop:
            _unanswered(counters, request)
            counters.finished |= last  # the driver has gone past the recording's end
            continue
        counters.answered += 1
        if index >= len(replies):
            counters.repeated += 1
        else:
            unplayed -= 1
            counters.finished |= last and unplayed == 0
        for chunk in replies[index % len(replies)]:
            peer.send(chunk, counters)


def exchanges(connection):
    """(robot output before any request, {request bytes: [[reply chunks], ...]})."""
    greeting, answers, current = [], {}, None
    for chunk in connection.chunks:
        if chunk.direction == TO_ROBOT:
            current = []
            answers.setdefault(chunk.data, []).append(current)
        elif current is None:
            greeting.append(chunk)
        else:
            current.append(chunk)
    return greeting, answers


def _next_request(peer, requests, counters) -> Optional[bytes]:
    """The recorded request the driver's bytes start with (consumed), or None: wait for more
    (an incomplete request) or, for bytes no recorded request starts, count them unanswered."""
    inbox = peer.inbox
    if not inbox:
        return None
    for request in requests:
        if inbox.startswith(request):
            del inbox[: len(request)]
            return request
    if any(request.startswith(inbox) for request in requests):
        return None
    _unanswered(counters, bytes(inbox))
    inbox.clear()
    return None


def _unanswered(counters, request):
    counters.unanswered += 1
    if len(counters.unanswered_samples) < 3:
        counters.unanswered_samples.append(request[:32])
