"""Rabbit kinds benchmark (serverless, pynab): one table, bench-output/nabaztag_kinds.json.

    nabaztag_kinds_bench [--calls 200] [--seconds 30] [--rabbits 50] [--quick]

The bridge runs as its own process with a rabbits file; the emulated rabbits (ServerlessRabbit,
NabdEmulator) run in this process, so every latency is two readings of one clock here:
  * ROS call -> rabbit: a set_ears service call through a real client -> the emulator has the
    request (serverless: its /right, the second of the two GETs; pynab: the ears packet),
    one call at a time, p50 / p99 per kind;
  * rabbit -> ROS topic: a click hook POSTed by the serverless emulator, a button event sent by
    the emulated nabd -> its RabbitEvent on the events topic here, p50 / p99 per kind;
  * idle: the bridge's CPU (% of one core) with 50 declared rabbits (half of each kind) that
    do nothing, over --seconds (the serverless rabbits' /status reads included).
"""

import argparse
import contextlib
import json
import pathlib
import sys
import tempfile
import threading
import time

from legacy_robot_bench.common.bench import (
    Listener,
    cpu_percent,
    latency_summary,
    report,
    start_driver,
    stop_process,
    wait_ready,
)
from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import RabbitEvent
from legacy_robot_interfaces.srv import RabbitEars
from nabaztag_bridge.emulator_pynab import NabdEmulator
from nabaztag_bridge.emulator_serverless import ServerlessRabbit

NAMESPACE = '/bench_kinds'
EVENTS = f'{NAMESPACE}/events'
KINDS = ('serverless', 'pynab')
LATENCY_TARGET_MS = 20.0  # issue 61: call -> rabbit and rabbit -> topic, p99, loopback
IDLE_CPU_TARGET = 10.0  # issue 61: % of one core for 50 idle rabbits of mixed kinds
IDLE_RABBITS = 50
WAIT = 5.0  # s for one arrival before the sample counts as lost


class Arrivals:
    """(time.monotonic(), what) of everything that arrived, in order; waitable."""

    def __init__(self):
        self.items = []
        self.changed = threading.Condition()

    def add(self, what):
        with self.changed:
            self.items.append((time.monotonic(), what))
            self.changed.notify_all()

    def mark(self):
        with self.changed:
            return len(self.items)

    def first_since(self, mark, wanted, timeout=WAIT):
        """The time of the first arrival at or after mark for which wanted(what) is true (None
        if none comes within timeout)."""

        def found():
            return next((at for at, what in self.items[mark:] if wanted(what)), None)

        with self.changed:
            self.changed.wait_for(lambda: found() is not None, timeout)
            return found()


class TimedServerless(ServerlessRabbit):
    """A ServerlessRabbit that notes when each API request (its path) arrives."""

    def __init__(self, server):
        super().__init__(server)
        self.arrivals = Arrivals()

    def answer(self, method, path, args):
        self.arrivals.add(path)
        return super().answer(method, path, args)


class TimedNabd(NabdEmulator):
    """A NabdEmulator that notes when each line (its packet type) arrives."""

    def __init__(self):
        super().__init__()
        self.arrivals = Arrivals()

    def _handle(self, line, service):
        self.arrivals.add(_packet_type(line))
        super()._handle(line, service)


def _packet_type(line):
    try:
        return json.loads(line).get('type')
    except (ValueError, AttributeError):
        return None


class EventListener(Listener):
    """A Listener that also notes (serial, kind) of each event with its arrival time."""

    def __init__(self, name, topic):
        self.arrivals = Arrivals()
        super().__init__(name, {topic: RabbitEvent})

    def _count(self, topic, msg):
        self.arrivals.add((msg.serial, msg.kind))
        super()._count(topic, msg)


def rabbits_file_text(serverless, nabds):
    """The rabbits file for serverless (name → ServerlessRabbit) and nabds (name → nabd)."""
    lines = ['rabbits:']
    lines += [
        f'  - {{name: {name}, kind: serverless, address: "127.0.0.1:{rabbit.port}"}}'
        for name, rabbit in serverless.items()
    ]
    lines += [
        f'  - {{name: {name}, kind: pynab, address: "127.0.0.1:{nabd.port}"}}'
        for name, nabd in nabds.items()
    ]
    return '\n'.join(lines) + '\n'


def emulated_rabbits(count, port):
    """count emulated rabbits, half serverless (hooks to the bridge's port), half pynab;
    → ({name: ServerlessRabbit}, {name: NabdEmulator}), started."""
    serverless = {
        f'serverless{i}': TimedServerless(f'127.0.0.1:{port}').start()
        for i in range((count + 1) // 2)
    }
    nabds = {f'pynab{i}': TimedNabd().start() for i in range(count // 2)}
    return serverless, nabds


def all_connected(serverless, nabds):
    """Every serverless rabbit has had its /status read and every nabd has the bridge."""
    return all('/status' in r.requests for r in serverless.values()) and all(
        n.status()['services'] for n in nabds.values()
    )


@contextlib.contextmanager
def bridge_with_rabbits(count, folder):
    """The bridge (its own process) declaring count emulated rabbits, and an EventListener here;
    yields (bridge process, serverless, nabds, listener) once every rabbit is connected."""
    port = free_port()
    serverless, nabds = emulated_rabbits(count, port)
    rabbits_file = pathlib.Path(folder) / 'rabbits.yaml'
    rabbits_file.write_text(rabbits_file_text(serverless, nabds))
    bridge = start_driver(
        'nabaztag_bridge.node',
        NAMESPACE,
        {'host': '127.0.0.1', 'port': port, 'rabbits_file': str(rabbits_file)},
    )
    listener = None
    try:
        listener = EventListener('nabaztag_kinds_bench', EVENTS)
        wait_ready(
            bridge,
            lambda: all_connected(serverless, nabds) and listener.node.count_publishers(EVENTS),
            'the bridge did not reach its rabbits',
        )
        yield bridge, serverless, nabds, listener
    finally:
        if listener is not None:
            listener.close()
        stop_process(bridge)
        for emulator in (*serverless.values(), *nabds.values()):
            emulator.stop()


# ---- measures -------------------------------------------------------------------------------
def call_latencies(listener, rabbits, calls):
    """{kind: seconds from each set_ears call to its rabbit having the request}; rabbits:
    {kind: (name, emulator, what the call's last request is)}."""
    client = listener.node.create_client(RabbitEars, f'{NAMESPACE}/set_ears')
    if not client.wait_for_service(timeout_sec=20.0):
        raise RuntimeError('no set_ears service')
    latencies = {}
    for kind, (name, emulator, last_request) in rabbits.items():
        latencies[kind] = []
        for index in range(calls):
            request = RabbitEars.Request(serial=name, ear0=index % 17, ear1=16 - index % 17)
            mark, started = emulator.arrivals.mark(), time.monotonic()
            reply = _call(client, request)
            arrived = emulator.arrivals.first_since(mark, lambda what, w=last_request: what == w)
            if reply is not None and reply.success and arrived is not None:
                latencies[kind].append(arrived - started)
    listener.node.destroy_client(client)
    return latencies


def _call(client, request):
    """The reply to one service call (None after WAIT s); the listener's thread spins."""
    done = threading.Event()
    future = client.call_async(request)
    future.add_done_callback(lambda _: done.set())
    return future.result() if done.wait(WAIT) else None


def event_latencies(listener, sources, events):
    """{kind: seconds from the rabbit doing something to its event here}; sources: {kind:
    (name, the action that makes a click)}."""
    latencies = {}
    for kind, (name, click) in sources.items():
        latencies[kind] = []
        for _ in range(events):
            mark, started = listener.arrivals.mark(), time.monotonic()
            click()
            arrived = listener.arrivals.first_since(
                mark, lambda what, n=name: what == (n, RabbitEvent.CLICK)
            )
            if arrived is not None:
                latencies[kind].append(arrived - started)
    return latencies


def latencies_of_one_of_each(calls, folder):
    """(call -> rabbit, rabbit -> topic) latencies per kind with one rabbit of each kind."""
    with bridge_with_rabbits(2, folder) as (_, serverless, nabds, listener):
        (name_s, rabbit), (name_p, nabd) = *serverless.items(), *nabds.items()
        to_rabbit = call_latencies(
            listener,
            {'serverless': (name_s, rabbit, '/right'), 'pynab': (name_p, nabd, 'ears')},
            calls,
        )
        to_topic = event_latencies(
            listener, {'serverless': (name_s, rabbit.click), 'pynab': (name_p, nabd.click)}, calls
        )
    return to_rabbit, to_topic


def idle_cpu(rabbits, seconds, folder):
    """The bridge's CPU (% of one core) over seconds with rabbits declared, all idle."""
    with bridge_with_rabbits(rabbits, folder) as (bridge, _, _, _):
        return cpu_percent(bridge.pid, seconds)


# ---- the table ------------------------------------------------------------------------------
def latency_rows(what, latencies, expected):
    """p50 / p99 rows (p99 targeted) and a lost-samples row per kind; latencies {kind: s}."""
    rows = []
    for kind, values in latencies.items():
        summary = summarize(values)
        for q in (50, 99):
            value = summary[f'p{q}_ms']
            target = ('<=', LATENCY_TARGET_MS) if q == 99 else None
            rows.append((f'{kind}: {what} p{q} (ms)', value, f'{value:.2f} ms', target))
        lost = expected - len(values)
        rows.append((f'{kind}: {what}, lost of {expected}', lost, str(lost), ('<=', 0)))
    return rows


def summarize(latencies):
    """latency_summary(), or infinite figures when every sample was lost (a miss, not a
    crash)."""
    if not latencies:
        return {
            'p50_ms': float('inf'),
            'p99_ms': float('inf'),
            'max_ms': float('inf'),
            'samples': 0,
        }
    return latency_summary(latencies)


def idle_rows(rabbits, cpu):
    return [
        (
            f'{rabbits} idle rabbits ({(rabbits + 1) // 2} serverless, {rabbits // 2} pynab): '
            'bridge CPU (% of one core)',
            cpu,
            f'{cpu:.2f} %',
            ('<=', IDLE_CPU_TARGET),
        )
    ]


def build_parser():
    parser = argparse.ArgumentParser(prog='kinds_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--output', default='bench-output', help='folder for the JSON')
    parser.add_argument('--calls', type=int, default=200, help='calls and events per kind')
    parser.add_argument('--seconds', type=float, default=30.0, help='idle CPU measured over')
    parser.add_argument('--rabbits', type=int, default=IDLE_RABBITS, help='rabbits when idle')
    parser.add_argument(
        '--quick', action='store_true', help='50 calls, 5 s idle (a smoke test; rough numbers)'
    )
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.quick:
        args.calls, args.seconds = min(args.calls, 50), min(args.seconds, 5.0)
    with tempfile.TemporaryDirectory(prefix='bench-kinds-') as folder:
        to_rabbit, to_topic = latencies_of_one_of_each(args.calls, folder)
        cpu = idle_cpu(args.rabbits, args.seconds, folder)
    rows = (
        latency_rows('set_ears call -> rabbit', to_rabbit, args.calls)
        + latency_rows('click -> events topic', to_topic, args.calls)
        + idle_rows(args.rabbits, cpu)
    )
    extra = {
        'latencies_ms': {
            'call_to_rabbit': {k: summarize(v) for k, v in to_rabbit.items()},
            'event_to_topic': {k: summarize(v) for k, v in to_topic.items()},
        },
        'idle': {'rabbits': args.rabbits, 'seconds': args.seconds, 'cpu': cpu},
    }
    return report('Nabaztag rabbit kinds benchmark', rows, args.output, 'nabaztag_kinds', extra)


if __name__ == '__main__':
    sys.exit(main())
