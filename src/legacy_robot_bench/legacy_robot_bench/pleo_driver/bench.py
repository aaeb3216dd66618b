"""Pleo benchmark: prints one table, writes bench-output/pleo.json.

    make bench        (or: ros2 run pleo_driver pleo_bench)

Measures on this machine:
  * urf_builder on the template-sized project (PPG build log sizes), `rebuild` as a new
    process, interpreter start included (median of several runs);
  * urf_builder on a project that fills the 3.6 MB URF limit (sounds and motions), `rebuild`;
  * monitor line decode rate (sensor and joint dump lines);
  * driver CPU: the pleo_driver process against the emulator printing 10 sensor + joint dump
    pairs per second, while this process subscribes to joint_states and sensors; in the same
    run, wire -> subscriber latency of joint_states;
  * joint_states per second reaching this process with the emulator unthrottled (dumps back
    to back), over 10 per second: the real Pleo's dump rate is not documented anywhere we
    found (docs/protocols/pleo.md §4.2), so the emulator's default stands in for it;
  * recording: driver CPU at the real dump rate without and with record_path.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from sensor_msgs.msg import JointState

from legacy_robot_bench.common.bench import (
    cpu_and_recorder_percent,
    cpu_percent,
    driver_against,
    driver_summary,
    floors,
    record_parameter,
    recording_overhead,
    report,
    wait_ready,
)
from legacy_robot_bench.common.floor import capture_shape
from legacy_robot_interfaces.msg import NamedValues
from pleo_driver import protocol as p
from pleo_driver import sample
from pleo_driver.emulator import EmulatorOptions, PleoEmulator
from pleo_driver.pdk import urf

NAMESPACE = '/bench'
JOINT_STATES = f'{NAMESPACE}/joint_states'
# the 0.15 s template target less the 28 ms this interpreter took to start when it was set:
# the builder's own share, which start-up noise does not move
TEMPLATE_BEYOND_START_UP = 0.12
CPU_TOPICS = {JOINT_STATES: JointState, f'{NAMESPACE}/sensors': NamedValues}
REAL_DUMP_RATE = 10.0  # per s; assumed (not documented), the emulator's default


def cli_build_seconds(upf, amx_dir, runs):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                '-m',
                'pleo_driver.urf_builder',
                upf,
                'rebuild',
                '--amx-dir',
                amx_dir,
                '--quiet',
            ],
            capture_output=True,
            text=True,
        )
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f'urf_builder failed: {done.stderr}')
    return statistics.median(times)


def interpreter_start_seconds(runs):
    """`python -c pass` with this interpreter (the same site hooks), median of runs: what
    every command costs before it does anything."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, '-c', 'pass'], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def full_project(folder):
    """Sounds (11,025 Hz 8-bit mono, 0.9 MB each) and motions up to just under the limit."""
    resources = []
    for index in range(4):
        frames = 880_000 if index < 3 else urf.SIZE_LIMIT - 3 * 880_000 - 120_000
        sample.write(
            os.path.join(folder, f's{index}.wav'),
            sample.wav_bytes(frames, shape='noise', seed=index),
        )
        resources.append(f'<sound path="s{index}.wav" />')
    for index in range(20):
        sample.write(
            os.path.join(folder, f'm{index}.csv'), sample.motion_csv(sample.bow_curves(), 300)
        )
        resources.append(f'<motion path="m{index}.csv" />')
    path = os.path.join(folder, 'full.upf')
    sample.write(path, sample.upf_text('full', resources))
    return path


def decode_rate(lines=100_000):
    joint = b'mu: joint: ' + b' '.join(str(-i).encode() for i in range(14)) + b'\r\n'
    sensor = b'mu: sensor: ' + b' '.join(str(i).encode() for i in range(41)) + b'\r\n'
    data = (joint + sensor) * (lines // 2)
    parser = p.MonitorParser()
    started = time.perf_counter()
    count = 0
    for offset in range(0, len(data), 4096):
        records, _ = parser.feed(data[offset : offset + 4096])
        count += len(records)
    return count / (time.perf_counter() - started)


def driver_cpu(seconds):
    """Driver CPU at the real dump rate, and the joint_states latency from the wire."""
    emulator = PleoEmulator(EmulatorOptions(dump_rate=REAL_DUMP_RATE)).start()
    with driver_against(
        emulator,
        'pleo_driver.node',
        NAMESPACE,
        emulator.parameters,
        CPU_TOPICS,
        'pleo_bench_listener',
    ) as (driver, listener):
        wait_ready(driver, lambda: all(listener.counts.values()), 'driver did not connect')
        listener.forget_receipts()
        cpu = cpu_percent(driver.pid, seconds)
        wire = listener.wire_latency(JOINT_STATES, emulator.sent)
        return cpu, wire, capture_shape(listener.node, 'pleo_driver', NAMESPACE)


def recording_cpu(seconds, record_path):
    """(driver CPU, its recorder thread's CPU) at the real dump rate, recording to record_path
    or not."""
    emulator = PleoEmulator(EmulatorOptions(dump_rate=REAL_DUMP_RATE)).start()
    with driver_against(
        emulator,
        'pleo_driver.node',
        NAMESPACE,
        {**emulator.parameters, **record_parameter(record_path)},
        CPU_TOPICS,
        'pleo_bench_listener',
    ) as (driver, listener):
        wait_ready(driver, lambda: all(listener.counts.values()), 'driver did not connect')
        return cpu_and_recorder_percent(driver.pid, seconds)


def unthrottled_rate(seconds):
    """joint_states per second here while the emulator prints dumps back to back."""
    emulator = PleoEmulator(EmulatorOptions(unthrottled=True)).start()
    with driver_against(
        emulator,
        'pleo_driver.node',
        NAMESPACE,
        emulator.parameters,
        {JOINT_STATES: JointState},
        'pleo_bench_listener',
    ) as (driver, listener):
        wait_ready(driver, lambda: listener.counts[JOINT_STATES], 'driver did not connect')
        return listener.rate(JOINT_STATES, seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='pleo_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--runs', type=int, default=7, help='template builds to time')
    parser.add_argument('--seconds', type=float, default=10.0, help='CPU measurement time')
    parser.add_argument('--output', default='bench-output', help='folder for pleo.json')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='pleo-bench-') as folder:
        template = sample.template_project(os.path.join(folder, 'template'))
        template_time = cli_build_seconds(
            template, os.path.join(folder, 'template', 'prebuilt'), args.runs
        )
        full = full_project(os.path.join(folder, 'full'))
        started = time.perf_counter()
        cli_build_seconds(full, folder, 1)
        full_time = time.perf_counter() - started
        size = os.path.getsize(os.path.join(folder, 'full', 'build', 'full.urf'))
    decode = decode_rate()
    cpu, wire, shape = driver_cpu(args.seconds)
    measured_floors = floors(shape, CPU_TOPICS, args.seconds)
    unthrottled = unthrottled_rate(args.seconds)
    start_up = interpreter_start_seconds(args.runs)
    own = template_time - start_up
    rows = [
        (
            'urf_builder template project, new process (s, median)',
            template_time,
            f'{template_time:.3f}',
            None,
        ),
        ('  python -c pass, the same interpreter (s, median)', start_up, f'{start_up:.3f}', None),
        (
            '  urf_builder template build / python -c pass',
            template_time / start_up,
            f'{template_time / start_up:.1f}x',
            None,
        ),
        (
            '  urf_builder template build beyond start-up (s)',
            own,
            f'{own:.3f}',
            ('<=', TEMPLATE_BEYOND_START_UP),
        ),
        (
            f'urf_builder {size / 1e6:.2f} MB project (s)',
            full_time,
            f'{full_time:.2f}',
            ('<=', 3.0),
        ),
        ('monitor dump lines decoded (per s)', decode, f'{decode:,.0f}', None),
        (
            'driver CPU, 10 Hz joint + sensor dumps, 2 subscribers (% of a core)',
            cpu,
            f'{cpu:.2f}',
            None,
        ),
    ]
    recording = recording_overhead(lambda path: recording_cpu(args.seconds, path), args.seconds)
    summary = driver_summary(
        'Pleo dumps', REAL_DUMP_RATE, decode, unthrottled, cpu, wire, measured_floors, recording
    )
    return report('Pleo benchmark', rows, args.output, 'pleo', {'full_urf_bytes': size}, summary)


if __name__ == '__main__':
    sys.exit(main())
