"""Pleo benchmark: prints one table, writes bench-output/pleo.json.

    make bench        (or: ros2 run pleo_driver pleo_bench)

Measures on this machine:
  * urf_builder on the template-sized project (PPG build log sizes), `rebuild` as a new
    process, interpreter start included (median of several runs);
  * urf_builder on a project that fills the 3.6 MB URF limit (sounds and motions), `rebuild`;
  * monitor line decode rate (sensor and joint dump lines);
  * driver CPU: the pleo_driver process against the emulator printing 20 dump lines/s,
    while this process subscribes to joint_states and sensors.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from sensor_msgs.msg import JointState

from legacy_robot_common.bench import cpu_percent, driver_against, report, wait_ready
from legacy_robot_interfaces.msg import NamedValues

from . import protocol as p
from . import sample
from .emulator import EmulatorOptions, PleoEmulator
from .pdk import urf

NAMESPACE = '/bench'


def cli_build_seconds(upf, amx_dir, runs):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, '-m', 'pleo_driver.urf_builder', upf, 'rebuild',
                               '--amx-dir', amx_dir, '--quiet'], capture_output=True, text=True)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f'urf_builder failed: {done.stderr}')
    return statistics.median(times)


def full_project(folder):
    """Sounds (11,025 Hz 8-bit mono, 0.9 MB each) and motions up to just under the limit."""
    resources = []
    for index in range(4):
        frames = 880_000 if index < 3 else urf.SIZE_LIMIT - 3 * 880_000 - 120_000
        sample.write(os.path.join(folder, f's{index}.wav'),
                     sample.wav_bytes(frames, shape='noise', seed=index))
        resources.append(f'<sound path="s{index}.wav" />')
    for index in range(20):
        sample.write(os.path.join(folder, f'm{index}.csv'),
                     sample.motion_csv(sample.bow_curves(), 300))
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
        records, _ = parser.feed(data[offset:offset + 4096])
        count += len(records)
    return count / (time.perf_counter() - started)


def driver_cpu(seconds):
    emulator = PleoEmulator(EmulatorOptions(dump_rate=10.0)).start()
    topics = {f'{NAMESPACE}/joint_states': JointState, f'{NAMESPACE}/sensors': NamedValues}
    with driver_against(emulator, 'pleo_driver.node', NAMESPACE, {
            'port': emulator.device_path}, topics, 'pleo_bench_listener') as (driver, listener):
        wait_ready(driver, lambda: all(listener.counts.values()), 'driver did not connect')
        return cpu_percent(driver.pid, seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='pleo_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--runs', type=int, default=7, help='template builds to time')
    parser.add_argument('--seconds', type=float, default=10.0, help='CPU measurement time')
    parser.add_argument('--output', default='bench-output', help='folder for pleo.json')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='pleo-bench-') as folder:
        template = sample.template_project(os.path.join(folder, 'template'))
        template_time = cli_build_seconds(template, os.path.join(folder, 'template', 'prebuilt'),
                                          args.runs)
        full = full_project(os.path.join(folder, 'full'))
        started = time.perf_counter()
        cli_build_seconds(full, folder, 1)
        full_time = time.perf_counter() - started
        size = os.path.getsize(os.path.join(folder, 'full', 'build', 'full.urf'))
    decode = decode_rate()
    cpu = driver_cpu(args.seconds)
    rows = [('urf_builder template project, new process (s, median)', template_time,
             f'{template_time:.3f}', ('<=', 0.15)),
            (f'urf_builder {size / 1e6:.2f} MB project (s)', full_time, f'{full_time:.2f}',
             ('<=', 3.0)),
            ('monitor dump lines decoded (per s)', decode, f'{decode:,.0f}', None),
            ('driver CPU, 10 Hz joint + sensor dumps, 2 subscribers (% of a core)', cpu,
             f'{cpu:.2f}', None)]
    return report('Pleo benchmark', rows, args.output, 'pleo', {'full_urf_bytes': size})


if __name__ == '__main__':
    sys.exit(main())
