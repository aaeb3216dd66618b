"""The Nabaztag codec against the byte vectors of docs/protocols/nabaztag.md §4.7, and round
trips for what has none."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legacy_robot_common.errors import MalformedFrame
from nabaztag_bridge import choreography as chor
from nabaztag_bridge import protocol as p
from nabaztag_bridge import recording

# OpenNab's default reply (nabaztag.md §4.7): a message block "ID 2147483647\n" with first byte 01,
# an old-format ambient block of 23 bytes, ping interval 120 s, then FF 0A.
OPENNAB_DEFAULT = bytes.fromhex(
    '7F 0A00000F 01 1E5B4FE10C6BCE3BA71289B3CEC5'
    ' 04000017 7FFFFFFF' + ' 00' * 19 + ' 03000001 78 FF 0A'
)


# ---- packets ----------------------------------------------------------------------------
def test_the_seeds_two_block_example_with_big_endian_lengths():
    packet = p.encode_packet([p.ping_interval_block(5), p.reboot_block()], trailing_newline=True)
    assert packet == bytes.fromhex('7F 03 000001 05 09 000000 FF 0A')
    assert p.decode_packet(packet) == [p.Block(3, b'\x05'), p.Block(9, b'')]


def test_opennab_default_packet_decodes_block_by_block():
    message, ambient, interval = p.decode_packet(OPENNAB_DEFAULT)
    assert message.data[0] == 1 and p.message_text(message.data) == 'ID 2147483647\n'
    assert p.decode_ambient(ambient.data) == p.Ambient((), (0, 0), 0)
    assert interval == p.ping_interval_block(120)
    rebuilt = p.encode_packet(
        [p.message_block('ID 2147483647\n', first_byte=1), ambient, interval],
        trailing_newline=True,
    )
    assert rebuilt == OPENNAB_DEFAULT


def test_violets_ambient_example_ears_10_and_3():
    block = p.ambient_block(p.Ambient(ears=(10, 3)))
    assert p.encode_packet([block]) == bytes.fromhex(
        '7F 04 000017 7FFFFFFF' + ' 00' * 16 + ' 0A 03 00 FF'
    )


def test_ambient_services_and_nose_blinks_lengths_23_24_25():
    ambient = p.Ambient(((1, 3), (6, 1), (14, 80)), (16, 0), 0)
    data = p.ambient_block(ambient).data
    assert len(data) == 23 and data[4:10] == bytes([1, 3, 6, 1, 14, 80])
    assert p.decode_ambient(data) == ambient
    for blinks, length in ((1, 24), (2, 25)):
        block = p.ambient_block(p.Ambient(nose_blinks=blinks))
        assert len(block.data) == length and p.decode_ambient(block.data).nose_blinks == blinks
    with pytest.raises(ValueError, match='8 slots'):
        p.ambient_block(p.Ambient(services=((1, 1),) * 9))
    with pytest.raises(ValueError, match='0, 1 or 2'):
        p.ambient_block(p.Ambient(nose_blinks=3))
    with pytest.raises(MalformedFrame, match='≥ 22'):
        p.decode_ambient(bytes(21))


@pytest.mark.parametrize(
    'packet, problem',
    [
        (b'', 'starts with 7F'),
        (bytes.fromhex('00 03000001 05 FF'), 'starts with 7F'),
        (bytes.fromhex('7F 03000001 05'), 'FF terminator'),
        (bytes.fromhex('7F FF'), 'empty packet'),
        (bytes.fromhex('7F 0B000001 01 FF'), 'type 11'),
        (bytes.fromhex('7F 03 0000'), 'block header'),
        (bytes.fromhex('7F 03000009 05 FF'), 'past the end'),
    ],
)
def test_what_the_rabbit_refuses_is_malformed(packet, problem):
    with pytest.raises(MalformedFrame, match=problem):
        p.decode_packet(packet)


def test_encoder_refuses_what_the_rabbit_would_refuse():
    with pytest.raises(ValueError, match='at least one block'):
        p.encode_packet([])
    with pytest.raises(ValueError, match='block type 11'):
        p.encode_packet([p.Block(11, b'\x01')])
    for seconds in (0, 256):
        with pytest.raises(ValueError, match='1..255'):
            p.ping_interval_block(seconds)


blocks = st.lists(
    st.builds(p.Block, st.integers(0, 10), st.binary(max_size=40)), min_size=1, max_size=6
)


@given(blocks, st.booleans())
def test_packets_round_trip(packet_blocks, newline):
    assert p.decode_packet(p.encode_packet(packet_blocks, newline)) == packet_blocks


@settings(max_examples=300)
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_malformed(data):
    try:
        p.decode_packet(data)
    except MalformedFrame:
        pass


# ---- obfuscation and programs -----------------------------------------------------------
def test_obfuscation_vector_both_directions():
    coded = bytes.fromhex('1E5B4FE10C6BCE3BA71289B3CEC5')
    assert p.deobfuscate(coded) == b'ID 2147483647\n'
    assert p.obfuscate(b'ID 2147483647\n') == coded


@given(st.binary(max_size=200))
def test_obfuscation_round_trips(plain):
    assert p.deobfuscate(p.obfuscate(plain)) == plain


def test_message_block_keeps_its_first_byte_clear():
    block = p.message_block('ID 5\nMW\n', first_byte=0)
    assert block.type == 0x0A and block.data[0] == 0
    assert block.data[1:] == p.obfuscate(b'ID 5\nMW\n')
    with pytest.raises(MalformedFrame):
        p.message_text(b'')


def test_program_text_and_parse():
    program = p.Program(934170, (('ST', 'http://radio/x.mp3'), ('PL', '1'), ('MW', '')))
    text = p.program_text(program)
    assert text == 'ID 934170\nST http://radio/x.mp3\nPL 1\nMW\n'
    assert p.parse_program(text.replace('\n', '\r\n')) == program
    colour = p.palette_colour(3, 255, 128, 0)
    assert colour == 0x03FF8000
    assert p.parse_program(f'ID 1\nCL {colour}\n').commands == (('CL', str(colour)),)


@pytest.mark.parametrize(
    'text, problem',
    [
        ('MU http://x/a.mp3\n', 'starts with an ID'),
        ('ID 0x10\n', 'decimal'),
        ('ID 1\nCL 0xFF0000\n', 'decimal'),
        ('ID 1\nPL 8\n', '0..7'),
        ('ID 1\nMU\n', 'needs a URL'),
        ('ID 1\nXX yes\n', 'unknown program command'),
    ],
)
def test_bad_programs_are_refused_with_the_reason(text, problem):
    with pytest.raises(MalformedFrame, match=problem):
        p.parse_program(text)


def test_broadcast_prefix_is_replaced_by_the_locate_value():
    assert (
        p.resolve_url('broadcast/chorlibrary/x', 'h:1/broadcast') == 'h:1/broadcast/chorlibrary/x'
    )
    assert p.resolve_url('http://elsewhere/a.mp3', 'h:1') == 'http://elsewhere/a.mp3'


# ---- the ping query ---------------------------------------------------------------------
@pytest.mark.parametrize(
    'sd, kind, ears',
    [
        ('0', 'ping', ()),
        ('1', 'double_click', ()),
        ('2', 'end_of_message', ()),
        ('3', 'click', ()),
        ('5', 'click_while_playing', ()),
        ('8a05', 'ears_moved', (10, 5)),
        ('9003', 'ears_moved', (16, 3)),
        ('4', 'unknown', ()),
        ('6', 'unknown', ()),
    ],
)
def test_sd_values(sd, kind, ears):
    event = p.decode_sd(sd)
    assert (event.kind, event.ears) == (kind, ears)


def test_sd_encoding_matches_the_bytecode():
    assert p.encode_sd('ears_moved', (10, 5)) == '8a05'
    assert p.encode_sd('ears_moved', (16, 0)) == '9000'
    assert p.encode_sd('end_of_message') == '2'


@pytest.mark.parametrize('bad', ['', 'zz', '-1', '123456789', '0x5'])
def test_bad_hex_query_values(bad):
    with pytest.raises(MalformedFrame):
        p.decode_sd(bad)
    with pytest.raises(MalformedFrame):
        p.decode_tc(bad)


def test_tc_states():
    assert p.decode_tc('e411a') == 934170
    assert [p.state_from_tc(p.decode_tc(t)) for t in ('0', '7fffffff', '7ffffffe', 'e411a')] == [
        'booting',
        'idle',
        'asleep',
        'playing',
    ]


def test_serials_and_rfid_ids():
    assert p.normalize_serial('00:19:DB:9D:BB:96') == '0019db9dbb96'
    assert p.normalize_rfid('d0:02:0c:c1:1e:cb:0d:02') == 'd0020cc11ecb0d02'
    for bad in ('', '0019db9dbb9', '0019db9dbb9g', '../../etc/pa'):
        with pytest.raises(MalformedFrame):
            p.normalize_serial(bad)
    with pytest.raises(MalformedFrame):
        p.normalize_rfid('d0021a0352d64ce')


# ---- locate and bytecode ----------------------------------------------------------------
@pytest.mark.parametrize(
    'reply',
    [
        'ping 10.0.0.2:8080\r\nbroad 10.0.0.2:8080/b\r\n\r\n',
        'ping 10.0.0.2:8080\nbroad 10.0.0.2:8080/b',
        'broad 10.0.0.2:8080/b\nping 10.0.0.2:8080\n',
    ],
)
def test_locate_line_endings(reply):
    values = p.parse_locate(reply)
    assert values['ping'] == '10.0.0.2:8080' and values['broad'] == '10.0.0.2:8080/b'


def test_locate_needs_ping_and_broad():
    assert p.parse_locate(p.locate_reply('h:1', 'h:1/b')) == {'ping': 'h:1', 'broad': 'h:1/b'}
    with pytest.raises(MalformedFrame):
        p.parse_locate('ping h:1\nbroad \n')


def test_bytecode_wrapper():
    data = p.wrap_bytecode(b'\x01\x02 /vl/p4.jsp?sn=')
    assert data.startswith(b'amber00000011') and data.endswith(b'Mind')
    assert p.check_bytecode(data) == 17
    for bad in (b'', b'amber0000zzzz', data[:-1], data[:-4] + b'Mine', b'amber00000001xMindx'):
        with pytest.raises(MalformedFrame, match='not a bytecode'):
            p.check_bytecode(bad)


# ---- choreographies ---------------------------------------------------------------------
def test_the_seeds_choreography_example():
    data = chor.build([chor.Step(0, 0x07, (2, 255, 0, 0, 0, 0))])
    assert data == bytes.fromhex('00000008 00 07 02 FF 00 00 00 00 00000000')
    assert chor.parse(data) == [chor.Step(0, 7, (2, 255, 0, 0, 0, 0))]


def test_every_opcode_round_trips_and_times():
    steps = [
        chor.Step(0, 0x01, (10,)),
        chor.Step(0, 0x07, (4, 1, 2, 3, 0, 0)),
        chor.Step(5, 0x08, (1, 16, 1)),
        chor.Step(0, 0x09, (9, 8, 7)),
        chor.Step(2, 0x0A, (3,)),
        chor.Step(0, 0x0E, (0, 7)),
        chor.Step(1, 0x10, ()),
        chor.Step(0, 0x11, (0, 3)),
        chor.Step(0, 0x12, (4, 0, 12)),
        chor.Step(3, 0x13, ()),
        chor.Step(0, 0x14, (1, 1)),
    ]
    data = chor.build(steps)
    assert int.from_bytes(data[:4], 'big') == len(data) - 8
    assert chor.parse(data) == steps
    times = [round(t, 3) for t, _ in chor.timeline(steps)]
    # tick = 10 ms x tempo 10 = 0.1 s; the first wait is skipped
    assert times == [0.0, 0.0, 0.5, 0.5, 0.7, 0.7, 0.8, 0.8, 0.8, 1.1, 1.1]


def test_tempo_is_zero_until_set():
    steps = [
        chor.Step(9, 0x07, (0, 1, 1, 1, 0, 0)),
        chor.Step(50, 0x0A, (0,)),
        chor.Step(0, 0x01, (20,)),
        chor.Step(5, 0x0A, (1,)),
    ]
    assert [t for t, _ in chor.timeline(steps)] == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize(
    'step, problem',
    [
        (chor.Step(0, 0x02, ()), 'unknown choreography opcode 2'),
        (chor.Step(0, 0x07, (5, 0, 0, 0, 0, 0)), 'led 5 is not 0..4'),
        (chor.Step(0, 0x08, (2, 0, 0)), 'motor 2'),
        (chor.Step(0, 0x08, (0, 3)), 'takes 3 values'),
        (chor.Step(0, 0x0E, (1, 8)), 'slot 8'),
        (chor.Step(256, 0x10, ()), 'wait 256'),
    ],
)
def test_bad_steps_are_refused(step, problem):
    with pytest.raises(ValueError, match=problem):
        chor.build([step])


def test_parser_stops_like_the_rabbit_or_raises_when_strict():
    good = chor.build([chor.Step(0, 1, (10,))])
    unknown = good[:-4] + bytes([0, 0x02])
    with pytest.raises(MalformedFrame, match='unknown opcode 2'):
        chor.parse(unknown)
    assert chor.parse(unknown, strict=False) == [chor.Step(0, 1, (10,))]
    truncated = good[:-4] + bytes([0, 0x07, 1])
    with pytest.raises(MalformedFrame, match='truncated led'):
        chor.parse(truncated)
    with pytest.raises(MalformedFrame, match='header'):
        chor.parse(b'\x00\x00')
    # extracted Violet files carry 01010101 as the header: ignored like the rabbit does
    assert chor.parse(b'\x01\x01\x01\x01' + good[4:]) == [chor.Step(0, 1, (10,))]


@settings(max_examples=300)
@given(st.binary(max_size=80))
def test_random_choreographies_parse_or_raise_malformed(data):
    try:
        strict = chor.parse(data)
    except MalformedFrame:
        strict = None
    if len(data) >= 4:  # the rabbit's way never raises: it plays what it could read
        lenient = chor.parse(data, strict=False)
        assert strict is None or lenient == strict


# ---- recordings -------------------------------------------------------------------------
def test_wav_header_fields_are_the_rabbits():
    wav = recording.encode_wav(recording.tone(1.0))
    data_size = len(wav) - recording.HEADER_SIZE
    assert data_size % 256 == 0
    fields = struct.unpack_from('<4sI4s4sIHHIIHHHH4sII4sI', wav)
    assert fields == (
        b'RIFF',
        data_size + 52,
        b'WAVE',
        b'fmt ',
        20,
        0x11,
        1,
        8000,
        4055,
        256,
        4,
        2,
        505,
        b'fact',
        4,
        (data_size >> 8) * 505,
        b'data',
        data_size,
    )


def test_adpcm_block_layout_by_hand():
    # one block: first sample 100, step index 0, then codes 0x1 (+) and 0x9 (-) alternating
    block = struct.pack('<hBB', 100, 0, 0) + bytes([0x91]) * 252
    samples = recording.decode_blocks(block)
    assert len(samples) == 505 and samples[0] == 100
    # code 1 at step 7: +(7>>3)+(7>>2) = +1, index 0; code 9: -1 → 101, 100, 101, ...
    assert list(samples[1:5]) == [101, 100, 101, 100]


def test_adpcm_round_trip_keeps_the_sound():
    pcm = recording.tone(2.0)
    decoded, rate = recording.decode_wav(recording.encode_wav(pcm))
    assert rate == 8000 and len(decoded) >= len(pcm)
    error = decoded[: len(pcm)].astype(float) - pcm
    snr = 10 * np.log10(np.mean(pcm.astype(float) ** 2) / np.mean(error[505:] ** 2))
    assert snr > 20


def test_pcm_wav_is_accepted_too():
    pcm = np.array([0, 1000, -1000, 32767], dtype=np.int16)
    wav = (
        b'RIFF'
        + struct.pack('<I', 36 + 8)
        + b'WAVE'
        + b'fmt '
        + struct.pack('<IHHIIHH', 16, 1, 1, 8000, 16000, 2, 16)
        + b'data'
        + struct.pack('<I', 8)
        + pcm.tobytes()
    )
    decoded, rate = recording.decode_wav(wav)
    assert rate == 8000 and list(decoded) == list(pcm)


@pytest.mark.parametrize(
    'wav, problem',
    [
        (b'not a wav', 'RIFF/WAVE'),
        (b'RIFF\x04\x00\x00\x00WAVE', 'fmt or data'),
        (
            recording.wav_header(0)[:20].replace(b'\x14\x00\x00\x00', b'\x02\x00\x00\x00')
            + b'xx'
            + b'data\x00\x00\x00\x00',
            'shorter than 16',
        ),
        (
            recording.wav_header(256).replace(b'\x01\x00\x40\x1f', b'\x02\x00\x40\x1f')
            + bytes(256),
            '2-channel',
        ),
        (recording.wav_header(256).replace(b'\x11\x00', b'\x55\x00', 1) + bytes(256), '0x0055'),
        (recording.wav_header(2) + b'\x00\x00', 'no header'),
        (recording.wav_header(4) + b'\x00\x00\x59\x00', 'step index 89'),
    ],
)
def test_bad_recordings(wav, problem):
    with pytest.raises(MalformedFrame, match=problem):
        recording.decode_wav(wav)


@settings(max_examples=200)
@given(st.binary(max_size=300))
def test_random_recordings_decode_or_raise_malformed(data):
    try:
        recording.decode_wav(b'RIFF\x00\x00\x00\x00WAVE' + data)
    except MalformedFrame:
        pass
