"""What the live view and the bags cost: prints one table, writes bench-output/foxglove.json.

    python -m legacy_robot_bench.foxglove_bench [--seconds 20] [--output bench-output]

* bringup of all five robots on their emulators (the demo's process): its CPU without the
  relay, with the relay and no client, and with one Foxglove client (another process, the
  protocol client of foxglove_client.py) subscribed to every channel; the messages/s that
  client receives and the messages the relay dropped (target: none at these rates).
* recording export --rosbag2 of each shipped recording at --speed 0: CDR megabytes written
  per second, and the recording's own megabytes per second.
"""

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from legacy_robot_bench.common.bench import cpu_percent, report, stop_process, wait_until
from legacy_robot_bringup.foxglove_client import FoxgloveClient
from legacy_robot_bringup.paths import share_dir
from legacy_robot_bringup.recordings import decode

ANNOUNCEMENT = re.compile(r'foxglove: (ws://localhost:\d+)')
SETTLE = 10.0  # s after start-up before measuring (links up, first graph look done)
RELAY_STATUS = 'foxglove_relay: foxglove'


def start_bringup(foxglove):
    """bringup of every robot with --sim (and --foxglove 0); (process, url or None)."""
    command = [sys.executable, '-m', 'legacy_robot_bringup.compose', '--sim']
    if foxglove:
        command += ['--foxglove', '0']
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    lines = []
    threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True).start()
    if not foxglove:
        return process, None

    def found():
        return next((m for m in map(ANNOUNCEMENT.search, list(lines)) if m), None)

    if not wait_until(lambda: found() or process.poll() is not None, 60) or not found():
        stop_process(process)
        raise RuntimeError('bringup --foxglove did not announce its server')
    return process, found().group(1)


def relay_dropped(client):
    """Messages the relay dropped, from its last /diagnostics status the client received."""
    for array in reversed(client.messages.get('/diagnostics', [])):
        for status in array.status:
            if status.name.endswith(RELAY_STATUS):
                return int({kv.key: kv.value for kv in status.values}['messages dropped'])
    raise RuntimeError('no relay status on /diagnostics')


def bringup_costs(seconds):
    """{measure: value}: bringup CPU without relay, relay idle, relay + one client watching."""
    results = {}
    process, _ = start_bringup(foxglove=False)
    try:
        time.sleep(SETTLE)
        results['no relay'] = cpu_percent(process.pid, seconds)
    finally:
        stop_process(process)
    process, url = start_bringup(foxglove=True)
    try:
        time.sleep(SETTLE)
        results['relay, no client'] = cpu_percent(process.pid, seconds)
        client = FoxgloveClient(url)
        try:
            client.receive(3.0)  # every channel advertised
            for topic in list(client.channels):
                client.subscribe(topic, decode=topic == '/diagnostics')
            client.receive(3.0)
            before, started = client.received, time.monotonic()
            cpu = threading.Thread(
                target=lambda: results.update(
                    {'relay, one client on every channel': cpu_percent(process.pid, seconds)}
                )
            )
            cpu.start()
            client.receive(seconds)
            cpu.join()
            results['messages/s to the client'] = (client.received - before) / (
                time.monotonic() - started
            )
            results['channels'] = len(client.channels)
            client.receive(1.5)  # the relay's next status
            results['dropped'] = relay_dropped(client)
        finally:
            client.close()
    finally:
        stop_process(process)
    return results


def export_rates():
    """{recording name: (recording MB, CDR MB, seconds)} for each shipped recording."""
    rates = {}
    folder = tempfile.mkdtemp(prefix='bag_bench_')
    try:
        for path in sorted((share_dir() / 'recordings').glob('*.mcap')):
            started = time.monotonic()
            decoded = decode(str(path), speed=0, bag=f'{folder}/{path.stem}')
            seconds = time.monotonic() - started
            rates[path.stem] = (path.stat().st_size / 1e6, decoded.bag.bytes / 1e6, seconds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return rates


def main(argv=None):
    parser = argparse.ArgumentParser(prog='foxglove_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='each CPU measurement')
    parser.add_argument('--output', default='bench-output', help='folder for foxglove.json')
    args = parser.parse_args(argv)
    costs = bringup_costs(args.seconds)
    rows = [
        (
            f'bringup of all five --sim, {label} (% of a core)',
            costs[label],
            f'{costs[label]:.1f}',
            None,
        )
        for label in ('no relay', 'relay, no client', 'relay, one client on every channel')
    ]
    rows += [
        (
            f'messages/s to the client ({costs["channels"]} channels)',
            costs['messages/s to the client'],
            f'{costs["messages/s to the client"]:,.0f}',
            None,
        ),
        ('messages the relay dropped', costs['dropped'], f'{costs["dropped"]}', ('<=', 0)),
    ]
    for name, (recording_mb, cdr_mb, seconds) in export_rates().items():
        rows.append(
            (
                f'export {name}.mcap: CDR written (MB/s; {cdr_mb:.2f} MB in {seconds:.1f} s)',
                cdr_mb / seconds,
                f'{cdr_mb / seconds:.2f}',
                None,
            )
        )
        rows.append(
            (
                f'export {name}.mcap: recording read (MB/s; {recording_mb:.3f} MB)',
                recording_mb / seconds,
                f'{recording_mb / seconds:.3f}',
                None,
            )
        )
    return report('Foxglove relay and bag export', rows, args.output, 'foxglove')


if __name__ == '__main__':
    sys.exit(main())
