"""decode_packed, the C decoder, gives exactly what decode_nibble gives code by code."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from legacy_robot_common.ima_adpcm import MAX_INDEX, decode_nibble, decode_packed


def slow(data, predictor, index):
    out = []
    for byte in data:
        for code in (byte & 0x0F, byte >> 4):  # low nibble first, as in WAV files
            predictor, index = decode_nibble(code, predictor, index)
            out.append(predictor)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=300),
    st.integers(-32768, 32767),
    st.integers(0, MAX_INDEX),
)
def test_decode_packed_is_decode_nibble_code_by_code(data, predictor, index):
    assert decode_packed(data, predictor, index).tolist() == slow(data, predictor, index)


def test_a_run_that_clamps_at_the_16_bit_range_is_exact():
    rising = bytes([0x77] * 100)  # the largest positive step, again and again: clamped at 32767
    assert decode_packed(rising, 30000, 60).tolist() == slow(rising, 30000, 60)
    assert decode_packed(rising, 30000, 60)[-1] == 32767
    falling = bytes([0xFF] * 100)
    assert decode_packed(falling, -30000, 60).tolist() == slow(falling, -30000, 60)
    assert decode_packed(b'', 5, 3).dtype == np.int16
