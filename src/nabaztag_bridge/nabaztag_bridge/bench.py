"""Nabaztag bridge benchmark: prints one table, writes bench-output/nabaztag.json.

    make bench        (or: ros2 run nabaztag_bridge nabaztag_bench --rabbits 500 --seconds 20)

Measures on this machine, with the bridge node as its own process and the emulated rabbits
(one thread each, pinging every second as the bridge tells them) in this process:
  * requests per second the bridge answered;
  * ping latency as a rabbit sees it (request sent → reply read to the close), p50 / p99;
  * bridge CPU, % of one core;
  * codec: default ping replies built and encoded per second.
"""
import argparse
import statistics
import sys
import time

from legacy_robot_common.bench import (cpu_percent, report, start_driver, stop_process,
                                       wait_until)

from . import protocol as p
from .emulator import RabbitEmulator, RabbitOptions, free_port
from .rabbits import RabbitRegistry

NAMESPACE = '/bench'


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


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


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
        errors_before = _errors(fleet)
        started = time.monotonic()
        cpu = cpu_percent(bridge.pid, seconds)
        elapsed = time.monotonic() - started
        pings = sum(r.status()['pings'] for r in fleet.rabbits) - pings_before
        latencies = [s for r in fleet.rabbits for s in r.ping_seconds]
        return pings / elapsed, latencies, cpu, _errors(fleet) - errors_before
    finally:
        if fleet is not None:
            fleet.stop()
        stop_process(bridge)


def _errors(fleet):
    """Failed requests and replies the rabbits refused, over the whole fleet."""
    return sum(r.status()['errors'] + r.status()['bad_packets'] for r in fleet.rabbits)


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
    return report('Nabaztag bridge benchmark', rows, args.output, 'nabaztag',
                  {'latency_samples': len(latencies), 'median_ms': statistics.median(latencies)
                   * 1000 if latencies else None})


if __name__ == '__main__':
    sys.exit(main())
