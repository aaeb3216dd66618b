"""`make soak`: the fault suite for every robot (not part of CI).

    python -m legacy_robot_bench.soak [--parts fuzz restart] [--only p2os ...]
                                        [--cases 1000000] [--cycles 50] [--output soak-output]

Parts:
  fuzz     every decoder of every robot (and the URF/UMF/USF/UCF/AMX readers) gets --cases
           random and mutated inputs; target: 0 uncaught exceptions (rejects are counted).
  restart  each driver runs as its own process while its emulator is killed (SIGKILL) and
           started again at the same address --cycles times; targets: every reconnect (the
           emulator ready -> the driver's topic flows again, seen from this process) under
           2 s, no growth in the driver's open file descriptors or threads, and the driver
           never exits.
  noise    every driver at once for --noise-minutes against its emulator dropping 0.5 % and
           corrupting 0.5 % of its bytes: no crash, bad frames counted in diagnostics, the
           main topic keeps flowing; then P2OS odometry still agrees with the robot's (after
           driving 1 m/s through many wraps of the 15-bit counters) and the AIBO driver's lost
           audio chunks are the gaps a subscriber saw. The Nabaztag talks HTTP over TCP,
           where the stack drops damaged bytes: its garbage input is the nabaztag part.
The robots name their own parts in their plugins (RobotPlugin.soak_parts); today:
  audio    AIBO audio in real time for --audio-minutes while another process keeps one
           core busy: 0 chunks lost.
  safety   P2OS: cmd_vel stops -> the robot is told to stop within cmd_vel_timeout (plus
           50 ms to deliver it); the driver killed with SIGINT and with SIGTERM (--repeats
           times each) -> STOP, ENABLE 0 and CLOSE reach the robot every time.
  nabaztag 10,000 malformed requests (--requests) while 20 emulated rabbits ping and 5 of
           them upload recordings: every malformed request answered 4xx, the bridge stays
           up, the normal rabbits see no errors, each recording published exactly once.
Not run unless asked for (--parts mixed):
  mixed    every robot at once in one bringup for --minutes (120), with line noise, emulator
           kills, commands, parameter changes, 500 rabbits and a slow image consumer; sampled
           into <output>/mixed.csv and mixed.png (mixed_soak.py).
Prints one table, writes <output>/soak.json (and the drivers' logs); exit 1 on a miss.
"""

import argparse
import dataclasses
import functools
import importlib
import json
import multiprocessing
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from legacy_robot_bench.common.bench import machine_description, percentile, ros_args, wait_until
from legacy_robot_bench.common.soak import Row, fuzz
from legacy_robot_bringup.registry import discover_plugins

from .bench import ROBOTS, add_only_argument, format_table, only_chosen
from .emulator_process import Emulator

RECONNECT_LIMIT = 2.0  # s: the suite's target for every reconnect
DOWN_TIME = 0.5  # s the emulator stays dead in each cycle
WARM_UP_CYCLES = 3  # resources are compared from here on (DDS settles in first)
NOISE_SETTLE = 5.0  # s after the noise stops before the checks read the state
DRIVE_PERIOD = 0.1  # s between the noise run's calls of a robot's drive()
NAMESPACE = '/soak'


# ---- fuzz -----------------------------------------------------------------------------------
RECORDING_TARGETS = 'legacy_robot_bench.recording_fuzz'  # every robot's recording


def _fuzz_job(job):
    module, index, cases = job
    target = importlib.import_module(module).fuzz_targets()[index]
    return fuzz(target, cases, seed=index)


def fuzz_part(robots, cases):
    modules = [f'legacy_robot_bench.{robot.package}.soak' for robot in robots] + [
        RECORDING_TARGETS
    ]
    jobs = [
        (module, index, cases)
        for module in modules
        for index in range(len(importlib.import_module(module).fuzz_targets()))
    ]
    rows = []
    # spawn: the workers import only the codecs, never a forked copy of this process's state
    with multiprocessing.get_context('spawn').Pool(os.cpu_count()) as pool:
        for result in pool.imap(_fuzz_job, jobs):
            print(
                f'fuzz: {result.name}: {result.cases:,} inputs, {result.rejected:,} rejects, '
                f'{result.crashes} uncaught ({result.seconds:.0f} s)'
                + (f'\n  first: {result.first_crash}' if result.crashes else ''),
                flush=True,
            )
            rows.append(
                Row(
                    'fuzz',
                    result.name,
                    f'{result.crashes} uncaught in {result.cases:,}; {result.rejected:,} rejects',
                    '0 uncaught',
                    result.crashes == 0,
                )
            )
    return rows


# ---- kill / restart -------------------------------------------------------------------------
def resources(pid):
    """(open file descriptors, threads) of a process, from /proc."""
    fds = len(os.listdir(f'/proc/{pid}/fd'))
    status = pathlib.Path(f'/proc/{pid}/status').read_text()
    threads = int(
        next(line.split()[1] for line in status.splitlines() if line.startswith('Threads:'))
    )
    return fds, threads


def settled_resources(pid, samples=10, interval=0.1):
    """The fewest fds and threads over a second: a request being served (the Nabaztag bridge
    has a thread and a socket per request) or a second link still reconnecting (the AIBO's
    RCODE port) adds one for a moment; a leak stays."""
    readings = []
    for _ in range(samples):
        readings.append(resources(pid))
        time.sleep(interval)
    return min(fds for fds, _ in readings), min(threads for _, threads in readings)


def restart_cycles(robot, cycles, output):
    """Kill and restart robot's emulator cycles times under its running driver."""
    from legacy_robot_bench.common.bench import Listener, stop_process  # rclpy only for this part

    spec_module = importlib.import_module(f'legacy_robot_bench.{robot.package}.soak')
    with (
        tempfile.TemporaryDirectory(prefix='soak-') as folder,
        open(pathlib.Path(output) / f'{robot.name}-emulator.log', 'w') as emulator_log,
        open(pathlib.Path(output) / f'{robot.name}-driver.log', 'w') as driver_log,
    ):
        spec = spec_module.restart_spec(folder)
        topic = f'{NAMESPACE}/{spec.topic}'
        emulator = Emulator(spec.emulator, emulator_log)
        driver = subprocess.Popen(
            [sys.executable, '-m', spec.driver, *ros_args(NAMESPACE, spec.parameters)],
            stdout=driver_log,
            stderr=subprocess.STDOUT,
        )
        listener = Listener(f'soak_{robot.name}', {topic: spec.message})
        try:
            if not wait_until(lambda: listener.counts[topic], 60, poll=0.01):
                raise RuntimeError(
                    f'{robot.label}: no {spec.topic} before the first kill (see {driver_log.name})'
                )
            reconnects, failures, baseline = [], 0, None
            for cycle in range(cycles):
                emulator.kill()
                time.sleep(DOWN_TIME)
                emulator = Emulator(spec.emulator, emulator_log)
                seen = listener.counts[topic]
                if wait_until(lambda seen=seen: listener.counts[topic] > seen, 30, poll=0.005):
                    reconnects.append(time.monotonic() - emulator.ready)
                else:
                    failures += 1
                if driver.poll() is not None:
                    break
                if cycle + 1 == WARM_UP_CYCLES:
                    baseline = settled_resources(driver.pid)
            alive = driver.poll() is None
            final = settled_resources(driver.pid) if alive else None
        finally:
            listener.close()
            stop_process(driver)
            emulator.kill()
    return restart_rows(robot, cycles, reconnects, failures, alive, baseline, final)


def restart_rows(robot, cycles, reconnects, failures, alive, baseline, final):
    subject = f'{robot.label} ({cycles} emulator kills)'
    rows = [
        Row(
            'restart',
            subject,
            'driver still running' if alive else 'DRIVER EXITED',
            'never exits',
            alive,
        )
    ]
    if reconnects:
        p50, p99, worst = (
            1000 * percentile(reconnects, 0.5),
            1000 * percentile(reconnects, 0.99),
            1000 * max(reconnects),
        )
        rows.append(
            Row(
                'restart',
                subject,
                f'reconnect p50 {p50:.0f} / p99 {p99:.0f} / max {worst:.0f} ms; {failures} never',
                f'every < {RECONNECT_LIMIT:g} s',
                failures == 0 and worst < 1000 * RECONNECT_LIMIT,
            )
        )
    if baseline and final:
        growth = (final[0] - baseline[0], final[1] - baseline[1])
        rows.append(
            Row(
                'restart',
                subject,
                f'fds {baseline[0]} -> {final[0]}, threads '
                f'{baseline[1]} -> {final[1]} (after cycle {WARM_UP_CYCLES})',
                'no growth',
                growth[0] <= 0 and growth[1] <= 0,
            )
        )
    return rows


def restart_part(robots, cycles, output):
    rows = []
    for robot in robots:
        print(f'restart: {robot.label}, {cycles} cycles', flush=True)
        try:
            robot_rows = restart_cycles(robot, cycles, output)
        except RuntimeError as exc:
            robot_rows = [Row('restart', robot.label, str(exc), 'runs', False)]
        for row in robot_rows:
            print(f'  {row.measured}: {row.cells()[-1]}', flush=True)
        rows += robot_rows
    return rows


# ---- the table ------------------------------------------------------------------------------
def report(rows, output):
    print(f'\nFault suite on {machine_description()}')
    print(
        '\n'.join(
            format_table(
                ('part', 'subject', 'measured', 'target', 'result'), [row.cells() for row in rows]
            )
        )
    )
    missed = [f'{row.part}: {row.subject}: {row.measured}' for row in rows if not row.ok]
    path = pathlib.Path(output) / 'soak.json'
    path.write_text(
        json.dumps(
            {
                'machine': machine_description(),
                'rows': [dataclasses.asdict(row) for row in rows],
                'missed': missed,
            },
            indent=2,
        )
    )
    print(f'\nwritten: {path}')
    print('missed: ' + ('; '.join(missed) if missed else 'nothing'))
    return missed


# ---- link noise ------------------------------------------------------------------------------
class NoiseWatch:
    """This process's view of the drivers under noise: a Listener counting each robot's main
    topic, plus the topics the checks read and the newest diagnostics values per status."""

    def __init__(self, specs):
        from diagnostic_msgs.msg import DiagnosticArray

        from legacy_robot_bench.common.bench import Listener

        self.topics = {
            robot: f'{noise_namespace(robot)}/{spec.topic}' for robot, spec in specs.items()
        }
        self.listener = Listener(
            'soak_noise', {self.topics[robot]: spec.message for robot, spec in specs.items()}
        )
        self.node = self.listener.node
        self.kept = {robot: {topic: [] for topic in spec.kept} for robot, spec in specs.items()}
        self.diagnostics = {}
        for robot, spec in specs.items():
            for topic, kind in spec.kept.items():
                self.node.create_subscription(
                    kind, f'{noise_namespace(robot)}/{topic}', self.kept[robot][topic].append, 100
                )
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._diagnostics, 50)

    def count(self, robot):
        return self.listener.counts[self.topics[robot]]

    def _diagnostics(self, array):
        for status in array.status:
            self.diagnostics[status.name] = {v.key: v.value for v in status.values}

    def of(self, robot):
        """{status name: values} of robot's driver (names are "<namespace>/<node>: <task>")."""
        return {
            name: values
            for name, values in self.diagnostics.items()
            if name.partition(': ')[0].rpartition('/')[2] == robot.package
        }

    def close(self):
        self.listener.close()


def noise_namespace(robot):
    return f'{NAMESPACE}/noise_{robot.name}'


def noise_part(robots, minutes, rate, output):
    """Every driver at once, each against its emulator dropping rate and corrupting rate of
    its bytes, for minutes; then the noise stops and the robots' checks run."""
    from legacy_robot_bench.common.bench import stop_process

    specs = {}
    for robot in robots:
        module = importlib.import_module(f'legacy_robot_bench.{robot.package}.soak')
        if hasattr(module, 'noise_spec'):
            specs[robot] = module.noise_spec(rate)
    drivers, logs = {}, []
    for robot, spec in specs.items():
        log = open(pathlib.Path(output) / f'{robot.name}-noise-driver.log', 'w')
        logs.append(log)
        drivers[robot] = subprocess.Popen(
            [
                sys.executable,
                '-m',
                spec.driver,
                *ros_args(noise_namespace(robot), spec.parameters),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    watch = NoiseWatch(specs)
    per_minute = {robot: [] for robot in specs}
    try:
        end = time.monotonic() + 60 * minutes
        minute, next_minute = 1, time.monotonic() + 60
        counted = {robot: watch.count(robot) for robot in specs}
        while time.monotonic() < end:
            for robot, spec in specs.items():
                if spec.drive is not None:
                    spec.drive(watch.node, noise_namespace(robot))
            time.sleep(DRIVE_PERIOD)
            if time.monotonic() >= next_minute:
                for robot in specs:
                    now = watch.count(robot)
                    per_minute[robot].append(now - counted[robot])
                    counted[robot] = now
                print(
                    f'noise: minute {minute}: '
                    + ', '.join(f'{r.label} {m[-1]}' for r, m in per_minute.items()),
                    flush=True,
                )
                minute, next_minute = minute + 1, next_minute + 60
        for spec in specs.values():
            spec.emulator.faults.drop_rate = spec.emulator.faults.corrupt_rate = 0.0
        time.sleep(NOISE_SETTLE)
        rows = []
        for robot, spec in specs.items():
            rows += noise_rows(robot, spec, drivers[robot], watch, per_minute[robot], rate)
    finally:
        watch.close()
        for robot, spec in specs.items():
            stop_process(drivers[robot])
            spec.emulator.stop()
        for log in logs:
            log.close()
    return rows


def noise_rows(robot, spec, driver, watch, per_minute, rate):
    subject = f'{robot.label}, {100 * rate:g} % dropped + {100 * rate:g} % corrupted'
    alive = driver.poll() is None
    diagnostics = watch.of(robot)
    bad = max(
        (int(values['bad frames']) for values in diagnostics.values() if 'bad frames' in values),
        default=0,
    )
    rows = [
        Row(
            'noise',
            subject,
            'driver still running' if alive else 'DRIVER EXITED',
            'no crash',
            alive,
        ),
        Row('noise', subject, f'{bad:,} bad frames counted in diagnostics', 'counted', bad > 0),
        flow_row(subject, spec, per_minute),
    ]
    if spec.check is not None:
        rows += spec.check(spec.emulator, watch.kept[robot], diagnostics)
    return rows


def flow_row(subject, spec, per_minute):
    measured = (
        f'{spec.topic} per minute: {min(per_minute, default=0):,}..{max(per_minute, default=0):,}'
    )
    if spec.no_flow_reason:
        return Row('noise', subject, measured, f'none expected: {spec.no_flow_reason}', True)
    return Row(
        'noise', subject, measured, 'keeps flowing', bool(per_minute) and min(per_minute) > 0
    )


def mixed_part(robots, minutes, rate, output):
    from . import mixed_soak

    plugins = discover_plugins()
    try:
        return mixed_soak.run([plugins[robot.name] for robot in robots], minutes, rate, output)
    except RuntimeError as exc:
        return [Row('mixed', 'run', str(exc), 'runs', False)]


def robot_part(robots, name, rows_of):
    """A part that belongs to one robot: run it if that robot is selected."""
    if not any(robot.name == name for robot in robots):
        return []
    try:
        return rows_of()
    except RuntimeError as exc:
        return [Row(name, 'run', str(exc), 'runs', False)]


COMMON_PARTS = ('fuzz', 'restart', 'noise')
ASKED_FOR_PARTS = ('mixed',)  # hours long: only with --parts


def robot_parts():
    """(robot name, SoakPart) for the parts the installed robots name in their plugins."""
    return [
        (plugin.name, part) for plugin in discover_plugins().values() for part in plugin.soak_parts
    ]


def run_robot_part(part, value):
    module, _, function = part.function.partition(':')
    return getattr(importlib.import_module(module), function)(value)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='soak', description=__doc__.split('\n\n')[0])
    own_parts = robot_parts()
    parts = COMMON_PARTS + tuple(part.name for _, part in own_parts)
    parser.add_argument('--parts', nargs='+', choices=parts + ASKED_FOR_PARTS, default=list(parts))
    add_only_argument(parser, ROBOTS, 'these robots')
    parser.add_argument('--cases', type=int, default=1_000_000, help='fuzz inputs per decoder')
    parser.add_argument('--cycles', type=int, default=50, help='kill/restart cycles per driver')
    parser.add_argument(
        '--noise-minutes',
        type=float,
        default=10.0,
        help='length of the link-noise run (all drivers at once)',
    )
    parser.add_argument(
        '--noise-rate',
        type=float,
        default=0.005,
        help='fraction of bytes dropped, and as many corrupted (0.005: 1 %% in all)',
    )
    parser.add_argument(
        '--minutes',
        type=float,
        default=120.0,
        help='length of the mixed run (all robots at once, --parts mixed)',
    )
    parser.add_argument(
        '--mixed-noise-rate',
        type=float,
        default=0.0005,
        help="the mixed run's line noise (default 0.0005: 0.1 %% of the bytes)",
    )
    for _, part in own_parts:
        parser.add_argument(
            part.option,
            type=part.kind,
            default=part.default,
            help=f'{part.help} (default {part.default:g})',
        )
    parser.add_argument('--output', default='soak-output', help='folder for soak.json and logs')
    args = parser.parse_args(argv)
    values = {
        part.name: getattr(args, part.option.lstrip('-').replace('-', '_'))
        for _, part in own_parts
    }
    if min(args.cases, args.minutes, *values.values()) <= 0 or args.cycles < WARM_UP_CYCLES + 1:
        options = ', '.join(['--cases', '--minutes'] + [part.option for _, part in own_parts])
        parser.error(f'{options} must be positive, --cycles > {WARM_UP_CYCLES}')
    robots = only_chosen(ROBOTS, args)
    pathlib.Path(args.output).mkdir(parents=True, exist_ok=True)
    rows = []
    if 'fuzz' in args.parts:
        rows += fuzz_part(robots, args.cases)
    if 'restart' in args.parts:
        rows += restart_part(robots, args.cycles, args.output)
    if 'noise' in args.parts:
        print(f'noise: {args.noise_minutes:g} minutes', flush=True)
        rows += noise_part(robots, args.noise_minutes, args.noise_rate, args.output)
    if 'mixed' in args.parts:
        print(f'mixed: {args.minutes:g} minutes, every robot at once', flush=True)
        rows += mixed_part(robots, args.minutes, args.mixed_noise_rate, args.output)
    for robot, part in own_parts:
        if part.name in args.parts:
            value = values[part.name]
            print(f'{part.name}: {robot}, {part.option} {value:g}', flush=True)
            rows += robot_part(robots, robot, functools.partial(run_robot_part, part, value))
    return 1 if report(rows, args.output) else 0


if __name__ == '__main__':
    sys.exit(main())
