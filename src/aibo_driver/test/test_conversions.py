"""Decoded AIBO records → ROS messages, without a running graph."""

import math

import numpy as np
import pytest

from aibo_driver import conversions as convert
from aibo_driver import protocol as p
from aibo_driver.client import AudioReply, CameraFrame, ColorFrame, SemanticRecords, VoiceRecord
from legacy_robot_common.messages import image_to_array


def test_camera_messages_for_yuv10_and_jpeg_frames():
    rgb = np.zeros((144, 176, 3), dtype=np.uint8)
    rgb[10, 20] = (1, 2, 3)
    image, compressed, info = convert.camera_msgs(CameraFrame(rgb, None, 1000.25), 'cam')
    assert compressed is None and image.encoding == 'rgb8' and image.step == 528
    assert tuple(image_to_array(image)[10, 20]) == (1, 2, 3)
    assert (image.header.stamp.sec, image.header.stamp.nanosec) == (1000, 250_000_000)
    assert info.width == 176 and info.header.frame_id == 'cam'
    assert info.k[0] == pytest.approx(88 / np.tan(np.radians(57.6) / 2))
    jpeg = b'\xff\xd8 bytes as sent \xff\xd9'
    image, compressed, _ = convert.camera_msgs(CameraFrame(None, jpeg, 5.0), 'cam')
    assert image is None and bytes(compressed.data) == jpeg
    assert compressed.format == 'rgb8; jpeg compressed bgr8'


def test_color_detection_keeps_the_raw_bits_and_labels():
    mask = np.zeros((72, 88), dtype=np.uint8)
    mask[5, 6] = 0b10011
    msg = convert.color_detection_msg(ColorFrame(mask, 1.0), 'cam', ['a'] * 8)
    assert msg.mask.encoding == 'mono8' and image_to_array(msg.mask)[5, 6] == 0b10011
    assert msg.channel_labels == ['a'] * 8


def test_audio_chunks_are_stamped_back_from_reception_and_interleaved_left_right():
    pcm = np.stack([np.arange(512), -np.arange(512)], axis=1).astype(np.int16)
    chunks = [p.AudioChunk(7 + i, i, 65535, pcm) for i in range(3)]
    out = convert.audio_msgs(AudioReply(chunks, [0, 0, 0], 100.0), 'head')
    starts = [s.header.stamp.sec + s.header.stamp.nanosec * 1e-9 for s, _ in out]
    assert starts == pytest.approx([100 - 0.096, 100 - 0.064, 100 - 0.032])
    samples = np.frombuffer(bytes(out[0][0].audio.data), dtype='<i2')
    assert samples[:6].tolist() == [0, 0, 1, -1, 2, -2]
    words = out[2][1]
    assert (words.sequence, words.word0, words.word1) == (9, 2, 65535)


def test_voice_and_semantic_messages():
    voice = convert.voice_msg(VoiceRecord([(i, 100 - i) for i in range(10)], 2.0), 'base')
    assert voice.ids[:2].tolist() == [0, 1] and voice.confidences[9] == 91
    events = convert.semantic_msgs(SemanticRecords([(4, tuple(range(10)))], 3.0), 'base')
    assert events[0].sequence == 4 and events[0].raw.tolist() == list(range(10))


def test_range_and_battery_messages():
    from std_msgs.msg import Header

    near = convert.range_msg(250, Header(frame_id='ir'))
    assert (near.range, near.max_range, near.header.frame_id) == (0.25, pytest.approx(0.6), 'ir')
    assert convert.range_msg(600, Header()).range == math.inf  # nothing in range (REP-117)
    battery = convert.battery_msg(87, 34, Header())
    assert battery.percentage == pytest.approx(0.87) and battery.temperature == 34.0
    assert math.isnan(battery.voltage) and battery.present
    assert math.isnan(convert.battery_msg(120, None, Header()).temperature)
