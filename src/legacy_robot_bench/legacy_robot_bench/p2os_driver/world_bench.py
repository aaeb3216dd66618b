"""P2OS world benchmark: the emulator's simulated world (docs/protocols/p2os.md §5) and the
driver's laser.

    python -m legacy_robot_bench.p2os_driver.world_bench --seconds 20   (part of make bench)

Measures on this machine:
  * emulator CPU (its own OS process, % of one core) while a client takes 16 sonar readings
    per SIP and a 181-ray laser scan after every SIP, 10 Hz, the robot driving: on the office
    world shipped with p2os_driver and on a generated 100,000-point map;
  * load time of that 100,000-point map (parse + index), wall clock and CPU;
  * driver CPU at 10 Hz SIPs with the laser on (scan published, one subscriber) and off.
"""

import argparse
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from nav_msgs.msg import Odometry
from sensor_msgs.msg import LaserScan

from legacy_robot_bench.common.bench import cpu_percent, driver_against, report, wait_ready
from p2os_driver import protocol as p
from p2os_driver.emulator import EmulatorOptions, P2osEmulator
from p2os_driver.world import ArMap, default_world_path, load_world, write_armap

NAMESPACE = '/bench_world'
C = p.Command


def big_map(path, points=100_000, rooms=10, size=50_000):
    """An ARIA map of a size × size mm floor of rooms × rooms rooms, its walls drawn as
    `points` DATA points (no LINES: a scanned map), a door in every wall between two rooms."""
    step = size / rooms
    walls = (rooms + 1) * 2
    per_wall = 3 * points // walls  # sampled down to `points` below
    along = np.linspace(0, size, per_wall, endpoint=False)
    rows = []
    for i in range(rooms + 1):
        door = (along % step > step / 2 - 450) & (along % step < step / 2 + 450)
        keep = along[~door] if 0 < i < rooms else along
        rows.append(np.stack([keep, np.full_like(keep, i * step)], axis=1))
        rows.append(np.stack([np.full_like(keep, i * step), keep], axis=1))
    armap = ArMap()
    rng = np.random.default_rng(1)
    cells = np.round(np.concatenate(rows) / 20.0)  # a scanned map's points: on its 20 mm grid
    cells += rng.choice([-2, -1, 0, 0, 0, 0, 0, 0, 1, 2], size=cells.shape)  # some cells off
    cells = np.unique(cells.astype(np.int64), axis=0)
    keep = rng.choice(len(cells), size=min(points, len(cells)), replace=False)
    armap.points = cells[np.sort(keep)] * 20 - size // 2
    home = f'Cairn: RobotHome {step / 2 - size // 2:.0f} {step / 2 - size // 2:.0f} 0 "" ICON ""'
    text = write_armap(armap).replace('2D-Map\n', f'2D-Map\n{home}\n', 1)
    with open(path, 'w', encoding='latin-1') as f:
        f.write(text)
    return len(armap.points)


def load_time(path, repeats=3):
    """(median wall s, median CPU s) of load_world(path)."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        load_world(path)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return float(np.median(walls)), float(np.median(cpus))


def emulator_cpu(world, seconds):
    """CPU of an emulator process (--amrisim: all 16 sonars per SIP) serving the laser at 10 Hz
    to a client here while the robot drives a circle."""
    process = subprocess.Popen(
        [sys.executable, '-m', 'p2os_driver.emulator', '--amrisim', '--world', world]
        + ['--port', '0'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = None
        for line in process.stdout:
            found = re.search(r'tcp://127\.0\.0\.1:(\d+)', line)
            if found:
                port = int(found.group(1))
                break
        if port is None:
            raise RuntimeError(f'emulator did not start: {process.stderr.read()}')
        return _serve_laser(process, port, seconds)
    finally:
        process.terminate()
        process.wait(10)


def _serve_laser(process, port, seconds):
    client = LaserClient(port)
    time.sleep(2.0)  # start-up and the first scans out of the measurement
    before = client.snapshot()  # (--amrisim: the watchdog only warns, no keep-alive needed)
    cpu = cpu_percent(process.pid, seconds)
    after = client.snapshot()
    client.close()
    scans = (after['scans'] - before['scans']) / seconds
    sonar = (after['sonar'] - before['sonar']) / seconds
    return cpu, scans, sonar


class LaserClient:
    """A client of one emulated robot, reading on its own thread: motors on, the 181-ray laser
    on, driving a circle. Counts scans, sonar readings and SIP cycles missed (a gap of more
    than 1.5 cycles between two SIPs counts the cycles it skipped)."""

    def __init__(self, port, cycle=0.1):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=5)
        self.cycle = cycle
        self.counts = {'scans': 0, 'sonar': 0, 'sips': 0, 'missed': 0}
        self.stop = threading.Event()
        for step in range(3):
            self.sock.sendall(p.encode_command(step))
            time.sleep(0.1)
        self.sock.recv(4096)
        for number, argument in (
            (C.OPEN, None),
            (C.ENABLE, 1),
            (p.LASER_START, -90),
            (p.LASER_END, 90),
            (p.LASER_RESOLUTION, 100),
            (p.LASER_ENABLE, 2),
            (C.VEL, 300),
            (C.RVEL, 15),
        ):
            self.sock.sendall(p.encode_command(number, argument))
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        receiver, assembler = p.PacketReceiver(), p.LaserAssembler()
        counts, last = self.counts, None
        while not self.stop.is_set():
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            now = time.monotonic()
            for body in receiver.feed(data):
                if not isinstance(body, bytes):
                    continue
                if body[0] in (p.PacketType.LASER_POSE, p.PacketType.LASER_EXTENDED):
                    if assembler.add(p.decode_laser(body)) is not None:
                        counts['scans'] += 1
                elif body[0] in (p.PacketType.SIP_STOPPED, p.PacketType.SIP_MOVING):
                    counts['sonar'] += len(p.decode_sip(body, False).sonar)
                    counts['sips'] += 1
                    if last is not None and now - last > 1.5 * self.cycle:
                        counts['missed'] += round((now - last) / self.cycle) - 1
                    last = now

    def snapshot(self):
        return dict(self.counts)

    def close(self):
        self.stop.set()
        self.sock.close()


def driver_cpu(seconds, laser):
    """CPU of the driver process against the office world at 10 Hz, laser on or off."""
    emulator = P2osEmulator(EmulatorOptions(model='p3dx', world=default_world_path()))
    port = emulator.start_tcp()
    topics = {f'{NAMESPACE}/odom': Odometry, f'{NAMESPACE}/scan': LaserScan}
    parameters = {'port': f'tcp://127.0.0.1:{port}', 'laser': 'true' if laser else 'false'}
    with driver_against(
        emulator, 'p2os_driver.node', NAMESPACE, parameters, topics, 'p2os_world_bench'
    ) as (driver, listener):
        ready = f'{NAMESPACE}/scan' if laser else f'{NAMESPACE}/odom'
        wait_ready(driver, lambda: listener.counts[ready], 'driver did not connect')
        return cpu_percent(driver.pid, seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='p2os_world_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='each CPU measurement')
    parser.add_argument('--output', default='bench-output', help='folder for p2os_world.json')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = f'{folder}/big.map'
        count = big_map(path)
        wall, cpu_load = load_time(path)
        office = emulator_cpu(default_world_path(), args.seconds)
        big = emulator_cpu(path, args.seconds)
    laser_on = driver_cpu(args.seconds, True)
    laser_off = driver_cpu(args.seconds, False)
    rows = [
        (
            'emulator CPU, office world, 16 sonars + 181-ray laser at 10 Hz (% of a core)',
            office[0],
            f'{office[0]:.1f} ({office[1]:.1f} scans/s, {office[2]:.0f} sonar/s)',
            ('<=', 5.0),
        ),
        (
            f'emulator CPU, {count:,}-point map, the same (% of a core)',
            big[0],
            f'{big[0]:.1f} ({big[1]:.1f} scans/s, {big[2]:.0f} sonar/s)',
            ('<=', 15.0),
        ),
        (
            f'map load, {count:,} points (s, wall)',
            wall,
            f'{wall:.2f} (CPU {cpu_load:.2f})',
            ('<=', 2.0),
        ),
        ('driver CPU, 10 Hz, laser on (% of a core)', laser_on, f'{laser_on:.2f}', None),
        ('driver CPU, 10 Hz, laser off (% of a core)', laser_off, f'{laser_off:.2f}', None),
    ]
    return report('P2OS world benchmark', rows, args.output, 'p2os_world')


if __name__ == '__main__':
    sys.exit(main())
