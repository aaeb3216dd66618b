"""Decoded AIBO records → ROS messages (plain functions, testable without a graph)."""

import math

from sensor_msgs.msg import BatteryState, Range
from std_msgs.msg import Header

from legacy_robot_common.messages import (
    audio_chunk_msg,
    camera_info_msg,
    compressed_image_msg,
    image_msg,
    time_msg,
)
from legacy_robot_common.messages import (
    battery_msg as common_battery_msg,
)
from legacy_robot_interfaces.msg import (
    AiboSensorWords,
    ColorDetection,
    SemanticEvent,
    VoiceMatches,
)

from . import protocol as p

JPEG_FORMAT = 'rgb8; jpeg compressed bgr8'  # image_transport's name for a colour JPEG
FIELD_OF_VIEW = (math.radians(57.6), math.radians(47.8))  # ERS-2xx camera (aibo.md §3.5)
IR_RANGE = (0.0, 0.6)  # m: SENSOR.CFG's 0..600 mm (aibo.md §4.6)
IR_FIELD_OF_VIEW = math.radians(5.0)  # the PSD's beam: an estimate, not in the references


def header(seconds, frame_id):
    return Header(stamp=time_msg(seconds), frame_id=frame_id)


# offset: seconds from the host's time.time() to the node's clock (simulated time), 0 otherwise
def camera_msgs(frame, frame_id, fov=FIELD_OF_VIEW, offset=0.0):
    """CameraFrame → (Image or None, CompressedImage or None, CameraInfo)."""
    h = header(frame.received + offset, frame_id)
    image = image_msg(frame.rgb, 'rgb8', h) if frame.rgb is not None else None
    compressed = compressed_image_msg(frame.jpeg, JPEG_FORMAT, h) if frame.jpeg else None
    height, width = (
        frame.rgb.shape[:2] if frame.rgb is not None else (p.CAMERA_HEIGHT, p.CAMERA_WIDTH)
    )
    return image, compressed, camera_info_msg(width, height, *fov, h)


def color_detection_msg(frame, frame_id, labels, offset=0.0):
    h = header(frame.received + offset, frame_id)
    return ColorDetection(
        header=h, mask=image_msg(frame.mask, 'mono8', h), channel_labels=list(labels)
    )


def chunk_start_times(reply, offset=0.0):
    """Host time of each chunk's first sample: the last chunk ends at reception."""
    count = len(reply.chunks)
    return [reply.received + offset - (count - i) * p.CHUNK_SECONDS for i in range(count)]


def audio_msgs(reply, frame_id, offset=0.0):
    """AudioReply → [(AudioDataStamped, AiboSensorWords)] per chunk, S16LE interleaved L, R."""
    out = []
    for chunk, start in zip(reply.chunks, chunk_start_times(reply, offset), strict=False):
        h = header(start, frame_id)
        out.append(
            (
                audio_chunk_msg(chunk.pcm.astype('<i2', copy=False).tobytes(), h),
                AiboSensorWords(
                    header=h, sequence=chunk.sequence, word0=chunk.word0, word1=chunk.word1
                ),
            )
        )
    return out


def voice_msg(record, frame_id, offset=0.0):
    return VoiceMatches(
        header=header(record.received + offset, frame_id),
        ids=[ident for ident, _ in record.matches],
        confidences=[confidence for _, confidence in record.matches],
    )


def semantic_msgs(records, frame_id, offset=0.0):
    h = header(records.received + offset, frame_id)
    return [
        SemanticEvent(header=h, sequence=sequence, raw=list(raw))
        for sequence, raw in records.records
    ]


def range_msg(distance_mm, header):
    """Distance (mm) → sensor_msgs/Range; 600 mm and more = nothing in range (+inf, REP-117)."""
    metres = distance_mm / 1000.0
    return Range(
        header=header,
        radiation_type=Range.INFRARED,
        field_of_view=IR_FIELD_OF_VIEW,
        min_range=IR_RANGE[0],
        max_range=IR_RANGE[1],
        range=metres if metres < IR_RANGE[1] else math.inf,
    )


def battery_msg(rest_percent, temperature, header):
    """Batt_Rest (%) and Batt_Temp (°C) → BatteryState; what the dog does not report is NaN."""
    return common_battery_msg(
        header,
        percentage=max(0.0, min(1.0, rest_percent / 100.0)),
        temperature=float(temperature) if temperature is not None else math.nan,
        power_supply_technology=BatteryState.POWER_SUPPLY_TECHNOLOGY_LION,
    )
