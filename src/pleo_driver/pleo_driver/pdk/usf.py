"""USF, the Pleo's sound file, and wav2usf's conversion from WAV (docs/protocols/pleo.md §2.4).

48-byte header (UGSF, version 1, name, SFINFO, 8 bits, mono, rate, loop count 1,
sample count 0xFFFFFFFF = "to the end of the file"), then unsigned 8-bit PCM or
IMA ADPCM (16-bit samples pre-divided by 256, high nibble first).
"""

import dataclasses
import io
import os
import struct
import wave

from legacy_robot_common.ima_adpcm import decode_nibble

from . import audio, urf
from .errors import BuildError, MalformedResource

HEADER = struct.Struct('<4sB32sBBBHHI')
MAGIC = b'UGSF'
VERSION = 1
PCM, ADPCM = 0, 1
NO_PITCH_SHIFT = 0x10
DEFAULT_RATE = 11025
ATTENUATION = 0.98  # wav2usf takes 2 % off every sound
RESAMPLE_WEIGHTS = (4, 4)
ALL_SAMPLES = 0xFFFFFFFF
# No sound can be longer than a whole URF holds (ADPCM: two samples a byte)
MAX_SAMPLES = 2 * urf.SIZE_LIMIT


@dataclasses.dataclass(frozen=True)
class SoundOptions:
    adpcm: bool = False
    pitch: bool = True  # False sets the "don't pitch-shift" flag
    frequency: int = DEFAULT_RATE


@dataclasses.dataclass(frozen=True)
class Usf:
    name: str
    compression: int
    pitch: bool
    bits: int
    channels: int
    rate: int
    loop_count: int
    sample_count: int
    body: bytes

    @property
    def seconds(self):
        """Playing time: one sample per byte of PCM, two per byte of ADPCM."""
        samples = len(self.body) * (2 if self.compression == ADPCM else 1)
        return samples / max(self.rate, 1)


def sound_name(path):
    """wav2usf's name: the file's base name up to its first '.'."""
    return os.path.basename(path).split('.')[0]


def read_wav(data):
    """WAV bytes → (samples as audioop sees them, width, channels, rate)."""
    try:
        with wave.open(io.BytesIO(data)) as source:
            width, channels = source.getsampwidth(), source.getnchannels()
            rate, frames = source.getframerate(), source.readframes(source.getnframes())
    except (wave.Error, EOFError, struct.error, RuntimeError) as exc:
        # RuntimeError: the wave module's chunk reader on a chunk that claims more than is there
        raise BuildError(f'not a PCM WAV file: {exc or "a chunk runs past the end"}') from exc
    if width not in (1, 2):
        raise BuildError(f'{8 * width}-bit samples: wav2usf converts 8- and 16-bit WAV files')
    if channels not in (1, 2):
        raise BuildError(f'{channels} channels: wav2usf converts mono and stereo WAV files')
    if rate <= 0:  # ratecv would never finish (the PDK hangs and grows without bound)
        raise BuildError(f'the WAV header says {rate} samples/s: not a playable sound')
    if len(frames) % (width * channels):
        frames = frames[: len(frames) - len(frames) % (width * channels)]  # a cut-off last frame
    return audio.from_bytes(frames, width), width, channels, rate


def convert(samples, width, channels, rate, options):
    """The sample pipeline of wav2usf → the USF body."""
    if channels == 2:
        samples = audio.tomono(samples, width)
    samples = audio.mul(samples, width, ATTENUATION)  # 8-bit input is (wrongly) taken as signed
    if rate != options.frequency:
        _check_length(len(samples), rate, options.frequency)
        samples = audio.ratecv(samples, width, rate, options.frequency, *RESAMPLE_WEIGHTS)
    if options.adpcm:
        if width == 1:
            samples = audio.lin2lin(audio.bias(samples, 1, -128), 1, 2)
        return audio.lin2adpcm(audio.mul(samples, 2, 1 / 256))
    if width != 1:
        samples = audio.bias(audio.lin2lin(samples, width, 1), 1, -128)
    return audio.to_bytes(samples, 1)


def _check_length(count, rate, frequency):
    """A header with a tiny rate asks for a huge resampled sound: refuse it before building it."""
    samples = count * frequency // rate
    if samples > MAX_SAMPLES:
        raise BuildError(
            f'{count} samples at {rate} Hz make {samples} at {frequency} Hz: more '
            f'than the {MAX_SAMPLES} a Pleo sound can hold (is the WAV header right?)'
        )


def header(name, options):
    flags = (ADPCM if options.adpcm else PCM) | (0 if options.pitch else NO_PITCH_SHIFT)
    return HEADER.pack(
        MAGIC, VERSION, name.encode('latin-1')[:32], flags, 8, 1, options.frequency, 1, ALL_SAMPLES
    )


def wav_to_usf(data, name, options=SoundOptions()):
    if not 1 <= options.frequency <= 0xFFFF:
        raise BuildError(f'sound frequency {options.frequency} Hz is not 1..65535')
    return header(name, options) + convert(*read_wav(data), options)


def parse(data):
    if len(data) < HEADER.size or data[:4] != MAGIC:
        raise MalformedResource('not a USF file (no UGSF header)')
    _, version, name, flags, bits, channels, rate, loops, count = HEADER.unpack_from(data)
    if version != VERSION:
        raise MalformedResource(f'USF version {version}; only version 1 (with a name) is known')
    return Usf(
        name.rstrip(b'\0').decode('latin-1'),
        flags & 0x0F,
        not flags & NO_PITCH_SHIFT,
        bits,
        channels,
        rate,
        loops,
        count,
        bytes(data[HEADER.size :]),
    )


def decode_adpcm(body):
    """ADPCM body → 16-bit samples at the level the Pleo plays them (×256)."""
    out, predictor, index = [], 0, 0
    for byte in body:
        for code in (byte >> 4, byte & 0x0F):
            predictor, index = decode_nibble(code, predictor, index)
            out.append(max(-32768, min(32767, predictor * 256)))
    return out


def to_wav(usf):
    """A parsed USF → WAV bytes (8-bit PCM as it is; ADPCM decoded to 16-bit)."""
    if usf.compression == ADPCM:
        pcm, width = audio.to_bytes(decode_adpcm(usf.body), 2), 2
    elif usf.compression == PCM:
        pcm, width = usf.body, 1
    else:
        raise MalformedResource(f'USF compression type {usf.compression} is not 0 or 1')
    buffer = io.BytesIO()
    with wave.open(buffer, 'wb') as target:
        target.setnchannels(1)
        target.setsampwidth(width)
        target.setframerate(usf.rate or DEFAULT_RATE)
        target.writeframes(pcm)
    return buffer.getvalue()


def options_text(options):
    """The conversion settings as the PDK's log line writes them."""
    return f'adpcm:{int(options.adpcm)} pitch:{int(options.pitch)} freq:{options.frequency}'
