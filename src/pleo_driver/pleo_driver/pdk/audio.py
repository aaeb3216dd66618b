"""The audioop operations wav2usf uses, with Python 2's integer semantics
(docs/protocols/pleo.md §2.1, §2.4).

Python 3's audioop floors where Python 2 truncated and resamples at a different
scale (and is gone from 3.13), so these are written out here. Samples are lists of
ints (one value per sample, interleaved channels); ``width`` is the sample size in
bytes (1 or 2). Plain Python, sample by sample as audioop worked: importing NumPy
would cost urf_builder more start-up time than a whole template-sized build takes.
"""

import array
import math
import sys

from legacy_robot_common.ima_adpcm import encode_sample

from .py2 import c_div

TYPECODES = {1: 'b', 2: 'h'}  # signed char, signed short (both exact in array)


def max_value(width):
    return (1 << (8 * width - 1)) - 1


def from_bytes(data, width):
    """Raw little-endian sample bytes → signed values, the way audioop reads them (8-bit as
    *signed* char); a trailing partial sample is ignored."""
    samples = array.array(TYPECODES[width], data[: len(data) // width * width])
    if width > 1 and sys.byteorder == 'big':
        samples.byteswap()
    return samples.tolist()


def to_bytes(samples, width):
    """Values → little-endian sample bytes; wraps like a C cast to the sample type."""
    half, size = 1 << (8 * width - 1), 1 << (8 * width)
    out = array.array(TYPECODES[width], [(v + half) % size - half for v in samples])
    if width > 1 and sys.byteorder == 'big':
        out.byteswap()
    return out.tobytes()


def _scaled(value, factor, limit):
    """value · factor, clipped to ±limit (symmetric) and truncated toward zero (a C cast)."""
    return int(max(-limit, min(limit, value * factor)))


def mul(samples, width, factor):
    """Scale, clip to ±max (symmetric) and truncate toward zero.

    Every sample value of the width is looked up in a table made once per call, so a long
    sound costs one list index per sample."""
    limit, low = max_value(width), -(1 << (8 * width - 1))
    if len(samples) < 4096:
        return [_scaled(v, factor, limit) for v in samples]
    table = [_scaled(v, factor, limit) for v in range(low, limit + 1)]
    return [table[v - low] for v in samples]


def tomono(samples, width, left_factor=1.0, right_factor=1.0):
    """Interleaved stereo → mono: a weighted sum, clipped to ±max and truncated."""
    limit = max_value(width)
    frames = len(samples) // 2
    return [
        int(max(-limit, min(limit, left * left_factor + right * right_factor)))
        for left, right in zip(
            samples[0 : 2 * frames : 2], samples[1 : 2 * frames : 2], strict=False
        )
    ]


def lin2lin(samples, width, new_width):
    """Change the sample width by arithmetic shifts (8 bits per byte of width)."""
    shift = 8 * (new_width - width)
    return [v << shift for v in samples] if shift >= 0 else [v >> -shift for v in samples]


def bias(samples, width, offset):
    """Add an offset; the result wraps around like the C cast back to the sample type."""
    size = 1 << (8 * width)
    half = size >> 1
    return [(v + offset + half) % size - half for v in samples]


def ratecv(samples, width, in_rate, out_rate, weight_a=1, weight_b=0):
    """Python 2's mono ratecv: 16-bit scale, C division, fresh state.

    Each input sample is first smoothed with the previous smoothed one
    (weight_a·new + weight_b·previous) / (weight_a + weight_b); output samples
    interpolate linearly between the last two smoothed inputs.
    """
    divisor = math.gcd(in_rate, out_rate)
    in_rate, out_rate = in_rate // divisor, out_rate // divisor
    divisor = math.gcd(weight_a, weight_b)
    weight_a, weight_b = weight_a // divisor, weight_b // divisor
    scale = 8 if width == 1 else 0  # 8-bit samples work as the top byte of 16 bits
    inputs = [int(value) << scale for value in samples]
    output = []
    previous = current = 0
    d = -out_rate
    position = 0
    while True:
        while d < 0:
            if position == len(inputs):
                return [v >> scale for v in output] if scale else output
            previous = current
            current = c_div(weight_a * inputs[position] + weight_b * previous, weight_a + weight_b)
            position += 1
            d += out_rate
        while d >= 0:
            output.append(c_div(previous * d + current * (out_rate - d), out_rate))
            d -= in_rate


def lin2adpcm(samples):
    """16-bit values → IMA ADPCM, fresh state, first sample in the high nibble.

    An odd last sample is dropped, as audioop does (it only writes whole bytes).
    """
    out = bytearray()
    predictor = index = 0
    high = None
    for value in samples:
        code, predictor, index = encode_sample(value, predictor, index)
        if high is None:
            high = code << 4
        else:
            out.append(high | code)
            high = None
    return bytes(out)
