"""The P2OS node's 'robot' diagnostics status: what the last SIP, the robot's identity and the
node's wanted state say, as (level, message, values)."""

import time

from legacy_robot_common.diagnostics import ERROR, OK, WARN

from . import conversions as convert
from .client import unknown_model_text

# s: a cmd_vel this recent to a motors-off SIP makes diagnostics WARN
CMD_VEL_DISABLED_WINDOW = 2.0


def robot_status(node):
    if node.identity is None or node.last_sip is None:
        return ERROR, 'no robot yet', {'port': node.port}
    sip, model = node.last_sip, node.identity.model
    volts = convert.sip_voltage(sip)
    values = {
        'name': node.identity.name,
        'model': f'{model.subclass} ({model.description})',
        'SIP rate Hz': node.sip_rate.rate,
        'battery V': volts,
        'motors enabled': sip.motors_enabled,
        'left stall': sip.left_stall,
        'right stall': sip.right_stall,
        'sonar on': sip.sonar_enabled,
        'ignored packet types': node.client.ignored_packets,
        'odometry distance m': node.odometry.distance,
        'simulator': node.client.is_simulator,
        'laser': 'on' if node.client.laser_wanted else 'off',
        'laser scans': node.laser_scans,
        'laser partial scans dropped': node.client.laser_assembler.dropped,
        'has gripper': 'unknown' if node.has_gripper is None else node.has_gripper,
        'wanted': ', '.join(k for k, on in node.wanted.items() if on) or 'nothing',
        'restore state on reconnect': node.restore_state,
        'sessions': node.sessions,
    }
    if not node.identity.known_model:
        return ERROR, unknown_model_text(node.identity.subclass, model), values
    if volts < node.battery_error:
        return ERROR, f'battery low: {volts:.1f} V', values
    if sip.left_stall or sip.right_stall:
        return WARN, 'wheel stalled', values
    if volts < node.battery_warn:
        return WARN, f'battery getting low: {volts:.1f} V', values
    warning = motors_warning(node, sip)
    if warning:
        return WARN, warning, values
    if node.client.is_simulator and node.cmd_vel_timeout == 0:
        return WARN, 'simulator with cmd_vel_timeout 0: its watchdog never stops the robot', values
    return OK, 'motors enabled' if sip.motors_enabled else 'motors disabled', values


def motors_warning(node, sip):
    if sip.motors_enabled:
        return None
    recent = (
        node.cmd_vel_while_disabled is not None
        and time.monotonic() - node.cmd_vel_while_disabled < CMD_VEL_DISABLED_WINDOW
    )
    if recent:
        return 'cmd_vel arrives but the motors are disabled: call enable_motors'
    if node.wanted['motors']:
        reason = (
            'not restored after a reconnect (restore_state_on_reconnect is false)'
            if not node.restore_state and node.sessions > 1
            else 'turned off by the robot'
        )
        return f'motors disabled although enable_motors was asked for: {reason}'
    return None
