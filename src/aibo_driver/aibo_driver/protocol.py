"""AiboPet telemetry protocol (LifePlus / RCodePlus, TCP 21001): bytes ↔ records.

No sockets, threads or rclpy. Section numbers refer to docs/protocols/aibo.md.
Every byte value AiboPet's page leaves out (§6.1) is a setting here: the opcode map,
the TELEMVER type values, the YUV10 packing, the audio channel order, the RPUT layout.
"""

import dataclasses
import enum
import io
import re
import struct

import numpy as np
from PIL import Image, UnidentifiedImageError

from legacy_robot_common.errors import MalformedFrame

MAX_REPLY = 32000  # §3.1: larger replies are not supported
SIGNATURE = b'AiboPet\0'
VERSION_SIZE = 12

CAMERA_WIDTH, CAMERA_HEIGHT = 176, 144
YUV10_SIZE = CAMERA_WIDTH * CAMERA_HEIGHT * 10 // 8  # 31680
COLOR_WIDTH, COLOR_HEIGHT = 88, 72
COLOR_SIZE = COLOR_WIDTH * COLOR_HEIGHT  # 6336
AUDIO_RATE = 16000
AUDIO_FRAMES = 512  # stereo sample frames per chunk
AUDIO_PCM_SIZE = AUDIO_FRAMES * 2 * 2
AUDIO_RECORD_SIZE = 8 + AUDIO_PCM_SIZE  # 2056
AUDIO_MIN_RECORDS, AUDIO_MAX_RECORDS = 2, 10
AUDIO_RING = 15  # chunks the dog keeps
CHUNK_SECONDS = AUDIO_FRAMES / AUDIO_RATE  # 0.032
VOICE_MATCHES = 10
VOICE_SIZE = VOICE_MATCHES * 8  # 80
SEMANTIC_VALUES = 10
SEMANTIC_RECORD_SIZE = 4 + 4 * SEMANTIC_VALUES  # 44


class StreamLost(MalformedFrame):
    """A size prefix over 32000: the reply boundaries are lost, the connection must restart."""


# ---- opcodes (§3.2, §6.1: byte values not public) -------------------------------------------
class Op(str, enum.Enum):
    GET_VERSION = 'get_version'
    GET_JPEG = 'get_jpeg'
    GET_YUV10 = 'get_yuv10'
    GET_COLOR_IMAGE = 'get_color_image'
    FLUSH_AUDIO = 'flush_audio'
    GET_AUDIO = 'get_audio'
    SET_PROPERTY = 'set_property'
    GET_VOICE_DATA = 'get_voice_data'
    GET_SEMANTIC = 'get_semantic'
    RPUT = 'rput'
    GET_ARRAY_RAW = 'get_array_raw'


IMAGE_OPS = (Op.GET_JPEG, Op.GET_YUV10, Op.GET_COLOR_IMAGE)  # auto-snapshot requests (§3.4)

# Assumption (README "AIBO driver"): telem.h is not public, so these defaults are simply the
# operations numbered 1..11 in the order of AiboPet's table. Override them with the opcodes.*
# parameters once the real values are known (§3.2 describes a field probe).
DEFAULT_OPCODES = {op: number for number, op in enumerate(Op, start=1)}
ALIASES = {
    'get_ver': Op.GET_VERSION,
    'version': Op.GET_VERSION,
    'get_semantic_event': Op.GET_SEMANTIC,
    'getsemanticevent': Op.GET_SEMANTIC,
}


class OpcodeMap:
    """Operation ↔ request byte; every byte distinct."""

    def __init__(self, overrides=None):
        self.byte = dict(DEFAULT_OPCODES)
        for name, value in (overrides or {}).items():
            key = name.lower()
            op = ALIASES.get(key) or Op(key)
            if not 0 <= int(value) <= 255:
                raise ValueError(f'opcode {name} must be a byte 0..255, got {value}')
            self.byte[op] = int(value)
        seen = {}
        for op, value in self.byte.items():
            if value in seen:
                raise ValueError(
                    f'opcodes {seen[value].value} and {op.value} share the byte {value}'
                )
            seen[value] = op
        self.op = seen

    def request(self, op):
        return bytes([self.byte[op]])


# ---- products and version (§2.2, §3.3) --------------------------------------------------------
class Product(str, enum.Enum):
    RCODEPLUS = 'rcodeplus'
    LIFEPLUS = 'lifeplus'
    UNKNOWN = 'unknown'


SUPPORTED = {  # §3.2 feature matrix; UNKNOWN: try everything, gate on "size 0 forever"
    Product.RCODEPLUS: set(Op) - {Op.GET_VOICE_DATA, Op.GET_SEMANTIC},
    Product.LIFEPLUS: set(Op) - {Op.RPUT, Op.GET_ARRAY_RAW},
    Product.UNKNOWN: set(Op),
}


@dataclasses.dataclass(frozen=True)
class Version:
    major: int
    minor: int
    type_byte: int
    filler: int = 0

    @property
    def number(self):
        """AP_Version style: 251 = 2.51."""
        return self.major * 100 + self.minor

    def __str__(self):
        return f'{self.major}.{self.minor:02d}'


def decode_version(data):
    if len(data) != VERSION_SIZE:
        raise MalformedFrame(f'version reply has {len(data)} bytes, expected {VERSION_SIZE}')
    if data[:8] != SIGNATURE:
        raise MalformedFrame(
            f'version reply does not start with "AiboPet\\0" ({data[:8]!r}): '
            'not an AiboPet telemetry server, or a wrong GET_VERSION opcode'
        )
    return Version(*data[8:12])


def encode_version(version):
    return SIGNATURE + bytes([version.major, version.minor, version.type_byte, version.filler])


def product_of(version, type_values):
    """type_values: {Product: bType byte} (§3.3: the real values are not public)."""
    for product, value in type_values.items():
        if version.type_byte == value:
            return product
    return Product.UNKNOWN


# ---- standard replies (§3.1) ------------------------------------------------------------------
def encode_reply(data):
    return struct.pack('<I', len(data)) + bytes(data)


def reply_size(prefix):
    """The 4-byte little-endian size; StreamLost when it is over 32000."""
    size = struct.unpack('<I', prefix)[0]
    if size > MAX_REPLY:
        raise StreamLost(f'reply size {size} is over {MAX_REPLY}: stream out of step')
    return size


def check_size(op, size):
    """MalformedFrame unless size (> 0) is one §3.4 allows for op."""
    if op is Op.GET_YUV10 and size != YUV10_SIZE:
        raise MalformedFrame(f'YUV10 reply of {size} bytes, expected {YUV10_SIZE}')
    if op is Op.GET_COLOR_IMAGE and size != COLOR_SIZE:
        raise MalformedFrame(f'colour image of {size} bytes, expected {COLOR_SIZE}')
    if op is Op.GET_AUDIO and (
        size % AUDIO_RECORD_SIZE
        or not AUDIO_MIN_RECORDS <= size // AUDIO_RECORD_SIZE <= AUDIO_MAX_RECORDS
    ):
        raise MalformedFrame(
            f'audio reply of {size} bytes: not 2..10 records of {AUDIO_RECORD_SIZE}'
        )
    if op is Op.GET_VOICE_DATA and size != VOICE_SIZE:
        raise MalformedFrame(f'voice reply of {size} bytes, expected {VOICE_SIZE}')
    if op is Op.GET_SEMANTIC and size % SEMANTIC_RECORD_SIZE:
        raise MalformedFrame(
            f'semantic reply of {size} bytes: not a multiple of {SEMANTIC_RECORD_SIZE}'
        )
    if op is Op.GET_JPEG and size < 4:
        raise MalformedFrame(f'JPEG reply of {size} bytes is too short')


def check_jpeg(data):
    """JFIF data starts with SOI (FF D8) and ends with EOI (FF D9)."""
    if data[:2] != b'\xff\xd8' or data[-2:] != b'\xff\xd9':
        raise MalformedFrame('JPEG reply is not a complete JFIF file (no SOI/EOI marker)')


MAX_JPEG_SIDE = 1024  # pixels; the dog's camera gives 176×144, so more is damage


def decode_jpeg(data):
    """JFIF bytes → H×W×3 uint8 (Pillow); MalformedFrame when the data is not a JPEG of a
    camera's size (Pillow would open other formats, and decode a damaged header's claim of
    billions of pixels or refuse it with an exception of its own)."""
    try:
        with Image.open(io.BytesIO(data), formats=['JPEG']) as image:
            if max(image.size) > MAX_JPEG_SIDE:
                raise MalformedFrame(
                    f'JPEG frame claims {image.size[0]}×{image.size[1]} '
                    f'pixels (at most {MAX_JPEG_SIDE} a side)'
                )
            return np.asarray(image.convert('RGB'))
    except MalformedFrame:
        raise
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError) as exc:
        raise MalformedFrame(f'JPEG frame does not decode: {exc}') from None


def encode_jpeg(rgb, quality=80):
    """H×W×3 uint8 → JFIF bytes (the emulator's camera)."""
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, 'JPEG', quality=quality)
    return buffer.getvalue()


# ---- device control (§3.10) ------------------------------------------------------------------
def encode_set_property(opcodes, index, value):
    if not (0 <= index <= 255 and 0 <= value <= 255):
        raise ValueError(f'property index and value must be bytes, got {index}, {value}')
    return opcodes.request(Op.SET_PROPERTY) + bytes([index, value])


def parse_preset(text):
    """'name=index:value' → (name, index, value)."""
    try:
        name, _, pair = text.partition('=')
        index, value = (int(part, 0) for part in pair.split(':'))
    except ValueError:
        raise ValueError(f'property preset {text!r} must look like name=index:value') from None
    if not name.strip() or not (0 <= index <= 255 and 0 <= value <= 255):
        raise ValueError(f'property preset {text!r}: a name, then index and value 0..255')
    return name.strip(), index, value


# ---- YUV10 (§3.6) -----------------------------------------------------------------------------
FIVE_TO_EIGHT = ('shift3', 'shift3_or_msb')


@dataclasses.dataclass(frozen=True)
class Yuv10Format:
    """The variants §3.6 leaves open; the defaults are our documented assumption.

    layout: 'interleaved' = one 10-bit value per pixel, 'planar' = 15840 bytes of one 5-bit
            code per pixel, then 15840 bytes of the other.
    bit_order: 'msb' = values packed most significant bit first (5 bytes hold 40 bits,
            read big-endian), 'lsb' = least significant first (read little-endian).
    y_bits: 'high' = Y is the high 5 bits of each 10-bit value (planar: the first plane),
            'low' = Y is the low 5 bits (planar: the second plane).
    chroma_first: the chroma on even pixels, 'U' or 'V'; odd pixels carry the other.
    five_to_eight: Y's 5 → 8-bit scaling, 'shift3' (v << 3) or 'shift3_or_msb' (v << 3 | v >> 2).
    chroma_five_to_eight: the same for U and V; 'shift3' keeps code 16 at 128, so a neutral
            grey stays neutral (shift3_or_msb makes it 132: a magenta cast).
    matrix: 'sony' (OPEN-R BMP::YCrCb2RGB) or 'bt601' (JFIF full range).
    """

    layout: str = 'interleaved'
    bit_order: str = 'msb'
    y_bits: str = 'high'
    chroma_first: str = 'U'
    five_to_eight: str = 'shift3_or_msb'
    chroma_five_to_eight: str = 'shift3'
    chroma_offset: int = 128
    matrix: str = 'sony'

    def __post_init__(self):
        for name, allowed in (
            ('layout', ('interleaved', 'planar')),
            ('bit_order', ('msb', 'lsb')),
            ('y_bits', ('high', 'low')),
            ('chroma_first', ('U', 'V')),
            ('five_to_eight', FIVE_TO_EIGHT),
            ('chroma_five_to_eight', FIVE_TO_EIGHT),
            ('matrix', ('sony', 'bt601')),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f'YUV10 {name} must be one of {", ".join(allowed)}, '
                    f'got {getattr(self, name)!r}'
                )
        if not 0 <= self.chroma_offset <= 255:
            raise ValueError('YUV10 chroma_offset must be within 0..255')


# [R, G, B] = M · [Y, U − offset, V − offset]   (U ≈ Cb, V ≈ Cr: §3.6)
MATRICES = {
    # Sony: R = Y + 2·dCr, G = Y − 1.02·dCr − 0.38·dCb, B = Y + 2·dCb
    'sony': np.array([[1.0, 0.0, 2.0], [1.0, -0.38, -1.02], [1.0, 2.0, 0.0]]),
    'bt601': np.array([[1.0, 0.0, 1.402], [1.0, -0.344136, -0.714136], [1.0, 1.772, 0.0]]),
}


def _windows(bits, msb_first):
    """For each value in a 5-byte group: (first byte, shift) of the 16-bit window holding it.

    With bits 5 or 10 no value straddles more than two bytes of its group."""
    result = []
    for start in range(0, 40, bits):
        byte, offset = divmod(start, 8)
        result.append((byte, 16 - offset - bits if msb_first else offset))
    return result


def _unpack(data, bits, msb_first):
    """Bytes → array of bits-wide values (bits 5 or 10), vectorised per value position."""
    groups = np.zeros((len(data) // 5, 6), dtype=np.uint16)
    groups[:, :5] = np.frombuffer(data, dtype=np.uint8).reshape(-1, 5)
    mask = (1 << bits) - 1
    columns = []
    for byte, shift in _windows(bits, msb_first):
        low, high = (
            (groups[:, byte + 1], groups[:, byte])
            if msb_first
            else (groups[:, byte], groups[:, byte + 1])
        )
        columns.append((((high << 8) | low) >> shift) & mask)
    return np.stack(columns, axis=1).ravel()


def _pack(values, bits, msb_first):
    """Inverse of _unpack."""
    per_word = 40 // bits
    values = np.asarray(values, dtype=np.uint32).reshape(-1, per_word)
    groups = np.zeros((len(values), 6), dtype=np.uint32)
    for j, (byte, shift) in enumerate(_windows(bits, msb_first)):
        window = values[:, j] << shift
        high, low = (window >> 8) & 0xFF, window & 0xFF
        if msb_first:
            groups[:, byte] |= high
            groups[:, byte + 1] |= low
        else:
            groups[:, byte] |= low
            groups[:, byte + 1] |= high
    return groups[:, :5].astype(np.uint8).tobytes()


def unpack_yuv10(data, fmt):
    """31680 bytes → (Y5, C5) arrays of 176×144 five-bit codes (C5: the pixel's own chroma)."""
    if len(data) != YUV10_SIZE:
        raise MalformedFrame(f'YUV10 frame of {len(data)} bytes, expected {YUV10_SIZE}')
    msb = fmt.bit_order == 'msb'
    if fmt.layout == 'planar':
        half = YUV10_SIZE // 2
        high, low = _unpack(data[:half], 5, msb), _unpack(data[half:], 5, msb)
    else:
        values = _unpack(data, 10, msb)
        high, low = values >> 5, values & 31
    y5, c5 = (high, low) if fmt.y_bits == 'high' else (low, high)
    shape = (CAMERA_HEIGHT, CAMERA_WIDTH)
    return y5.reshape(shape), c5.reshape(shape)


def pack_yuv10(y5, c5, fmt):
    """Inverse of unpack_yuv10 (the emulator's encoder)."""
    y5 = np.asarray(y5, dtype=np.uint16).ravel()
    c5 = np.asarray(c5, dtype=np.uint16).ravel()
    if y5.size != CAMERA_WIDTH * CAMERA_HEIGHT or c5.size != y5.size:
        raise ValueError('YUV10 needs 176×144 Y and C codes')
    msb = fmt.bit_order == 'msb'
    high, low = (y5, c5) if fmt.y_bits == 'high' else (c5, y5)
    if fmt.layout == 'planar':
        return _pack(high, 5, msb) + _pack(low, 5, msb)
    return _pack((high << 5) | low, 10, msb)


def five_to_eight(codes, mode):
    codes = np.asarray(codes, dtype=np.int32)
    return (codes << 3) | (codes >> 2) if mode == 'shift3_or_msb' else codes << 3


def eight_to_five(values, mode):
    """Nearest five-bit code for 8-bit values under five_to_eight's scaling."""
    values = np.asarray(values, dtype=np.float64)
    scale = 255.0 / 31.0 if mode == 'shift3_or_msb' else 8.0
    return np.clip(np.rint(values / scale), 0, 31).astype(np.uint16)


class Yuv10Decoder:
    """YUV10 frame → 144×176×3 rgb8, through a lookup table of every (Y, U, V) code triple."""

    def __init__(self, fmt=Yuv10Format()):
        self.format = fmt
        codes = np.arange(32)
        y, u, v = np.meshgrid(codes, codes, codes, indexing='ij')  # index y<<10 | u<<5 | v

        def scale(c, mode):
            return five_to_eight(c, mode).astype(np.float64)

        chroma = fmt.chroma_five_to_eight
        yuv = np.stack(
            [
                scale(y, fmt.five_to_eight),
                scale(u, chroma) - fmt.chroma_offset,
                scale(v, chroma) - fmt.chroma_offset,
            ]
        )
        rgb = np.tensordot(MATRICES[fmt.matrix], yuv.reshape(3, -1), axes=1).T
        self._lut = np.clip(np.rint(rgb), 0, 255).astype(np.uint8)

    def decode(self, data):
        y5, c5 = unpack_yuv10(data, self.format)
        first, second = c5[:, 0::2], c5[:, 1::2]  # even pixels, odd pixels
        u, v = (first, second) if self.format.chroma_first == 'U' else (second, first)
        pair_uv = (u << 5) | v  # one (U, V) per pixel pair
        index = (y5.reshape(CAMERA_HEIGHT, CAMERA_WIDTH // 2, 2) << 10) | pair_uv[..., None]
        return np.take(self._lut, index, axis=0).reshape(CAMERA_HEIGHT, CAMERA_WIDTH, 3)


def encode_yuv10(rgb, fmt=Yuv10Format()):
    """144×176×3 rgb8 → YUV10 bytes: the matrix inverted, chroma averaged per pixel pair."""
    rgb = np.asarray(rgb, dtype=np.float64)
    if rgb.shape != (CAMERA_HEIGHT, CAMERA_WIDTH, 3):
        raise ValueError(f'YUV10 encodes 144×176×3 images, got {rgb.shape}')
    yuv = rgb @ np.linalg.inv(MATRICES[fmt.matrix]).T
    y = yuv[..., 0]
    u = (yuv[:, 0::2, 1] + yuv[:, 1::2, 1]) / 2 + fmt.chroma_offset
    v = (yuv[:, 0::2, 2] + yuv[:, 1::2, 2]) / 2 + fmt.chroma_offset
    first, second = (u, v) if fmt.chroma_first == 'U' else (v, u)
    c5 = np.empty((CAMERA_HEIGHT, CAMERA_WIDTH), dtype=np.uint16)
    c5[:, 0::2] = eight_to_five(first, fmt.chroma_five_to_eight)
    c5[:, 1::2] = eight_to_five(second, fmt.chroma_five_to_eight)
    return pack_yuv10(eight_to_five(y, fmt.five_to_eight), c5, fmt)


# ---- colour detection (§3.7) ------------------------------------------------------------------
DEFAULT_COLOR_LABELS = (
    'pink ball',
    'pink ball 2',
    '',
    'flesh',
    'favorite (blue)',
    'unfavorite (yellow-green)',
    '',
    '',
)


def decode_color_image(data):
    """6336 bytes → 72×88 uint8 array, bit n set = channel n matched; row-major, top row first."""
    if len(data) != COLOR_SIZE:
        raise MalformedFrame(f'colour image of {len(data)} bytes, expected {COLOR_SIZE}')
    return np.frombuffer(data, dtype=np.uint8).reshape(COLOR_HEIGHT, COLOR_WIDTH)


# ---- audio (§3.8) -----------------------------------------------------------------------------
@dataclasses.dataclass
class AudioChunk:
    sequence: int
    word0: int
    word1: int
    pcm: np.ndarray  # 512×2 int16, columns left, right


_AUDIO_HEADER = struct.Struct('<iHH')
_AUDIO_HEADER_SIGNED = struct.Struct('<ihh')


def decode_audio(data, right_first=True, signed_words=False):
    """n × 2056 bytes (2 ≤ n ≤ 10) → [AudioChunk], PCM reordered to left, right."""
    check_size(Op.GET_AUDIO, len(data))
    header = _AUDIO_HEADER_SIGNED if signed_words else _AUDIO_HEADER
    chunks = []
    for offset in range(0, len(data), AUDIO_RECORD_SIZE):
        sequence, word0, word1 = header.unpack_from(data, offset)
        pcm = np.frombuffer(data, dtype='<i2', count=AUDIO_FRAMES * 2, offset=offset + 8).reshape(
            AUDIO_FRAMES, 2
        )
        chunks.append(AudioChunk(sequence, word0, word1, pcm[:, ::-1] if right_first else pcm))
    return chunks


def encode_audio_record(chunk, right_first=True):
    pcm = chunk.pcm[:, ::-1] if right_first else chunk.pcm
    return (
        _AUDIO_HEADER.pack(chunk.sequence, chunk.word0 & 0xFFFF, chunk.word1 & 0xFFFF)
        + np.ascontiguousarray(pcm, dtype='<i2').tobytes()
    )


class SequenceTracker:
    """Counts chunks lost between sequence numbers, also across reconnects.

    A reconnect loses audio twice: the chunks made while the link was down, and the ones the
    new session's FLUSHAUDIO discards. Where the dog's counter went on, the first chunk of the
    new session says how many (counted in lost and lost_across_reconnects); where it started
    again (the dog rebooted), the amount is unknown but not zero (unknown_gaps). A step
    backwards is a restart, never a loss.
    """

    def __init__(self):
        self.last = None
        self.lost = 0
        self.lost_across_reconnects = 0
        self.unknown_gaps = 0
        self.restarts = 0
        self._reconnected = False

    def new_session(self):
        """Call at every new connection: the next chunk closes the gap."""
        self._reconnected = self.last is not None

    def update(self, sequence):
        """Returns the number of chunks known missing just before this one."""
        missing = 0
        if self.last is not None:
            if sequence > self.last:
                missing = sequence - self.last - 1
                self.lost += missing
                if self._reconnected:
                    self.lost_across_reconnects += missing
            else:
                self.restarts += 1
                if self._reconnected:
                    self.unknown_gaps += 1
        self._reconnected = False
        self.last = sequence
        return missing


# ---- LifePlus voice and semantic data (§3.9) ----------------------------------------------------
def decode_voice(data):
    """80 bytes → [(dictionary id, confidence)] × 10, best first."""
    if len(data) != VOICE_SIZE:
        raise MalformedFrame(f'voice reply of {len(data)} bytes, expected {VOICE_SIZE}')
    values = struct.unpack(f'<{2 * VOICE_MATCHES}i', data)
    return list(zip(values[0::2], values[1::2], strict=False))


def encode_voice(matches):
    if len(matches) != VOICE_MATCHES:
        raise ValueError('a voice record has exactly 10 matches')
    return b''.join(struct.pack('<ii', ident, confidence) for ident, confidence in matches)


def decode_semantic(data):
    """n × 44 bytes → [(sequence, (raw × 10))]."""
    check_size(Op.GET_SEMANTIC, len(data))
    record = struct.Struct(f'<i{SEMANTIC_VALUES}i')
    return [(values[0], values[1:]) for values in record.iter_unpack(data)]


def encode_semantic(sequence, raw):
    if len(raw) != SEMANTIC_VALUES:
        raise ValueError('a semantic record has exactly 10 raw values')
    return struct.pack(f'<i{SEMANTIC_VALUES}i', sequence, *raw)


# ---- RPUT (§3.11: wire format unknown → a configurable layout, experimental) --------------------
RPUT_FIELDS = {
    'name0': 'the file name, ASCII, then a NUL byte',
    'name8': 'the name length in one byte, then the name (name16, name32: 2 or 4 bytes, LE)',
    'size32': 'the file size, 32-bit little-endian (size16: 16-bit)',
    'data': 'the file contents',
}
_NAME_WIDTHS = {'name8': 1, 'name16': 2, 'name32': 4}  # length-prefixed names
_SIZE_WIDTHS = {'size16': 2, 'size32': 4}
_UINT = {1: '<B', 2: '<H', 4: '<I'}
DEFAULT_RPUT_LAYOUT = ('name0', 'size32', 'data')


class RputLayout:
    """The RPUT request after its opcode, built from parts in any order: one name field (name0,
    or length-prefixed name8/name16/name32), one size field (size16/size32, before data), data.
    E.g. name0,size32,data (default) or name32,size32,data."""

    def __init__(self, fields=DEFAULT_RPUT_LAYOUT, max_bytes=1_000_000):
        fields = tuple(f.strip() for f in fields)
        names = [f for f in fields if f == 'name0' or f in _NAME_WIDTHS]
        sizes = [f for f in fields if f in _SIZE_WIDTHS]
        if len(names) != 1 or len(sizes) != 1 or fields.count('data') != 1 or len(fields) != 3:
            raise ValueError(
                f'RPUT layout {",".join(fields)}: use one name field (name0, name8, '
                f'name16, name32), one size field (size16, size32) and data, each once'
            )
        if fields.index('data') < fields.index(sizes[0]):
            raise ValueError('RPUT layout: the size field must come before data')
        self.fields = fields
        self.max_bytes = min(max_bytes, 0xFFFF) if sizes[0] == 'size16' else max_bytes

    def encode(self, name, contents):
        raw_name = name.encode('ascii')
        if not raw_name or b'\0' in raw_name or len(raw_name) > 255:
            raise ValueError(f'RPUT file name {name!r}: 1..255 ASCII characters, no NUL')
        if len(contents) > self.max_bytes:
            raise ValueError(
                f'file of {len(contents)} bytes is over the RPUT limit of {self.max_bytes}'
            )
        return b''.join(self._encode_field(field, raw_name, contents) for field in self.fields)

    @staticmethod
    def _encode_field(field, raw_name, contents):
        if field == 'name0':
            return raw_name + b'\0'
        if field in _NAME_WIDTHS:
            return struct.pack(_UINT[_NAME_WIDTHS[field]], len(raw_name)) + raw_name
        if field in _SIZE_WIDTHS:
            return struct.pack(_UINT[_SIZE_WIDTHS[field]], len(contents))
        return bytes(contents)

    def decode(self, read_exact, read_until_nul):
        """Read one request (after the opcode) with the given readers → (name, contents)."""
        name, size, contents = None, None, None
        for field in self.fields:
            if field == 'name0':
                name = read_until_nul()[:-1]
            elif field in _NAME_WIDTHS:
                width = _NAME_WIDTHS[field]
                length = struct.unpack(_UINT[width], read_exact(width))[0]
                if not 0 < length <= 255:
                    raise MalformedFrame(f'RPUT name of {length} bytes')
                name = read_exact(length)
            elif field in _SIZE_WIDTHS:
                width = _SIZE_WIDTHS[field]
                size = struct.unpack(_UINT[width], read_exact(width))[0]
                if size > self.max_bytes:
                    raise MalformedFrame(
                        f'RPUT of {size} bytes is over the limit {self.max_bytes}'
                    )
            else:
                contents = read_exact(size)
        return name.decode('ascii', 'replace'), contents


# ---- RCODE text pipe (§4.2) ---------------------------------------------------------------------
IAC = 0xFF
_TELNET_OPTION_VERBS = range(251, 255)  # WILL, WONT, DO, DONT take one option byte
MAX_LINE = 4096


class ConsoleText:
    """Bytes from the RCODE port → complete text lines; telnet negotiation and CR removed."""

    def __init__(self):
        self._pending = bytearray()
        self._line = bytearray()

    def feed(self, data):
        self._pending += data
        lines = []
        i, pending = 0, self._pending
        while i < len(pending):
            byte = pending[i]
            if byte == IAC:
                if i + 1 >= len(pending):
                    break  # the rest arrives later
                width = 3 if pending[i + 1] in _TELNET_OPTION_VERBS else 2
                if pending[i + 1] == IAC:  # an escaped 255 data byte
                    self._line.append(IAC)
                elif i + width > len(pending):
                    break
                i += width
                continue
            if byte == 0x0A:
                lines.append(self._line.decode('latin-1'))
                self._line.clear()
            elif byte != 0x0D:
                if len(self._line) >= MAX_LINE:  # an endless line comes in pieces
                    lines.append(self._line.decode('latin-1'))
                    self._line.clear()
                self._line.append(byte)
            i += 1
        del pending[:i]
        return lines


_RCODE_ERROR = re.compile(r'^\s*(ERROR\b.*)$', re.I | re.M)


def rcode_error(reply):
    """The ERROR line RCodePlus prints for a command it refuses ("ERROR: unknown command
    FOO"), or '' when the reply has none."""
    found = _RCODE_ERROR.search(reply)
    return found.group(1).strip() if found else ''
