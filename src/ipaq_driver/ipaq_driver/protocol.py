"""iPaq robot-control protocol: framing, checksums, packets, streams
(docs/protocols/ipaq.md).

Pure codec: bytes in, typed records out, and back. Values stay raw (servo
settings, 16-bit words); units are the conversion layer's business. Section
numbers (§) refer to docs/protocols/ipaq.md.
"""

import dataclasses
import enum

import numpy as np

from legacy_robot_common.errors import MalformedFrame

START = b'\xff\x38'  # flush and start a packet (§2.2)
END = b'\xff\x37'  # parse what came since START
TERMINATE = b'\xff\x36'  # end the iPaq's control program
MAX_PACKET = 4096  # longest unstuffed body accepted (a bitmap is 480 bytes)


class Status(enum.IntEnum):
    """Response status codes (§2.3): anything but OK means nothing was done."""

    OK = 0
    BAD_CHECKSUM = 1
    UNKNOWN_TYPE = 2
    CAMERA_TIMEOUT = 10
    CAMERA_OVERFLOW = 11
    BRAINSTEM_SILENT = 20


STATUS_TEXT = {
    Status.OK: 'success',
    Status.BAD_CHECKSUM: 'the iPaq saw an incorrect checksum',
    Status.UNKNOWN_TYPE: 'the iPaq does not know this packet type',
    Status.CAMERA_TIMEOUT: 'the CMUcam timed out',
    Status.CAMERA_OVERFLOW: 'the CMUcam sent too many response characters',
    Status.BRAINSTEM_SILENT: 'the BrainStem failed to respond',
}


def status_text(status):
    try:
        return STATUS_TEXT[Status(status)]
    except ValueError:
        return f'unknown status {status}'


class PacketError(MalformedFrame):
    """A command packet the iPaq rejects; status is the code it answers with."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


# ---- framing --------------------------------------------------------------------
def checksum(data, over_stuffed=False):
    """Sum mod 256 of the bytes between START and the checksum (§2.2).

    over_stuffed: sum the bytes as sent, each 255 counted twice (the
    "checksum after stuffing" reading, §4.1; the default sums the unstuffed bytes).
    """
    total = sum(data)
    if over_stuffed:
        total += 255 * data.count(255)
    return total & 0xFF


def stuff(data):
    return bytes(data).replace(b'\xff', b'\xff\xff')


def frame(body):
    """Unstuffed packet body → bytes on the wire."""
    return START + stuff(body) + END


def with_checksum(data, over_stuffed=False):
    return bytes(data) + bytes([checksum(data, over_stuffed)])


def split_checksum(body, what, over_stuffed=False):
    """Body → its data without the checksum; MalformedFrame if the checksum is wrong."""
    if len(body) < 2:
        raise MalformedFrame(f'{what}: {len(body)} bytes is too short')
    data, received = body[:-1], body[-1]
    expected = checksum(data, over_stuffed)
    if received != expected:
        raise MalformedFrame(f'{what}: checksum 0x{received:02x}, expected 0x{expected:02x}')
    return data


@dataclasses.dataclass
class Terminate:
    """255,54 seen: the control program is told to end."""


class FrameReceiver:
    """Bytes → unstuffed packet bodies (the receiver of §2.2).

    feed() returns bodies (bytes), Terminate(), or MalformedFrame instances for
    bytes that did not form a packet; the caller counts those and goes on.
    """

    def __init__(self, max_length=MAX_PACKET):
        self.max_length = max_length
        self._body = None  # None = between packets
        self._escape = False  # the previous byte was 255
        self.stray = 0  # bytes seen between packets, not yet reported

    @property
    def idle(self):
        """Between packets (the next byte is not part of one)."""
        return self._body is None and not self._escape

    def feed(self, data):
        out = []
        position = 0
        while position < len(data):
            position = self.step(data, position, out)
        return out

    def step(self, data, position, out):
        """Consume data from position until one item is complete or the data ends; new position."""
        size = len(data)
        while position < size:
            if self._escape:
                self._escape = False
                position += 1
                if self._control(data[position - 1], out):
                    return position
                continue
            escape = data.find(b'\xff', position)
            stop = size if escape < 0 else escape
            if self._body is None:
                self.stray += stop - position
            else:
                self._body += data[position:stop]
                if len(self._body) > self.max_length:
                    out.append(MalformedFrame(f'packet longer than {self.max_length} bytes'))
                    self._body = None
                    return stop
            position = stop
            if escape >= 0:
                self._escape = True
                position += 1
        return position

    def _control(self, byte, out):
        """Act on the byte after a 255; True when an item was completed."""
        if byte == 0x38:  # START
            if self.stray:
                out.append(MalformedFrame(f'{self.stray} bytes outside a packet'))
                self.stray = 0
            if self._body:
                out.append(MalformedFrame(f'packet restarted after {len(self._body)} bytes'))
            self._body = bytearray()
            return False
        if byte == 0xFF and self._body is not None:  # stuffed 255
            self._body.append(0xFF)
            return False
        if byte == 0x37 and self._body is not None:  # END
            out.append(bytes(self._body))
        elif byte == 0x36:  # TERMINATE
            out.append(Terminate())
        else:
            where = 'inside' if self._body is not None else 'outside'
            out.append(MalformedFrame(f'control code 255,{byte} {where} a packet'))
        self._body = None
        return True


# ---- command packets (client → iPaq, port 5000) -----------------------------------
class Letter(bytes, enum.Enum):
    SET_PARAMETERS = b'P'
    SET_INTEGRATION = b'I'
    COLOR_TRACK = b'T'
    COLOR_TRACK_NO_TILT = b'U'
    COLOR_TRACK_NO_PAN = b'V'
    COLOR_TRACK_NO_MOVE = b'A'
    WINDOW_TRACK = b'W'
    WINDOW_TRACK_NO_TILT = b'X'
    WINDOW_TRACK_NO_PAN = b'Y'
    WINDOW_TRACK_NO_MOVE = b'Z'
    STOP_TRACKING = b'N'
    SAFETY = b'S'
    DUMP_FRAME = b'D'
    CMUCAM = b'C'
    BRAINSTEM = b'B'


# Camera motion while tracking, in the order of the ColorTracking/WindowTracking services.
COLOR_TRACKING = (
    Letter.COLOR_TRACK,
    Letter.COLOR_TRACK_NO_TILT,
    Letter.COLOR_TRACK_NO_PAN,
    Letter.COLOR_TRACK_NO_MOVE,
)
WINDOW_TRACKING = (
    Letter.WINDOW_TRACK,
    Letter.WINDOW_TRACK_NO_TILT,
    Letter.WINDOW_TRACK_NO_PAN,
    Letter.WINDOW_TRACK_NO_MOVE,
)
TRACKING_MOTION = ('follow', 'follow without tilt', 'follow without pan', 'camera still')
FIXED_LENGTH = {
    Letter.SET_PARAMETERS: 6,
    Letter.SET_INTEGRATION: 7,
    Letter.SAFETY: 1,
    **{letter: 6 for letter in COLOR_TRACKING},
    **{letter: 0 for letter in (*WINDOW_TRACKING, Letter.STOP_TRACKING, Letter.DUMP_FRAME)},
}
VARIABLE_LENGTH = (Letter.CMUCAM, Letter.BRAINSTEM)


@dataclasses.dataclass(frozen=True)
class MaskBits:
    """Bit numbers of the P packet mask (§2.4). Bits 1-3 are inferred from field order."""

    vel_timeout: int = 0
    vel: int = 1
    direction: int = 2
    pan: int = 3
    tilt: int = 4
    kill_motor: int = 5
    init_brainstem: int = 6

    def __post_init__(self):
        bits = dataclasses.astuple(self)
        if len(set(bits)) != len(bits) or not all(0 <= b <= 7 for b in bits):
            raise ValueError(f'P mask bits must be seven different numbers 0..7, got {bits}')

    def mask(self, *names):
        return sum(1 << getattr(self, name) for name in names)


@dataclasses.dataclass
class SetParameters:
    """P packet fields; mask says which are valid (see MaskBits)."""

    vel_timeout: int = 0
    vel: int = 0
    direction: int = 0
    pan: int = 0
    tilt: int = 0
    mask: int = 0


def _byte(name, value):
    if not 0 <= value <= 255:
        raise ValueError(f'{name} must be within 0..255, got {value}')
    return value


def _word(name, value):
    if not 0 <= value <= 0xFFFF:
        raise ValueError(f'{name} must be within 0..65535, got {value}')
    return value.to_bytes(2, 'big')


def command_letter(packet):
    """The type letter of an encoded command packet (it follows START; letters are ASCII,
    so never stuffed)."""
    return Letter(packet[len(START) : len(START) + 1])


def encode_command(letter, fields=b'', over_stuffed=False):
    """One command packet, framed and stuffed, ready for port 5000."""
    return frame(with_checksum(Letter(letter).value + bytes(fields), over_stuffed))


def encode_set_parameters(p, over_stuffed=False):
    fields = bytes(
        _byte(n, getattr(p, n)) for n in ('vel_timeout', 'vel', 'direction', 'pan', 'tilt', 'mask')
    )
    return encode_command(Letter.SET_PARAMETERS, fields, over_stuffed)


def encode_set_integration(x, y, theta, mask, over_stuffed=False):
    """Raw 16-bit words (two's complement is the caller's choice); mask bit 0 x, 1 y, 2 theta."""
    fields = _word('x', x) + _word('y', y) + _word('theta', theta) + bytes([_byte('mask', mask)])
    return encode_command(Letter.SET_INTEGRATION, fields, over_stuffed)


def encode_color_tracking(motion, ranges, over_stuffed=False):
    """motion: index into COLOR_TRACKING; ranges: rmin rmax gmin gmax bmin bmax (CMUcam TC)."""
    if len(ranges) != 6:
        raise ValueError('colour tracking needs 6 bounds: rmin rmax gmin gmax bmin bmax')
    for low, high in (ranges[0:2], ranges[2:4], ranges[4:6]):
        if low > high:
            raise ValueError(f'colour range minimum {low} is above its maximum {high}')
    fields = bytes(_byte('colour bound', v) for v in ranges)
    return encode_command(_motion_letter(COLOR_TRACKING, motion), fields, over_stuffed)


def encode_window_tracking(motion, over_stuffed=False):
    return encode_command(_motion_letter(WINDOW_TRACKING, motion), b'', over_stuffed)


def _motion_letter(letters, motion):
    if not 0 <= motion < len(letters):
        raise ValueError(
            f'tracking mode must be 0..{len(letters) - 1} '
            f'({", ".join(TRACKING_MOTION)}), got {motion}'
        )
    return letters[motion]


def encode_safety(distance, over_stuffed=False):
    return encode_command(Letter.SAFETY, bytes([_byte('safety distance', distance)]), over_stuffed)


def encode_pass_through(letter, command, over_stuffed=False):
    """C (CMUcam text, no CR) or B (BrainStem bytes): length byte + the bytes verbatim."""
    command = command.encode('ascii') if isinstance(command, str) else bytes(command)
    if not 1 <= len(command) <= 255:
        raise ValueError(f'a pass-through command holds 1..255 bytes, got {len(command)}')
    return encode_command(letter, bytes([len(command)]) + command, over_stuffed)


@dataclasses.dataclass
class Command:
    """A command packet as the iPaq parses it (emulator side)."""

    letter: Letter
    fields: bytes


def decode_command(body, over_stuffed=False):
    """Unstuffed body → Command; PacketError with the status the iPaq answers otherwise."""
    try:
        data = split_checksum(body, 'command packet', over_stuffed)
    except MalformedFrame as exc:
        raise PacketError(str(exc), Status.BAD_CHECKSUM) from None
    try:
        letter = Letter(data[:1])
    except ValueError:
        raise PacketError(f'unknown packet type {data[:1]!r}', Status.UNKNOWN_TYPE) from None
    fields = data[1:]
    if letter in VARIABLE_LENGTH:
        expected = 1 + fields[0] if fields else 1
    else:
        expected = FIXED_LENGTH[letter]
    if len(fields) != expected:
        # the document has no "bad length" status: the packet cannot be parsed (§4.1)
        raise PacketError(
            f'{letter.name} packet has {len(fields)} field bytes, expected {expected}',
            Status.UNKNOWN_TYPE,
        )
    return Command(letter, fields[1:] if letter in VARIABLE_LENGTH else fields)


def decode_set_parameters(fields):
    return SetParameters(*fields)


def decode_set_integration(fields):
    words = [int.from_bytes(fields[i : i + 2], 'big') for i in (0, 2, 4)]
    return (*words, fields[6])


# ---- BrainStem serial packets: the payload of the B pass-through (§2.7) -------------------
class BrainStemCommand(enum.IntEnum):
    """The command codes the emulated stems answer (data[0] of a packet)."""

    DEV_VAL = 4  # a device value, stem → host
    IR02_RD = 30  # read a GP2D02 ranger
    SRV_ABS = 33  # servo position: set (index, value) or read (index)


BRAINSTEM_MAX_DATA = 8


@dataclasses.dataclass
class BrainStemPacket:
    address: int
    data: bytes  # data[0] is the command code


def encode_brainstem(address, data):
    """[address][length][data...]"""
    if len(data) > BRAINSTEM_MAX_DATA:
        raise ValueError(f'a BrainStem packet holds at most {BRAINSTEM_MAX_DATA} data bytes')
    return bytes([_byte('address', address), len(data)]) + bytes(data)


def decode_brainstem(raw):
    if len(raw) < 2 or raw[1] != len(raw) - 2 or raw[1] > BRAINSTEM_MAX_DATA:
        raise MalformedFrame(f'not a BrainStem packet: {bytes(raw).hex(" ")}')
    return BrainStemPacket(raw[0], bytes(raw[2:]))


# ---- responses (iPaq → client, port 5000) -------------------------------------------
class ResponseKind(enum.Enum):
    MINI = 'mini'
    FULL = 'full'
    STRING = 'string'


RESPONSE_KIND = {
    Letter.SET_PARAMETERS: ResponseKind.FULL,
    Letter.CMUCAM: ResponseKind.STRING,
    Letter.BRAINSTEM: ResponseKind.STRING,
}


def response_kind(letter):
    """Which response a command gets when the iPaq parses it (§2.3; Z assumed Mini, §4.1)."""
    return RESPONSE_KIND.get(Letter(letter), ResponseKind.MINI)


@dataclasses.dataclass
class MiniResponse:
    status: int


@dataclasses.dataclass
class FullResponse:
    status: int
    range: int
    wheel_voltage: int
    wheel_current: int
    x: int  # raw 16-bit words as sent
    y: int
    theta: int


@dataclasses.dataclass
class StringResponse:
    status: int
    data: bytes


FULL_LENGTH = 12  # data bytes of a FullResponse before the checksum


def mini_body(status, over_stuffed=False):
    """Response bodies (unstuffed, with checksum); frame() them unless responses go unframed."""
    return with_checksum(bytes([status]), over_stuffed)


def full_body(r, over_stuffed=False):
    data = bytes([r.status, r.range]) + b''.join(
        _word(name, getattr(r, name))
        for name in ('wheel_voltage', 'wheel_current', 'x', 'y', 'theta')
    )
    return with_checksum(data, over_stuffed)


def string_body(status, data, over_stuffed=False):
    if len(data) > 255:
        raise ValueError(f'a string response holds at most 255 bytes, got {len(data)}')
    return with_checksum(bytes([status, len(data)]) + bytes(data), over_stuffed)


def encode_mini(status, over_stuffed=False):
    return frame(mini_body(status, over_stuffed))


def encode_full(r, over_stuffed=False):
    return frame(full_body(r, over_stuffed))


def encode_string(status, data, over_stuffed=False):
    return frame(string_body(status, data, over_stuffed))


def decode_response(body, over_stuffed=False):
    """Unstuffed body → Mini/Full/StringResponse, told apart by length (§2.3)."""
    data = split_checksum(body, 'response', over_stuffed)
    if len(data) == 1:
        return MiniResponse(data[0])
    if len(data) == FULL_LENGTH:
        words = [int.from_bytes(data[i : i + 2], 'big') for i in range(2, FULL_LENGTH, 2)]
        return FullResponse(data[0], data[1], *words)
    if len(data) >= 2 and len(data) == 2 + data[1]:
        return StringResponse(data[0], bytes(data[2:]))
    raise MalformedFrame(f'response of {len(data)} bytes is neither Mini, Full nor String')


def unframed_response_length(kind, head):
    """Total length of an unframed response (the §4.1 "responses not framed" variant), or None
    while too few bytes are known. head: the bytes received so far."""
    if not head:
        return None
    if head[0] != Status.OK or kind is ResponseKind.MINI:
        return 2  # an error status always comes as a MiniResponse
    if kind is ResponseKind.FULL:
        return FULL_LENGTH + 1
    return 3 + head[1] if len(head) >= 2 else None


# ---- stream ports: tracking packets, bitmaps, frame dumps ---------------------------------
@dataclasses.dataclass
class TrackingPacket:
    pan: int
    tilt: int
    x: int
    y: int
    width: int
    height: int
    pixels: int
    confidence: int


TRACKING_LENGTH = 8  # data bytes before the checksum


def encode_tracking(t, over_stuffed=False):
    return frame(with_checksum(bytes(dataclasses.astuple(t)), over_stuffed))


@dataclasses.dataclass
class Bitmap:
    """Line-mode bitmap: rows × columns of 0/1 (uint8), MSB = leftmost pixel."""

    pixels: np.ndarray


@dataclasses.dataclass(frozen=True)
class CameraFormat:
    """What the CMUcam generation sends (§2.6): CMUcam1 by default."""

    generation: int = 1
    columns: int = 80  # CMUcam1 frame: 80 column samples ...
    rows: int = 143  # ... of 143 pixels
    bitmap_columns: int = 80  # CMUcam1 line mode: 80 × 48 bits
    bitmap_rows: int = 48

    def __post_init__(self):
        if self.generation not in (1, 2):
            raise ValueError(f'CMUcam generation must be 1 or 2, got {self.generation}')

    @property
    def bitmap_bytes(self):
        return -(-self.bitmap_columns // 8) * self.bitmap_rows


def encode_bitmap(pixels, camera=CameraFormat()):
    """0/1 array (rows × columns) → framed bitmap packet (no checksum, §2.5)."""
    pixels = np.asarray(pixels, dtype=np.uint8)
    body = np.packbits(pixels, axis=1).tobytes()
    if camera.generation == 2:
        body = bytes([pixels.shape[1], pixels.shape[0]]) + body
    return frame(body)


def decode_bitmap(body, camera=CameraFormat()):
    if camera.generation == 2:
        if len(body) < 2:
            raise MalformedFrame('CMUcam2 bitmap without its size bytes')
        columns, rows, body = body[0], body[1], body[2:]
    else:
        columns, rows = camera.bitmap_columns, camera.bitmap_rows
    stride = -(-columns // 8)
    if columns == 0 or len(body) != stride * rows:
        raise MalformedFrame(
            f'bitmap of {len(body)} bytes, expected {stride * rows} for {columns}×{rows}'
        )
    packed = np.frombuffer(body, dtype=np.uint8).reshape(rows, stride)
    return Bitmap(np.unpackbits(packed, axis=1)[:, :columns])


def decode_stream_packet(body, camera=CameraFormat(), over_stuffed=False):
    """A framed body from the tracking stream → TrackingPacket or Bitmap (told apart by length)."""
    if len(body) == TRACKING_LENGTH + 1:
        return TrackingPacket(*split_checksum(body, 'tracking packet', over_stuffed))
    return decode_bitmap(body, camera)


FRAME_NEW, FRAME_NEXT, FRAME_END = 1, 2, 3  # CMUcam DF markers; pixel bytes are 16..240
ACK = b'ACK\r'
PROMPT = b':'


@dataclasses.dataclass
class FrameDump:
    """A dumped camera frame as sampled: rows × samples × 3 (R, G, B or Cr, Y, Cb)."""

    pixels: np.ndarray


def encode_frame_dump(pixels, camera=CameraFormat()):
    """rows × columns × 3 uint8 (values 16..240) → the DF bytes the iPaq forwards (§2.5, §2.6)."""
    pixels = np.clip(np.asarray(pixels, dtype=np.uint8), 16, 240)
    if camera.generation == 1:  # column by column
        parts = [pixels[:, c, :].tobytes() for c in range(pixels.shape[1])]
        head = bytes([FRAME_NEW])
    else:  # CMUcam2: size bytes, then row by row
        parts = [pixels[r].tobytes() for r in range(pixels.shape[0])]
        head = bytes([FRAME_NEW, pixels.shape[1], pixels.shape[0]])
    return ACK + head + bytes([FRAME_NEXT]).join(parts) + bytes([FRAME_END]) + PROMPT


def decode_frame_dump(data, camera=CameraFormat()):
    """The DF bytes from FRAME_NEW up to FRAME_END (exclusive) → FrameDump."""
    if not data or data[0] != FRAME_NEW:
        raise MalformedFrame('frame dump does not start with the new-frame byte 1')
    if camera.generation == 2:
        if len(data) < 3:
            raise MalformedFrame('CMUcam2 frame dump without its size bytes')
        columns, rows, parts = data[1], data[2], data[3:].split(bytes([FRAME_NEXT]))
        expected = (rows, columns * 3)
    else:
        parts = data[1:].split(bytes([FRAME_NEXT]))
        expected = (camera.columns, camera.rows * 3)
    if parts and parts[0] == b'':
        parts = parts[1:]  # a separator right after the start byte
    if len(parts) != expected[0] or any(len(part) != expected[1] for part in parts):
        lengths = sorted({len(part) for part in parts})
        raise MalformedFrame(
            f'frame dump has {len(parts)} lines of {lengths} bytes, expected '
            f'{expected[0]} of {expected[1]}'
        )
    lines = np.frombuffer(b''.join(parts), dtype=np.uint8).reshape(expected[0], -1, 3)
    return FrameDump(lines.transpose(1, 0, 2).copy() if camera.generation == 1 else lines.copy())


class StreamDecoder:
    """Bytes from port 5001 or 5002 → TrackingPacket, Bitmap, FrameDump or MalformedFrame.

    Either port may carry either stream (the document contradicts itself, §4.1), so
    each item is recognised by its content (§3.4): 255,56 starts a framed
    tracking or bitmap packet; "ACK" starts a frame dump, which ends with 3 then ':'.
    """

    MAX_DUMP = 256 * 1024

    def __init__(self, camera=CameraFormat(), over_stuffed=False):
        self.camera = camera
        self.over_stuffed = over_stuffed
        self._frames = FrameReceiver()
        self._dump = None  # bytearray while inside a frame dump
        self._pending = b''  # a possible beginning of "ACK" at the end of the last chunk

    def feed(self, data):
        out = []
        data, self._pending = self._pending + bytes(data), b''
        position = 0
        while position < len(data):
            if self._dump is not None:
                position = self._feed_dump(data, position, out)
            elif not self._frames.idle:
                items = []
                position = self._frames.step(data, position, items)
                out += [self._stream_item(item) for item in items]
            else:
                position = self._find_item(data, position, out)
        return out

    def _find_item(self, data, position, out):
        """Between items: skip to the next 255 (a packet) or "ACK" (a frame dump)."""
        escape = data.find(b'\xff', position)
        ack = data.find(ACK[:1], position, escape if escape >= 0 else len(data))
        start = ack if ack >= 0 else escape
        if start < 0:
            self._frames.stray += len(data) - position
            return len(data)
        self._frames.stray += start - position
        if start == escape:
            items = []
            position = self._frames.step(data, start, items)
            out += [self._stream_item(item) for item in items]
            return position
        head = data[start : start + len(ACK)]
        if head != ACK[: len(head)]:
            self._frames.stray += 1
            return start + 1
        if len(head) < len(ACK):
            self._pending = head  # wait for the rest of "ACK\r"
            return len(data)
        if self._frames.stray:
            out.append(MalformedFrame(f'{self._frames.stray} bytes before a frame dump'))
            self._frames.stray = 0
        self._dump = bytearray()
        return start + len(ACK)

    def _stream_item(self, item):
        if isinstance(item, Terminate):
            return MalformedFrame('terminate code on a stream port')
        if isinstance(item, MalformedFrame):
            return item
        try:
            return decode_stream_packet(item, self.camera, self.over_stuffed)
        except MalformedFrame as exc:
            return exc

    def _feed_dump(self, data, position, out):
        """Inside a frame dump: collect up to the end byte and the prompt; new position."""
        dump = self._dump
        if dump and dump[-1] == FRAME_END:  # the end came last time; the prompt is due
            end = position
        else:
            found = data.find(bytes([FRAME_END]), position)
            if found < 0:
                dump += data[position:]
                if len(dump) > self.MAX_DUMP:
                    out.append(
                        MalformedFrame(f'frame dump without an end within {self.MAX_DUMP} bytes')
                    )
                    self._dump = None
                return len(data)
            dump += data[position : found + 1]
            end = found + 1
        if end >= len(data):
            return end  # wait for the prompt
        self._dump = None
        if data[end : end + 1] == PROMPT:
            end += 1
        else:
            out.append(MalformedFrame('frame dump end not followed by the ":" prompt'))
        try:
            out.append(decode_frame_dump(bytes(dump[:-1]), self.camera))
        except MalformedFrame as exc:
            out.append(exc)
        return end
