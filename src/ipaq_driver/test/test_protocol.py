"""The iPaq codec against the worked packets of docs/protocols/ipaq.md §2.2, round trips, and
property/fuzz tests."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ipaq_driver import protocol as p
from legacy_robot_common.errors import MalformedFrame

L = p.Letter


# ---- framing: the worked packets (§2.2) -------------------------------------------------
@pytest.mark.parametrize(
    'packet, wire',
    [
        (p.encode_command(L.STOP_TRACKING), 'ff 38 4e 4e ff 37'),
        (p.encode_safety(255), 'ff 38 53 ff ff 52 ff 37'),
        (p.encode_safety(0), 'ff 38 53 00 53 ff 37'),
    ],
)
def test_spec_examples_byte_for_byte(packet, wire):
    assert packet == bytes.fromhex(wire)


def test_checksum_includes_the_letter_and_is_taken_before_stuffing():
    packet = p.encode_set_parameters(p.SetParameters(255, 255, 255, 255, 255, 255))
    body = p.FrameReceiver().feed(packet)[0]
    assert body == b'P' + b'\xff' * 6 + bytes([(ord('P') + 6 * 255) % 256])
    assert packet.count(b'\xff\xff') == 6 + (body[-1] == 255)


def test_checksum_over_stuffed_bytes_variant_counts_each_255_twice():
    data = b'S\xff'
    assert p.checksum(data) == (83 + 255) % 256
    assert p.checksum(data, over_stuffed=True) == (83 + 255 + 255) % 256
    body = p.FrameReceiver().feed(p.encode_safety(255, over_stuffed=True))[0]
    assert p.decode_command(body, over_stuffed=True).fields == b'\xff'
    with pytest.raises(p.PacketError):
        p.decode_command(body)


def test_payload_full_of_255_survives_stuffing():
    payload = b'\xff' * 40
    packet = p.encode_pass_through(L.BRAINSTEM, payload)
    assert b'\xff\x37' not in packet[2:-2].replace(b'\xff\xff', b'')
    command = p.decode_command(p.FrameReceiver().feed(packet)[0])
    assert command == p.Command(L.BRAINSTEM, payload)


# ---- commands -----------------------------------------------------------------------------
def _parse(packet):
    (body,) = p.FrameReceiver().feed(packet)
    return p.decode_command(body)


def test_every_command_round_trips():
    params = p.SetParameters(
        vel_timeout=10,
        vel=200,
        direction=128,
        pan=90,
        tilt=255,
        mask=p.MaskBits().mask('vel', 'direction', 'tilt'),
    )
    command = _parse(p.encode_set_parameters(params))
    assert command.letter is L.SET_PARAMETERS
    assert p.decode_set_parameters(command.fields) == params
    command = _parse(p.encode_set_integration(0xFFFF, 1234, 0x8000, 0b101))
    assert p.decode_set_integration(command.fields) == (0xFFFF, 1234, 0x8000, 0b101)
    for mode, letter in enumerate(p.COLOR_TRACKING):
        command = _parse(p.encode_color_tracking(mode, (200, 240, 16, 40, 16, 40)))
        assert command == p.Command(letter, bytes((200, 240, 16, 40, 16, 40)))
    for mode, letter in enumerate(p.WINDOW_TRACKING):
        assert _parse(p.encode_window_tracking(mode)) == p.Command(letter, b'')
    assert _parse(p.encode_command(L.STOP_TRACKING)) == p.Command(L.STOP_TRACKING, b'')
    assert _parse(p.encode_command(L.DUMP_FRAME)) == p.Command(L.DUMP_FRAME, b'')
    assert _parse(p.encode_safety(77)) == p.Command(L.SAFETY, b'\x4d')
    assert _parse(p.encode_pass_through(L.CMUCAM, 'GV')) == p.Command(L.CMUCAM, b'GV')
    assert (
        p.encode_pass_through(L.CMUCAM, 'GV')
        == bytes.fromhex('ff 38 43 02 47 56')
        + bytes([(0x43 + 2 + 0x47 + 0x56) % 256])
        + b'\xff\x37'
    )


def test_bad_commands_get_the_statuses_the_ipaq_answers():
    with pytest.raises(p.PacketError) as bad_sum:
        p.decode_command(b'N\x00')
    assert bad_sum.value.status == p.Status.BAD_CHECKSUM
    with pytest.raises(p.PacketError) as unknown:
        p.decode_command(p.with_checksum(b'Q'))
    assert unknown.value.status == p.Status.UNKNOWN_TYPE
    with pytest.raises(p.PacketError) as short:
        p.decode_command(p.with_checksum(b'S'))  # distance byte missing
    assert short.value.status == p.Status.UNKNOWN_TYPE
    with pytest.raises(p.PacketError):
        p.decode_command(p.with_checksum(b'C\x05GV'))  # length says 5, 2 follow


@pytest.mark.parametrize(
    'call',
    [
        lambda: p.encode_set_parameters(p.SetParameters(vel=256)),
        lambda: p.encode_set_integration(70000, 0, 0, 1),
        lambda: p.encode_color_tracking(4, (0, 1, 0, 1, 0, 1)),
        lambda: p.encode_color_tracking(0, (10, 5, 0, 1, 0, 1)),
        lambda: p.encode_color_tracking(0, (0, 1)),
        lambda: p.encode_window_tracking(-1),
        lambda: p.encode_pass_through(L.CMUCAM, ''),
        lambda: p.encode_pass_through(L.BRAINSTEM, bytes(256)),
        lambda: p.MaskBits(vel=0),
    ],
)
def test_invalid_command_values_are_refused(call):
    with pytest.raises(ValueError):
        call()


def test_mask_bits_follow_the_field_order_and_can_be_moved():
    assert p.MaskBits().mask('vel_timeout', 'tilt', 'kill_motor', 'init_brainstem') == 0b1110001
    assert p.MaskBits(vel=3, pan=1).mask('vel') == 0b1000


# ---- responses --------------------------------------------------------------------------
def test_responses_round_trip_and_are_told_apart_by_length():
    full = p.FullResponse(0, 120, 0x1234, 0xFFFF, 0xFF00, 7, 0x8001)
    receiver = p.FrameReceiver()
    bodies = receiver.feed(
        p.encode_mini(p.Status.CAMERA_TIMEOUT)
        + p.encode_full(full)
        + p.encode_string(0, b'ACK\rCMUcam v1.12 ')
        + p.encode_string(0, b'')
    )
    decoded = [p.decode_response(b) for b in bodies]
    assert decoded == [
        p.MiniResponse(10),
        full,
        p.StringResponse(0, b'ACK\rCMUcam v1.12 '),
        p.StringResponse(0, b''),
    ]


def test_bad_responses_are_malformed():
    with pytest.raises(MalformedFrame):
        p.decode_response(b'\x00\x01')  # checksum
    with pytest.raises(MalformedFrame):
        p.decode_response(p.with_checksum(b'\x00\x05ab'))  # string length
    with pytest.raises(MalformedFrame):
        p.decode_response(b'')


def test_unframed_response_lengths():
    F, M, S = p.ResponseKind.FULL, p.ResponseKind.MINI, p.ResponseKind.STRING
    assert p.unframed_response_length(F, b'') is None
    assert p.unframed_response_length(F, b'\x00') == 13
    assert p.unframed_response_length(F, b'\x02') == 2  # error → Mini
    assert p.unframed_response_length(M, b'\x00') == 2
    assert p.unframed_response_length(S, b'\x00') is None
    assert p.unframed_response_length(S, b'\x00\x04') == 7


def test_response_kinds():
    assert p.response_kind(L.SET_PARAMETERS) is p.ResponseKind.FULL
    assert p.response_kind(L.CMUCAM) is p.ResponseKind.STRING
    assert p.response_kind(L.WINDOW_TRACK_NO_MOVE) is p.ResponseKind.MINI


# ---- receiver state machine -------------------------------------------------------------------
def test_receiver_restarts_on_start_and_reports_junk():
    items = p.FrameReceiver().feed(b'xy\xff\x38abc\xff\x38N\x4e\xff\x37\xff\x36\xff\x10')
    assert isinstance(items[0], MalformedFrame) and '2 bytes outside' in str(items[0])
    assert isinstance(items[1], MalformedFrame) and 'restarted' in str(items[1])
    assert items[2] == b'N\x4e'
    assert isinstance(items[3], p.Terminate)
    assert isinstance(items[4], MalformedFrame)


def test_receiver_limits_packet_length():
    items = p.FrameReceiver(max_length=10).feed(b'\xff\x38' + bytes(20) + b'\xff\x37')
    assert isinstance(items[0], MalformedFrame)
    assert len(items) == 2 and isinstance(items[1], MalformedFrame)  # the lone END


# ---- stream ports --------------------------------------------------------------------------
def _scene(rows=143, columns=80):
    rng = np.random.default_rng(1)
    return rng.integers(16, 241, size=(rows, columns, 3), dtype=np.uint8)


def test_tracking_packets_and_bitmaps_alternate_in_line_mode():
    tracking = p.TrackingPacket(128, 100, 40, 71, 12, 9, 255, 180)
    bitmap = np.zeros((48, 80), dtype=np.uint8)
    bitmap[20:30, 35:45] = 1
    bitmap[0, 0] = bitmap[47, 79] = 1
    data = p.encode_bitmap(bitmap) + p.encode_tracking(tracking)
    items = p.StreamDecoder().feed(data)
    assert items[1] == tracking
    assert isinstance(items[0], p.Bitmap)
    np.testing.assert_array_equal(items[0].pixels, bitmap)
    assert len(p.FrameReceiver().feed(p.encode_bitmap(bitmap))[0]) == 480


def test_cmucam2_bitmap_carries_its_size():
    camera = p.CameraFormat(generation=2)
    bitmap = np.eye(12, 20, dtype=np.uint8)
    (item,) = p.StreamDecoder(camera).feed(p.encode_bitmap(bitmap, camera))
    np.testing.assert_array_equal(item.pixels, bitmap)


def test_frame_dump_cmucam1_columns():
    scene = _scene()
    data = p.encode_frame_dump(scene)
    assert data.startswith(b'ACK\r\x01') and data.endswith(b'\x03:')
    assert data.count(b'\x02') == 79 and len(data) == 4 + 1 + 80 * 143 * 3 + 79 + 2
    (item,) = p.StreamDecoder().feed(data)
    np.testing.assert_array_equal(item.pixels, scene)


def test_frame_dump_cmucam2_rows_with_size():
    camera = p.CameraFormat(generation=2)
    scene = _scene(rows=40, columns=87)
    (item,) = p.StreamDecoder(camera).feed(p.encode_frame_dump(scene, camera))
    np.testing.assert_array_equal(item.pixels, scene)


def test_truncated_or_wrong_size_frame_dumps_are_malformed():
    scene = _scene()
    short = p.encode_frame_dump(scene[:, :79])
    items = p.StreamDecoder().feed(short + p.encode_frame_dump(scene))
    assert isinstance(items[0], MalformedFrame) and '79 lines' in str(items[0])
    assert isinstance(items[1], p.FrameDump)
    items = p.StreamDecoder().feed(b'ACK\r\x01' + bytes([20]) * 50 + b'\x03X')
    assert [type(i) for i in items] == [MalformedFrame, MalformedFrame]


def test_a_dump_between_tracking_packets_is_recognised_by_content():
    tracking = p.TrackingPacket(1, 2, 3, 4, 5, 6, 7, 8)
    scene = _scene()
    items = p.StreamDecoder().feed(
        p.encode_tracking(tracking) + p.encode_frame_dump(scene) + p.encode_tracking(tracking)
    )
    assert [type(i) for i in items] == [p.TrackingPacket, p.FrameDump, p.TrackingPacket]


def test_bad_tracking_checksum_is_reported_and_the_stream_goes_on():
    good = p.encode_tracking(p.TrackingPacket(1, 2, 3, 4, 5, 6, 7, 8))
    bad = bytearray(good)
    bad[-3] ^= 1
    items = p.StreamDecoder().feed(bytes(bad) + good)
    assert isinstance(items[0], MalformedFrame) and 'checksum' in str(items[0])
    assert isinstance(items[1], p.TrackingPacket)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 255),
            st.integers(0, 255),
        ),
        min_size=1,
        max_size=8,
    ),
    st.binary(max_size=30),
    st.data(),
)
def test_every_item_is_found_in_any_chunking_among_junk(fields, junk, data):
    junk = junk.replace(b'\xff', b'').replace(b'A', b'')
    packets = [p.TrackingPacket(*f) for f in fields]
    scene = _scene()
    stream = (
        junk
        + b''.join(p.encode_tracking(t) for t in packets)
        + p.encode_frame_dump(scene)
        + junk
        + p.encode_tracking(packets[0])
    )
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=12)))
    decoder = p.StreamDecoder()
    items = []
    for start, end in zip([0] + cuts, cuts + [len(stream)], strict=False):
        items += decoder.feed(stream[start:end])
    good = [i for i in items if not isinstance(i, MalformedFrame)]
    assert good[:-2] == packets and good[-1] == packets[0]
    np.testing.assert_array_equal(good[-2].pixels, scene)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_fuzz_never_raises(data):
    for item in p.StreamDecoder().feed(data):
        assert isinstance(item, (MalformedFrame, p.TrackingPacket, p.Bitmap, p.FrameDump))
    for body in p.FrameReceiver().feed(data):
        if isinstance(body, bytes):
            for decode in (p.decode_command, p.decode_response):
                try:
                    decode(body)
                except MalformedFrame:
                    pass


def test_brainstem_packets_and_command_letters():
    assert p.encode_brainstem(2, bytes([30, 0x80])) == bytes([2, 2, 30, 0x80])
    assert p.decode_brainstem(bytes([4, 3, 62, 1, 9])) == p.BrainStemPacket(4, bytes([62, 1, 9]))
    for bad in (b'\x02', bytes([2, 3, 30]), bytes([2, 9]) + bytes(9)):
        with pytest.raises(MalformedFrame):
            p.decode_brainstem(bad)
    with pytest.raises(ValueError):
        p.encode_brainstem(2, bytes(9))
    assert p.command_letter(p.encode_safety(255)) is L.SAFETY
