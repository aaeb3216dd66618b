import math
import wave

import numpy as np
import pytest
from std_msgs.msg import Header

from legacy_robot_common.artifacts import save_png, save_wav
from legacy_robot_common.messages import (
    audio_chunk_msg,
    audio_info_msg,
    camera_info_msg,
    compressed_image_msg,
    image_msg,
    image_to_array,
    int16_array,
    uint8_array,
)


def header(frame='camera'):
    return Header(frame_id=frame)


def test_rgb_image_keeps_every_pixel():
    pixels = np.random.default_rng(1).integers(0, 256, (144, 176, 3), dtype=np.uint8)
    msg = image_msg(pixels, 'rgb8', header())
    assert (msg.height, msg.width, msg.step, msg.encoding) == (144, 176, 528, 'rgb8')
    assert msg.header.frame_id == 'camera'
    np.testing.assert_array_equal(image_to_array(msg), pixels)


def test_mono_image_from_a_non_contiguous_view():
    pixels = np.arange(88 * 72 * 2, dtype=np.uint8).reshape(72, 176)[:, ::2]
    msg = image_msg(pixels, 'mono8', header())
    assert (msg.height, msg.width, msg.step) == (72, 88, 88)
    np.testing.assert_array_equal(image_to_array(msg), pixels)


@pytest.mark.parametrize(
    'shape, encoding',
    [((4, 4), 'rgb8'), ((4, 4, 3), 'mono8'), ((4, 4, 4), 'rgb8'), ((4, 4), 'yuv422')],
)
def test_image_shape_or_encoding_mismatch_is_rejected(shape, encoding):
    with pytest.raises(ValueError):
        image_msg(np.zeros(shape, np.uint8), encoding, header())


def test_compressed_image_keeps_the_bytes_unchanged():
    data = bytes(range(256)) * 10
    msg = compressed_image_msg(data, 'rgb8; jpeg compressed bgr8', header())
    assert bytes(msg.data) == data and msg.format == 'rgb8; jpeg compressed bgr8'


def test_camera_info_from_field_of_view():
    msg = camera_info_msg(176, 144, math.radians(57.6), math.radians(47.8), header())
    fx, fy = msg.k[0], msg.k[4]
    assert fx == pytest.approx(88 / math.tan(math.radians(28.8)))
    assert fy == pytest.approx(72 / math.tan(math.radians(23.9)))
    assert (msg.width, msg.height, msg.distortion_model) == (176, 144, 'plumb_bob')
    assert msg.p[0] == fx and msg.k[8] == 1.0


def test_audio_messages_follow_audio_common_layout():
    pcm = np.arange(-512, 512, dtype='<i2').tobytes()
    chunk = audio_chunk_msg(pcm, header('mic'))
    assert bytes(chunk.audio.data) == pcm and chunk.header.frame_id == 'mic'
    info = audio_info_msg(2, 16000)
    assert (info.channels, info.sample_rate, info.sample_format, info.bitrate) == (
        2,
        16000,
        'S16LE',
        512000,
    )


def test_array_helpers():
    assert list(uint8_array(b'\x00\xff')) == [0, 255]
    assert list(int16_array(np.array([-2, 3], dtype=np.int16))) == [-2, 3]
    assert list(int16_array(b'\xfe\xff\x03\x00')) == [-2, 3]


def test_artifact_files(tmp_path):
    png = save_png(tmp_path / 'a' / 'frame.png', np.zeros((8, 8, 3), np.uint8))
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    grey = save_png(tmp_path / 'grey.png', np.full((8, 8), 200, np.uint8))
    assert grey.stat().st_size > 0
    wav = save_wav(tmp_path / 'tone.wav', np.zeros(1600, '<i2').tobytes(), 16000, channels=2)
    with wave.open(str(wav)) as reader:
        assert (reader.getnchannels(), reader.getframerate(), reader.getnframes()) == (
            2,
            16000,
            800,
        )
