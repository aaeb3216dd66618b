"""P2OS codec against the worked examples of docs/protocols/p2os.md §2.3, plus property tests."""

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legacy_robot_common.errors import MalformedFrame
from p2os_driver.protocol import (
    CONFIG_FIELDS,
    Command,
    GripperPacket,
    IoPacket,
    PacketReceiver,
    PacketType,
    build_packet,
    checksum,
    decode_command,
    decode_config,
    decode_encoders,
    decode_gripper,
    decode_io,
    decode_playlist,
    decode_seraux,
    decode_sip,
    decode_sync2_reply,
    encode_command,
    encode_config,
    encode_encoders,
    encode_gripper,
    encode_io,
    encode_playlist,
    encode_seraux,
    encode_sip,
    encode_sip_tail,
    encode_sync2_reply,
    encode_two_bytes,
    read_gripper_packet_byte,
    read_sip_gripper_byte,
    split_two_bytes,
    unwrap_15bit,
    unwrap_heading,
)

SPEC_EXAMPLES = [
    ('PULSE', encode_command(Command.PULSE), 'fa fb 03 00 00 00'),
    ('OPEN', encode_command(Command.OPEN), 'fa fb 03 01 00 01'),
    ('CLOSE', encode_command(Command.CLOSE), 'fa fb 03 02 00 02'),
    ('ENABLE 1', encode_command(Command.ENABLE, 1), 'fa fb 06 04 3b 01 00 05 3b'),
    ('VEL 200', encode_command(Command.VEL, 200), 'fa fb 06 0b 3b c8 00 d3 3b'),
    ('VEL -200', encode_command(Command.VEL, -200), 'fa fb 06 0b 1b c8 00 d3 1b'),
    ('RVEL -30', encode_command(Command.RVEL, -30), 'fa fb 06 15 1b 1e 00 33 1b'),
    ('SONAR 0', encode_command(Command.SONAR, 0), 'fa fb 06 1c 3b 00 00 1c 3b'),
    ('SETO', encode_command(Command.SETO), 'fa fb 03 07 00 07'),
    ('ENCODER 2', encode_command(Command.ENCODER, 2), 'fa fb 06 13 3b 02 00 15 3b'),
    ('CONFIG', encode_command(Command.CONFIG), 'fa fb 03 12 00 12'),
    ('TTY2 "ab"', encode_command(Command.TTY2, b'ab'), 'fa fb 07 2a 2b 02 61 62 2c ee'),
    ('OPEN int 1', encode_command(Command.OPEN, 1), 'fa fb 06 01 3b 01 00 02 3b'),
    ('CLOSE int 1', encode_command(Command.CLOSE, 1), 'fa fb 06 02 3b 01 00 03 3b'),
]


@pytest.mark.parametrize(
    'name, packet, expected', SPEC_EXAMPLES, ids=[e[0] for e in SPEC_EXAMPLES]
)
def test_spec_worked_packets(name, packet, expected):
    assert packet.hex(' ') == expected


def test_checksum_odd_length_xors_the_last_byte():
    assert checksum(bytes([0x2A, 0x2B, 0x02, 0x61, 0x62])) == 0x2CEE
    assert checksum(b'') == 0


@pytest.mark.parametrize('packet', [e[1] for e in SPEC_EXAMPLES])
def test_server_decodes_what_the_client_sends(packet):
    (body,) = PacketReceiver().feed(packet)
    number, argument = decode_command(body)
    assert number == packet[3]


def test_command_arguments_round_trip():
    assert decode_command(PacketReceiver().feed(encode_command(Command.VEL, -200))[0]) == (
        11,
        -200,
    )
    assert decode_command(PacketReceiver().feed(encode_command(Command.TTY2, 'hi'))[0]) == (
        42,
        b'hi',
    )


def test_old_drivers_malformed_seto_is_accepted_as_no_argument():
    assert decode_command(bytes([0x07, 0x3B])) == (7, None)


def test_string_with_trailing_nul_goes_by_the_length_byte():
    assert decode_command(bytes([0x2A, 0x2B, 0x02, 0x61, 0x62, 0x00])) == (42, b'ab')


@pytest.mark.parametrize(
    'body, message',
    [
        (b'', 'empty'),
        (bytes([0x2A, 0x2B]), 'without a length'),
        (bytes([0x2A, 0x2B, 0x05, 0x61]), 'says 5 bytes'),
        (bytes([0x0B, 0x99, 0, 0]), 'unknown argument type'),
    ],
)
def test_bad_command_bodies(body, message):
    with pytest.raises(MalformedFrame, match=message):
        decode_command(body)


def test_vel2_sent_aria_style_and_rebuilt_by_the_server():
    packet = encode_two_bytes(Command.VEL2, -10, 20)  # left -10, right +20 (× Vel2Divisor)
    assert packet[4] == 0x1B  # negative high byte → NINT
    number, value = decode_command(PacketReceiver().feed(packet)[0])
    assert number == 32 and split_two_bytes(value) == (-10, 20)


@given(st.integers(-128, 127), st.integers(-128, 127))
def test_two_byte_commands_round_trip(high, low):
    _, value = decode_command(PacketReceiver().feed(encode_two_bytes(Command.VEL2, high, low))[0])
    assert split_two_bytes(value) == (high, low)


@pytest.mark.parametrize(
    'argument, error', [(70000, ValueError), (True, TypeError), ('x' * 197, ValueError)]
)
def test_unencodable_arguments(argument, error):
    with pytest.raises(error):
        encode_command(Command.VEL, argument)


def make_sip(
    moving=False,
    x=100,
    y=200,
    theta=-5,
    left=300,
    right=-300,
    battery=121,
    stall=0x0201,
    flags=0x0003,
    sonar=((3, 1000), (4, 2000)),
    gripper=0x12,
    anport=5,
    analog=77,
    digin=0xAA,
    digout=0x55,
    tail=b'',
):
    body = struct.pack(
        '<BHHhhhBHhHBB',
        0x33 if moving else 0x32,
        x,
        y,
        theta,
        left,
        right,
        battery,
        stall,
        0,
        flags,
        90,
        len(sonar),
    )
    for number, rng in sonar:
        body += struct.pack('<BH', number, rng)
    body += bytes([anport, gripper, analog, digin, digout]) + tail
    return body


def test_sip_fields():
    sip = decode_sip(make_sip(moving=True, tail=b'\x79\x04'))
    assert sip.moving and (sip.x, sip.y, sip.theta) == (100, 200, -5)
    assert (sip.left_velocity, sip.right_velocity, sip.battery_decivolts) == (300, -300, 121)
    assert sip.motors_enabled and sip.sonar_enabled and sip.left_stall and not sip.right_stall
    assert sip.bumpers() == ([True, False, False, False, False], [False] * 5)
    assert sip.sonar == [(3, 1000), (4, 2000)]
    assert (
        sip.analog_port,
        sip.gripper_state,
        sip.analog,
        sip.digital_inputs,
        sip.digital_outputs,
    ) == (5, 0x12, 77, 0xAA, 0x55)
    assert sip.extra == b'\x79\x04'


def test_sip_gripper_byte_order_is_configurable():
    sip = decode_sip(make_sip(gripper=0x12, anport=5), gripper_in_high_byte=False)
    assert (sip.gripper_state, sip.analog_port) == (5, 0x12)


def test_sip_position_keeps_15_bits():
    assert decode_sip(make_sip(x=0xFFFF, y=0x8001)).x == 0x7FFF
    assert decode_sip(make_sip(x=0xFFFF, y=0x8001)).y == 1


@pytest.mark.parametrize(
    'body, message',
    [
        (make_sip()[:20], 'too short'),
        (make_sip(sonar=((1, 2),) * 3)[:-4], 'announces 3 sonar readings'),
        (bytes([0x90]) + make_sip()[1:], 'not a standard SIP'),
    ],
)
def test_bad_sips(body, message):
    with pytest.raises(MalformedFrame, match=message):
        decode_sip(body)


def test_small_packets():
    assert decode_encoders(bytes([0x90]) + struct.pack('<ii', -5, 70000)) == (-5, 70000)
    assert decode_gripper(bytes([0xE0, 2, 0x3C, 10])).state == 0x3C
    assert decode_seraux(bytes([0xB0]) + b'xyz') == b'xyz'
    assert decode_sync2_reply(b'\x02MobileSim\x00Pioneer\x00p2dx\x00') == (
        'MobileSim',
        'Pioneer',
        'p2dx',
    )
    for decoder, body in (
        (decode_encoders, b'\x90\x00'),
        (decode_gripper, b'\xe0'),
        (decode_seraux, b'\x20'),
        (decode_sync2_reply, b'\x02name\x00'),
    ):
        with pytest.raises(MalformedFrame):
            decoder(body)


def test_receiver_hunts_through_noise_and_bad_checksums():
    good = build_packet(make_sip())
    corrupted = bytearray(good)
    corrupted[10] ^= 0xFF
    items = PacketReceiver().feed(
        b'\x00\xfa\x17' + bytes(corrupted) + good + b'\xfa\xfb\xff' + good
    )
    bodies = [i for i in items if isinstance(i, bytes)]
    errors = [str(i) for i in items if isinstance(i, MalformedFrame)]
    assert bodies == [make_sip(), make_sip()]
    assert any('bad checksum' in e for e in errors) and any(
        'impossible byte count' in e for e in errors
    )


def test_receiver_reassembles_byte_by_byte():
    receiver = PacketReceiver()
    packets = [build_packet(make_sip()), encode_command(Command.ENABLE, 1)]
    items = [item for byte in b''.join(packets) for item in receiver.feed(bytes([byte]))]
    assert items == [make_sip(), bytes([0x04, 0x3B, 0x01, 0x00])]


def test_receiver_honours_the_p2os_count_limit():
    body = bytes([0x32]) + bytes(220)
    items = PacketReceiver(max_count=200).feed(build_packet(body))
    assert not any(isinstance(i, bytes) for i in items)
    assert PacketReceiver().feed(build_packet(body)) == [body]


@settings(max_examples=300)
@given(
    st.lists(st.binary(min_size=1, max_size=60), max_size=8),
    st.binary(max_size=300),
    st.integers(1, 40),
)
def test_receiver_finds_every_packet_among_garbage_in_any_chunking(bodies, garbage, chunk):
    stream = garbage.replace(b'\xfa', b'') + b''.join(build_packet(b) for b in bodies)
    receiver = PacketReceiver()
    items = [i for k in range(0, len(stream), chunk) for i in receiver.feed(stream[k : k + chunk])]
    assert [i for i in items if isinstance(i, bytes)] == bodies


@settings(max_examples=500)
@given(st.binary(max_size=600))
def test_fuzz_receiver_and_decoders_never_raise_anything_else(data):
    for item in PacketReceiver().feed(data):
        if isinstance(item, bytes):
            for decoder in (
                decode_sip,
                decode_encoders,
                decode_gripper,
                decode_seraux,
                decode_sync2_reply,
                decode_command,
            ):
                try:
                    decoder(item)
                except MalformedFrame:
                    pass


def test_odometry_unwrap_handles_roll_over_and_fast_motion():
    assert unwrap_15bit(0x7FF0, 0x0010) == 0x20  # forward across the wrap
    assert unwrap_15bit(0x0010, 0x7FF0) == -0x20  # backward across the wrap
    assert unwrap_15bit(1000, 1000 + 1800) == 1800  # 1.5 m/s at 10 Hz on a p2dx: never dropped
    assert unwrap_heading(2040, -2040) == 16
    assert unwrap_heading(-2040, 2040) == -16


# ---- packets added for the client and the emulator -----------------------------------


def test_every_command_of_the_spec_table_has_a_number():
    assert (Command.PLAYLIST, Command.SOUND, Command.GETAUX, Command.TTY2) == (91, 90, 43, 42)
    assert (Command.GRIPREQUEST, Command.IOREQUEST, Command.E_STOP, Command.BATTEST) == (
        37,
        40,
        55,
        250,
    )
    assert len({int(c) for c in Command}) >= 70


@pytest.mark.parametrize('high_byte', [True, False])
def test_sip_round_trip_in_both_byte_orders(high_byte):
    sip = decode_sip(
        make_sip(
            tail=encode_sip_tail(battery_x10=1234, charge_state=1, rotational_velocity_x10=-455)
        )
    )
    again = decode_sip(encode_sip(sip, high_byte), high_byte)
    assert again == sip
    assert again.tail == {'battery_x10': 1234, 'charge_state': 1, 'rotational_velocity_x10': -455}


def test_sip_tail_fields_are_parsed_only_when_complete():
    assert decode_sip(make_sip(tail=b'\x10')).tail == {}
    assert decode_sip(make_sip(tail=b'\x10\x04\x02\x05')).tail == {
        'battery_x10': 0x410,
        'charge_state': 2,
    }


def test_config_packet_round_trip_and_lenient_short_packets():
    values = {
        'robot_type': 'Pioneer',
        'subtype': 'p2dx',
        'serial_number': 'X1',
        'name': 'rob',
        'sip_cycle': 100,
        'watchdog': 2000,
        'rot_kp': -3,
        'trans_ki': 7,
    }
    full = decode_config(encode_config(values))
    assert full.fields_present == [n for n, _ in CONFIG_FIELDS].index('trans_ki') + 1
    assert {k: full.values[k] for k in values} == values
    short = decode_config(encode_config(values, last_field='watchdog'))
    assert short.values['watchdog'] == 2000 and short.values['trans_ki'] == 0
    assert short.values['name'] == 'rob'
    cut = decode_config(bytes([0x20]) + b'Pioneer\x00p2d')  # subtype string never ends
    assert cut.fields_present == 1 and cut.values['subtype'] == ''


def test_io_packet_round_trip_and_bad_counts():
    packet = IoPacket(b'\x01\x02', b'\xff', [0, 1023, 2047])
    assert decode_io(encode_io(packet)) == packet
    for body in (b'\xf0', b'\xf0\x03\x01', b'\xf0\x00\x00\x02\x01\x00'):
        with pytest.raises(MalformedFrame):
            decode_io(body)


def test_playlist_round_trip_and_the_p2os_empty_answer():
    entries = [('hello', 0, 9600), ('a-very-long-sound-name', 9600, 10)]
    decoded = decode_playlist(encode_playlist(entries))
    assert decoded == [('hello', 0, 9600), ('a-very-long-soun', 9600, 10)]
    assert encode_playlist([]) == bytes([0xD0]) + bytes(25)
    assert decode_playlist(encode_playlist([])) == []
    with pytest.raises(MalformedFrame, match='announces 2 sounds'):
        decode_playlist(bytes([0xD0, 2]) + bytes(30))


def test_small_server_packets_round_trip():
    assert decode_encoders(encode_encoders(-(2**31), 2**31 - 1)) == (-(2**31), 2**31 - 1)
    assert decode_gripper(encode_gripper(GripperPacket(2, 0x3C, 9))) == GripperPacket(2, 0x3C, 9)
    assert decode_seraux(encode_seraux(b'\x00\xff')) == b'\x00\xff'
    assert decode_sync2_reply(encode_sync2_reply('n', 'Pioneer', 'p2pb')) == (
        'n',
        'Pioneer',
        'p2pb',
    )


@pytest.mark.parametrize(
    'byte, paddles, lift, moving',
    [
        (0b00100001, 'open', 'down', False),
        (0b00010010, 'closed', 'up', False),
        (0b01000100, 'between', 'between', True),
        (0b00110011, 'unknown', 'unknown', False),
    ],
)
def test_sip_gripper_byte_table(byte, paddles, lift, moving):
    reading = read_sip_gripper_byte(byte)
    assert (reading.paddles, reading.lift, reading.paddles_moving) == (paddles, lift, moving)


def test_gripper_packet_byte_is_active_low():
    clear = read_gripper_packet_byte(0b00111100)  # open, at a lift limit, beams clear, no contact
    assert clear.paddles == 'open' and not clear.inner_beam_broken and not clear.outer_beam_broken
    assert not clear.left_paddle_contact and not clear.right_paddle_contact
    gripping = read_gripper_packet_byte(0b11000011)
    assert gripping.paddles == 'closed' and gripping.lift == 'between'
    assert (
        gripping.inner_beam_broken
        and gripping.left_paddle_contact
        and gripping.right_paddle_contact
    )
    assert gripping.paddles_moving and gripping.lift_moving
    assert read_gripper_packet_byte(0b00111101).paddles == 'between'  # not open, no contact


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_fuzz_new_decoders_reject_cleanly(data):
    for decoder in (decode_config, decode_io, decode_playlist):
        for kind in (PacketType.CONFIG, PacketType.IO, PacketType.PLAYLIST):
            try:
                decoder(bytes([kind]) + data)
            except MalformedFrame:
                pass


def test_checksum_is_the_running_sum_of_byte_pairs():
    """The checksum of any body equals the spec's definition, pair by pair mod 2^16."""
    rng = random.Random(7)
    for size in range(0, 260):
        body = bytes(rng.getrandbits(8) for _ in range(size))
        total = 0
        for i in range(0, size - size % 2, 2):
            total = (total + ((body[i] << 8) | body[i + 1])) & 0xFFFF
        if size % 2:
            total ^= body[-1]
        assert checksum(body) == checksum(bytearray(body)) == total
