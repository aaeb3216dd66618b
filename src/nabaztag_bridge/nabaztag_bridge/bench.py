"""Nabaztag bridge benchmark: prints one table, writes bench-output/nabaztag.json.

    make bench        (or: ros2 run nabaztag_bridge nabaztag_bench --rabbits 500 --seconds 20)

Measures on this machine, with the bridge node as its own process and the emulated rabbits
(one thread each, pinging every second as the bridge tells them) in this process:
  * requests per second the bridge answered;
  * ping latency as a rabbit sees it (request sent → reply read to the close), p50 / p99;
  * bridge CPU, % of one core;
  * codec: default ping replies built and encoded per second;
  * events (clicks) per second reaching a subscriber in this process while 4 threads here
    send clicking pings back to back, over one rabbit's fastest rate: 1 request per second
    (the shortest ping interval the server can set; events ride on those requests);
  * click latency: a ping carrying a click sent -> its event received here, one click
    every 100 ms.
"""
import argparse
import contextlib
import statistics
import sys
import threading
import time

from legacy_robot_common.bench import (Listener, PipelineSummary, cpu_percent, percentile,
                                       report, start_driver, stop_process, wait_ready,
                                       wait_until)
from legacy_robot_common.emulator import SendLog, free_port
from legacy_robot_interfaces.msg import RabbitEvent

from . import protocol as p
from .emulator import RabbitEmulator, RabbitOptions, ping_url, rabbit_request
from .rabbits import RabbitRegistry

NAMESPACE = '/bench'
EVENTS = f'{NAMESPACE}/events'
REAL_REQUEST_RATE = 1.0     # per s: one rabbit at the shortest ping interval
CLICK = p.SD_VALUES['click']
SENDERS = 4


def reply_rate(count=50_000):
    """Default replies (ping interval + ambient) built and encoded per second, with the sd
    and tc of each ping decoded."""
    registry = RabbitRegistry(ping_interval=1, wake_after_boot=False)
    rabbit, _ = registry.seen('0019db000001')
    started = time.perf_counter()
    for _ in range(count):
        event = p.decode_sd('0')
        registry.note_ping(rabbit, 65808, p.decode_tc('7fffffff'), event)
        registry.reply_packet(rabbit)
    return count / (time.perf_counter() - started)


def measure_load(rabbits, seconds):
    port = free_port()
    bridge = start_driver('nabaztag_bridge.node', NAMESPACE,
                          {'host': '127.0.0.1', 'port': port, 'ping_interval': 1})
    fleet = None
    try:
        fleet = RabbitEmulator(RabbitOptions(server=f'127.0.0.1:{port}/vl', boot=False),
                               count=rabbits, spread=1.0).start()
        if not wait_until(lambda: all(r.status()['pings'] >= 2 for r in fleet.rabbits), 60):
            error = bridge.stderr.read() if bridge.poll() is not None else ''
            raise RuntimeError(f'the rabbits did not all reach the bridge {error}')
        for rabbit in fleet.rabbits:
            rabbit.ping_seconds.clear()
        pings_before = sum(r.status()['pings'] for r in fleet.rabbits)
        errors_before = fleet.errors()
        started = time.monotonic()
        cpu = cpu_percent(bridge.pid, seconds)
        elapsed = time.monotonic() - started
        pings = sum(r.status()['pings'] for r in fleet.rabbits) - pings_before
        latencies = [s for r in fleet.rabbits for s in r.ping_seconds]
        return pings / elapsed, latencies, cpu, fleet.errors() - errors_before
    finally:
        if fleet is not None:
            fleet.stop()
        stop_process(bridge)


@contextlib.contextmanager
def bridge_and_listener(namespace, topics, name):
    """The bridge as its own process on a free port (rabbits ping every second) and a Listener
    on topics {full name: class} in this process; yields (port, bridge, listener), and stops
    both on leaving."""
    port = free_port()
    bridge = start_driver('nabaztag_bridge.node', namespace,
                          {'host': '127.0.0.1', 'port': port, 'ping_interval': 1})
    listener = None
    try:
        listener = Listener(name, topics)
        yield port, bridge, listener
    finally:
        if listener is not None:
            listener.close()
        stop_process(bridge)


@contextlib.contextmanager
def _clicking():
    """The bridge publishing events; yields (click URL of rabbit n, listener)."""
    with bridge_and_listener(NAMESPACE, {EVENTS: RabbitEvent}, 'nabaztag_bench_listener') as (
            port, bridge, listener):
        click = lambda n: ping_url(f'http://127.0.0.1:{port}', f'0019db{n:06x}',  # noqa: E731
                                   RabbitOptions().bytecode_version, CLICK, p.IDLE_ID)
        wait_ready(bridge, lambda: _answers(click(0)) and listener.counts[EVENTS],
                   'the bridge did not answer or publish')
        yield click, listener


def _answers(url):
    try:
        return bool(rabbit_request(url, timeout=1.0))
    except OSError:
        return False


def unthrottled_event_rate(seconds):
    """Events per second here while SENDERS threads send clicking pings back to back."""
    with _clicking() as (click, listener):
        stop = threading.Event()

        def send(n):
            while not stop.is_set():
                rabbit_request(click(n))
        senders = [threading.Thread(target=send, args=(n,), daemon=True) for n in range(SENDERS)]
        for sender in senders:
            sender.start()
        time.sleep(1.0)                 # the senders reach their pace
        try:
            return listener.rate(EVENTS, seconds)
        finally:
            stop.set()
            for sender in senders:
                sender.join(5)


def click_latency(seconds, interval=0.1):
    """A clicking ping every interval s; wire -> subscriber latency of its event."""
    with _clicking() as (click, listener):
        sent, url = SendLog(), click(0)
        listener.forget_receipts()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sent.mark()
            rabbit_request(url)
            time.sleep(interval)
        time.sleep(0.5)                 # the last events arrive
        return listener.wire_latency(EVENTS, sent)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='nabaztag_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--rabbits', type=int, default=500, help='emulated rabbits (default 500)')
    parser.add_argument('--seconds', type=float, default=20.0, help='measurement time (default 20)')
    parser.add_argument('--output', default='bench-output', help='folder for nabaztag.json')
    args = parser.parse_args(argv)
    if args.rabbits < 1 or args.seconds <= 0:
        print('error: --rabbits must be ≥ 1 and --seconds positive', file=sys.stderr)
        return 2
    replies = reply_rate()
    try:
        rate, latencies, cpu, errors = measure_load(args.rabbits, args.seconds)
        events = unthrottled_event_rate(args.seconds)
        wire = click_latency(args.seconds)
    except RuntimeError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    p50, p99 = (1000 * percentile(latencies, f) for f in (0.5, 0.99))
    rows = [
        ('ping replies built and encoded (codec, one core)', replies, f'{replies:,.0f} /s',
         ('>=', 10_000)),
        (f'requests answered, {args.rabbits} rabbits pinging every second', rate,
         f'{rate:,.0f} /s', ('>=', 0.95 * args.rabbits)),
        ('ping latency seen by the rabbits, p50 (ms)', p50, f'{p50:.2f} ms', None),
        ('ping latency seen by the rabbits, p99 (ms)', p99, f'{p99:.2f} ms', ('<=', 10)),
        ('bridge CPU (% of one core)', cpu, f'{cpu:.1f} %', ('<=', 100)),
        ('failed requests and refused replies', errors, f'{errors}', ('<=', 0)),
    ]
    # the CPU in the summary is the bridge's under the 500-rabbit load, the load point
    summary = PipelineSummary('Nabaztag events', REAL_REQUEST_RATE, replies, events, cpu, wire)
    return report('Nabaztag bridge benchmark', rows, args.output, 'nabaztag',
                  {'latency_samples': len(latencies), 'median_ms': statistics.median(latencies)
                   * 1000 if latencies else None}, summary)


if __name__ == '__main__':
    sys.exit(main())
