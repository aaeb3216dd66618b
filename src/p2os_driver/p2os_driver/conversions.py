"""Decoded P2OS records → ROS messages, as plain functions (testable without a graph).

Units per REP-103: metres, radians, volts. The node adds headers and decides when to publish.
"""

import dataclasses
import math

from diagnostic_msgs.msg import KeyValue
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState, LaserScan, Range
from std_msgs.msg import Header

from legacy_robot_common.messages import battery_msg as common_battery_msg
from legacy_robot_common.messages import uint8_array, yaw_quaternion
from legacy_robot_interfaces.msg import (
    BumperState,
    DigitalAnalogIO,
    EncoderCounts,
    GripperState,
    MotorState,
    RobotInfo,
    SerialBytes,
    SonarArray,
)

from . import description
from . import protocol as p
from .models import FACTOR_NAMES
from .protocol import GripperPacket, read_gripper_packet_byte, read_sip_gripper_byte

PADDLES = {
    'open': GripperState.PADDLES_OPEN,
    'closed': GripperState.PADDLES_CLOSED,
    'between': GripperState.PADDLES_BETWEEN,
    'unknown': GripperState.PADDLES_UNKNOWN,
}
LIFT = {
    'up': GripperState.LIFT_UP,
    'down': GripperState.LIFT_DOWN,
    'between': GripperState.LIFT_BETWEEN,
    'unknown': GripperState.LIFT_UNKNOWN,
}
SIP_ANALOG_VOLTS = 5.0 / 255.0  # SIP ANALOG byte: 0-255 = 0-5 V
IOPAC_ANALOG_VOLTS = 5.0 / 2047.0  # IOpac A/D: 0-2047 = 0-5 V (PeopleBot AROS)


def sip_voltage(sip):
    """Battery volts: the later-firmware BATTERYX10 field (decivolts, docs/protocols/p2os.md §2.6)
    when present."""
    return sip.tail.get('battery_x10', sip.battery_decivolts) / 10.0


def battery_msg(sip, header):
    return common_battery_msg(header, voltage=sip_voltage(sip))


def motor_state_msg(sip, header):
    return MotorState(
        header=header,
        motors_enabled=sip.motors_enabled,
        left_wheel_stalled=sip.left_stall,
        right_wheel_stalled=sip.right_stall,
    )


def bumper_msg(sip, model, header):
    front, rear = sip.bumpers(model.front_bumpers or 5, model.rear_bumpers or 5)
    return BumperState(header=header, front=front, rear=rear)


def gripper_msg(reading, raw_state, header, source, gripper_type=0, grasp_time=0):
    """A GripperReading (either state table) → GripperState; unknown optional bits read False."""
    return GripperState(
        header=header,
        source=source,
        gripper_type=gripper_type,
        paddles=PADDLES[reading.paddles],
        paddles_moving=reading.paddles_moving,
        gripper_error=reading.gripper_error,
        lift=LIFT[reading.lift],
        lift_moving=reading.lift_moving,
        lift_error=reading.lift_error,
        inner_beam_broken=bool(reading.inner_beam_broken),
        outer_beam_broken=bool(reading.outer_beam_broken),
        left_paddle_contact=bool(reading.left_paddle_contact),
        right_paddle_contact=bool(reading.right_paddle_contact),
        grasp_time=grasp_time,
        raw_state=raw_state,
    )


def gripper_state_msg(record, header):
    """A GRIPPERpac (its own state table, type and grasp time) or a SIP's gripper byte →
    GripperState."""
    if isinstance(record, GripperPacket):
        reading = read_gripper_packet_byte(record.state)
        source, extra = (
            GripperState.SOURCE_GRIPPER_PACKET,
            (record.gripper_type, record.grasp_time),
        )
        return gripper_msg(reading, record.state, header, source, *extra)
    reading = read_sip_gripper_byte(record.gripper_state)
    return gripper_msg(reading, record.gripper_state, header, GripperState.SOURCE_SIP)


def encoders_msg(encoders, header):
    return EncoderCounts(header=header, left=encoders.left, right=encoders.right)


def aux_msg(aux, header):
    """Bytes read from the AUX serial port (port 1)."""
    return SerialBytes(header=header, port=1, data=uint8_array(aux.data))


def wheel_joints_msg(model, encoders, ticks_per_revolution, header):
    """Encoder counts → the wheel joints' angles."""
    angles = description.wheel_positions(
        model, encoders.left, encoders.right, ticks_per_revolution
    )
    return JointState(header=header, name=list(angles), position=list(angles.values()))


@dataclasses.dataclass
class SonarCone:
    """What every sonar reading shares: limits in m, full cone angle in rad."""

    min_range: float
    max_range: float
    field_of_view: float


def update_sonar(sip, model, ranges):
    """Store a SIP's sonar readings (m) in ranges (one per disc).

    Returns (readings, updated, strangers): the (disc, metres) stored, in SIP order; a flag per
    disc; the disc numbers that are not on this model (skipped)."""
    readings, strangers = [], []
    updated = [False] * len(ranges)
    for disc, raw in sip.sonar:
        if disc >= len(ranges):
            strangers.append(disc)
            continue
        metres = raw * model.range_conv / 1000.0
        ranges[disc] = metres
        updated[disc] = True
        readings.append((disc, metres))
    return readings, updated, strangers


def sonar_range_msg(stamp, frame, metres, cone):
    """One sonar reading → sensor_msgs/Range in its disc's frame."""
    header = Header(stamp=stamp, frame_id=frame)
    return Range(
        header=header, radiation_type=Range.ULTRASOUND, range=metres, **dataclasses.asdict(cone)
    )


def sonar_array_msg(header, frames, ranges, updated, cone):
    return SonarArray(
        header=header, frame_ids=frames, ranges=ranges, updated=updated, **dataclasses.asdict(cone)
    )


def sip_io_msg(sip, header):
    return DigitalAnalogIO(
        header=header,
        digital_inputs=uint8_array(bytes([sip.digital_inputs])),
        digital_outputs=uint8_array(bytes([sip.digital_outputs])),
        analog_inputs=[sip.analog * SIP_ANALOG_VOLTS],
        selected_analog_port=sip.analog_port,
    )


def io_packet_msg(packet, header):
    return DigitalAnalogIO(
        header=header,
        digital_inputs=uint8_array(packet.digital_inputs),
        digital_outputs=uint8_array(packet.digital_outputs),
        analog_inputs=[v * IOPAC_ANALOG_VOLTS for v in packet.analog],
        selected_analog_port=-1,
    )


def sonar_points(model, ranges, updated, min_range, max_range, height=0.0):
    """Body-frame echo points of the readings flagged in updated and within the range limits,
    at the sonar ring's height (m in the body frame).

    Older readings are left out: the robot has moved since, so their points
    would be drawn in the wrong place.
    """
    points = []
    for (x, y, heading), metres, fresh in zip(model.sonar, ranges, updated, strict=False):
        if fresh and min_range <= metres < max_range:
            angle = math.radians(heading)
            points.append(
                (
                    x / 1000.0 + metres * math.cos(angle),
                    y / 1000.0 + metres * math.sin(angle),
                    height,
                )
            )
    return points


def robot_info_msg(identity, config, header):
    """SYNC2 identity, the model's factors and every CONFIGpac field (if one came)."""
    model = identity.model
    values = {
        'model description': model.description,
        'known model': identity.known_model,
        'transport': identity.transport,
    }
    values.update({f'{name} factor': getattr(model, name) for name in FACTOR_NAMES})
    if config is not None:
        values.update({f'config {k}': v for k, v in config.values.items()})
    firmware = config.values['firmware_version'] if config is not None else ''
    return RobotInfo(
        header=header,
        name=identity.name,
        robot_class=identity.robot_class,
        model=identity.subclass,
        firmware_version=firmware,
        values=[KeyValue(key=k, value=str(v)) for k, v in values.items()],
    )


def config_has_gripper(config):
    """True / False from CONFIGpac's GRIPPER field; None when the robot sent no such field."""
    if config is None or not config.sent('gripper'):
        return None
    return config.values['gripper'] != 0


def laser_scan_msg(scan, settings, header, range_max, period=0.1):
    """A reassembled simulator scan (protocol.LaserPacket with every reading) → LaserScan.

    settings: (start, end, increment in degrees, ideal spacing) as sent to the simulator; the
    angles are the ones it casts (docs/protocols/p2os.md §4.4), so a scan of another length than
    the settings give is described by its own count on the same spacing. Readings at or above
    range_max (no echo) read +inf (REP-117); intensities are the reflectance bytes (0x61)."""
    start, end, increment, ideal = settings
    first, step, _ = p.laser_angles(start, end, increment, ideal)
    count = len(scan.ranges)
    metres = [r / 1000.0 for r in scan.ranges]
    msg = LaserScan(header=header)
    msg.angle_min = math.radians(first)
    msg.angle_increment = math.radians(step)
    msg.angle_max = math.radians(first + step * max(0, count - 1))
    msg.scan_time = float(period)
    msg.time_increment = 0.0  # the simulator casts every ray at one instant
    msg.range_min = 0.0
    msg.range_max = float(range_max)
    msg.ranges = [m if m < range_max else math.inf for m in metres]
    msg.intensities = [float(v) for v in scan.reflectance] if scan.reflectance else []
    return msg


def ground_truth_msg(stat, header, child_frame_id):
    """SIMSTAT (0x62) → the simulator's true pose as nav_msgs/Odometry (metres, radians)."""
    msg = Odometry(header=header, child_frame_id=child_frame_id)
    msg.pose.pose.position.x = stat.true_x / 1000.0
    msg.pose.pose.position.y = stat.true_y / 1000.0
    msg.pose.pose.position.z = stat.true_z / 1000.0
    msg.pose.pose.orientation = yaw_quaternion(math.radians(stat.true_th))
    return msg
