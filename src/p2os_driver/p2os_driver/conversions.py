"""Decoded P2OS records → ROS messages, as plain functions (testable without a graph).

Units per REP-103: metres, radians, volts. The node adds headers and decides when to publish.
"""

import math

from diagnostic_msgs.msg import KeyValue
from sensor_msgs.msg import BatteryState

from legacy_robot_common.messages import uint8_array
from legacy_robot_interfaces.msg import (
    BumperState,
    DigitalAnalogIO,
    GripperState,
    MotorState,
    RobotInfo,
)

from .models import FACTOR_NAMES

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
    """Battery volts: the later-firmware BATTERYX10 field (16-bit decivolts, §2.6) when present."""
    return sip.tail.get('battery_x10', sip.battery_decivolts) / 10.0


def battery_msg(sip, header):
    nan = math.nan
    return BatteryState(
        header=header,
        voltage=sip_voltage(sip),
        present=True,
        percentage=nan,
        current=nan,
        charge=nan,
        capacity=nan,
        design_capacity=nan,
        temperature=nan,
    )


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


def wheel_units(model, mm_s, rad_s):
    """Body velocity → VEL2 (left, right) signed bytes of Vel2Divisor mm/s, clamped."""
    spin = rad_s / model.diff_conv  # (R - L) / 2 in mm/s
    return tuple(
        max(-127, min(127, int(round((mm_s + side * spin) / model.vel2_divisor))))
        for side in (-1, 1)
    )
