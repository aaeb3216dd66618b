"""MPEG audio Layer III files as the rabbit plays them: frame headers, length, duration (no I/O).

The rabbit's MU command plays an MP3 it downloaded whole (at most 300,000 bytes,
docs/protocols/nabaztag.md §4.6, §6.2).
scan() walks the frames of such a file the way a decoder does, frame header to frame header,
and says how long it plays; a file that is not MP3, or whose last frame is cut short (what
the rabbit's truncation at the cap leaves), is refused with MalformedFrame.
"""

import dataclasses

from legacy_robot_common.errors import MalformedFrame

PRELOAD_CAP = 300_000  # bytes the rabbit downloads of an MU or CH resource (nabaztag.md §4.6)

# bit rates (kbit/s) of Layer III by header index 1..14: MPEG-1, and MPEG-2 / 2.5
_BITRATES = {
    1: (32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    2: (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
# sample rates by version bits (00 = MPEG 2.5, 10 = MPEG 2, 11 = MPEG 1) and index 0..2
_SAMPLE_RATES = {0: (11025, 12000, 8000), 2: (22050, 24000, 16000), 3: (44100, 48000, 32000)}
SAMPLE_RATES = tuple(sorted(rate for rates in _SAMPLE_RATES.values() for rate in rates))


def bit_rates(sample_rate):
    """The Layer III bit rates (kbit/s) a stream at sample_rate can have."""
    if sample_rate not in SAMPLE_RATES:
        raise ValueError(f'{sample_rate} Hz is not an MPEG audio sample rate ({SAMPLE_RATES})')
    return _BITRATES[1] if sample_rate >= 32000 else _BITRATES[2]


@dataclasses.dataclass(frozen=True)
class Frame:
    mpeg1: bool
    bit_rate: int  # kbit/s
    sample_rate: int  # Hz
    length: int  # bytes, header included
    samples: int  # per channel
    channels: int


def frame_header(data, offset=0):
    """The Layer III frame whose 4-byte header is at data[offset:], or MalformedFrame."""
    if len(data) < offset + 4:
        raise MalformedFrame('MP3: a frame header needs 4 bytes')
    b1, b2, b3 = data[offset + 1], data[offset + 2], data[offset + 3]
    if data[offset] != 0xFF or b1 & 0xE0 != 0xE0:
        raise MalformedFrame(f'MP3: no frame sync at byte {offset}')
    version, layer = (b1 >> 3) & 3, (b1 >> 1) & 3
    if version == 1:
        raise MalformedFrame(f'MP3: reserved MPEG version at byte {offset}')
    if layer != 1:  # 01 = Layer III
        raise MalformedFrame(f'MP3: not Layer III at byte {offset}')
    rate_index, sample_index = b2 >> 4, (b2 >> 2) & 3
    if rate_index in (0, 15) or sample_index == 3:
        raise MalformedFrame(f'MP3: free-format or invalid bit/sample rate at byte {offset}')
    mpeg1 = version == 3
    bit_rate = _BITRATES[1 if mpeg1 else 2][rate_index - 1]
    sample_rate = _SAMPLE_RATES[version][sample_index]
    samples = 1152 if mpeg1 else 576
    padding = (b2 >> 1) & 1
    length = samples // 8 * bit_rate * 1000 // sample_rate + padding
    channels = 1 if b3 >> 6 == 3 else 2
    return Frame(mpeg1, bit_rate, sample_rate, length, samples, channels)


@dataclasses.dataclass(frozen=True)
class Mp3Info:
    frames: int  # audio frames (an encoder's Xing/Info tag frame not counted)
    seconds: float
    sample_rate: int
    bit_rate: int  # kbit/s of the first audio frame
    channels: int
    size: int  # bytes


def scan(data):
    """Mp3Info of a whole MP3 file (an ID3v2 tag in front and an ID3v1 tag at the end are
    skipped); MalformedFrame when it is not one, or when its last frame is cut short."""
    data = memoryview(bytes(data))
    offset = _id3v2_length(data)
    end = len(data) - (128 if len(data) >= 128 and bytes(data[-128:-125]) == b'TAG' else 0)
    frames = samples = 0
    first = None
    while offset < end:
        frame = frame_header(data, offset)
        if offset + frame.length > end:
            raise MalformedFrame(
                f'MP3: the frame at byte {offset} needs {frame.length} bytes, '
                f'{end - offset} are left (a truncated file)'
            )
        if first is None and _is_tag_frame(data, offset, frame):
            offset += frame.length
            first = frame
            continue
        if frames == 0:
            first = frame
        if frame.sample_rate != first.sample_rate:
            raise MalformedFrame(f'MP3: the sample rate changes at byte {offset}')
        frames += 1
        samples += frame.samples
        offset += frame.length
    if frames == 0:
        raise MalformedFrame('MP3: no audio frame')
    return Mp3Info(
        frames,
        samples / first.sample_rate,
        first.sample_rate,
        first.bit_rate,
        first.channels,
        len(data),
    )


def is_mp3(data):
    try:
        scan(data)
    except MalformedFrame:
        return False
    return True


def _id3v2_length(data):
    if len(data) >= 10 and bytes(data[:3]) == b'ID3':
        size = 0
        for byte in data[6:10]:
            size = size << 7 | (byte & 0x7F)
        return 10 + size + (10 if data[5] & 0x10 else 0)
    return 0


def _is_tag_frame(data, offset, frame):
    """An encoder's first frame holding a Xing / Info / VBRI header instead of audio."""
    side_info = (
        (17 if frame.channels == 1 else 32) if frame.mpeg1 else (9 if frame.channels == 1 else 17)
    )
    at = offset + 4 + side_info
    return (
        bytes(data[at : at + 4]) in (b'Xing', b'Info')
        or bytes(data[offset + 36 : offset + 40]) == b'VBRI'
    )
