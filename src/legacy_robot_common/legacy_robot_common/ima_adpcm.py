"""The IMA (Intel/DVI) ADPCM sample codec: one 4-bit code per 16-bit sample.

Used by the Nabaztag's recordings (WAV blocks, low nibble first) and by the
Pleo's sounds (a headerless stream, high nibble first); the container and the
nibble order belong to each robot's codec, the per-sample arithmetic is here.
"""

import warnings

with warnings.catch_warnings():  # deprecated in the standard library; audioop-lts from 3.13
    warnings.simplefilter('ignore', DeprecationWarning)
    try:
        import audioop
    except ImportError as exc:
        raise ImportError(f'{exc}: pip install audioop-lts (Python 3.13 on)') from None

STEPS = (
    7,
    8,
    9,
    10,
    11,
    12,
    13,
    14,
    16,
    17,
    19,
    21,
    23,
    25,
    28,
    31,
    34,
    37,
    41,
    45,
    50,
    55,
    60,
    66,
    73,
    80,
    88,
    97,
    107,
    118,
    130,
    143,
    157,
    173,
    190,
    209,
    230,
    253,
    279,
    307,
    337,
    371,
    408,
    449,
    494,
    544,
    598,
    658,
    724,
    796,
    876,
    963,
    1060,
    1166,
    1282,
    1411,
    1552,
    1707,
    1878,
    2066,
    2272,
    2499,
    2749,
    3024,
    3327,
    3660,
    4026,
    4428,
    4871,
    5358,
    5894,
    6484,
    7132,
    7845,
    8630,
    9493,
    10442,
    11487,
    12635,
    13899,
    15289,
    16818,
    18500,
    20350,
    22385,
    24623,
    27086,
    29794,
    32767,
)
INDEX_CHANGE = (-1, -1, -1, -1, 2, 4, 6, 8)
MAX_INDEX = len(STEPS) - 1


def decode_nibble(code, predictor, index):
    """One 4-bit code → (new predictor, new step index)."""
    predictor = max(-32768, min(32767, predictor + _difference(code, index)))
    index = max(0, min(MAX_INDEX, index + INDEX_CHANGE[code & 7]))
    return predictor, index


def _difference(code, index):
    """The signed change a code makes to the predictor at a step index (before clamping)."""
    step = STEPS[index]
    difference = step >> 3
    if code & 4:
        difference += step
    if code & 2:
        difference += step >> 1
    if code & 1:
        difference += step >> 2
    return -difference if code & 8 else difference


def encode_sample(sample, predictor, index):
    """One 16-bit sample → (4-bit code, new predictor, new step index)."""
    step = STEPS[index]
    delta = sample - predictor
    code = 8 if delta < 0 else 0
    delta = abs(delta)
    for bit in (4, 2, 1):
        if delta >= step:
            code |= bit
            delta -= step
        step >>= 1
    predictor, index = decode_nibble(code, predictor, index)
    return code, predictor, index


# WAV's IMA ADPCM packs the first code of a byte in its low nibble; audioop's (DVI) in its high
_NIBBLES_SWAPPED = bytes(((b & 0x0F) << 4) | (b >> 4) for b in range(256))


def decode_packed(data, predictor, index):
    """Bytes of two 4-bit codes each (low nibble first, as in WAV files) → their int16 samples
    (NumPy), the same as decode_nibble code by code, in C: audioop's IMA (DVI) decoder, the
    standard library's up to Python 3.12 and the audioop-lts package from 3.13 on, some 30
    times faster than a Python loop (a rabbit's upload is decoded on the bridge's HTTP loop)."""
    import numpy as np  # here, not at the top: urf_builder's start-up needs no NumPy (~60 ms)

    samples, _ = audioop.adpcm2lin(bytes(data).translate(_NIBBLES_SWAPPED), 2, (predictor, index))
    return np.frombuffer(samples, dtype='<i2').astype(np.int16)
