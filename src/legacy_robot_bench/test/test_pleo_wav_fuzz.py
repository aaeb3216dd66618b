"""The Pleo's WAV reader is a fuzz target of the fault suite (moved from pleo_driver's PDK
fidelity tests with the soak module)."""

from legacy_robot_bench.common.soak import fuzz
from legacy_robot_bench.pleo_driver.soak import fuzz_targets


def test_wav_reader_fuzz_target_is_in_the_fault_suite():
    target = next(t for t in fuzz_targets() if t.name.startswith('Pleo WAV reader'))
    result = fuzz(target, 300)
    assert result.crashes == 0, result.first_crash
    assert result.accepted and result.rejected
