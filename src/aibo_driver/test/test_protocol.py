"""The AIBO telemetry codec against hand-built byte vectors, for every variant AiboPet's page
leaves open (docs/protocols/aibo.md §6.1)."""

import io
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from aibo_driver import protocol as p
from legacy_robot_common.errors import MalformedFrame

Op = p.Op


# ---- opcodes, version, reply sizes --------------------------------------------------------------
def test_opcode_map_defaults_overrides_and_aliases():
    default = p.OpcodeMap()
    assert default.request(Op.GET_VERSION) == b'\x01' and default.byte[Op.GET_ARRAY_RAW] == 11
    custom = p.OpcodeMap({'get_yuv10': 0x40, 'GET_VER': 0x41, 'get_semantic_event': 0x42})
    assert custom.byte[Op.GET_YUV10] == 0x40 and custom.byte[Op.GET_VERSION] == 0x41
    assert custom.byte[Op.GET_SEMANTIC] == 0x42 and custom.op[0x40] is Op.GET_YUV10
    with pytest.raises(ValueError, match='share the byte 2'):
        p.OpcodeMap({'get_yuv10': 2})
    with pytest.raises(ValueError, match='0..255'):
        p.OpcodeMap({'get_audio': 256})
    with pytest.raises(ValueError):
        p.OpcodeMap({'get_coffee': 3})


def test_version_reply():
    raw = b'AiboPet\x00' + bytes([2, 51, 1, 0])
    version = p.decode_version(raw)
    assert (version.major, version.minor, version.type_byte) == (2, 51, 1)
    assert version.number == 251 and str(version) == '2.51'
    assert p.encode_version(version) == raw
    types = {p.Product.RCODEPLUS: 0, p.Product.LIFEPLUS: 1}
    assert p.product_of(version, types) is p.Product.LIFEPLUS
    assert p.product_of(p.Version(2, 52, 9), types) is p.Product.UNKNOWN
    with pytest.raises(MalformedFrame, match='AiboPet'):
        p.decode_version(b'HTTP/1.0 200')
    with pytest.raises(MalformedFrame, match='11 bytes'):
        p.decode_version(raw[:11])


def test_standard_reply_sizes():
    assert p.encode_reply(b'abc') == b'\x03\x00\x00\x00abc'
    assert p.reply_size(struct.pack('<I', 32000)) == 32000
    with pytest.raises(p.StreamLost):
        p.reply_size(struct.pack('<I', 32001))


@pytest.mark.parametrize(
    'op, good, bad',
    [
        (Op.GET_YUV10, [31680], [31679, 31681, 6336]),
        (Op.GET_COLOR_IMAGE, [6336], [6335, 31680]),
        (Op.GET_AUDIO, [2056 * 2, 2056 * 10], [2056, 2056 * 11, 2057 * 2]),
        (Op.GET_VOICE_DATA, [80], [72, 88]),
        (Op.GET_SEMANTIC, [44, 88, 44 * 30], [43, 45]),
        (Op.GET_JPEG, [4, 32000], [3]),
    ],
)
def test_every_decoder_checks_the_exact_sizes(op, good, bad):
    for size in good:
        p.check_size(op, size)
    for size in bad:
        with pytest.raises(MalformedFrame):
            p.check_size(op, size)


def test_jpeg_needs_its_markers():
    p.check_jpeg(b'\xff\xd8 payload \xff\xd9')
    with pytest.raises(MalformedFrame):
        p.check_jpeg(b'\xff\xd8 truncated')


def with_jpeg_size(data, height, width):
    """A JPEG whose SOF0 header claims another size (the picture data stays as it was)."""
    sof = data.index(b'\xff\xc0')
    return data[: sof + 5] + height.to_bytes(2, 'big') + width.to_bytes(2, 'big') + data[sof + 9 :]


def test_jpeg_decoder_refuses_other_formats_and_absurd_sizes():
    # regression (fault suite, 1,000,000 inputs): a header claiming 3.5 billion pixels raised
    # Pillow's DecompressionBombError, which no caller expects; other formats opened too
    image = np.zeros((144, 176, 3), dtype=np.uint8)
    jpeg = p.encode_jpeg(image)
    with pytest.raises(MalformedFrame, match='decompression bomb'):  # Pillow's own check
        p.decode_jpeg(with_jpeg_size(jpeg, 60000, 60000))
    with pytest.raises(MalformedFrame, match='claims 144×1100'):
        p.decode_jpeg(with_jpeg_size(jpeg, 1100, 144))
    png = io.BytesIO()
    Image.fromarray(image).save(png, 'PNG')
    with pytest.raises(MalformedFrame, match='does not decode'):
        p.decode_jpeg(png.getvalue())
    assert p.decode_jpeg(jpeg).shape == (144, 176, 3)


def test_jpeg_round_trip_and_garbage():
    image = np.zeros((144, 176, 3), dtype=np.uint8)
    image[:, 88:] = (200, 60, 150)
    data = p.encode_jpeg(image, quality=95)
    p.check_jpeg(data)
    assert np.abs(p.decode_jpeg(data).astype(int) - image).mean() < 3
    with pytest.raises(MalformedFrame, match='does not decode'):
        p.decode_jpeg(b'\xff\xd8 not really a jpeg \xff\xd9')


# ---- YUV10 --------------------------------------------------------------------------------------
# four pixels' 10-bit values 0x3FF, 0x000, 0x155, 0x2AA in one 5-byte group
GROUP_VALUES = [0x3FF, 0x000, 0x155, 0x2AA]
GROUP_MSB = bytes([0xFF, 0xC0, 0x05, 0x56, 0xAA])  # 1111111111 0000000000 0101010101 1010101010
GROUP_LSB = bytes([0xFF, 0x03, 0x50, 0x95, 0xAA])  # the same values from bit 0 upwards


@pytest.mark.parametrize('order, group', [('msb', GROUP_MSB), ('lsb', GROUP_LSB)])
def test_interleaved_ten_bit_groups_by_hand(order, group):
    fmt = p.Yuv10Format(bit_order=order)
    frame = group * (p.YUV10_SIZE // 5)
    y5, c5 = p.unpack_yuv10(frame, fmt)
    assert list(y5[0, :4]) == [v >> 5 for v in GROUP_VALUES]
    assert list(c5[0, :4]) == [v & 31 for v in GROUP_VALUES]
    assert p.pack_yuv10(y5, c5, fmt) == frame


def test_planar_five_bit_groups_by_hand():
    # eight 5-bit codes 31, 0, 1, 2, 3, 4, 5, 30 MSB first:
    # 11111 00000 00001 00010 00011 00100 00101 11110
    group = bytes([0b11111000, 0b00000010, 0b00100001, 0b10010000, 0b10111110])
    y_part, c_part = group * (15840 // 5), bytes(15840)
    y5, c5 = p.unpack_yuv10(y_part + c_part, p.Yuv10Format(layout='planar'))
    assert list(y5[0, :8]) == [31, 0, 1, 2, 3, 4, 5, 30] and not c5.any()
    lsb = p._pack([31, 0, 1, 2, 3, 4, 5, 30], 5, msb_first=False)
    assert list(p._unpack(lsb, 5, msb_first=False)) == [31, 0, 1, 2, 3, 4, 5, 30]


ALL_PACKINGS = [
    p.Yuv10Format(layout=layout, bit_order=order, y_bits=y_bits)
    for layout in ('interleaved', 'planar')
    for order in ('msb', 'lsb')
    for y_bits in ('high', 'low')
]


@pytest.mark.parametrize(
    'fmt', ALL_PACKINGS, ids=lambda f: f'{f.layout}-{f.bit_order}-y{f.y_bits}'
)
def test_pack_unpack_round_trip_every_packing(fmt):
    rng = np.random.default_rng(3)
    y5 = rng.integers(0, 32, (144, 176))
    c5 = rng.integers(0, 32, (144, 176))
    data = p.pack_yuv10(y5, c5, fmt)
    assert len(data) == 31680
    got_y, got_c = p.unpack_yuv10(data, fmt)
    assert np.array_equal(got_y, y5) and np.array_equal(got_c, c5)


def _uniform_frame(y, first, second, fmt):
    c5 = np.empty((144, 176), dtype=np.uint16)
    c5[:, 0::2], c5[:, 1::2] = first, second
    return p.pack_yuv10(np.full((144, 176), y), c5, fmt)


def test_neutral_grey_stays_neutral_under_the_defaults():
    # Y code 16 → 132 (16<<3 | 16>>2); chroma code 16 → 128 (16<<3): no colour difference.
    # (With shift3_or_msb for chroma too it was 132 − 128 = 4: (140, 126, 140), a magenta cast.)
    fmt = p.Yuv10Format()
    rgb = p.Yuv10Decoder(fmt).decode(_uniform_frame(16, 16, 16, fmt))
    assert rgb.shape == (144, 176, 3) and rgb.dtype == np.uint8
    assert tuple(rgb[70, 33]) == (132, 132, 132)
    cast = p.Yuv10Format(chroma_five_to_eight='shift3_or_msb')
    assert tuple(p.Yuv10Decoder(cast).decode(_uniform_frame(16, 16, 16, cast))[0, 0]) == (
        140,
        126,
        140,
    )


def test_sony_matrix_by_hand():
    # U code 20 → 160 (+32), V code 10 → 80 (−48), Y code 16 → 132:
    # R = 132 + 2·(−48) = 36; G = 132 − 1.02·(−48) − 0.38·32 = 168.8; B = 132 + 2·32 = 196
    fmt = p.Yuv10Format()
    assert tuple(p.Yuv10Decoder(fmt).decode(_uniform_frame(16, 20, 10, fmt))[5, 8]) == (
        36,
        169,
        196,
    )


def test_lsb_first_with_y_in_the_low_bits_decodes_only_when_configured():
    """The independent robot's packing: LSB first, Y in bits 0-4, chroma in bits 5-9."""
    robot = p.Yuv10Format(bit_order='lsb', y_bits='low')
    rng = np.random.default_rng(5)
    pairs = rng.integers(40, 216, (144, 88, 3)).astype(np.uint8)
    image = np.repeat(pairs, 2, axis=1)  # pixel pairs share their chroma exactly
    frame = p.encode_yuv10(image, robot)
    configured = p.Yuv10Decoder(robot).decode(frame).astype(int)
    assert np.abs(configured - image).max() <= 16  # 5-bit samples
    for other in (p.Yuv10Format(), p.Yuv10Format(bit_order='lsb')):
        assert np.abs(p.Yuv10Decoder(other).decode(frame).astype(int) - image).mean() > 20
    y5, _ = p.unpack_yuv10(frame, robot)
    assert y5[0, 0] == np.frombuffer(frame[:2], dtype='<u2')[0] & 31  # pixel 0's bits 0-4


@pytest.mark.parametrize(
    'fmt',
    [
        p.Yuv10Format(),
        p.Yuv10Format(matrix='bt601', chroma_first='V'),
        p.Yuv10Format(layout='planar', five_to_eight='shift3'),
        p.Yuv10Format(bit_order='lsb', y_bits='low', chroma_five_to_eight='shift3_or_msb'),
    ],
    ids=['sony', 'bt601-V', 'planar-shift3', 'lsb-ylow'],
)
def test_encoder_decoder_round_trip(fmt):
    image = np.zeros((144, 176, 3), dtype=np.uint8)
    image[:] = (150, 140, 120)
    image[40:90, 60:110] = (230, 110, 190)
    decoded = p.Yuv10Decoder(fmt).decode(p.encode_yuv10(image, fmt))
    assert np.abs(decoded.astype(int) - image).max() <= 16  # 5-bit samples


def test_yuv10_rejects_bad_input_and_bad_settings():
    with pytest.raises(MalformedFrame):
        p.Yuv10Decoder().decode(bytes(31000))
    with pytest.raises(ValueError, match='layout'):
        p.Yuv10Format(layout='zigzag')
    with pytest.raises(ValueError, match='chroma_offset'):
        p.Yuv10Format(chroma_offset=300)


# ---- colour image, audio, voice, semantic -------------------------------------------------------
def test_color_image_rows_top_first():
    data = bytes([3]) * 88 + bytes(6336 - 88)
    mask = p.decode_color_image(data)
    assert mask.shape == (72, 88) and mask[0].tolist() == [3] * 88 and not mask[1:].any()
    with pytest.raises(MalformedFrame):
        p.decode_color_image(data[:-1])


def _audio_record(sequence, word0, word1, right, left):
    pcm = np.empty(1024, dtype='<i2')
    pcm[0::2], pcm[1::2] = right, left  # right channel first (seed)
    return struct.pack('<iHH', sequence, word0, word1) + pcm.tobytes()


def test_audio_records_by_hand_right_first():
    data = _audio_record(41, 7, 0xFFFF, 100, -200) + _audio_record(42, 8, 1, 300, -400)
    chunks = p.decode_audio(data)
    assert [c.sequence for c in chunks] == [41, 42]
    assert (chunks[0].word0, chunks[0].word1) == (7, 0xFFFF)
    assert chunks[0].pcm.shape == (512, 2)
    assert chunks[0].pcm[0].tolist() == [-200, 100]  # published as left, right
    assert chunks[1].pcm[511].tolist() == [-400, 300]
    left_first = p.decode_audio(data, right_first=False)
    assert left_first[0].pcm[0].tolist() == [100, -200]
    assert p.decode_audio(data, signed_words=True)[0].word1 == -1
    assert b''.join(p.encode_audio_record(c) for c in chunks) == data


@pytest.mark.parametrize('records', [1, 11])
def test_audio_needs_two_to_ten_records(records):
    with pytest.raises(MalformedFrame):
        p.decode_audio(_audio_record(1, 0, 0, 0, 0) * records)


def test_sequence_tracker_counts_gaps_and_restarts():
    tracker = p.SequenceTracker()
    assert [tracker.update(s) for s in (5, 6, 9, 10)] == [0, 0, 2, 0]
    assert tracker.lost == 2
    tracker.update(0)
    assert tracker.restarts == 1 and tracker.lost == 2 and tracker.unknown_gaps == 0
    tracker.new_session()  # a reconnect: the dog kept counting
    assert tracker.update(100) == 99 and tracker.lost_across_reconnects == 99
    tracker.new_session()  # a reconnect to a dog that started again
    assert tracker.update(3) == 0 and tracker.unknown_gaps == 1 and tracker.restarts == 2
    assert tracker.update(4) == 0 and tracker.lost == 101


def test_voice_and_semantic_records_by_hand():
    voice = b''.join(struct.pack('<ii', 10 + i, 900 - i) for i in range(10))
    assert p.decode_voice(voice)[:2] == [(10, 900), (11, 899)]
    assert p.encode_voice(p.decode_voice(voice)) == voice
    semantic = struct.pack('<11i', 7, *range(-5, 5)) + struct.pack('<11i', 8, *range(10))
    assert p.decode_semantic(semantic) == [(7, tuple(range(-5, 5))), (8, tuple(range(10)))]
    assert p.encode_semantic(7, list(range(-5, 5))) == semantic[:44]
    for bad, decode in ((voice[:79], p.decode_voice), (semantic[:50], p.decode_semantic)):
        with pytest.raises(MalformedFrame):
            decode(bad)


# ---- device control, RPUT -----------------------------------------------------------------------
def test_set_property_and_presets():
    assert p.encode_set_property(p.OpcodeMap(), 2, 3) == bytes([7, 2, 3])
    assert p.parse_preset(' gain_high = 2:0x03') == ('gain_high', 2, 3)
    for bad in ('gain', 'gain=2', 'gain=2:300', '=1:1'):
        with pytest.raises(ValueError):
            p.parse_preset(bad)
    with pytest.raises(ValueError):
        p.encode_set_property(p.OpcodeMap(), 256, 0)


def test_rput_layouts_by_hand():
    assert p.RputLayout().encode('a.mtn', b'xyz') == b'a.mtn\0' + b'\x03\0\0\0' + b'xyz'
    other = p.RputLayout(['size32', 'name8', 'data'])
    assert other.encode('ab', b'q') == b'\x01\0\0\0' + b'\x02ab' + b'q'
    prefixed = p.RputLayout(['name32', 'size32', 'data'])  # uint32 name length, name, size, data
    assert prefixed.encode('ab', b'q') == b'\x02\0\0\0ab' + b'\x01\0\0\0' + b'q'
    short = p.RputLayout(['size16', 'name16', 'data'])
    assert short.encode('ab', b'q') == b'\x01\0' + b'\x02\0ab' + b'q' and short.max_bytes == 0xFFFF
    buffer = bytearray(prefixed.encode('dance.mtn', b'xyz'))

    def read_exact(count):
        chunk = bytes(buffer[:count])
        del buffer[:count]
        return chunk

    assert prefixed.decode(read_exact, None) == ('dance.mtn', b'xyz')
    for bad in (
        ['name0', 'data'],
        ['name0', 'name8', 'size32', 'data'],
        ['name0', 'data', 'size32'],
        ['name9', 'size32', 'data'],
    ):
        with pytest.raises(ValueError, match='RPUT layout'):
            p.RputLayout(bad)
    with pytest.raises(ValueError, match='over the RPUT limit'):
        p.RputLayout(max_bytes=2).encode('x', b'abc')
    with pytest.raises(ValueError, match='name'):
        p.RputLayout().encode('', b'')


def test_rput_decode_reads_what_encode_wrote():
    for fields in (['name0', 'size32', 'data'], ['size32', 'name8', 'data']):
        layout = p.RputLayout(fields)
        stream = bytearray(layout.encode('perf.mtn', bytes(range(200))))

        def read_exact(n, stream=stream):
            data = bytes(stream[:n])
            del stream[:n]
            return data

        def read_until_nul(stream=stream):
            return read_exact(stream.index(0) + 1)

        assert layout.decode(read_exact, read_until_nul) == ('perf.mtn', bytes(range(200)))
        assert not stream


# ---- RCODE console text -------------------------------------------------------------------------
def test_console_text_lines_telnet_and_split_input():
    text = p.ConsoleText()
    assert text.feed(b'\xff\xfb\x01hel') == []  # IAC WILL ECHO removed
    assert text.feed(b'lo\r\nwor') == ['hello']
    assert text.feed(b'ld\xff') == []  # IAC split across reads
    assert text.feed(b'\xff 255\n\xff\xf1\n') == ['world\xff 255', '']  # escaped 255; IAC NOP
    long = text.feed(b'x' * 5000 + b'\n')
    assert [len(line) for line in long] == [4096, 904]


# ---- bad input never escapes as anything but MalformedFrame -------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_decoders_raise_only_malformed_frame(data):
    for decode in (
        p.decode_version,
        p.decode_color_image,
        p.decode_audio,
        p.decode_voice,
        p.decode_semantic,
        p.Yuv10Decoder().decode,
        p.check_jpeg,
        p.decode_jpeg,
    ):
        try:
            decode(data)
        except MalformedFrame:
            pass
    p.ConsoleText().feed(data)
