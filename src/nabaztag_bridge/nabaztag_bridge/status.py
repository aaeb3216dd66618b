"""The Nabaztag bridge's diagnostics statuses, as (level, message, values): the HTTP server,
the speech worker and cache, and one status per rabbit."""

import dataclasses
import time

from legacy_robot_common.diagnostics import ERROR, OK, WARN

from .rabbits import is_online


def server_status(node):
    counters = dataclasses.asdict(node.bridge.counters)
    known, online = node.registry.counts()
    values = dict(
        counters,
        **{'url': f'{node.bridge.base_url}', 'rabbits known': known, 'rabbits online': online},
    )
    if not node.bridge.connected:
        return ERROR, 'not listening', values
    bad_before, node.bad_requests_reported = node.bad_requests_reported, counters['bad_requests']
    if counters['bad_requests'] > bad_before:
        return WARN, f'listening; bad requests: {counters["last_error"]}', values
    return OK, f'listening; {online} of {known} rabbits online', values


def rabbit_statuses(node):
    """One status per rabbit (a diagnostic_aggregator groups them by name), the most
    recently seen first, at most diagnostics_max_rabbits."""
    now = time.time()
    rabbits = sorted(node.registry.snapshot(), key=lambda r: r.last_seen, reverse=True)
    declared = [
        link_status(link.state(), link.diagnostics()) for link in node.roster.links.values()
    ]
    return declared + [
        rabbit_status(rabbit, now) for rabbit in rabbits[: node.max_rabbit_statuses]
    ]


def link_status(state, counters):
    """A kinds.base.RabbitState and its link's counters → a diagnostics status (a rabbit the
    bridge calls)."""
    values = {
        **counters,
        'serial': state.serial,
        'kind': state.kind,
        'address': state.address,
        'connected': state.connected,
        'asleep': state.asleep,
        'ears': list(state.ears),
        'last seen s ago': time.time() - state.last_seen if state.last_seen else -1.0,
    }
    if state.connected:
        level, message = OK, f'{state.kind}, {"asleep" if state.asleep else "awake"}'
    else:
        level, message = WARN, f'{state.kind}, unreachable: {state.detail or "not heard yet"}'
    return f'rabbit {state.serial}', f'Nabaztag/tag {state.serial}', level, message, values


def rabbit_status(rabbit, now):
    """A RabbitView → (name, hardware_id, level, message, values) for the diagnostics."""
    ago = now - rabbit.last_seen
    values = {
        'serial': rabbit.serial,
        'kind': 'violet',
        'state': rabbit.state,
        'last seen s ago': ago,
        'ping interval s': rabbit.ping_interval,
        'bytecode version': rabbit.bytecode_version,
        'plugin': rabbit.plugin,
        'ears': list(rabbit.ears),
        'queued packets': rabbit.queued_packets,
    }
    if is_online(rabbit.last_seen, rabbit.ping_interval, now):
        level, message = OK, f'online, {rabbit.state}'
    else:
        level, message = WARN, f'offline: last seen {ago:.0f} s ago'
    return f'rabbit {rabbit.serial}', f'Nabaztag/tag {rabbit.serial}', level, message, values


def speech_status(node):
    cache = node.speech_cache
    values = {
        'piper installed': node.voices.piper_installed,
        'espeak installed': node.voices.espeak_installed,
        'piper voices': ', '.join(node.voices.piper_voices),
        'cache folder': str(cache.folder),
        'cache MB': round(cache.bytes / 1e6, 3),
        'cache entries': len(cache.keys()),
        'cache hits': cache.hits,
        'cache evictions': cache.evictions,
    }
    if node.speech is None:
        return (
            WARN,
            'no speech engine installed (say answers which package to install)',
            values,
        )
    values.update(node.speech.counters)
    values['worker pid'] = node.speech.worker.pid or 0
    values['worker starts'] = node.speech.worker.starts
    values['last error'] = node.speech.last_error
    if cache.error:
        return ERROR, cache.error, values
    if node.speech.worker.pid is None and node.speech.worker.starts:
        return WARN, f'speech worker down: {node.speech.last_error}', values
    return OK, 'speech ready', values
