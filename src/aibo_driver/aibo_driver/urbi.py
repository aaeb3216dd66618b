"""URBI 1.x (the URBI server on an AIBO memory stick, TCP 54000): messages in, commands out.

No sockets, threads or rclpy. The server writes text lines `[timestamp:tag] body`, where the
timestamp is its uptime in ms; a body starting `***` is a system message, `!!!` an error (the
2006 kernel; the 2005 manual marks errors with `***` too, so a `***` body on the `error` tag or
worded as an error counts as one). Binary data is a header line `[ts:tag] BIN <len> <kind> ...`
followed by exactly <len> bytes and nothing else: the next message starts right after them.

`StreamDecoder` turns the byte stream into `Message` and `Binary` records and resynchronises
after damage: a header whose length lies (the bytes after the payload are not the start of a
message, or a JPEG that does not end where its length says), an absurd length, an unknown
binary kind, a line of 64 kB without a newline. Each is raised once as MalformedFrame; the
next call carries on from the next message start.
"""

import dataclasses
import io
import re
import wave

import numpy as np

from legacy_robot_common.errors import MalformedFrame

PORT = 54000
MAX_LINE_BYTES = 65536  # a line this long without its newline is damage, not a message
MAX_BINARY_BYTES = 4 * 1024 * 1024  # far above a 208×160 YCbCr frame (99,840 bytes)
JPEG_START, JPEG_END = b'\xff\xd8', b'\xff\xd9'
IMAGE_KINDS = ('jpeg', 'YCbCr')
SOUND_KINDS = ('raw', 'wav')
_MESSAGE = re.compile(rb'\[(\d{1,12})(?::([^\]\r\n]*))?\] ?')
_LINE = re.compile(r'^\[(\d{1,12})(?::([^\]\r\n]*))?\] ?(.*)$', re.DOTALL | re.ASCII)
_ERROR_WORDS = re.compile(
    r'(error|unknown identifier|failed|invalid|no longer valid|division by zero)', re.IGNORECASE
)
_TAG = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*$')
_DEVICE = re.compile(r'^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$')


# ---- records ---------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Message:
    """One text message: its server time (ms), tag ('notag' when untagged) and body."""

    timestamp: int
    tag: str
    body: str

    @property
    def kind(self):
        """'error', 'system' or 'value'."""
        if self.body.startswith('!!!'):
            return 'error'
        if self.body.startswith('***'):
            if self.tag == 'error' or _ERROR_WORDS.search(self.body):
                return 'error'  # the 2005 form
            return 'system'
        return 'value'

    @property
    def text(self):
        """The body without its `***` / `!!!` marker."""
        if self.body[:3] in ('***', '!!!'):
            return self.body[3:].strip()
        return self.body.strip()

    def number(self):
        """The body as a number (URBI prints 6 decimals), or None."""
        try:
            return float(self.body.strip())
        except ValueError:
            return None


@dataclasses.dataclass(frozen=True)
class Binary:
    """A BIN message: kind (jpeg, YCbCr, raw, wav), its parameters and exactly its bytes."""

    timestamp: int
    tag: str
    kind: str
    data: bytes
    width: int = 0  # images
    height: int = 0
    channels: int = 0  # sound
    rate: int = 0
    bits: int = 0
    sample_format: int = 0  # 1 = signed


@dataclasses.dataclass(frozen=True)
class BinHeader:
    size: int
    kind: str
    fields: tuple  # the integers after the kind


def parse_line(line):
    """One line (bytes or str, without its newline) → Message; MalformedFrame when it is not
    `[ts:tag] body`."""
    if isinstance(line, bytes):
        line = line.decode('latin-1')
    match = _LINE.match(line.rstrip('\r\n'))
    if match is None:
        raise MalformedFrame(f'not an URBI message: {line[:60]!r}')
    timestamp, tag, body = match.groups()
    return Message(int(timestamp), tag if tag is not None else 'notag', body.rstrip(' \r'))


def parse_bin_header(body):
    """`BIN <len> <kind> <ints...>` → BinHeader, None when the body is not binary,
    MalformedFrame when it is and is damaged (bad length, unknown kind, missing fields)."""
    words = body.split()
    if not words or words[0] != 'BIN':
        return None
    if len(words) < 3 or not (words[1].isascii() and words[1].isdigit()):  # not '³'
        raise MalformedFrame(f'BIN header without a length and kind: {body[:60]!r}')
    size, kind = int(words[1]), words[2]
    if size > MAX_BINARY_BYTES:
        raise MalformedFrame(f'BIN of {size} bytes (more than {MAX_BINARY_BYTES})')
    needed = {'jpeg': 2, 'YCbCr': 2, 'raw': 4, 'wav': 0}.get(kind)
    if needed is None:
        raise MalformedFrame(f'unknown binary kind {kind!r}')
    try:
        fields = tuple(int(w) for w in words[3 : 3 + needed])
    except ValueError:
        raise MalformedFrame(f'BIN {kind} with non-numeric fields: {body[:60]!r}') from None
    if len(fields) != needed:
        raise MalformedFrame(f'BIN {kind} needs {needed} fields: {body[:60]!r}')
    if kind in IMAGE_KINDS and size > fields[0] * fields[1] * 3 + 1024:
        raise MalformedFrame(f'BIN {kind} of {size} bytes for {fields[0]}×{fields[1]} pixels')
    return BinHeader(size, kind, fields)


def binary_record(message, header, data):
    fields = dict(timestamp=message.timestamp, tag=message.tag, kind=header.kind, data=data)
    if header.kind in IMAGE_KINDS:
        fields.update(width=header.fields[0], height=header.fields[1])
    elif header.kind == 'raw':
        channels, rate, bits, sample_format = header.fields
        fields.update(channels=channels, rate=rate, bits=bits, sample_format=sample_format)
    return Binary(**fields)


# ---- the stream ------------------------------------------------------------------------------
class StreamDecoder:
    """Bytes from the server → Message and Binary records, resynchronising after damage.

    feed(data) appends; next_record() returns the next complete record, None when more bytes
    are needed, and raises MalformedFrame once per damaged item (then goes on from the next
    message start)."""

    def __init__(self, max_line=MAX_LINE_BYTES):
        self.max_line = max_line
        self._buffer = bytearray()
        self._pending = None  # (message, header) waiting for its payload
        self._delivered = 0  # bytes of a delivered payload still at the buffer's start: its end
        # must be a message start, else the length lied and the next message may be inside it
        self._skipping_line = False  # dropping a too-long line up to its newline

    def feed(self, data):
        self._buffer += data

    def records(self):
        """Every complete record now buffered; damage is skipped (use next_record to count)."""
        out = []
        while True:
            try:
                record = self.next_record()
            except MalformedFrame:
                continue
            if record is None:
                return out
            out.append(record)

    @property
    def buffered(self):
        return len(self._buffer)

    def next_record(self):
        if self._skipping_line:
            if not self._drop_through_newline():
                return None
        if self._pending is not None:
            return self._payload()
        if self._delivered:
            if len(self._buffer) <= self._delivered:
                return None
            end, self._delivered = self._delivered, 0
            if self._buffer[end : end + 1] != b'[':
                self._resync(1)
                raise MalformedFrame('bytes after a binary payload: its length lied')
            del self._buffer[:end]
        return self._line()

    def _line(self):
        end = self._buffer.find(b'\n')
        if end < 0:
            if len(self._buffer) >= self.max_line:
                self._skipping_line = True
                self._drop_through_newline()
                raise MalformedFrame(f'a line of {self.max_line} bytes without a newline')
            return None
        raw = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        try:
            message = parse_line(raw)
            header = parse_bin_header(message.body)
        except MalformedFrame:
            self._resync(0)  # binary bytes may follow a damaged header: find a message start
            raise
        if header is None:
            return message
        self._pending = (message, header)
        return self._payload()

    def _payload(self):
        message, header = self._pending
        if len(self._buffer) < header.size:
            return None
        data = bytes(self._buffer[: header.size])
        self._pending = None
        if header.kind == 'jpeg' and not (data.startswith(JPEG_START) and data.endswith(JPEG_END)):
            self._resync(1)  # the payload may hold the next message: look inside it
            raise MalformedFrame(f'BIN jpeg of {header.size} bytes is not one JPEG: length lied')
        if header.kind == 'raw' and header.size % max(1, header.fields[0] * header.fields[2] // 8):
            self._resync(1)
            raise MalformedFrame(f'BIN raw of {header.size} bytes is not whole sample frames')
        self._delivered = header.size
        return binary_record(message, header, data)

    def _resync(self, start):
        """Drop bytes up to the next `[digits` message start at or after start."""
        match = _MESSAGE.search(self._buffer, start)
        if match is not None:
            del self._buffer[: match.start()]
            return
        keep = self._buffer.rfind(b'[', start)  # a start cut off at the buffer's end
        del self._buffer[: keep if keep >= 0 and len(self._buffer) - keep < 16 else None]

    def _drop_through_newline(self):
        end = self._buffer.find(b'\n')
        if end < 0:
            self._buffer.clear()
            return False
        del self._buffer[: end + 1]
        self._skipping_line = False
        return True


# ---- commands --------------------------------------------------------------------------------
def check_tag(tag):
    if not _TAG.match(tag or ''):
        raise ValueError(f'not an URBI tag: {tag!r} (a letter or _, then letters, digits, _)')
    return tag


def check_device(name):
    if not _DEVICE.match(name or ''):
        raise ValueError(f'not an URBI device or field: {name!r}')
    return name


def command(text, tag=None, background=False):
    """One statement, tagged when tag is given, ended `,` (background) or `;` (foreground)."""
    prefix = f'{check_tag(tag)}: ' if tag else ''
    return f'{prefix}{text}{"," if background else ";"}\n'.encode('ascii')


def loop(tag, expression):
    """A tagged loop reading expression for ever (ended by stop(tag))."""
    return command(f'loop {{{expression}; noop}}', tag, background=True)


def every(tag, period_ms, expression):
    return command(f'every({int(period_ms)}ms) {expression}', tag, background=True)


def stop(tag):
    return command(f'stop {check_tag(tag)}')


def read(device, tag=None):
    return command(f'{check_device(device)}', tag)


def battery(tag=None):
    """power(): the battery's charge as a fraction."""
    return command('power()', tag)


def assign(device, value, tag=None):
    return command(f'{check_device(device)} = {float(value):.6f}', tag)


def walk(milliseconds):
    """robot.walk(ms) in the background (a foreground walk blocks the connection); negative
    walks backwards."""
    return command(f'robot.walk({int(milliseconds)})', background=True)


def turn(milliseconds):
    """robot.turn(ms); negative turns clockwise."""
    return command(f'robot.turn({int(milliseconds)})', background=True)


def stop_walk():
    return command('robot.stopwalk()') + command('robot.stopturn()')


def posture(name):
    if name not in POSTURES:
        raise ValueError(f'unknown posture {name!r}; valid: {", ".join(POSTURES)}')
    return command(f'robot.{name}()', background=True)


POSTURES = ('sit', 'stand', 'lay', 'beg', 'stretch', 'initial')


def motors(on):
    return command('motor on' if on else 'motor off')


def ping(tag=None):
    return command('ping', tag)


def speaker_wav(wav_bytes):
    """speaker.val = BIN <n> wav; and exactly the n bytes (untagged: the 2006 grammar refuses a
    tagged binary assignment)."""
    return f'speaker.val = BIN {len(wav_bytes)} wav;'.encode('ascii') + bytes(wav_bytes)


def wav(pcm, rate, bits, channels=1):
    """PCM bytes (little-endian, signed 16-bit or unsigned 8-bit) → a WAV file's bytes."""
    out = io.BytesIO()
    with wave.open(out, 'wb') as writer:
        writer.setnchannels(channels)
        writer.setsampwidth(bits // 8)
        writer.setframerate(rate)
        writer.writeframes(pcm)
    return out.getvalue()


def read_wav(data):
    """A WAV file's bytes → (mono int16 samples, rate): 8-bit or 16-bit PCM, channels mixed.
    ValueError for anything else."""
    try:
        with wave.open(io.BytesIO(data)) as reader:
            width, channels, rate = (
                reader.getsampwidth(),
                reader.getnchannels(),
                reader.getframerate(),
            )
            frames = reader.readframes(reader.getnframes())
    except (wave.Error, EOFError) as exc:
        raise ValueError(f'not a PCM WAV file: {exc}') from None
    if width == 1:
        samples = (np.frombuffer(frames, np.uint8).astype(np.int32) - 128) * 256
    elif width == 2:
        samples = np.frombuffer(frames, '<i2').astype(np.int32)
    else:
        raise ValueError(f'{8 * width}-bit WAV: give 8- or 16-bit PCM')
    samples = samples[: samples.size - samples.size % channels].reshape(-1, channels)
    return samples.mean(axis=1).astype(np.int16), rate


# ---- the server side (the emulator speaks it) --------------------------------------------------
def message(timestamp, tag, body):
    return f'[{int(timestamp) % 100_000_000:08d}:{tag}] {body}\n'.encode('latin-1')


def binary(timestamp, tag, kind, data, *fields):
    """A BIN header line (the kernel leaves a space before its newline) and the bytes."""
    words = ' '.join(str(int(f)) for f in fields)
    return message(timestamp, tag, f'BIN {len(data)} {kind} {words} ') + bytes(data)


def number(value):
    return f'{float(value):.6f}'
