"""The telemetry and RCODE clients against the AIBO emulator over real loopback TCP."""

import collections
import re
import socket
import threading

import numpy as np
import pytest
from helpers import wait_for

from aibo_driver import protocol as p
from aibo_driver import rcode
from aibo_driver.client import (
    AudioReply,
    CameraFrame,
    ColorFrame,
    Connected,
    PollValues,
    RcodeClient,
    RcodeLine,
    SemanticRecords,
    Settings,
    TelemetryClient,
    VoiceRecord,
)
from aibo_driver.emulator import AiboEmulator, EmulatorOptions
from aibo_driver.motion import MotionSettings
from aibo_driver.scene import audio_chunk
from legacy_robot_common.emulator import TcpEmulatorServer

Op = p.Op


class Session:
    """An emulator and a started client whose records are collected by type."""

    def __init__(self, options=None, **settings):
        options = options or EmulatorOptions()
        options.telemetry_port = options.telemetry_port if options.telemetry_port != 21001 else 0
        options.rcode_port = 0
        self.emulator = AiboEmulator(options).start()
        self.records = collections.defaultdict(list)
        self.client = self.start_client(TelemetryClient, **settings)

    def start_client(self, kind, **settings):
        settings = Settings(
            host='127.0.0.1',
            telemetry_port=self.emulator.telemetry.port,
            rcode_port=self.emulator.rcode.port if self.emulator.rcode else 9,
            **settings,
        )
        client = kind(settings)
        client.on_record = lambda record: self.records[type(record)].append(record)
        client.start()
        return client

    def wait(self, kind, count=1, timeout=10.0):
        assert wait_for(lambda: len(self.records[kind]) >= count, timeout), (
            f'{count} {kind.__name__} wanted, got {len(self.records[kind])} '
            f'(last error: {self.client.counters.last_error!r})'
        )
        return self.records[kind]

    def close(self):
        self.client.stop()
        self.emulator.stop()


@pytest.fixture
def session():
    sessions = []

    def make(options=None, **settings):
        sessions.append(Session(options, **settings))
        return sessions[-1]

    yield make
    for s in sessions:
        s.close()


def _scene_frame(emulator, frame):
    """How far a decoded frame is from every picture of the ball's lap (the best match)."""
    best = min(
        np.abs(frame.astype(int) - emulator.scene.render(n / 10.0)).mean() for n in range(80)
    )
    return best


def test_rcodeplus_streams_camera_colour_and_audio_but_no_lifeplus_data(session):
    s = session()
    connected = s.wait(Connected)[0]
    assert connected.product is p.Product.RCODEPLUS and str(connected.version) == '2.52'
    assert Op.GET_VOICE_DATA not in connected.polled and Op.GET_SEMANTIC not in connected.polled
    frames = s.wait(CameraFrame, 5)
    assert frames[-1].rgb.shape == (144, 176, 3) and frames[-1].jpeg is None
    assert _scene_frame(s.emulator, frames[-1].rgb) < 6  # the picture the dog saw
    mask = s.wait(ColorFrame, 3)[-1].mask
    assert mask.shape == (72, 88) and (mask & 3 == 3).any() and (mask & 16).any()
    replies = s.wait(AudioReply, 5)
    chunks = [c for r in replies for c in r.chunks]
    assert [c.sequence for c in chunks] == list(
        range(chunks[0].sequence, chunks[0].sequence + len(chunks))
    )
    assert np.array_equal(chunks[0].pcm, audio_chunk(chunks[0].sequence))  # left, right
    assert s.client.audio_sequence.lost == 0
    assert s.emulator.requests['get_voice_data'] == 0 and s.emulator.requests['flush_audio'] == 1
    # auto-snapshot: the first request of each image kind answered nothing
    yuv10 = s.client.pollers[Op.GET_YUV10]
    assert yuv10.requests > yuv10.replies_with_data


def test_lifeplus_voice_and_semantic_records(session):
    s = session(EmulatorOptions(product='lifeplus'), semantic_rate=5.0)
    assert s.wait(Connected)[0].product is p.Product.LIFEPLUS
    voice = s.wait(VoiceRecord, 1, timeout=8)[0]
    assert len(voice.matches) == 10
    confidences = [c for _, c in voice.matches]
    assert confidences == sorted(confidences, reverse=True)
    semantic = s.wait(SemanticRecords, 2, timeout=10)
    sequences = [r[0] for batch in semantic for r in batch.records]
    assert sequences == sorted(set(sequences))  # each event once
    assert s.emulator.rcode is None and s.emulator.requests['rput'] == 0
    with pytest.raises(ValueError, match='LifePlus'):
        s.client.settings.rput = p.RputLayout()
        s.client.upload('x', b'1', lambda r: None)


def test_unknown_btype_polls_everything_and_reports_what_never_answers(session):
    s = session(
        EmulatorOptions(type_values={'rcodeplus': 9, 'lifeplus': 1}), unavailable_after=1.0
    )
    connected = s.wait(Connected)[0]
    assert connected.product is p.Product.UNKNOWN and Op.GET_VOICE_DATA in connected.polled
    assert wait_for(lambda: not s.client.pollers[Op.GET_VOICE_DATA].available, 5)
    assert s.client.pollers[Op.GET_YUV10].available
    requests = s.emulator.requests['get_voice_data']
    s.wait(CameraFrame, len(s.records[CameraFrame]) + 10)
    assert s.emulator.requests['get_voice_data'] <= requests + 1  # polled rarely now


@pytest.mark.parametrize(
    'fmt',
    [
        p.Yuv10Format(layout='planar', bit_order='lsb'),
        p.Yuv10Format(bit_order='lsb', chroma_first='V', matrix='bt601'),
    ],
    ids=['planar-lsb', 'lsb-V-bt601'],
)
def test_yuv10_variants_work_when_both_sides_agree(session, fmt):
    s = session(EmulatorOptions(yuv10=fmt), yuv10=fmt)
    assert _scene_frame(s.emulator, s.wait(CameraFrame, 3)[-1].rgb) < 6
    wrong = session(EmulatorOptions(yuv10=fmt))  # the client keeps the default
    assert _scene_frame(wrong.emulator, wrong.wait(CameraFrame, 3)[-1].rgb) > 20


def test_custom_opcodes_version_prefix_and_left_first_audio(session):
    opcodes = p.OpcodeMap({'get_version': 0x56, 'get_yuv10': 0x59, 'get_audio': 0x41})
    s = session(
        EmulatorOptions(opcodes=opcodes, version_size_prefix=True, right_channel_first=False),
        opcodes=opcodes,
        version_size_prefix=True,
        right_channel_first=False,
    )
    s.wait(CameraFrame, 2)
    chunk = s.wait(AudioReply)[0].chunks[0]
    assert np.array_equal(chunk.pcm, audio_chunk(chunk.sequence))


def test_jpeg_mode_and_switching_at_run_time(session):
    s = session(camera_mode='jpeg')
    frame = s.wait(CameraFrame, 2)[-1]
    assert frame.jpeg[:2] == b'\xff\xd8' and frame.rgb.shape == (144, 176, 3)
    assert _scene_frame(s.emulator, frame.rgb) < 8
    s.client.set_camera('yuv10', 20.0)
    count = len(s.records[CameraFrame])
    frames = s.wait(CameraFrame, count + 3)
    assert frames[-1].jpeg is None and s.client.camera_mode == 'yuv10'
    s.client.set_camera('off')
    assert wait_for(lambda: Op.GET_YUV10 not in s.client.pollers, 3)
    with pytest.raises(ValueError, match='camera mode'):
        s.client.set_camera('mpeg')


def test_old_stick_falls_back_from_yuv10_to_jpeg(session):
    s = session(EmulatorOptions(version=(2, 50)))
    assert s.wait(Connected)[0].camera_mode == 'jpeg'
    assert 'YUV10 needs AiboPet 2.51' in s.client.camera_note
    assert s.wait(CameraFrame, 2)[-1].jpeg is not None


def test_wrong_sizes_are_counted_and_the_stream_goes_on(session):
    s = session(EmulatorOptions(bad_size_every=3))
    s.wait(CameraFrame, 6)
    assert s.client.counters.bad_frames >= 2 and s.client.counters.reconnects == 0
    assert 'bytes, expected' in s.client.counters.last_error


def test_oversized_reply_restarts_the_connection(session):
    s = session(EmulatorOptions(oversize_every=40))
    assert wait_for(lambda: s.client.counters.reconnects >= 1, 15)
    assert 'over 32000' in s.client.counters.last_error
    count = len(s.records[CameraFrame])
    s.wait(CameraFrame, count + 3)


def test_a_reply_cut_short_by_lost_bytes_is_counted_and_the_link_recovers(session, caplog):
    # regression (fault suite): lost bytes leave a frame short; the driver reconnected after
    # reply_timeout without counting a bad reply
    s = session(EmulatorOptions(drop_rate=0.002, seed=3), reply_timeout=0.5)
    assert wait_for(lambda: s.client.counters.bad_frames >= 2, 15)
    assert 'reply of 31680 bytes cut short' in caplog.text
    assert s.client.counters.reconnects >= 1
    s.emulator.faults.drop_rate = 0.0
    count = len(s.records[CameraFrame])
    s.wait(CameraFrame, count + 2, timeout=15)


def test_reconnects_after_the_dog_goes_away_and_after_a_stall(session):
    s = session(reply_timeout=0.5)
    s.wait(CameraFrame, 2)
    port = s.emulator.telemetry.port
    s.emulator.stop()
    assert wait_for(lambda: not s.client.connected, 5)
    s.emulator = AiboEmulator(EmulatorOptions(telemetry_port=port, rcode_port=0)).start()
    assert wait_for(lambda: s.client.counters.reconnects >= 1, 15)
    count = len(s.records[CameraFrame])
    s.wait(CameraFrame, count + 2)
    s.emulator.stalled.set()
    assert wait_for(lambda: 'no data' in s.client.counters.last_error, 5)
    s.emulator.stalled.clear()
    assert wait_for(lambda: s.client.counters.reconnects >= 2, 15)


def test_a_frame_sent_just_before_the_dog_fell_silent_is_delivered_at_once(session):
    """A round of replies is delivered together, but a record waits at most MAX_HOLD for the
    rest of its round: a dog that stops answering must not keep the frame it did send until
    the link gives up (the mixed soak counts frames this way before each kill)."""
    s = session(reply_timeout=5.0, image_rate=10.0, color_rate=10.0)
    s.wait(CameraFrame, 3)
    sent, _ = s.emulator.faults.hold()  # silent now; every frame counted was written
    assert wait_for(lambda: len(s.records[CameraFrame]) >= sent, 1.0), (
        f'{sent} camera frames sent, {len(s.records[CameraFrame])} delivered within 1 s'
    )


def _chunks(s):
    return [chunk.sequence for reply in s.records[AudioReply] for chunk in reply.chunks]


def test_audio_lost_across_a_reconnect_is_counted_from_the_dogs_sequence(session):
    """The link drops, the dog keeps counting; the new session's FLUSHAUDIO discards its ring."""
    s = session()
    s.wait(AudioReply, 5)
    s.emulator.drop_clients()
    assert wait_for(lambda: s.client.counters.reconnects >= 1, 10)
    before = len(s.records[AudioReply])
    s.wait(AudioReply, before + 5)
    got = _chunks(s)
    sequence = s.client.audio_sequence
    assert sequence.lost_across_reconnects > 0 and sequence.unknown_gaps == 0
    # every number from the first to the last chunk is either delivered or counted lost
    assert len(got) + sequence.lost == got[-1] - got[0] + 1


def test_a_dog_that_restarts_its_sequence_leaves_a_gap_of_unknown_size(session):
    s = session()
    s.wait(AudioReply, 5)
    port = s.emulator.telemetry.port
    s.emulator.stop()
    s.emulator = AiboEmulator(EmulatorOptions(telemetry_port=port, rcode_port=0)).start()
    assert wait_for(lambda: s.client.counters.reconnects >= 1, 15)
    before = len(s.records[AudioReply])
    s.wait(AudioReply, before + 3)
    sequence = s.client.audio_sequence
    assert sequence.unknown_gaps == 1 and sequence.restarts == 1


def test_not_an_aibo_is_refused_clearly(session):
    def http_server(stream, stop):
        stream.read(16, 2.0)
        stream.write(b'HTTP/1.0 400 Bad\r\n\r\n')

    server = TcpEmulatorServer(http_server, port=0)
    server.start()
    try:
        client = TelemetryClient(Settings(host='127.0.0.1', telemetry_port=server.port))
        client.start()
        assert wait_for(lambda: client.counters.bad_frames >= 1, 5)
        assert 'AiboPet' in client.counters.last_error and client.counters.connects == 0
        client.stop()
    finally:
        server.stop()


def test_set_property_and_rput_layouts(session):
    s = session(
        EmulatorOptions(rput=p.RputLayout(['size32', 'name8', 'data']), rput_reply='standard'),
        rput=p.RputLayout(['size32', 'name8', 'data']),
        rput_reply='standard',
    )
    s.wait(Connected)
    results = []
    s.client.set_property(2, 3, results.append)
    s.client.upload('dance.mtn', bytes(range(256)) * 10, results.append)
    assert wait_for(lambda: len(results) == 2, 5)
    assert results[0] == 'property 2 set to 3' and s.emulator.properties == [(2, 3)]
    assert results[1].startswith('2560 bytes sent as dance.mtn')
    assert s.emulator.files == {'dance.mtn': bytes(range(256)) * 10}
    count = len(s.records[CameraFrame])
    s.wait(CameraFrame, count + 2)  # still in step after the upload


def test_operations_fail_cleanly_when_not_connected():
    client = TelemetryClient(Settings(host='127.0.0.1', telemetry_port=9))
    results = []
    client.set_property(1, 1, results.append)
    assert isinstance(results[0], ConnectionError)
    with pytest.raises(ValueError, match='disabled'):
        client.upload('x', b'', results.append)


def test_rcode_console(session):
    s = session()
    rcode = s.start_client(RcodeClient)
    assert wait_for(lambda: rcode.connected, 5)
    replies = []
    done = threading.Event()

    def ask(line):
        replies.clear()
        done.clear()
        rcode.command(line, lambda reply: (replies.append(reply), done.set()), timeout=2.0)
        assert done.wait(5)
        return replies[0]

    assert ask('SET:Distance:250') == ''
    assert ask('PRINT:"head %d mm":Distance') == 'head 250 mm'
    assert ask('PLAY ACTION WALK 0 500') == ''
    assert ask('JUMP:HIGH').startswith('ERROR: unknown command')
    assert s.emulator.rcode_lines[-2] == 'PLAY ACTION WALK 0 500'
    assert any(r.text == 'head 250 mm' for r in s.records[RcodeLine])
    with pytest.raises(ValueError):
        rcode.command('PRINT:"a"\nPRINT:"b"', print)
    with pytest.raises(ValueError, match='127'):  # refused before sending
        rcode.command('PRINT:"' + 'x' * 130 + '"', print)
    rcode.stop()


def test_the_demo_scripts_console_line_is_answered_without_an_error(session):
    """The demo's R-CODE line (DogWatcher) asks the dog for variables by R-CODE's names: its
    answer, which the demo writes to rcode_output.txt and shows in summary.txt, is the values,
    not an ERROR line (it asked for Battery_Rest, which R-CODE calls Batt_Rest)."""
    from aibo_driver.plugin import DEMO_RCODE

    s = session(EmulatorOptions(telemetry_port=0, rcode_port=0))  # the demo's emulator
    rcode = s.start_client(RcodeClient)
    assert wait_for(lambda: rcode.connected, 5)
    replies = []
    rcode.command(DEMO_RCODE, replies.append, timeout=2.0)
    assert wait_for(lambda: replies, 5)
    battery = s.emulator.dog.variables['Batt_Rest']
    assert re.fullmatch(rf'battery {battery}% distance \d+ mm', replies[0]), replies
    rcode.stop()


FAST = 10.0  # the emulated dog walks 10 times as fast: seconds of walking in a tenth


def _walker(session, **options):
    """An RCODE client with its walk planner and a Wait poll, on a fast emulated dog."""
    s = session(EmulatorOptions(speed_scale=FAST, **options))
    motion = MotionSettings(
        normal_speed=0.06 * FAST,
        slow_speed=0.03 * FAST,
        normal_turn_rate=0.5 * FAST,
        slow_turn_rate=0.25 * FAST,
    )
    settings = Settings(host='127.0.0.1', rcode_port=s.emulator.rcode.port)
    poll = rcode.Poll('M0', ('Wait', 'Distance'))
    client = RcodeClient(settings, 0.3, motion, [(poll, 0.05)], motion_timeout=5.0)
    client.on_record = lambda record: s.records[type(record)].append(record)
    client.start()
    assert wait_for(lambda: client.connected, 5)
    return s, client


def test_the_planner_walks_the_dog_and_dead_reckoning_follows(session):
    s, client = _walker(session)
    dog = s.emulator.dog
    try:
        assert client.drive(0.6, 0.0, 0.0) == []
        assert wait_for(lambda: s.emulator.pose()[0] > 0.3, 5)
        assert 'PLAY:ACTION:WALK:0:10000' in s.emulator.rcode_lines
        client.drive(0.0, 0.6, 0.0)  # sideways: STOP_WALK, then the new segment
        assert wait_for(lambda: s.emulator.pose()[1] > 0.3, 5)
        lines = s.emulator.rcode_lines
        walk = lines.index('PLAY:ACTION:WALK:90:10000')
        assert lines[walk - 1] == 'PLAY:ACTION:STOP_WALK'
        client.drive(0.0, 0.0, 0.0)
        assert wait_for(lambda: dog.playing is None and client.planner.current is None, 5)
        x, y, _, velocity, (xy, _) = client.odometry()
        true_x, true_y, *_ = s.emulator.pose()
        assert velocity == (0.0, 0.0, 0.0)
        # legged odometry: within the slip model's 2 sigma (plus one poll of latency)
        error = abs(x - true_x) + abs(y - true_y)
        assert error < 2 * xy**0.5 + 0.1, (x, y, true_x, true_y)
        assert len([line for line in lines if 'WALK' in line]) <= 5  # nothing piled up
        assert s.records[PollValues] and client.poll_failures == 0
    finally:
        client.stop()


def test_a_dog_that_refuses_motion_or_answers_nothing(session):
    s, client = _walker(session, refused_actions=('WALK',))
    try:
        client.drive(0.6, 0.0, 0.0)
        assert wait_for(lambda: client.planner.errors >= 1, 5)
        assert client.planner.current is None and client.odometry()[0] == 0.0
        assert 'WALK' in client.last_refusal
    finally:
        client.stop()
    s, client = _walker(session, rcode_silent=True)
    try:
        assert wait_for(lambda: client.poll_failures >= 2, 10)
        assert not s.records[PollValues]
        client.drive(0.6, 0.0, 0.0)  # still sent (the dog may walk): believed after quiet
        assert wait_for(lambda: client.planner.current is not None, 5)
    finally:
        client.stop()


def test_audio_ring_keeps_the_older_chunks_when_full():
    emulator = AiboEmulator(EmulatorOptions(telemetry_port=0, rcode_port=0))
    for _ in range(20):
        emulator.audio.produce()
    assert emulator.audio.overruns == 5
    first = p.decode_audio(emulator.audio.take())
    assert [c.sequence for c in first] == list(range(10))
    assert [c.sequence for c in p.decode_audio(emulator.audio.take())] == list(range(10, 15))
    assert emulator.audio.take() == b''  # fewer than 2 waiting


def test_emulator_answers_unknown_bytes_with_size_zero():
    emulator = AiboEmulator(EmulatorOptions(telemetry_port=0, rcode_port=0)).start()
    try:
        with socket.create_connection(('127.0.0.1', emulator.telemetry.port), 2) as sock:
            sock.sendall(b'\xee')
            assert sock.recv(4) == b'\0\0\0\0'
        assert emulator.unknown_requests == 1
    finally:
        emulator.stop()


def test_emulator_command_line():
    import signal

    from helpers import run_module, start_module

    bad = run_module('aibo_driver.emulator', '--opcode', 'get_jpeg=3', '--telemetry-port', '0')
    assert bad.returncode == 2 and 'share the byte 3' in bad.stderr
    bad = run_module('aibo_driver.emulator', '--speed-scale', '0', '--telemetry-port', '0')
    assert bad.returncode == 2 and 'speed_scale must be within' in bad.stderr
    process = start_module(
        'aibo_driver.emulator', '--product', 'lifeplus', '--telemetry-port', '0'
    )
    try:
        line = process.stdout.readline()
        assert line.startswith('AIBO emulator: AIBO with lifeplus 2.52')
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(10) == 0


def test_late_answers_to_own_lines_stay_off_the_console_and_still_count(session):
    """A slow link: the answer to a poll comes after its time ran out."""
    s = session()
    settings = Settings(host='127.0.0.1', rcode_port=s.emulator.rcode.port)
    poll = rcode.Poll('M0', ('Wait', 'Distance'))
    client = RcodeClient(settings, 0.3, polls=[(poll, 60.0)], poll_timeout=0.3)
    client.on_record = lambda record: s.records[type(record)].append(record)
    client.start()
    try:
        assert wait_for(lambda: client.poll_answers == 1, 5)
        with client._lock:  # as if the dog's answers to these lines came too late
            client._own_sent.append(rcode.normal_line(poll.line))
        for line in (poll.line, 'M0 0 420', 'unrelated'):
            client._on_line(line)
        assert client.late_answers == 2
        assert [r.values for r in s.records[PollValues]][-1] == {'Wait': 0, 'Distance': 420}
        console = [r.text for r in s.records[RcodeLine]]
        assert 'unrelated' in console and 'M0 0 420' not in console and poll.line not in console
    finally:
        client.stop()


def test_an_rcode_pipe_that_wants_a_password_is_reported_not_waited_on():
    """The ERS-7's R-CODE with authentication on: the client says what to put on the stick."""
    from legacy_robot_common.streams import SocketStream

    emulator = AiboEmulator(EmulatorOptions(telemetry_port=0, rcode_port=0, auth=True)).start()
    try:
        client = RcodeClient(
            Settings(
                host='127.0.0.1',
                telemetry_port=emulator.telemetry.port,
                rcode_port=emulator.rcode.port,
            )
        )
        client.start()
        try:
            assert wait_for(lambda: 'NOAUTH.CFG' in client.counters.last_error, 10)
            assert client.counters.connects == 0 and not client.connected
        finally:
            client.stop()
        stream = SocketStream.connect('127.0.0.1', emulator.rcode.port)  # with the password
        try:
            stream.write(b'aibo\r\n')
            seen = bytearray()
            assert wait_for(lambda: seen.extend(stream.read(4096, 0.1)) or b'<READY>' in seen, 5)
        finally:
            stream.close()
    finally:
        emulator.stop()


def _rounds(times, gap):
    """How many groups times (sorted) fall into when a pause longer than gap splits them."""
    return 1 + sum(1 for a, b in zip(times, times[1:], strict=False) if b - a > gap)


REPLY_GAP = 0.012  # s: longer than between the replies of one round, shorter than a retry


def test_audio_camera_and_colour_are_polled_in_one_round(session):
    """At equal rates the three polls go out together, each at its own rate: the link thread
    wakes once a round rather than once for each data source (before, the camera's first
    retry put it 20 ms behind audio for good: two rounds every period)."""
    s = session(image_rate=10.0, color_rate=10.0, audio_poll_rate=10.0)
    s.wait(CameraFrame, 5)
    start = len(s.records[CameraFrame])
    s.wait(CameraFrame, start + 20)
    first = s.records[CameraFrame][start].received
    last = s.records[CameraFrame][start + 19].received
    kinds = (CameraFrame, ColorFrame, AudioReply)
    times = sorted(
        record.received
        for kind in kinds
        for record in s.records[kind]
        if first <= record.received <= last
    )
    frames = 20
    assert len(times) >= 3 * frames - 6, f'{len(times)} records in {frames} camera frames'
    assert _rounds(times, REPLY_GAP) <= frames + 8, (
        f'{_rounds(times, REPLY_GAP)} rounds for {frames} camera frames'
    )
