"""The iPaq node's 'robot' diagnostics status: what the control link's counters and the last
telemetry say, as (level, message, values)."""

from legacy_robot_common.diagnostics import ERROR, OK, WARN

from . import conversions as convert


def robot_status(node):
    c = node.control
    if c.timeouts and c.responses == 0 and c.counters.bytes_in:
        return (
            ERROR,
            (
                f'the iPaq sends bytes ({c.counters.bytes_in}) but no response parses: '
                f'check framed_responses (now {str(node.framed_responses).lower()}) '
                f'and checksum_over_stuffed (now {str(node.over_stuffed).lower()})'
            ),
            {'host': node.host, 'bytes in': c.counters.bytes_in, 'timeouts': c.timeouts},
        )
    if node.last_telemetry is None:
        return ERROR, 'no response from the iPaq yet', {'host': node.host}
    t = node.last_telemetry
    voltage, current = node.units.wheel_power(t.wheel_voltage, t.wheel_current)
    values = {
        'range m': node.units.range_metres(t.range),
        'range raw': t.range,
        'wheel voltage V': voltage,
        'wheel current A': current,
        'tracking rate Hz': node.tracking_rate.rate,
        'frames dumped': node.frames_dumped,
        'commands refused': c.failed_commands,
        'response timeouts': c.timeouts,
        'late responses': c.late_responses,
        'stray responses': c.stray_responses,
        'cmd_vel timeouts': c.motion.timeouts,
    }
    for stream in node.streams:
        carries = ', '.join(f'{n} {k}' for k, n in sorted(stream.carries.items()))
        values[f'port {stream.port} carries'] = carries or 'nothing yet'
    if c.timeouts and c.counters.frames == 0:
        return ERROR, 'the iPaq does not answer', values
    if c.failed_commands:
        return WARN, f'{c.failed_commands} commands refused (see the log)', values
    hint = convert.unsigned_power_hint(t, node.units)
    if hint:
        return WARN, hint, values
    return OK, 'connected', values
