"""Every robot's fuzz targets on a short run: `make soak` gives each 1,000,000 inputs; this
keeps the targets (and the decoders' reject paths) working in CI."""

import importlib

import pytest

from legacy_robot_bench import recording_fuzz
from legacy_robot_bench.bench import ROBOTS
from legacy_robot_bench.common.soak import fuzz


@pytest.mark.parametrize('robot', ROBOTS, ids=[robot.name for robot in ROBOTS])
def test_every_robot_decoder_survives_a_short_fuzz_run(robot):
    targets = importlib.import_module(f'legacy_robot_bench.{robot.package}.soak').fuzz_targets()
    assert targets
    for target in targets:
        result = fuzz(target, 300, seed=7)
        assert result.crashes == 0, result.first_crash
        assert result.accepted > 0 or target.seeds == [], target.name


def test_every_robot_recording_survives_a_short_fuzz_run():
    """Mutated recordings (recordings/<robot>.mcap excerpts): read and planned for replay,
    they are refused (RecordingError, ValueError) or accepted, never a crash."""
    targets = recording_fuzz.fuzz_targets()
    assert len(targets) == len(ROBOTS)
    for target in targets:
        result = fuzz(target, 300, seed=11)
        assert result.crashes == 0, result.first_crash
        assert result.accepted > 0 and result.rejected > 0, target.name
