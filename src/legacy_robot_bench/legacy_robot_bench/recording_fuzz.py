"""Fuzz targets for recordings: each robot's recording from recordings/, mutated, then read
and planned for replay (the MCAP reader, the grouping by link and connection, the replay's
request map). What a damaged recording does to a driver is tested end to end by
test/test_record_replay.py. No rclpy here.
"""

import pathlib
import tempfile

from legacy_robot_bench.common.soak import FuzzTarget
from legacy_robot_bringup.paths import recording_file
from legacy_robot_bringup.registry import discover_plugins
from legacy_robot_common.plugin import make_replay
from legacy_robot_common.recording import RecordingError, read_recording, write_recording
from legacy_robot_common.replay import ReplayOptions, exchanges

SEED_CHUNKS = 12  # chunks per connection in a seed: small, so a million cases stay quick


def fuzz_targets():
    targets = []
    for name, plugin in discover_plugins().items():
        path = recording_file(name)
        if path is not None:
            targets.append(
                FuzzTarget(
                    f'{plugin.title} recording (reader, replay plan)',
                    replay_plan(plugin),
                    [seed(path)],
                    rejects=(RecordingError, ValueError),
                    max_random=400,
                )
            )
    return targets


def seed(path):
    """An uncompressed excerpt of the recording: mutations reach the records, not only zstd."""
    with tempfile.TemporaryDirectory() as folder:
        excerpt = pathlib.Path(folder) / 'seed.mcap'
        write_recording(excerpt, read_recording(path), SEED_CHUNKS, compress=False)
        return excerpt.read_bytes()


def replay_plan(plugin):
    def decode(data):
        replay = make_replay(plugin, read_recording(data), ReplayOptions())
        for server in getattr(replay, 'servers', {}).values():
            for connection in server.connections:
                exchanges(connection)

    return decode
