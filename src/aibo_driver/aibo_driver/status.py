"""The AIBO node's diagnostics statuses, as (level, message, values): the dog (telemetry link,
audio sequence, pollers), the RCODE link and the motion (walk planner, polls, falls)."""

from legacy_robot_common.diagnostics import ERROR, OK, WARN


def dog_status(node):
    t = node.telemetry
    cause = link_cause(node, t)
    if cause:
        return (
            ERROR,
            cause,
            {
                'host': node.host,
                'bad replies': t.counters.bad_frames,
                'last error': t.counters.last_error,
            },
        )
    if t.version is None:
        return ERROR, 'no version reply from the dog yet', {'host': node.host}
    sequence = t.audio_sequence
    values = {
        'AiboPet version': str(t.version),
        'product': t.product.value,
        'bType': t.version.type_byte,
        'camera mode': t.camera_mode,
        'camera frames per second': node.rates['camera'].rate,
        'colour frames per second': node.rates['color'].rate,
        'audio chunks per second': node.rates['audio'].rate,
        'audio chunks': node.audio_chunks,
        'audio chunks lost': sequence.lost,
        'audio chunks lost across reconnects': sequence.lost_across_reconnects,
        'audio gaps of unknown size': sequence.unknown_gaps,
        'audio sequence restarts': sequence.restarts,
        'bad replies': t.counters.bad_frames,
        'records dropped': node.records_dropped,
    }
    unavailable = [op.value for op, poller in t.pollers.items() if not poller.available]
    for op, poller in t.pollers.items():
        values[f'{op.value}'] = (
            f'{"available" if poller.available else "unavailable"}: '
            f'{poller.replies_with_data} of {poller.requests} replies '
            'with data'
        )
    if t.camera_note:
        values['camera note'] = t.camera_note
    if unavailable:
        return WARN, f'unavailable on this stick: {", ".join(unavailable)}', values
    if sequence.unknown_gaps:
        return (
            WARN,
            (
                f'audio lost across {sequence.unknown_gaps} reconnect(s), amount unknown '
                f"(the dog's sequence started again); {sequence.lost} more chunks known "
                'lost'
            ),
            values,
        )
    if sequence.lost:
        return (
            WARN,
            (
                f'{sequence.lost} audio chunks lost ({sequence.lost_across_reconnects} '
                'across reconnects)'
            ),
            values,
        )
    return OK, f'AiboPet {t.version} {t.product.value}', values


def link_cause(node, t):
    """What to change when the link keeps failing in one of the two ways a wrong guess of
    docs/protocols/aibo.md §6.1 shows: the dog hangs up right after a request, or no version
    reply parses."""
    if t.connected:
        return None
    if t.closed_after:
        ops = ', '.join(
            f'{op.value} (0x{t.settings.opcodes.byte[op]:02X})' for op in t.closed_after
        )
        return (
            f'the dog closed the link right after {ops}: it does not take that request '
            f'byte; check the opcodes.{t.closed_after[-1].value} parameter'
        )
    if t.version is None and t.counters.bad_frames:
        return (
            f'no version reply parses ({t.counters.last_error}): check '
            f'version_size_prefix (now {str(node.version_prefix).lower()})'
        )
    return None


def rcode_status(node):
    level, message, values = node.rcode_link_status()
    if node.rcode_off:  # a LifePlus dog: nothing is wrong
        return OK, f'off: {node.rcode_off}', values
    return level, message, values


def motion_status(node):
    if getattr(node, 'urbi', None) is not None:
        return OK, 'robot.walk / robot.turn over URBI', dict(node.counts)
    if node.rcode is None or node.rcode_off:
        return OK, f'no motion: {node.rcode_off}', {}
    r = node.rcode
    planner = r.planner
    values = {
        'model': node.model_name,
        'walk or turn lines': planner.segments,
        'STOP_WALK lines': planner.stops,
        'motion lines refused by the dog': planner.errors,
        'last refusal': r.last_refusal,
        'Wait (queued actions)': planner.wait,
        'doing': 'nothing'
        if planner.current is None
        else (f'{planner.current.kind} {planner.current.gait} {planner.current.direction:+.0f}'),
        'cmd_vel timeouts': r.motion.timeouts,
        'poll answers': r.poll_answers,
        'poll failures': r.poll_failures,
        'late answers': r.late_answers,
        'last poll failure': r.last_poll_failure,
        **{k: v for k, v in node.counts.items()},
        'touches': ', '.join(f'{k} {v}' for k, v in sorted(node.touches.items())) or 'none',
        'distance walked (m)': round(planner.odometry.distance, 3),
        'angle turned (rad)': round(planner.odometry.turned, 3),
    }
    if not r.connected:
        return ERROR, 'the RCODE link is down: the dog cannot be moved', values
    if r.poll_failures and not r.poll_answers:
        return WARN, f'the dog answers no PRINT poll ({r.last_poll_failure})', values
    if planner.errors:
        return WARN, f'the dog refused motion lines: {planner.last_error}', values
    if node.counts['falls']:
        return WARN, f'the dog fell {node.counts["falls"]} time(s) (Status 1)', values
    return OK, values['doing'], values


def urbi_status(node):
    """The URBI link: its streams' rates, errors the dog reported, frames skipped."""
    u = node.urbi
    extra = u.counters_extra
    values = {
        'host': node.host,
        'model': node.model_name,
        'camera frames per second': node.rates['camera'].rate,
        'audio chunks per second': node.rates['audio'].rate,
        'audio chunks': node.audio_chunks,
        'audio chunks lost': extra['audio gaps'],
        'bad frames skipped': u.counters.bad_frames,
        'JPEG frames dropped': extra['bad jpeg'],
        'errors from the dog': extra['errors'],
        'joint targets clamped': extra['clamped'],
        'pings unanswered': extra['pings lost'],
        'records dropped': node.records_dropped,
    }
    if not u.connected:
        return ERROR, f'not connected: {u.counters.last_error or "connecting"}', values
    if extra['errors']:
        return WARN, f'the dog answered an error: {u.last_error_text}', values
    return OK, 'streaming', values
