"""P2OS shared-world benchmark: several emulated Pioneers in one world (issue 56).

    python -m legacy_robot_bench.p2os_driver.fleet_bench --seconds 20   (part of make bench)

For 1, 2, 5, 10 and 20 robots in one emulator process (`p2os_emulator --amrisim --world
office.map --robot r1 --robot r2 ...`), each robot with a client here taking its 16 sonar
readings per SIP and a 181-ray laser scan after every SIP at 10 Hz while it drives a circle:
the emulator's CPU (% of one core) and the SIP cycles the clients saw missed (a gap over
150 ms). The target: 10 robots within one core and no missed cycle.
"""

import argparse
import re
import subprocess
import sys
import time

from legacy_robot_bench.common.bench import cpu_percent, report
from legacy_robot_bench.p2os_driver.world_bench import LaserClient
from p2os_driver.world import default_world_path

FLEETS = (1, 2, 5, 10, 20)


def fleet_run(robots, seconds, world):
    """(CPU % of a core, scans/s per robot, missed cycles, SIPs) of an emulator process with
    this many robots in one world, each served by a LaserClient."""
    names = [arg for i in range(robots) for arg in ('--robot', f'r{i + 1}')]
    process = subprocess.Popen(
        [sys.executable, '-m', 'p2os_driver.emulator', '--amrisim', '--world', world]
        + ['--port', '0', *names],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    clients = []
    try:
        ports = []
        for line in process.stdout:
            found = re.search(r'tcp://127\.0\.0\.1:(\d+)', line)
            if found:
                ports.append(int(found.group(1)))
            if len(ports) == robots:
                break
        if len(ports) < robots:
            raise RuntimeError(f'emulator did not start: {process.stderr.read()}')
        clients = [LaserClient(port) for port in ports]
        time.sleep(2.0)  # start-up and the first scans out of the measurement
        before = [c.snapshot() for c in clients]
        cpu = cpu_percent(process.pid, seconds)
        after = [c.snapshot() for c in clients]
    finally:
        for client in clients:
            client.close()
        process.terminate()
        process.wait(10)

    def total(key):
        return sum(a[key] - b[key] for a, b in zip(after, before, strict=True))

    return cpu, total('scans') / seconds / robots, total('missed'), total('sips')


def main(argv=None):
    parser = argparse.ArgumentParser(prog='p2os_fleet_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='each CPU measurement')
    parser.add_argument('--output', default='bench-output', help='folder for p2os_fleet.json')
    parser.add_argument(
        '--robots', default=','.join(map(str, FLEETS)), help='fleet sizes, comma-separated'
    )
    args = parser.parse_args(argv)
    rows = []
    for robots in (int(n) for n in args.robots.split(',')):
        cpu, scans, missed, sips = fleet_run(robots, args.seconds, default_world_path())
        target = ('<=', 100.0) if robots == 10 else None
        rows.append(
            (
                f'emulator CPU, {robots} robots, office, sonar + laser 10 Hz (% of a core)',
                cpu,
                f'{cpu:.1f} ({scans:.1f} scans/s per robot, {missed} of {sips} cycles missed)',
                target,
            )
        )
        rows.append(
            (
                f'SIP cycles missed, {robots} robots',
                missed,
                f'{missed}',
                ('<=', 0) if robots == 10 else None,
            )
        )
    return report('P2OS shared world benchmark', rows, args.output, 'p2os_fleet')


if __name__ == '__main__':
    sys.exit(main())
