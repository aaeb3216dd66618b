"""Recording links to MCAP: the file layout, a real client's traffic, and the failures that
must end the recording but never the link (a full disk, a writer that falls behind)."""

import json

import pytest
from helpers import wait_for
from mcap.reader import make_reader
from mcap.writer import Writer
from tick_robot import TickClient, TickEmulator

from legacy_robot_common.backoff import Backoff
from legacy_robot_common.recording import (
    FORMAT,
    FROM_ROBOT,
    TO_ROBOT,
    Recorder,
    RecordingError,
    read_recording,
)


def record(path, script, **kwargs):
    """A recorder with links 'a' and 'b'; script(taps) writes through them."""
    recorder = Recorder(path, 'test_driver', '1.2.3', {'rate': 5.0, 'names': ['x']}, **kwargs)
    taps = {name: recorder.tap(name) for name in ('a', 'b')}
    recorder.start()
    script(taps)
    recorder.stop()
    return recorder


def test_the_file_is_standard_mcap_with_one_channel_per_link_and_direction(tmp_path):
    path = tmp_path / 'r.mcap'

    def script(taps):
        taps['a'].opened('peer 1')
        taps['a'].received(b'\x01\x02')
        taps['a'].sent(b'\x03')
        taps['a'].closed('closed by the driver')

    record(path, script)
    with open(path, 'rb') as stream:
        reader = make_reader(stream)
        summary = reader.get_summary()
        topics = sorted(channel.topic for channel in summary.channels.values())
        meta = next(m for m in reader.iter_metadata() if m.name == 'recording').metadata
        events = [json.loads(m.data) for _, c, m in reader.iter_messages(topics=['a/events'])]
    assert topics == [
        'a/events',
        'a/from_robot',
        'a/to_robot',
        'b/events',
        'b/from_robot',
        'b/to_robot',
    ]
    assert summary.chunk_indexes and summary.chunk_indexes[0].compression == 'zstd'
    assert meta['format'] == FORMAT and meta['node'] == 'test_driver'
    assert meta['driver_version'] == '1.2.3'
    assert json.loads(meta['parameters']) == {'names': ['x'], 'rate': 5.0}
    assert json.loads(meta['links']) == ['a', 'b']
    assert [e['event'] for e in events] == ['connected', 'closed']


def test_reading_groups_bytes_by_link_and_connection_in_order(tmp_path):
    path = tmp_path / 'r.mcap'

    def script(taps):
        http = taps['b']
        first, second = http.opened('rabbit 1'), http.opened('rabbit 2')
        http.received(b'GET /one', first)  # two connections at once, interleaved
        http.received(b'GET /two', second)
        http.sent(b'reply two', second)
        http.sent(b'reply one', first)
        http.closed('closed', first)

    record(path, script)
    recording = read_recording(path)
    link = recording.links['b']
    assert sorted(link.connections) == [1, 2]
    one, two = link.connections[1], link.connections[2]
    assert one.opened == 'rabbit 1' and one.closed == 'closed' and two.closed is None
    assert [(c.direction, c.data) for c in one.chunks] == [
        (FROM_ROBOT, b'GET /one'),
        (TO_ROBOT, b'reply one'),
    ]
    assert [c.data for c in two.chunks] == [b'GET /two', b'reply two']
    assert link.byte_count(FROM_ROBOT) == 16 and link.chunk_count(TO_ROBOT) == 2
    assert recording.links['a'].connections == {}
    assert recording.parameters == {'names': ['x'], 'rate': 5.0}
    assert recording.duration >= 0 and not recording.problem


def test_a_real_client_records_both_directions_and_each_connection(tmp_path):
    path = tmp_path / 'tick.mcap'
    emulator = TickEmulator(rate=200).start()
    recorder = Recorder(path, 'tick_driver', '0', {})
    client = TickClient(
        '127.0.0.1',
        emulator.server.port,
        read_timeout=0.5,
        backoff=Backoff(initial=0.05, maximum=0.1),
    )
    client.tap = recorder.tap('tick')
    client.on_record = lambda record: None
    recorder.start()
    client.start()
    try:
        assert wait_for(lambda: client.counters.frames >= 20)
        emulator.server.drop_clients()
        assert wait_for(lambda: client.counters.reconnects >= 1 and client.counters.frames >= 40)
    finally:
        client.stop()
        emulator.stop()
        recorder.stop()
    link = read_recording(path).links['tick']
    assert len(link.connections) >= 2
    assert link.byte_count(FROM_ROBOT) == client.counters.bytes_in
    received = b''.join(c.data for c in link.connections[1].chunks if c.direction == FROM_ROBOT)
    assert received.startswith(b'TICK 1 10\n')  # from the first byte on
    assert link.connections[1].closed and link.connections[1].closed != 'closed by the driver'
    last = link.connections[max(link.connections)]
    assert last.chunks[-1].direction == TO_ROBOT and last.chunks[-1].data == b'BYE\n'
    assert last.closed == 'closed by the driver'


def test_a_full_disk_stops_the_recording_not_the_caller(tmp_path):
    recorder = Recorder('/dev/full', 'test_driver', '0', {}, chunk_size=1024)
    tap = recorder.tap('a')
    recorder.start()
    tap.opened('peer')
    for _ in range(200):
        tap.received(bytes(1000))  # never raises, never blocks
    assert wait_for(lambda: recorder.failure, timeout=5.0)
    assert 'No space left' in recorder.failure and recorder.state.startswith('stopped')
    tap.received(b'more')  # still harmless
    recorder.stop()


def test_a_writer_that_falls_behind_ends_the_recording(tmp_path):
    recorder = Recorder(tmp_path / 'r.mcap', 'test_driver', '0', {}, max_pending_bytes=10_000)
    tap = recorder.tap('a')  # not started: nothing drains the queue
    for _ in range(20):
        tap.received(bytes(1000))
    assert 'fell more than' in recorder.failure


def test_an_unwritable_path_is_a_clear_error(tmp_path):
    (tmp_path / 'a_file').write_text('not a folder')
    with pytest.raises(RecordingError, match='cannot record to'):
        Recorder(tmp_path / 'a_file' / 'r.mcap', 'test_driver', '0', {})


def test_a_missing_folder_is_made_as_ros2_bag_record_makes_its_own(tmp_path):
    recorder = Recorder(tmp_path / 'new' / 'folder' / 'r.mcap', 'test_driver', '0', {})
    recorder.start()
    recorder.stop()
    assert (tmp_path / 'new' / 'folder' / 'r.mcap').is_file()


def test_a_file_cut_short_keeps_what_came_before_the_cut(tmp_path):
    path = tmp_path / 'r.mcap'

    def script(taps):
        taps['a'].opened('peer')
        for n in range(300):
            taps['a'].received(f'line {n}\n'.encode() * 20)

    record(path, script, chunk_size=2048)
    data = path.read_bytes()
    cut = tmp_path / 'cut.mcap'
    cut.write_bytes(data[: len(data) // 2])
    recording = read_recording(cut)
    chunks = recording.links['a'].connections[1].chunks
    assert 0 < len(chunks) < 300 and recording.problem
    assert chunks[0].data.startswith(b'line 0\n')


@pytest.mark.parametrize(
    'content', [b'', b'not an mcap file at all', b'\x89MCAP0\r\n' + bytes(50)]
)
def test_damaged_files_are_a_clear_error(tmp_path, content):
    path = tmp_path / 'bad.mcap'
    path.write_bytes(content)
    with pytest.raises(RecordingError):
        read_recording(path)


def test_an_mcap_file_of_someone_else_is_refused(tmp_path):
    path = tmp_path / 'other.mcap'
    with open(path, 'wb') as stream:
        writer = Writer(stream)
        writer.start()
        writer.add_metadata('something', {'a': 'b'})
        writer.finish()
    with pytest.raises(RecordingError, match='not a legacy_robots link recording'):
        read_recording(path)
    with pytest.raises(RecordingError, match='cannot read'):
        read_recording(path.with_name('absent.mcap'))
