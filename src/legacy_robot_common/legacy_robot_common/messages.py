"""Fast builders for large ROS messages (images, audio, byte payloads).

uint8[]/int16[] fields are filled from buffers through array.array, never from
Python lists: rosidl's setter checks every element of a list in Python.
"""
import array
import math

import numpy as np
from sensor_msgs.msg import CameraInfo, CompressedImage, Image

_CHANNELS = {'mono8': 1, 'rgb8': 3, 'bgr8': 3, 'rgba8': 4, 'mono16': 1}


def uint8_array(data):
    """bytes-like → array.array('B') for any uint8[] field."""
    out = array.array('B')
    out.frombytes(bytes(data) if isinstance(data, memoryview) else data)
    return out


def int16_array(samples):
    """NumPy int16 samples or little-endian bytes → array.array('h') for an int16[] field."""
    out = array.array('h')
    if isinstance(samples, np.ndarray):
        out.frombytes(np.ascontiguousarray(samples, dtype='<i2').tobytes())
    else:
        out.frombytes(samples)
    return out


def image_msg(pixels, encoding, header):
    """H×W (mono) or H×W×C uint8/uint16 NumPy array → sensor_msgs/Image."""
    channels = _CHANNELS.get(encoding)
    if channels is None:
        raise ValueError(f'unsupported image encoding {encoding!r}')
    pixels = np.ascontiguousarray(pixels)
    expected_ndim = 2 if channels == 1 else 3
    if pixels.ndim != expected_ndim or (channels > 1 and pixels.shape[2] != channels):
        raise ValueError(f'{encoding} needs shape (h, w{", %d" % channels if channels > 1 else ""}),'
                         f' got {pixels.shape}')
    msg = Image()
    msg.header = header
    msg.height, msg.width = int(pixels.shape[0]), int(pixels.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = msg.width * channels * pixels.dtype.itemsize
    msg.data = uint8_array(pixels.tobytes())
    return msg


def image_to_array(msg):
    """sensor_msgs/Image (8-bit encodings) → NumPy array view, for tests and demo output."""
    channels = _CHANNELS[msg.encoding]
    flat = np.frombuffer(msg.data, dtype=np.uint8)
    rows = flat.reshape(msg.height, msg.step)[:, :msg.width * channels]
    return rows.reshape(msg.height, msg.width, channels) if channels > 1 else rows


def compressed_image_msg(data, image_format, header):
    """Encoded image bytes (kept unchanged) → sensor_msgs/CompressedImage.

    image_format follows image_transport, e.g. "rgb8; jpeg compressed bgr8".
    """
    msg = CompressedImage()
    msg.header = header
    msg.format = image_format
    msg.data = uint8_array(data)
    return msg


def camera_info_msg(width, height, fov_x, fov_y, header):
    """Ideal pinhole CameraInfo from the image size and the field of view (radians)."""
    fx = (width / 2.0) / math.tan(fov_x / 2.0)
    fy = (height / 2.0) / math.tan(fov_y / 2.0)
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    msg = CameraInfo()
    msg.header = header
    msg.width, msg.height = width, height
    msg.distortion_model = 'plumb_bob'
    msg.d = [0.0] * 5
    msg.k = [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg


def audio_chunk_msg(pcm, header):
    """Interleaved PCM bytes → AudioDataStamped (audio_common_msgs layout)."""
    from legacy_robot_interfaces.msg import AudioDataStamped
    msg = AudioDataStamped()
    msg.header = header
    msg.audio.data = uint8_array(pcm)
    return msg


def audio_info_msg(channels, sample_rate, sample_format='S16LE', coding_format='wave'):
    from legacy_robot_interfaces.msg import AudioInfo
    bits = {'S16LE': 16, 'S8': 8, 'U8': 8, 'S32LE': 32}.get(sample_format, 0)
    return AudioInfo(channels=channels, sample_rate=sample_rate, sample_format=sample_format,
                     bitrate=channels * sample_rate * bits, coding_format=coding_format)
