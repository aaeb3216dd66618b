"""decode_codes, the fast run decoder, gives exactly what decode_nibble gives code by code."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from legacy_robot_common.ima_adpcm import MAX_INDEX, decode_codes, decode_nibble


def slow(codes, predictor, index):
    out = []
    for code in codes:
        predictor, index = decode_nibble(code, predictor, index)
        out.append(predictor)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 15), max_size=600),
    st.integers(-32768, 32767),
    st.integers(0, MAX_INDEX),
)
def test_decode_codes_is_decode_nibble_code_by_code(codes, predictor, index):
    assert decode_codes(codes, predictor, index).tolist() == slow(codes, predictor, index)


def test_a_run_that_clamps_at_the_16_bit_range_is_exact():
    rising = [7] * 200  # the largest positive step, again and again: clamped at 32767
    assert decode_codes(rising, 30000, 60).tolist() == slow(rising, 30000, 60)
    assert decode_codes(rising, 30000, 60)[-1] == 32767
    falling = [15] * 200
    assert decode_codes(falling, -30000, 60).tolist() == slow(falling, -30000, 60)
    assert decode_codes([], 5, 3).dtype == np.int16
