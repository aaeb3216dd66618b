"""An AIBO with AiboPet's RCodePlus or LifePlus stick, on TCP 21001 (and 21002), for users and
tests.

    ros2 run aibo_driver aibo_emulator                     # RCodePlus on 21001 + 21002
    ros2 run aibo_driver aibo_emulator --product lifeplus  # LifePlus: voice, semantic, no RCODE
    ros2 run aibo_driver aibo_emulator --speed-scale 5     # the dog walks 5 times as fast
    ros2 run aibo_driver aibo_emulator --protocol urbi --model ers7  # URBI on 54000

Plays docs/protocols/aibo.md §3 and §5: the TELEMVER reply, the auto-snapshot rule (the first
image request of a connection answers size 0), JPEG / YUV10 / colour-detection pictures of a pink
ball rolling over the floor, a 15-chunk audio ring that keeps the older chunks when
full, voice and semantic records (LifePlus), SETPROPERTY and RPUT (logged), size 0
for anything unsupported. The RCODE pipe plays R-CODE 1.2 on a simulated ERS-210 (body.py):
actions queue, the dog walks, turns and moves its head, and the camera follows. Real-dog
pacing by default; --unthrottled answers every
image request with a new frame. Options play the variants of §5 and faults.
No rclpy here.
"""

import argparse
import collections
import dataclasses
import math
import random
import re
import sys
import threading
import time

from legacy_robot_common.emulator import (
    FaultInjector,
    MainFrame,
    SendLog,
    TcpEmulatorServer,
    add_host_argument,
    run_emulator,
)
from legacy_robot_common.errors import ConnectionLost, MalformedFrame

from . import models, rcode, urbi
from . import protocol as p
from .body import Dog
from .emulator_urbi import UrbiEmulator, UrbiOptions
from .scene import Scene, audio_chunk, color_detection

Op = p.Op
VOICE_PERIOD = 4.0  # s between recognised words (LifePlus)
SEMANTIC_PERIOD = 2.5  # s between semantic events (LifePlus)
SEMANTIC_KEPT = 16  # events the dog keeps until they are fetched


@dataclasses.dataclass
class EmulatorOptions:
    host: str = '127.0.0.1'
    telemetry_port: int = 21001
    rcode_port: int = 21002  # RCodePlus only
    product: str = 'rcodeplus'  # or lifeplus
    version: tuple = (2, 52)
    type_values: dict = dataclasses.field(default_factory=lambda: {'rcodeplus': 0, 'lifeplus': 1})
    version_size_prefix: bool = False
    opcodes: p.OpcodeMap = dataclasses.field(default_factory=p.OpcodeMap)
    yuv10: p.Yuv10Format = p.Yuv10Format()
    right_channel_first: bool = True
    frame_rates: dict = dataclasses.field(
        default_factory=lambda: {Op.GET_YUV10: 10.0, Op.GET_JPEG: 5.0, Op.GET_COLOR_IMAGE: 25.0}
    )
    unthrottled: bool = False  # every image request gets a new frame
    ball_period: float = 8.0  # s per lap of the ball
    rput: p.RputLayout = dataclasses.field(default_factory=p.RputLayout)
    rput_reply: str = 'none'  # or standard: a size-prefixed "OK <n>" after an upload
    bad_size_every: int = 0  # fault: every nth image reply has a wrong size
    oversize_every: int = 0  # fault: every nth reply has a size prefix over 32000
    close_on_unknown: bool = False  # a request byte it does not know drops the connection
    # (else: an empty reply, as for unsupported requests)
    jpeg_quality: int = 80
    drop_rate: float = 0.0  # fault: bytes of telemetry replies dropped
    corrupt_rate: float = 0.0  # fault: bytes of telemetry replies corrupted
    seed: int = None
    model: str = 'ers210'  # the body the RCODE pipe plays: ers210, ers220, ers31x
    speed_scale: float = 1.0  # > 1: walks, turns and other actions play faster (tests)
    echo: bool = True  # the RCODE pipe echoes each line before it runs (ERS-7 source)
    control_bytes: bool = True  # ACK 0x06 after '!' and the greeting (SYSTEM.CFG C -1)
    refused_actions: tuple = ()  # fault: PLAY:ACTION names answered with ERROR
    rcode_silent: bool = False  # fault: RCODE lines are read (and played) but nothing printed
    auth: bool = False  # the RCODE pipe greets as the ERS-7's R-CODE 2.0 and wants a password
    owner_password: str = 'aibo'  # the stick's default (OWNER.TXT)

    def __post_init__(self):
        if self.model not in rcode.MODELS:
            models.check_combination(self.model, 'rcodeplus')  # says which sticks it has
            raise ValueError(f'model must be one of {", ".join(rcode.MODELS)}, got {self.model!r}')
        if not 0.1 <= self.speed_scale <= 100.0:
            raise ValueError(f'speed_scale must be within 0.1..100, got {self.speed_scale}')
        if self.product not in ('rcodeplus', 'lifeplus'):
            raise ValueError(f'product must be rcodeplus or lifeplus, got {self.product!r}')
        if self.rput_reply not in ('none', 'standard'):
            raise ValueError('rput_reply must be none or standard')


class _Reader:
    """Buffered reads of one request's bytes from an emulator stream."""

    def __init__(self, stream, stop):
        self.stream, self.stop = stream, stop
        self.buffer = bytearray()

    def _fill(self):
        while not self.stop.is_set():
            data = self.stream.read(65536, 0.2)
            if data:
                self.buffer += data
                return
        raise ConnectionLost('emulator stopping')

    def exact(self, count):
        while len(self.buffer) < count:
            self._fill()
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def until_nul(self, limit=256):
        while b'\0' not in self.buffer:
            if len(self.buffer) > limit:
                raise MalformedFrame(f'no NUL within {limit} bytes')
            self._fill()
        return self.exact(self.buffer.index(b'\0') + 1)


@dataclasses.dataclass
class _Session:
    """What the dog remembers about one telemetry connection."""

    snapshot: set = dataclasses.field(default_factory=set)  # image ops started
    given: dict = dataclasses.field(default_factory=dict)  # op → last frame number sent
    served: collections.Counter = dataclasses.field(default_factory=collections.Counter)


class AudioRing:
    """The dog's circular buffer of 15 chunks, filled in real time; when full, new chunks are
    lost."""

    def __init__(self, right_first=True):
        self.right_first = right_first
        self._ring = collections.deque()
        self._lock = threading.Lock()
        self.sequence = 0
        self.overruns = 0  # chunks lost because nobody fetched in time
        self.served = 0

    def produce(self):
        chunk = p.AudioChunk(
            self.sequence,
            self.sequence & 0xFFFF,
            300 + self.sequence % 200,
            audio_chunk(self.sequence),
        )
        record = p.encode_audio_record(chunk, self.right_first)
        with self._lock:
            self.sequence += 1
            if len(self._ring) >= p.AUDIO_RING:
                self.overruns += 1  # "if full, older records are kept"
                return
            self._ring.append(record)

    def flush(self):
        with self._lock:
            self._ring.clear()

    def take(self):
        """The oldest 2..10 records, or b'' while fewer than 2 are waiting."""
        with self._lock:
            if len(self._ring) < p.AUDIO_MIN_RECORDS:
                return b''
            count = min(p.AUDIO_MAX_RECORDS, len(self._ring))
            records = [self._ring.popleft() for _ in range(count)]
            self.served += count
        return b''.join(records)


class AiboEmulator:
    def __init__(self, options=None):
        self.options = o = options or EmulatorOptions()
        self.scene = Scene(o.ball_period)
        self.audio = AudioRing(o.right_channel_first)
        self.sent = SendLog()
        self.faults = FaultInjector(o.drop_rate, o.corrupt_rate, o.seed)
        self.telemetry = TcpEmulatorServer(
            self._serve_telemetry, o.host, o.telemetry_port, name='aibo-telemetry'
        )
        self.rcode = (
            TcpEmulatorServer(self._serve_rcode, o.host, o.rcode_port, name='aibo-rcode')
            if o.product == 'rcodeplus'
            else None
        )
        self.supported = p.SUPPORTED[p.Product(o.product)]
        self.properties = []  # (index, value) of every SETPROPERTY
        self.files = {}  # name → contents of every RPUT
        self.rcode_lines = []  # every line received on the RCODE port
        self.requests = collections.Counter()
        self.unknown_requests = 0
        self.stalled = threading.Event()  # fault: requests are read but never answered
        self.dog = Dog(
            o.model,
            o.speed_scale,
            o.echo,
            o.control_bytes,
            {
                'AP_Version': o.version[0] * 100 + o.version[1],
                'AiboType': {'ers210': 210, 'ers220': 220, 'ers31x': 310}[o.model],
            },
        )
        self._frames = {}  # (op, frame number in the lap) → encoded reply data
        self._replies = 0
        self._voice = None
        self._semantic = collections.deque(maxlen=SEMANTIC_KEPT)
        self._semantic_sequence = 0
        self._random = random.Random(7)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._clock = threading.Thread(target=self._run_clock, daemon=True, name='aibo-clock')
        self._started = time.monotonic()

    # ---- life cycle -----------------------------------------------------------------------------
    def start(self):
        try:
            self.telemetry.start()
            if self.rcode is not None:
                self.rcode.start()
        except OSError:
            self.stop()
            raise
        self._started = time.monotonic()
        self._clock.start()
        return self

    @property
    def parameters(self):
        """Node parameters that point the driver at this emulator."""
        parameters = {'host': self.options.host, 'telemetry_port': self.telemetry.port}
        if self.rcode is not None:
            parameters['rcode_port'] = self.rcode.port
        else:
            parameters['rcode_enabled'] = False
        return parameters

    @property
    def description(self):
        o = self.options
        rcode = f', RCODE {self.rcode.port}' if self.rcode else ''
        return (
            f'AIBO with {o.product} {o.version[0]}.{o.version[1]:02d} on {o.host}: '
            f'telemetry {self.telemetry.port}{rcode}'
            f'{", unthrottled" if o.unthrottled else ""}'
        )

    def drop_clients(self):
        """Fault: the Wi-Fi link breaks (the dog keeps running)."""
        self.telemetry.drop_clients()
        if self.rcode is not None:
            self.rcode.drop_clients()

    def stop(self):
        self._stop.set()
        self.telemetry.stop()
        if self.rcode is not None:
            self.rcode.stop()
        if self._clock.is_alive():
            self._clock.join(2.0)

    # ---- the dog's own clock: audio in real time, voice and semantic events ---------------------
    def _run_clock(self):
        chunks = 0
        next_voice, next_semantic = 1.0, 1.5
        while not self._stop.is_set():
            elapsed = time.monotonic() - self._started
            while chunks < elapsed / p.CHUNK_SECONDS:  # catch up after a late wake-up
                self.audio.produce()
                chunks += 1
            if self.options.product == 'lifeplus':
                if elapsed >= next_voice:
                    next_voice += VOICE_PERIOD
                    self._recognise_word()
                if elapsed >= next_semantic:
                    next_semantic += SEMANTIC_PERIOD
                    self._semantic_event()
            self._stop.wait(max(0.001, (chunks + 1) * p.CHUNK_SECONDS - elapsed))

    def _recognise_word(self):
        words = self._random.sample(range(1, 60), p.VOICE_MATCHES)
        confidence = sorted((self._random.randrange(10, 1000) for _ in words), reverse=True)
        with self._lock:
            self._voice = p.encode_voice(list(zip(words, confidence, strict=False)))

    def _semantic_event(self):
        raw = [self._random.randrange(-100, 100) for _ in range(p.SEMANTIC_VALUES)]
        with self._lock:
            self._semantic_sequence += 1
            self._semantic.append(p.encode_semantic(self._semantic_sequence, raw))

    # ---- the telemetry pipe ---------------------------------------------------------------------
    def _serve_telemetry(self, stream, stop):
        reader = _Reader(stream, stop)
        session = _Session()
        while not stop.is_set():
            byte = reader.exact(1)[0]
            op = self.options.opcodes.op.get(byte)
            self.requests[op.value if op else 'unknown'] += 1
            if op is None and self.options.close_on_unknown:
                self.unknown_requests += 1
                return
            try:
                reply = self._answer(op, reader, session)
            except MalformedFrame:
                return  # a garbled upload: the dog drops the connection
            if self.stalled.is_set():
                continue
            if reply is not None:
                stream.write(self.faults.apply(reply))

    def _answer(self, op, reader, session):
        """The reply bytes for one request (None for operations, which answer nothing)."""
        o = self.options
        if op is None:
            self.unknown_requests += 1
            return p.encode_reply(b'')
        if op is Op.GET_VERSION:
            version = p.encode_version(p.Version(*o.version, o.type_values[o.product]))
            return p.encode_reply(version) if o.version_size_prefix else version
        if op is Op.SET_PROPERTY:
            index, value = reader.exact(2)
            with self._lock:
                self.properties.append((index, value))
            return None
        if op not in self.supported:
            return p.encode_reply(b'')
        if op is Op.FLUSH_AUDIO:
            self.audio.flush()
            return None
        if op is Op.RPUT:
            name, contents = o.rput.decode(reader.exact, reader.until_nul)
            with self._lock:
                self.files[name] = contents
            return (
                p.encode_reply(f'OK {len(contents)}'.encode())
                if o.rput_reply == 'standard'
                else None
            )
        data = self._data(op, session)
        reply = self._standard_reply(data)
        return MainFrame(reply) if op is Op.GET_YUV10 and data else reply  # a camera frame

    def _standard_reply(self, data):
        o = self.options
        self._replies += 1
        if o.oversize_every and self._replies % o.oversize_every == 0:
            return (p.MAX_REPLY + 1000).to_bytes(4, 'little')  # fault: the stream is lost
        return p.encode_reply(data)

    def _data(self, op, session):
        if op is Op.GET_AUDIO:
            return self.audio.take()
        if op is Op.GET_VOICE_DATA:
            with self._lock:
                return self._voice or b''
        if op is Op.GET_SEMANTIC:
            with self._lock:
                records, self._semantic = (
                    b''.join(self._semantic),
                    collections.deque(maxlen=SEMANTIC_KEPT),
                )
            return records
        if op in p.IMAGE_OPS:
            return self._image(op, session)
        return b''  # GET_ARRAY_RAW: no arrays in this emulator

    def _image(self, op, session):
        """Auto-snapshot (aibo.md §3.4): the first request starts it and answers nothing."""
        if op not in session.snapshot:
            session.snapshot.add(op)
            return b''
        rate = self.options.frame_rates[op]
        if self.options.unthrottled:
            number = session.served[op] + 1
        else:
            number = int((time.monotonic() - self._started) * rate)
            if session.given.get(op) == number:
                return b''  # no new frame yet
        session.given[op] = number
        session.served[op] += 1
        data = self._frame(op, number, rate)
        if op is Op.GET_YUV10:
            self.sent.mark()  # a new frame: its reply is written next (benchmarks)
        every = self.options.bad_size_every
        if every and session.served[op] % every == 0:
            return data[: len(data) // 2]  # fault: a reply of the wrong size
        return data

    def _frame(self, op, number, rate):
        """Encoded frame number `number`, looking where the dog looks; frames of one lap of the
        ball are rendered once per view, then reused (a still dog costs no rendering)."""
        lap = max(1, round(self.options.ball_period * rate))
        _, _, yaw, pan, tilt = self.pose()
        heading, tilt = yaw + pan, tilt
        key = (op, number % lap, self.scene.view(heading, tilt))
        with self._lock:
            data = self._frames.get(key)
        if data is None:
            data = self._encode(op, self.scene.render((number % lap) / rate, heading, tilt))
            with self._lock:
                if len(self._frames) > 8 * lap:  # the dog moved: old views go
                    self._frames.clear()
                self._frames[key] = data
        return data

    def _encode(self, op, rgb):
        if op is Op.GET_YUV10:
            return p.encode_yuv10(rgb, self.options.yuv10)
        if op is Op.GET_COLOR_IMAGE:
            return color_detection(rgb).tobytes()
        return p.encode_jpeg(rgb, self.options.jpeg_quality)

    # ---- the RCODE pipe (aibo.md §4) ------------------------------------------------------------
    def _serve_rcode(self, stream, stop):
        text = p.ConsoleText()
        ack = rcode.ACK.encode() if self.options.control_bytes else b''
        if self.options.auth and not self._log_in(stream, stop, text):
            return
        stream.write(b'R-CODE Ver1.2 (emulated ERS-210)\r\n<READY>\r\n' + ack)
        while not stop.is_set():
            for line in text.feed(stream.read(4096, 0.2)):
                printed = self.run_rcode(line)
                if printed:
                    stream.write(
                        b''.join(t.encode('latin-1', 'replace') + b'\r\n' for t in printed)
                    )

    def _log_in(self, stream, stop, text):
        """Authentication on: the banner of R-CODE 2.0 and no <READY> until the owner's password
        comes as a line. The real handshake is not documented: this plays only its effect, a
        dog that stays silent for a client without the password."""
        stream.write(b'R-CODE ver2.0 (2004/05/01)\r\n')
        while not stop.is_set():
            for line in text.feed(stream.read(4096, 0.2)):
                with self._lock:
                    self.rcode_lines.append(line)
                if line.strip() == self.options.owner_password:
                    return True
        return False

    def run_rcode(self, line):
        """One RCODE statement → the lines the dog prints (its echo first, when on)."""
        if not line.strip():
            return []
        o = self.options
        with self._lock:
            self.rcode_lines.append(line)
            words = re.findall(r'[^:\s]+', line.upper())
            if words[:2] == ['PLAY', 'ACTION'] and len(words) > 2:
                if words[2] in (a.upper() for a in o.refused_actions):
                    return [line] * o.echo + [f'ERROR: {words[2]} is not available']
            printed = self.dog.run(line, time.monotonic())
        return [] if o.rcode_silent else printed

    def pose(self):
        """(x, y, yaw, head pan, head tilt) of the dog now: metres and radians."""
        with self._lock:
            dog = self.dog
            dog.advance(time.monotonic())
            return (
                dog.x,
                dog.y,
                dog.yaw,
                math.radians(dog.head['Head_Pan']),
                math.radians(dog.head['Head_Tilt']),
            )


# ---- command line -------------------------------------------------------------------------------
def build_parser():
    parser = argparse.ArgumentParser(prog='aibo_emulator', description=__doc__.split('\n\n')[0])
    add_host_argument(parser)
    parser.add_argument('--telemetry-port', type=int, default=21001, help='binary pipe (0 = free)')
    parser.add_argument(
        '--rcode-port', type=int, default=21002, help='RCODE text pipe (RCodePlus)'
    )
    parser.add_argument('--product', choices=('rcodeplus', 'lifeplus'), default='rcodeplus')
    parser.add_argument('--version', default='2.52', help='AiboPet version, e.g. 2.50')
    parser.add_argument(
        '--opcode',
        action='append',
        default=[],
        metavar='NAME=BYTE',
        help='override one request byte, e.g. get_yuv10=0x13 (repeatable)',
    )
    parser.add_argument('--yuv10-layout', choices=('interleaved', 'planar'), default='interleaved')
    parser.add_argument('--yuv10-bit-order', choices=('msb', 'lsb'), default='msb')
    parser.add_argument('--yuv10-chroma-first', choices=('U', 'V'), default='U')
    parser.add_argument(
        '--yuv10-y-bits',
        choices=('high', 'low'),
        default='high',
        help='Y in the high or the low 5 bits (planar: the first or second plane)',
    )
    parser.add_argument('--yuv10-five-to-eight', choices=p.FIVE_TO_EIGHT, default='shift3_or_msb')
    parser.add_argument('--yuv10-chroma-five-to-eight', choices=p.FIVE_TO_EIGHT, default='shift3')
    parser.add_argument(
        '--left-channel-first',
        action='store_true',
        help='audio samples left, right (AiboPet says right first)',
    )
    parser.add_argument(
        '--close-on-unknown-request',
        action='store_true',
        help='drop the connection on a request byte it does not know',
    )
    parser.add_argument(
        '--version-size-prefix',
        action='store_true',
        help='send the version reply with a size prefix',
    )
    parser.add_argument(
        '--unthrottled',
        action='store_true',
        help='a new frame for every image request (benchmarks)',
    )
    parser.add_argument(
        '--rput-layout',
        default='name0,size32,data',
        help='RPUT fields after the opcode: ' + ', '.join(p.RPUT_FIELDS),
    )
    parser.add_argument(
        '--bad-size-every',
        type=int,
        default=0,
        help='fault: every nth image reply has a wrong size',
    )
    FaultInjector.add_arguments(
        parser,
        'fault: fraction of telemetry reply bytes dropped',
        'fault: fraction of telemetry reply bytes corrupted',
    )
    parser.add_argument(
        '--protocol',
        choices=('rcodeplus', 'urbi'),
        default='rcodeplus',
        help='the stick: rcodeplus (AiboPet telemetry + R-CODE) or urbi (TCP 54000)',
    )
    parser.add_argument('--urbi-port', type=int, default=urbi.PORT, help='URBI port (0 = free)')
    parser.add_argument(
        '--model',
        choices=tuple(models.MODELS),
        default=None,
        help='the dog (default: ers210 for rcodeplus, ers7 for urbi)',
    )
    parser.add_argument(
        '--speed-scale',
        type=float,
        default=1.0,
        help='walks, turns and actions play this many times faster (tests, demos)',
    )
    parser.add_argument(
        '--no-echo', action='store_true', help='the RCODE pipe does not echo each line'
    )
    parser.add_argument(
        '--auth',
        action='store_true',
        help="the RCODE pipe wants the owner's password first (ERS-7 R-CODE 2.0 without "
        'NOAUTH.CFG)',
    )
    return parser


def options_from_args(args):
    major, _, minor = args.version.partition('.')
    opcodes = dict(item.split('=', 1) for item in args.opcode if '=' in item)
    if len(opcodes) != len(args.opcode):
        raise ValueError('--opcode takes NAME=BYTE')
    return EmulatorOptions(
        host=args.host,
        telemetry_port=args.telemetry_port,
        rcode_port=args.rcode_port,
        product=args.product,
        version=(int(major), int(minor)),
        opcodes=p.OpcodeMap({name: int(value, 0) for name, value in opcodes.items()}),
        yuv10=p.Yuv10Format(
            layout=args.yuv10_layout,
            bit_order=args.yuv10_bit_order,
            chroma_first=args.yuv10_chroma_first,
            y_bits=args.yuv10_y_bits,
            five_to_eight=args.yuv10_five_to_eight,
            chroma_five_to_eight=args.yuv10_chroma_five_to_eight,
        ),
        right_channel_first=not args.left_channel_first,
        version_size_prefix=args.version_size_prefix,
        unthrottled=args.unthrottled,
        close_on_unknown=args.close_on_unknown_request,
        rput=p.RputLayout(args.rput_layout.split(',')),
        bad_size_every=args.bad_size_every,
        **FaultInjector.options(args),
        model=args.model or 'ers210',
        speed_scale=args.speed_scale,
        echo=not args.no_echo,
        auth=args.auth,
    )


def urbi_options_from_args(args):
    return UrbiOptions(
        host=args.host,
        port=args.urbi_port,
        model=args.model or 'ers7',
        speed_scale=args.speed_scale,
    )


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.protocol == 'urbi':
        return run_emulator('AIBO emulator', lambda: UrbiEmulator(urbi_options_from_args(args)))
    return run_emulator('AIBO emulator', lambda: AiboEmulator(options_from_args(args)))


if __name__ == '__main__':
    sys.exit(main())
