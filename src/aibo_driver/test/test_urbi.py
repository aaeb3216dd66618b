"""URBI 1.x codec (pure): messages, BIN frames, resynchronisation, commands; fuzzed."""

import io
import wave

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aibo_driver import urbi
from legacy_robot_common.errors import MalformedFrame

JPEG = b'\xff\xd8' + bytes(range(200)) + b'\xff\xd9'


def decode_all(stream, chunk=None):
    """Every record and the number of MalformedFrame raised, fed whole or in chunks."""
    decoder = urbi.StreamDecoder()
    records, damaged = [], 0
    pieces = (
        [stream]
        if chunk is None
        else [stream[i : i + chunk] for i in range(0, len(stream), chunk)]
    )
    for piece in pieces:
        decoder.feed(piece)
        while True:
            try:
                record = decoder.next_record()
            except MalformedFrame:
                damaged += 1
                continue
            if record is None:
                break
            records.append(record)
    return records, damaged


def test_messages_system_and_error_bodies_in_both_forms():
    banner = urbi.parse_line(b'[00000012:start] *** URBI Kernel version 1.0 rev. 153 ')
    assert (banner.timestamp, banner.tag, banner.kind) == (12, 'start', 'system')
    assert banner.text == 'URBI Kernel version 1.0 rev. 153'
    new = urbi.parse_line('[00123456:error] !!! Unknown identifier: U668541488.foo')
    assert new.kind == 'error' and new.text.startswith('Unknown identifier')
    old = urbi.parse_line('[00123456:notag] *** Unknown identifier: foo')  # the 2005 manual
    assert old.kind == 'error'
    assert urbi.parse_line('[00123456:error] *** Syntax error').kind == 'error'
    assert urbi.parse_line('[00000100:power] *** Battery at 82 %').kind == 'system'
    value = urbi.parse_line('[00002000:acc] 15.000000')
    assert value.kind == 'value' and value.number() == 15.0
    assert urbi.parse_line('[00002000] 1.5').tag == 'notag'
    assert urbi.parse_line('[00002000:x] "text"').number() is None
    for bad in (b'', b'hello', b'[abc:tag] 1', b'00000012:start] ***'):
        with pytest.raises(MalformedFrame):
            urbi.parse_line(bad)


def test_bin_headers_of_every_kind_and_the_damaged_ones():
    assert urbi.parse_bin_header('BIN 5000 jpeg 208 160 ') == urbi.BinHeader(
        5000, 'jpeg', (208, 160)
    )
    assert urbi.parse_bin_header('BIN 2048 raw 2 16000 16 1').fields == (2, 16000, 16, 1)
    assert urbi.parse_bin_header('BIN 99840 YCbCr 208 160').kind == 'YCbCr'
    assert urbi.parse_bin_header('15.000000') is None
    for bad in (
        'BIN',
        'BIN x jpeg 1 2',
        'BIN 10 png 1 2',
        'BIN 10 jpeg 208',
        'BIN 10 raw 2 a 16 1',
        'BIN 500000 jpeg 208 160',
        f'BIN {urbi.MAX_BINARY_BYTES + 1} jpeg 1 1',
        'BIN \xb34 raw 2 16000 16 1',  # a latin-1 '³' is a digit to str.isdigit (fuzzing)
        'BIN 10 raw 2 \xb3 16 1',
    ):
        with pytest.raises(MalformedFrame):
            urbi.parse_bin_header(bad)


def test_a_stream_of_text_and_binary_decodes_whole_and_byte_by_byte():
    pcm = bytes(2048)
    stream = (
        urbi.message(1, 'start', '*** URBI Kernel version 1.0 rev. 153 ')
        + urbi.message(2, 'ident', '*** ID: U12345')
        + urbi.binary(40, 'cam', 'jpeg', JPEG, 208, 160)
        + urbi.binary(41, 'mic', 'raw', pcm, 2, 16000, 16, 1)
        + urbi.message(42, 'acc', '-9.810000')
    )
    for chunk in (None, 1, 7):
        records, damaged = decode_all(stream, chunk)
        assert damaged == 0
        assert [type(r).__name__ for r in records] == [
            'Message',
            'Message',
            'Binary',
            'Binary',
            'Message',
        ]
        cam, mic = records[2], records[3]
        assert (cam.tag, cam.kind, cam.width, cam.height, cam.data) == (
            'cam',
            'jpeg',
            208,
            160,
            JPEG,
        )
        assert (mic.channels, mic.rate, mic.bits, mic.sample_format, mic.data) == (
            2,
            16000,
            16,
            1,
            pcm,
        )
        assert records[4].number() == -9.81


@pytest.mark.parametrize('lie', [-20, -1, 1, 30])
def test_a_lying_jpeg_length_is_counted_once_and_the_next_messages_survive(lie):
    frame = urbi.message(40, 'cam', f'BIN {len(JPEG) + lie} jpeg 208 160 ') + JPEG
    after = urbi.binary(80, 'cam', 'jpeg', JPEG, 208, 160) + urbi.message(81, 'acc', '1.000000')
    records, damaged = decode_all(frame + after + urbi.message(82, 'x', '2.000000'))
    assert damaged == 1
    assert [r.timestamp for r in records] == [80, 81, 82]


@pytest.mark.parametrize('lie', [-5, -4, 4, 5])
def test_a_lying_sound_length_is_counted_and_the_stream_resynchronises(lie):
    pcm = bytes(range(256)) * 8
    frame = urbi.message(40, 'mic', f'BIN {len(pcm) + lie} raw 2 16000 16 1') + pcm
    records, damaged = decode_all(frame + urbi.message(81, 'acc', '1.000000'), chunk=100)
    assert damaged >= 1
    assert records[-1].timestamp == 81


def test_a_64kb_line_without_newline_is_dropped_and_the_stream_goes_on():
    stream = urbi.message(1, 'a', '1.0') + b'x' * 70000 + b'\n' + urbi.message(2, 'b', '2.0')
    for chunk in (None, 4096):
        records, damaged = decode_all(stream, chunk)
        assert damaged == 1
        assert [r.tag for r in records] == ['a', 'b']


def test_an_unknown_binary_kind_and_a_garbage_line_are_skipped():
    stream = (
        urbi.message(1, 'x', 'BIN 10 png 1 1')
        + b'0123456789'
        + b'garbage line\n'
        + urbi.message(2, 'ok', '3.000000')
    )
    records, damaged = decode_all(stream)
    assert damaged >= 1 and [r.tag for r in records] == ['ok']


def test_commands_are_tagged_and_ended_as_the_kernel_wants():
    assert urbi.loop('camloop', 'camera.val') == b'camloop: loop {camera.val; noop},\n'
    assert urbi.every('acc', 100, 'accelX.val') == b'acc: every(100ms) accelX.val,\n'
    assert urbi.stop('camloop') == b'stop camloop;\n'
    assert urbi.walk(2000) == b'robot.walk(2000),\n'
    assert urbi.turn(-500) == b'robot.turn(-500),\n'
    assert b'robot.stopwalk();' in urbi.stop_walk()
    assert urbi.motors(True) == b'motor on;\n' and urbi.motors(False) == b'motor off;\n'
    assert urbi.ping() == b'ping;\n'
    assert urbi.assign('headPan', 12.5) == b'headPan = 12.500000;\n'
    assert urbi.posture('sit') == b'robot.sit(),\n'
    with pytest.raises(ValueError, match='valid: sit'):
        urbi.posture('dance')
    for bad in ('', '1tag', 'a b', 'x;stopall'):
        with pytest.raises(ValueError):
            urbi.stop(bad)
    with pytest.raises(ValueError):
        urbi.assign('headPan; motor off', 1)


def test_speaker_wav_is_the_assignment_then_exactly_the_bytes():
    sound = urbi.wav(bytes(3200), 16000, 16)
    with wave.open(io.BytesIO(sound)) as reader:
        assert (reader.getframerate(), reader.getsampwidth(), reader.getnframes()) == (
            16000,
            2,
            1600,
        )
    sent = urbi.speaker_wav(sound)
    head = f'speaker.val = BIN {len(sound)} wav;'.encode()
    assert sent == head + sound


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 64))
def test_fuzz_any_bytes_only_raise_malformed_frame(data, chunk):
    decode_all(data, chunk)  # MalformedFrame is counted; anything else fails the test


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(0, 600))
def test_fuzz_garbage_then_a_good_message_is_always_found(garbage, lie):
    garbage = garbage.replace(b'[', b'(')  # no message start inside the damage
    lie = min(lie, len(garbage) + 5)  # a longer lie waits for bytes a live stream would bring
    stream = (
        urbi.message(5, 'cam', f'BIN {lie} jpeg 208 160')
        + garbage
        + b'\n'
        + urbi.message(9, 'ok', '1.0')
    )
    records, _ = decode_all(stream, 13)
    assert records and records[-1].tag == 'ok'


def test_read_wav_mixes_channels_and_takes_8_and_16_bit():
    stereo = urbi.wav(b'\x10\x00\x30\x00' * 4, 22050, 16, channels=2)
    samples, rate = urbi.read_wav(stereo)
    assert rate == 22050 and samples.tolist() == [32] * 4
    eight, rate = urbi.read_wav(urbi.wav(bytes([128, 255]), 8000, 8))
    assert rate == 8000 and eight.tolist() == [0, 127 * 256]
    with pytest.raises(ValueError, match='not a PCM WAV'):
        urbi.read_wav(b'RIFF nonsense')
