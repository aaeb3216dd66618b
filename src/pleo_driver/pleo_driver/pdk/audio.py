"""The audioop operations wav2usf uses, with Python 2's integer semantics (spec §2.1, §2.4).

Python 3's audioop floors where Python 2 truncated and resamples at a different
scale (and is gone from 3.13), so these are written out here. Samples are NumPy
int arrays (one value per sample, interleaved channels); ``width`` is the sample
size in bytes (1 or 2).
"""
import numpy as np

from legacy_robot_common.ima_adpcm import encode_sample

from .py2 import c_div


def max_value(width):
    return (1 << (8 * width - 1)) - 1


def from_bytes(data, width):
    """Raw sample bytes → signed values, the way audioop reads them (8-bit as *signed* char)."""
    kind = {1: '<i1', 2: '<i2'}[width]
    return np.frombuffer(data[:len(data) // width * width], dtype=kind).astype(np.int64)


def to_bytes(samples, width):
    """Values → sample bytes; wraps like a C cast to the sample type."""
    kind = {1: '<i1', 2: '<i2'}[width]
    wrapped = (samples.astype(np.int64) + (1 << (8 * width - 1))) % (1 << 8 * width)
    return (wrapped - (1 << (8 * width - 1))).astype(kind).tobytes()


def mul(samples, width, factor):
    """Scale, clip to ±max (symmetric) and truncate toward zero."""
    limit = max_value(width)
    scaled = np.clip(samples.astype(np.float64) * factor, -limit, limit)
    return np.trunc(scaled).astype(np.int64)


def tomono(samples, width, left_factor=1.0, right_factor=1.0):
    """Interleaved stereo → mono: a weighted sum, clipped to ±max and truncated."""
    limit = max_value(width)
    frames = samples[:len(samples) // 2 * 2].reshape(-1, 2).astype(np.float64)
    mixed = np.clip(frames[:, 0] * left_factor + frames[:, 1] * right_factor, -limit, limit)
    return np.trunc(mixed).astype(np.int64)


def lin2lin(samples, width, new_width):
    """Change the sample width by arithmetic shifts (8 bits per byte of width)."""
    shift = 8 * (new_width - width)
    return samples << shift if shift >= 0 else samples >> -shift


def bias(samples, width, offset):
    """Add an offset; the result wraps around like the C cast back to the sample type."""
    size = 1 << (8 * width)
    half = size >> 1
    return (samples + offset + half) % size - half


def ratecv(samples, width, in_rate, out_rate, weight_a=1, weight_b=0):
    """Python 2's mono ratecv: 16-bit scale, C division, fresh state.

    Each input sample is first smoothed with the previous smoothed one
    (weight_a·new + weight_b·previous) / (weight_a + weight_b); output samples
    interpolate linearly between the last two smoothed inputs.
    """
    divisor = np.gcd(in_rate, out_rate)
    in_rate, out_rate = in_rate // divisor, out_rate // divisor
    divisor = np.gcd(weight_a, weight_b)
    weight_a, weight_b = weight_a // divisor, weight_b // divisor
    scale = 8 if width == 1 else 0          # 8-bit samples work as the top byte of 16 bits
    inputs = [int(value) << scale for value in samples]
    output = []
    previous = current = 0
    d = -out_rate
    position = 0
    while True:
        while d < 0:
            if position == len(inputs):
                result = np.array(output, dtype=np.int64)
                return result >> scale if scale else result
            previous = current
            current = c_div(weight_a * inputs[position] + weight_b * previous,
                            weight_a + weight_b)
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
    for value in samples.tolist():
        code, predictor, index = encode_sample(value, predictor, index)
        if high is None:
            high = code << 4
        else:
            out.append(high | code)
            high = None
    return bytes(out)
