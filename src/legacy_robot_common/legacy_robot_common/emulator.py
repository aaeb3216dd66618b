"""Bases for the robot emulators: a TCP server and a pseudo-terminal serial port.

An emulator's robot logic is a ``handler(stream, stop_event)`` function that
serves one connection through the stream interface of streams.py, so the same
handler serves TCP and a pty alike. No rclpy here.
"""

import collections
import os
import random
import re
import signal
import socket
import sys
import threading
import time
import tty

from .errors import ConnectionLost
from .streams import FdStream, SocketStream


class TcpEmulatorServer:
    """Listens on host:port (port 0 = a free port) and runs handler per client, each in a
    thread."""

    def __init__(self, handler, host='127.0.0.1', port=0, name='emulator'):
        self._handler = handler
        self._host = host
        self._requested_port = port
        self.name = name
        self._listener = None
        self._stop = threading.Event()
        self._clients = set()
        self._lock = threading.Lock()
        self._threads = []
        self.port = None

    def start(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self._host, self._requested_port))
        except OSError as exc:
            listener.close()
            raise OSError(
                f'{self.name}: cannot listen on {self._host}:{self._requested_port}: '
                f'{exc.strerror or exc}'
            ) from exc
        listener.listen(8)
        listener.settimeout(0.2)
        self._listener = listener
        self.port = listener.getsockname()[1]
        self._spawn(self._accept_loop, 'accept')
        return self.port

    @property
    def address(self):
        return (self._host, self.port)

    def _spawn(self, target, label, *args):
        thread = threading.Thread(
            target=target, args=args, daemon=True, name=f'{self.name}-{label}'
        )
        self._threads.append(thread)
        thread.start()

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                sock, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            stream = SocketStream(sock)
            with self._lock:
                self._clients.add(stream)
            self._threads = [t for t in self._threads if t.is_alive()]
            self._spawn(self._serve, 'client', stream)

    def _serve(self, stream):
        try:
            self._handler(stream, self._stop)
        except ConnectionLost:
            pass
        finally:
            with self._lock:
                self._clients.discard(stream)
            stream.close()

    @property
    def client_count(self):
        with self._lock:
            return len(self._clients)

    def drop_clients(self):
        """Close every open connection (a robot that reboots or loses its network)."""
        with self._lock:
            clients = list(self._clients)
        for stream in clients:
            stream.close()

    def stop(self, timeout=2.0):
        self._stop.set()
        if self._listener is not None:
            self._listener.close()
        self.drop_clients()
        for thread in self._threads:
            thread.join(timeout)


class PtyEmulatorPort:
    """A pseudo-terminal pair: the emulator serves the master, a driver opens device_path.

    The emulator keeps the slave side open too, so a driver that closes and
    reopens the device finds the robot still there (as with a real serial cable).
    """

    def __init__(self, handler, name='emulator'):
        self._handler = handler
        self.name = name
        master, slave = os.openpty()
        tty.setraw(slave)
        self._master = master
        self._slave = slave
        self.device_path = os.ttyname(slave)
        self.stream = FdStream(master, f'pty {self.device_path}')
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._serve, daemon=True, name=f'{self.name}-pty')
        self._thread.start()
        return self.device_path

    def _serve(self):
        try:
            self._handler(self.stream, self._stop)
        except ConnectionLost:
            pass

    def stop(self, timeout=2.0):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self.stream.close()
        try:
            os.close(self._slave)
        except OSError:
            pass


class MainFrame(bytes):
    """The bytes of one frame of a robot's main stream, which the driver turns into one message
    on its main topic (an AIBO camera frame, a P2OS SIP cycle, a Pleo joint dump, an iPaq
    telemetry reply): FaultInjector counts them for the mixed soak's accounting."""


class FaultInjector:
    """Damages outgoing bytes for fault tests: drops and corrupts at given rates, or goes
    silent."""

    @staticmethod
    def add_arguments(
        parser,
        dropped='fraction of bytes dropped',
        corrupted='fraction of bytes corrupted',
        seed='random seed for the faults',
    ):
        """An emulator's --drop-rate, --corrupt-rate and --seed (the texts are their help
        lines); options(args) reads them back."""
        parser.add_argument('--drop-rate', type=float, default=0.0, help=dropped)
        parser.add_argument('--corrupt-rate', type=float, default=0.0, help=corrupted)
        parser.add_argument('--seed', type=int, default=None, help=seed)

    @staticmethod
    def options(args):
        """add_arguments()'s values as the emulator options' drop_rate, corrupt_rate, seed."""
        return {'drop_rate': args.drop_rate, 'corrupt_rate': args.corrupt_rate, 'seed': args.seed}

    def __init__(self, drop_rate=0.0, corrupt_rate=0.0, seed=None):
        for label, rate in (('drop_rate', drop_rate), ('corrupt_rate', corrupt_rate)):
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f'{label} must be within 0..1, got {rate}')
        self.drop_rate = drop_rate
        self.corrupt_rate = corrupt_rate
        self.silent = False
        self._random = random.Random(seed)
        self.dropped = 0
        self.corrupted = 0
        # the main stream's frames, for the mixed soak's accounting (MainFrame)
        self.main_frames = 0
        self.main_frames_at_risk = 0
        self._damage_before_previous = 0
        self._lock = threading.Lock()

    @property
    def damage(self):
        return self.dropped + self.corrupted

    def apply(self, data):
        """data as it reaches the wire; a MainFrame is counted too."""
        if isinstance(data, MainFrame):
            return self._count_main_frame(data)
        return self._damage(data)

    def _damage(self, data):
        if self.silent:
            return b''
        if not self.drop_rate and not self.corrupt_rate:
            return data
        out = bytearray()
        for byte in data:
            roll = self._random.random()
            if roll < self.drop_rate:
                self.dropped += 1
                continue
            if roll < self.drop_rate + self.corrupt_rate:
                self.corrupted += 1
                byte ^= 1 << self._random.randrange(8)
            out.append(byte)
        return bytes(out)

    def _count_main_frame(self, data):
        """A main frame is at risk when a byte of it, of the frame before it or of anything
        written between them was damaged: a damaged frame can swallow the start of the next
        one while the reader resynchronises. Under the lock hold() takes."""
        with self._lock:
            before = self.damage
            out = self._damage(data)
            if not self.silent:
                self.main_frames += 1
                self.main_frames_at_risk += self.damage != self._damage_before_previous
                self._damage_before_previous = before
            return out

    def hold(self):
        """Go silent for good → (main frames sent, of them at risk): exact, since no main frame
        is counted after it."""
        with self._lock:
            self.silent = True
            return self.main_frames, self.main_frames_at_risk


HOST_HELP = (
    'address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 or an address of '
    'this machine lets a driver on another host connect, and anyone else on that network)'
)


def add_host_argument(parser):
    """An emulator's --host, the same for every robot: loopback, as every server of ours,
    unless the user opens it for a driver on another host."""
    parser.add_argument('--host', default='127.0.0.1', help=HOST_HELP)


def free_port():
    """A loopback port nothing listens on now: for a server that must be found again at the
    same address (the Nabaztag bridge, an emulator restarted by the fault suite)."""
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


class SendLog:
    """When the emulator wrote each frame of its main stream (wall clock, the clock of ROS
    header stamps), so a benchmark can tell how long a frame took to reach a subscriber.
    Bounded, and one append per frame (deque appends are thread-safe)."""

    def __init__(self, keep=200_000):
        self._times = collections.deque(maxlen=keep)

    def mark(self):
        """Call just before writing a frame: the time it went on the wire."""
        self._times.append(time.time())

    def times(self):
        return list(self._times)

    def __len__(self):
        return len(self._times)


def stop_on_signal(done=None):
    """The event SIGINT / SIGTERM set (done, or a new one). Install it before the emulator
    announces itself: a test that signals right after the announcement must find it in place."""
    done = done or threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: done.set())
    return done


MAIN_FRAMES = 'main frames'
ACCOUNTING_LINE = MAIN_FRAMES + ' sent {} (at risk {}), now silent'
NOT_COUNTED_LINE = MAIN_FRAMES + ' not counted'


def parse_main_frames(line):
    """An ACCOUNTING_LINE → (sent, at risk); None for NOT_COUNTED_LINE."""
    found = re.match(MAIN_FRAMES + r' sent (\d+) \(at risk (\d+)\)', line)
    return (int(found[1]), int(found[2])) if found else None


def report_main_frames_on_signal(emulator):
    """On SIGUSR1 the emulator goes silent and says how many main-stream frames it sent, so
    the mixed soak can compare them with what reached a subscriber before it kills the
    emulator. One without a FaultInjector (the Nabaztag's rabbits) says it does not count.
    Install it before the emulator announces itself (SIGUSR1's default is to exit)."""

    def report(*_):
        faults = getattr(emulator, 'faults', None)
        print(
            ACCOUNTING_LINE.format(*faults.hold()) if faults is not None else NOT_COUNTED_LINE,
            flush=True,
        )

    signal.signal(signal.SIGUSR1, report)


def run_emulator(label, make_emulator, done=lambda emulator: None):
    """An emulator command line's main: make_emulator() (not yet started) is started, says
    where it listens, and runs until SIGINT / SIGTERM or the event done(emulator) is set.

    A bad option or a busy port (ValueError, OSError) prints one line and returns 2. An
    emulator with faults (a FaultInjector) goes silent on SIGUSR1 and prints ACCOUNTING_LINE.
    """
    try:
        emulator = make_emulator()
        stop = stop_on_signal(done(emulator))
        report_main_frames_on_signal(emulator)
        emulator.start()
    except (ValueError, OSError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    print(f'{label}: {emulator.description}', flush=True)
    stop.wait()
    emulator.stop()
    return 0
