"""Decoded Pleo monitor records → ROS messages (plain functions, testable without a graph).

Angles: the monitor speaks degrees, ROS radians (REP-103).
"""

import math

from sensor_msgs.msg import BatteryState, JointState

from legacy_robot_common.messages import battery_msg as common_battery_msg
from legacy_robot_interfaces.msg import MonitorLog, NamedValues, NxpPacket, SensorEvent

from . import protocol as p

NXP_LOG_TYPE = 'nxp'


def joint_state_msg(dump, header, prefix=''):
    return JointState(
        header=header,
        name=[prefix + j.name for j in p.JOINTS],
        position=[math.radians(d) for d in dump.degrees],
    )


def sensors_msg(dump, header):
    return NamedValues(
        header=header, names=list(p.SENSOR_LABELS), values=[float(v) for v in dump.values]
    )


def battery_msg(value, header):
    """The monitor's battery sensor (0..100) → BatteryState (percentage 0..1). The monitor
    reports nothing else: voltage, temperature, current, charge and capacities are NaN, as
    sensor_msgs/BatteryState says for unmeasured fields."""
    return common_battery_msg(
        header,
        percentage=max(0.0, min(1.0, value / 100.0)),
        power_supply_technology=BatteryState.POWER_SUPPLY_TECHNOLOGY_NIMH,
        power_supply_status=BatteryState.POWER_SUPPLY_STATUS_DISCHARGING,
    )


def log_msg(line, header):
    return MonitorLog(header=header, level=line.level, type=line.type, text=line.text)


def nxp_msg(text, header, direction):
    return NxpPacket(header=header, direction=direction, packet=text)


def sensor_events(previous, dump, header):
    """SensorEvents for every changed touch, foot and event sensor between two dumps."""
    if previous is None:
        return []
    events = []
    for index, (old, new) in enumerate(zip(previous.values, dump.values, strict=False)):
        if old == new:
            continue
        name = p.SENSOR_LABELS[index]
        if index in p.TOUCH_SENSORS:
            kind = 'touched' if new else 'released'
        elif index in p.FOOT_SENSORS:
            kind = 'foot_down' if new else 'foot_up'
        elif index in p.EVENT_SENSORS:
            kind = p.EVENT_SENSORS[index]
        else:
            continue
        events.append(SensorEvent(header=header, sensor=name, event=kind, value=float(new)))
    return events
