"""The rabbit's voice recordings (docs/protocols/nabaztag.md §6.1): RIFF/WAVE, IMA ADPCM,
mono, 8 kHz.

Blocks of 256 bytes: a 4-byte header (first sample, little-endian int16; step
index; a zero byte) and 252 bytes of 4-bit codes, low nibble first, which with
the header sample make 505 samples. The header is 60 bytes: fmt (20 bytes,
cbSize 2, 505 samples per block), fact (sample count) and data.
"""

import struct

import numpy as np

from legacy_robot_common.errors import MalformedFrame
from legacy_robot_common.ima_adpcm import MAX_INDEX, decode_packed, encode_sample

SAMPLE_RATE = 8000
BLOCK_ALIGN = 256
SAMPLES_PER_BLOCK = 505
BYTE_RATE = 4055
IMA_ADPCM = 0x0011
PCM = 0x0001
MAX_SECONDS = 8.0  # the rabbit stops recording after 8000 ms
HEADER_SIZE = 60


def upload_bytes(seconds):
    """Size of the rabbit's WAV for a recording of this length: the header and whole blocks."""
    blocks = -(-int(seconds * SAMPLE_RATE) // SAMPLES_PER_BLOCK)
    return HEADER_SIZE + blocks * BLOCK_ALIGN


# record.jsp's byte limit: 8 s and the second of slack decode_wav's length check allows
# (72,000 samples: 143 blocks, 36,668 bytes)
MAX_UPLOAD_BYTES = upload_bytes(MAX_SECONDS + 1)


def decode_blocks(data):
    """IMA ADPCM mono blocks (256 bytes, the last may be short) → int16 samples."""
    pieces = []
    for start in range(0, len(data), BLOCK_ALIGN):
        block = data[start : start + BLOCK_ALIGN]
        if len(block) < 4:
            raise MalformedFrame(f'ADPCM block of {len(block)} bytes has no header')
        predictor, index = struct.unpack_from('<hB', block)
        if index > MAX_INDEX:
            raise MalformedFrame(f'ADPCM step index {index} is not 0..{MAX_INDEX}')
        pieces += [
            np.array([predictor], dtype=np.int16),
            decode_packed(block[4:], predictor, index),
        ]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int16)


def encode_blocks(pcm):
    """int16 samples → IMA ADPCM blocks of 505 samples (the last block padded with silence)."""
    pcm = [int(s) for s in pcm]
    out, index = bytearray(), 0
    for start in range(0, len(pcm), SAMPLES_PER_BLOCK):
        chunk = pcm[start : start + SAMPLES_PER_BLOCK]
        chunk += [chunk[-1]] * (SAMPLES_PER_BLOCK - len(chunk))
        predictor = chunk[0]
        out += struct.pack('<hBB', predictor, index, 0)
        codes = []
        for sample in chunk[1:]:
            code, predictor, index = encode_sample(sample, predictor, index)
            codes.append(code)
        out += bytes(
            low | (high << 4) for low, high in zip(codes[0::2], codes[1::2], strict=False)
        )
    return bytes(out)


def wav_header(data_size):
    """The 60-byte header the rabbit writes before data_size bytes of ADPCM blocks."""
    samples = (data_size >> 8) * SAMPLES_PER_BLOCK
    return (
        b'RIFF'
        + struct.pack('<I', data_size + 52)
        + b'WAVE'
        + b'fmt '
        + struct.pack(
            '<IHHIIHHHH',
            20,
            IMA_ADPCM,
            1,
            SAMPLE_RATE,
            BYTE_RATE,
            BLOCK_ALIGN,
            4,
            2,
            SAMPLES_PER_BLOCK,
        )
        + b'fact'
        + struct.pack('<II', 4, samples)
        + b'data'
        + struct.pack('<I', data_size)
    )


def encode_wav(pcm):
    blocks = encode_blocks(pcm)
    return wav_header(len(blocks)) + blocks


def decode_wav(data):
    """A recording → (int16 samples, sample rate). IMA ADPCM mono, or 16-bit PCM mono."""
    if len(data) < 12 or data[:4] != b'RIFF' or data[8:12] != b'WAVE':
        raise MalformedFrame('a recording is a RIFF/WAVE file')
    chunks = _chunks(data)
    if b'fmt ' not in chunks or b'data' not in chunks:
        raise MalformedFrame('WAV file without its fmt or data chunk')
    fmt = chunks[b'fmt ']
    if len(fmt) < 16:
        raise MalformedFrame('WAV fmt chunk shorter than 16 bytes')
    tag, channels, rate, _, align, bits = struct.unpack_from('<HHIIHH', fmt)
    if channels != 1:
        raise MalformedFrame(f'a {channels}-channel recording; the rabbit records mono')
    if tag == IMA_ADPCM and align == BLOCK_ALIGN and bits == 4:
        return decode_blocks(chunks[b'data']), rate
    if tag == PCM and bits == 16:
        body = chunks[b'data']
        return np.frombuffer(body[: len(body) // 2 * 2], dtype='<i2').astype(np.int16), rate
    raise MalformedFrame(
        f'WAV format 0x{tag:04x} with {bits}-bit samples, block {align}: '
        'expected IMA ADPCM (0x0011, 4 bit, 256) or 16-bit PCM'
    )


def _chunks(data):
    chunks, pos = {}, 12
    while pos + 8 <= len(data):
        name, size = data[pos : pos + 4], struct.unpack_from('<I', data, pos + 4)[0]
        chunks.setdefault(name, data[pos + 8 : pos + 8 + size])
        pos += 8 + size + (size & 1)
    return chunks


def tone(seconds, frequency=440.0, rate=SAMPLE_RATE, amplitude=8000):
    """A test sound: a sine tone that glides up an octave (int16)."""
    t = np.arange(int(seconds * rate)) / rate
    glide = frequency * (1 + t / max(seconds, 1e-9))
    return (amplitude * np.sin(2 * np.pi * np.cumsum(glide) / rate)).astype(np.int16)


def resample(pcm, from_rate, to_rate):
    """int16 samples at from_rate → float32 samples at to_rate (-1..1), through the spectrum:
    going down, what lies above the new Nyquist frequency is cut as the rabbit's microphone
    path would (no aliasing); going up, nothing is invented above the old one."""
    x = np.asarray(pcm, dtype=np.float32) / 32768.0
    if from_rate == to_rate or not len(x):
        return x
    count = max(1, round(len(x) * to_rate / from_rate))
    spectrum = np.fft.rfft(x)
    bins = count // 2 + 1
    if bins <= len(spectrum):
        spectrum = spectrum[:bins]
    else:
        spectrum = np.concatenate([spectrum, np.zeros(bins - len(spectrum), spectrum.dtype)])
    return (np.fft.irfft(spectrum, count) * (count / len(x))).astype(np.float32)


def as_rabbit_records(pcm, rate):
    """Sound at any rate → the rabbit's upload: 8 kHz, IMA ADPCM, at most MAX_SECONDS."""
    low = resample(pcm, rate, SAMPLE_RATE)[: int(MAX_SECONDS * SAMPLE_RATE)]
    return encode_wav(np.clip(low * 32767.0, -32768, 32767).astype(np.int16))
