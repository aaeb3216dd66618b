"""Builders for ROS messages: large ones fast (images, audio, clouds), odometry, battery.

uint8[]/int16[] fields are filled from buffers through array.array, never from
Python lists: rosidl's setter checks every element of a list in Python.
"""

import array
import math

import numpy as np
from geometry_msgs.msg import Quaternion
from nav_msgs.msg import Odometry
from sensor_msgs.msg import (
    BatteryState,
    CameraInfo,
    CompressedImage,
    Image,
    PointCloud2,
    PointField,
)

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
        raise ValueError(
            f'{encoding} needs shape (h, w{", %d" % channels if channels > 1 else ""}),'
            f' got {pixels.shape}'
        )
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
    rows = flat.reshape(msg.height, msg.step)[:, : msg.width * channels]
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
    return AudioInfo(
        channels=channels,
        sample_rate=sample_rate,
        sample_format=sample_format,
        bitrate=channels * sample_rate * bits,
        coding_format=coding_format,
    )


def point_cloud_msg(points, header):
    """N×3 float array of x, y, z (metres) → sensor_msgs/PointCloud2 (float32 fields)."""
    xyz = np.ascontiguousarray(points, dtype=np.float32).reshape(-1, 3)
    fields = [
        PointField(name=axis, offset=4 * i, datatype=PointField.FLOAT32, count=1)
        for i, axis in enumerate('xyz')
    ]
    return PointCloud2(
        header=header,
        height=1,
        width=len(xyz),
        fields=fields,
        is_bigendian=False,
        point_step=12,
        row_step=12 * len(xyz),
        is_dense=True,
        data=uint8_array(xyz.tobytes()),
    )


def time_msg(seconds):
    """Seconds (time.time(), or on the node's clock) → builtin_interfaces/Time; never before 0
    (under simulated time the clock reads 0 until /clock speaks)."""
    from builtin_interfaces.msg import Time

    seconds = max(0.0, seconds)
    whole = int(seconds)
    return Time(sec=whole, nanosec=min(999_999_999, int((seconds - whole) * 1e9)))


def yaw_quaternion(yaw):
    """A rotation about z → geometry_msgs/Quaternion."""
    return Quaternion(z=math.sin(yaw / 2), w=math.cos(yaw / 2))


def odometry_msg(header, child_frame_id, x, y, yaw, linear, angular):
    """Planar pose (m, rad) and body velocities (m/s, rad/s) → nav_msgs/Odometry."""
    msg = Odometry(header=header, child_frame_id=child_frame_id)
    msg.pose.pose.position.x = float(x)
    msg.pose.pose.position.y = float(y)
    msg.pose.pose.orientation = yaw_quaternion(yaw)
    msg.twist.twist.linear.x = float(linear)
    msg.twist.twist.angular.z = float(angular)
    return msg


def battery_msg(header, **measured):
    """sensor_msgs/BatteryState with what the robot measured (percentage 0..1, voltage,
    temperature, power_supply_* ...); every float field it did not measure is NaN, as the
    message definition asks."""
    msg = BatteryState(header=header, present=True)
    for name in ('voltage', 'temperature', 'current', 'charge', 'capacity', 'design_capacity'):
        setattr(msg, name, math.nan)
    msg.percentage = math.nan
    for name, value in measured.items():
        setattr(msg, name, value)
    return msg
