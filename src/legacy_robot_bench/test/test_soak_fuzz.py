"""The fault suite's fuzz runner."""

import random

from legacy_robot_bench.common.soak import FuzzTarget, fuzz, fuzz_cases, mutate, stream_rejects
from legacy_robot_common.errors import MalformedFrame


def length_prefixed(data):
    """A toy decoder with a bug: an empty payload divides by zero."""
    if len(data) < 2 or data[0] != 0x7F:
        raise MalformedFrame('no header')
    return 100 // data[1]


def test_rejects_are_counted_and_other_exceptions_are_reported_with_their_input():
    result = fuzz(FuzzTarget('toy', length_prefixed, [b'\x7f\x05', b'\x7f\x10abc']), 2000)
    assert result.cases == 2000
    assert result.accepted + result.rejected + result.crashes == 2000
    assert result.rejected > 0 and result.accepted > 0
    assert result.crashes > 0  # the mutations find the zero
    assert result.first_crash.startswith('ZeroDivisionError') and '7f00' in result.first_crash


def reject_bad(item):
    if item == b'bad':
        raise MalformedFrame('bad')


def test_stream_targets_add_the_frames_they_rejected():
    def decode(data):  # a receiver's output: one rejected frame, one good, one bad body
        return stream_rejects([MalformedFrame('x'), b'ok', b'bad'], reject_bad)

    result = fuzz(FuzzTarget('stream', decode, [b''], stream=True), 10)
    assert result.accepted == 10 and result.rejected == 20 and result.crashes == 0


def test_cases_are_repeatable_and_mix_random_with_mutated_seeds():
    target = FuzzTarget('t', len, [b'SEED' * 8], max_random=50)
    first = list(fuzz_cases(target, 200, seed=3))
    assert first == list(fuzz_cases(target, 200, seed=3))
    assert first != list(fuzz_cases(target, 200, seed=4))
    assert all(len(case) <= 50 for case in first[0::2])
    assert sum(b'SEED' in case for case in first[1::2]) > 50


def test_mutate_edits_but_stays_bytes():
    rng = random.Random(1)
    seed = bytes(range(64))
    outputs = {mutate(seed, rng, [seed]) for _ in range(200)}
    assert all(isinstance(out, bytes) for out in outputs) and len(outputs) > 150
