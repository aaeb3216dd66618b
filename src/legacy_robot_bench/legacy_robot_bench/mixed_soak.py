"""The fault suite's `mixed` part: every robot at once, for hours, with everything happening.

    python -m legacy_robot_bench.soak --parts mixed --minutes 120

All robots run in one `bringup` (each in its namespace under /mixed, recording on), each
against its emulator as a process of its own at fixed addresses (the robot's RestartSpec),
with the line noise its soak module asks for (mixed_emulator_arguments: the stream links;
500 rabbits pinging every second for the Nabaztag). Meanwhile, every RESTART_PERIOD the next
robot's emulator is killed (SIGKILL) and started again; each robot's soak module acts on it
every TICK (mixed_activity: cmd_vel at 10 Hz, Pleo and AIBO commands, parameter changes,
rabbit clicks and recordings); and a slow consumer (a process whose callback takes
SLOW_CALLBACK per message) subscribes to every image topic.

Every SAMPLE_PERIOD one row per process and one per robot go to <output>/mixed.csv: RSS, open
fds, threads and CPU of bringup, the slow consumer and each emulator; per robot the messages
per second of its main topic and the p50 / p99 from the driver's reception stamp to this
process (the drivers stamp each message when its frame arrives). <output>/mixed.png plots
them. The rows of the table are judged after the warm-up (WARM_UP, or a quarter of a short
run): RSS growth, fds and threads, p99 at the end against the start, every reconnect, the
processes still running, no traceback in any log, every recording readable to its end.

Messages are accounted for per emulator lifetime. Before each kill (and at the end) the
emulator is silenced (SIGUSR1) and says how many frames of its main stream it sent, each of
them one message on the robot's main topic, and how many of those were at risk from the line
noise (emulator.MainFrame); SETTLE later it is killed, and DOWN_TIME after that the messages
this process received in that lifetime are counted. Lost = sent − at risk − received, when
positive. The first lifetime is left out: its frames started before this process subscribed.
"""

import csv
import dataclasses
import importlib
import pathlib
import random
import subprocess
import sys
import time

import yaml

from legacy_robot_bench.common.bench import cpu_seconds, percentile, stop_process, wait_until
from legacy_robot_bench.common.soak import Row

from .emulator_process import Emulator

NAMESPACE = '/mixed'
TICK = 0.1  # s between the activities' turns (cmd_vel at 10 Hz)
SAMPLE_PERIOD = 10.0  # s between rows of mixed.csv
RESTART_PERIOD = 180.0  # s between emulator kills (each robot in turn)
DOWN_TIME = 0.5  # s an emulator stays dead
WARM_UP = 600.0  # s before the targets' baselines are taken
WINDOW = 600.0  # s compared at the start and at the end (p99)
RECONNECT_LIMIT = 1.0  # s: emulator ready → the robot's topic flows again
RSS_GROWTH_LIMIT = 0.05
P99_GROWTH_LIMIT = 1.5
SLOW_CALLBACK = 0.5  # s the slow consumer spends on each image
SETTLE = 0.3  # s for a silenced emulator's last messages to reach the soak


@dataclasses.dataclass
class Robot:
    plugin: object
    spec: object  # its RestartSpec: emulator arguments, driver parameters, topic
    extra: list  # mixed_emulator_arguments(rate)
    act: object  # mixed_activity(ros, namespace, elapsed) or None
    log: object
    emulator: object = None
    counted_from: int = None  # the soak's count of the main topic when this emulator started
    lifetimes: list = dataclasses.field(default_factory=list)  # (sent, at risk, received)

    @property
    def namespace(self):
        return f'{NAMESPACE}/{self.plugin.name}'

    @property
    def topic(self):
        return f'{self.namespace}/{self.spec.topic}'


class Ros:
    """What the activities may do, from a Listener's node: publish, call a service (answers
    are not awaited: a robot may be down), set a node's parameters."""

    def __init__(self, node, rng):
        self.node, self.random = node, rng
        self._publishers, self._clients = {}, {}
        self._next = {}  # (robot, what) → when due() says yes again

    def due(self, robot, what, period):
        """True once every period seconds for robot's what (the first time at once)."""
        key, now = (robot.plugin.name, what), time.monotonic()
        if now < self._next.get(key, 0.0):
            return False
        self._next[key] = now + period
        return True

    def publish(self, kind, topic, msg):
        if topic not in self._publishers:
            self._publishers[topic] = self.node.create_publisher(kind, topic, 10)
        self._publishers[topic].publish(msg)

    def call(self, kind, name, request):
        if name not in self._clients:
            self._clients[name] = self.node.create_client(kind, name)
        client = self._clients[name]
        if client.service_is_ready():
            client.call_async(request)

    def set_parameters(self, node_name, values):
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter

        request = SetParameters.Request(
            parameters=[
                Parameter(name, value=value).to_parameter_msg() for name, value in values.items()
            ]
        )
        self.call(SetParameters, f'{node_name}/set_parameters', request)


def load_robots(plugins, folder, rate, output):
    robots = []
    for plugin in plugins:
        module = importlib.import_module(f'legacy_robot_bench.{plugin.package}.soak')
        arguments = getattr(module, 'mixed_emulator_arguments', lambda rate: [])(rate)
        log = open(pathlib.Path(output) / f'mixed-{plugin.name}-emulator.log', 'w')
        robots.append(
            Robot(
                plugin,
                module.restart_spec(folder),
                list(arguments),
                getattr(module, 'mixed_activity', None),
                log,
            )
        )
    return robots


def parameters_file(robots, folder):
    """The drivers' parameters (pointing them at their emulators) for bringup --params-file."""
    path = pathlib.Path(folder) / 'mixed.yaml'
    path.write_text(
        yaml.safe_dump(
            {
                f'/**/{robot.plugin.node_name}': {'ros__parameters': robot.spec.parameters}
                for robot in robots
            }
        )
    )
    return path


def start_emulator(robot):
    robot.emulator = Emulator([*robot.spec.emulator, *robot.extra], robot.log)


def start_bringup(robots, folder, output):
    log = open(pathlib.Path(output) / 'mixed-bringup.log', 'w')
    command = [
        sys.executable,
        '-m',
        'legacy_robot_bringup.compose',
        *[robot.plugin.name for robot in robots],
        '--namespace',
        NAMESPACE,
        '--namespace-per-robot',
        '--params-file',
        str(parameters_file(robots, folder)),
        '--record',
        str(pathlib.Path(output) / 'mixed-recordings'),
    ]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log


def image_topics(robots):
    from sensor_msgs.msg import Image

    return [
        f'{robot.namespace}/{topic.topic}'
        for robot in robots
        for topic in robot.plugin.demo_topics
        if topic.msg_type is Image
    ]


def start_slow_consumer(topics, output):
    log = open(pathlib.Path(output) / 'mixed-slow-consumer.log', 'w')
    return subprocess.Popen(
        [sys.executable, '-m', 'legacy_robot_bench.mixed_soak', 'slow-consumer', *topics],
        stdout=log,
        stderr=subprocess.STDOUT,
    ), log


# ---- samples ---------------------------------------------------------------------------------
def process_sample(pid):
    """(RSS MB, fds, threads, CPU seconds) of a process from /proc; None once it is gone."""
    try:
        status = pathlib.Path(f'/proc/{pid}/status').read_text()
        fields = dict(line.split(':', 1) for line in status.splitlines() if ':' in line)
        fds = len(list(pathlib.Path(f'/proc/{pid}/fd').iterdir()))
        return (
            int(fields['VmRSS'].split()[0]) / 1024,
            fds,
            int(fields['Threads']),
            cpu_seconds(pid),
        )
    except (FileNotFoundError, ProcessLookupError, KeyError):
        return None


class Samples:
    """mixed.csv, written row by row, and the same rows kept for the targets."""

    FIELDS = (
        'seconds',
        'kind',
        'name',
        'pid',
        'rss_mb',
        'fds',
        'threads',
        'cpu_percent',
        'messages_per_s',
        'p50_ms',
        'p99_ms',
        'reconnect_ms',
        'sent',
        'at_risk',
        'received',
    )

    def __init__(self, path):
        self.file = open(path, 'w', newline='')
        self.writer = csv.DictWriter(self.file, self.FIELDS)
        self.writer.writeheader()
        self.rows = []
        self._cpu = {}  # pid → (cpu seconds, time)

    def process(self, seconds, name, pid):
        sample = process_sample(pid)
        if sample is None:
            return
        rss, fds, threads, cpu = sample
        before = self._cpu.get(pid)
        now = time.monotonic()
        self._cpu[pid] = (cpu, now)
        percent = 100 * (cpu - before[0]) / (now - before[1]) if before else ''
        self._add(
            seconds=seconds,
            kind='process',
            name=name,
            pid=pid,
            rss_mb=round(rss, 1),
            fds=fds,
            threads=threads,
            cpu_percent=round(percent, 2) if percent != '' else '',
        )

    def robot(self, seconds, name, rate, latencies):
        p50 = round(1000 * percentile(latencies, 0.5), 2) if latencies else ''
        p99 = round(1000 * percentile(latencies, 0.99), 2) if latencies else ''
        self._add(
            seconds=seconds,
            kind='robot',
            name=name,
            messages_per_s=round(rate, 1),
            p50_ms=p50,
            p99_ms=p99,
        )

    def restart(self, seconds, name, seconds_back, lifetime):
        """A kill: how long the robot took to come back, and the lifetime it ended (sent, at
        risk, received; None when not counted)."""
        row = dict(
            seconds=seconds,
            kind='restart',
            name=name,
            reconnect_ms=round(1000 * seconds_back) if seconds_back is not None else '',
        )
        row.update(zip(('sent', 'at_risk', 'received'), lifetime or (), strict=False))
        self._add(**row)

    def _add(self, **row):
        self.rows.append(row)
        self.writer.writerow(row)
        self.file.flush()

    def close(self):
        self.file.close()


# ---- the run ---------------------------------------------------------------------------------
def run(plugins, minutes, rate, output, seed=1):
    """The mixed part → rows of the fault suite's table."""
    import tempfile

    from legacy_robot_bench.common.bench import Listener

    output = pathlib.Path(output)
    output.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    warm_up = min(WARM_UP, 60 * minutes / 4)
    window = min(WINDOW, 60 * minutes / 4)
    with tempfile.TemporaryDirectory(prefix='mixed-') as folder:
        robots = load_robots(plugins, folder, rate, output)
        started = []  # processes and logs to stop and close, in order
        samples = Samples(output / 'mixed.csv')
        reconnects = {robot.plugin.name: [] for robot in robots}
        listener = None
        try:
            for robot in robots:
                start_emulator(robot)
            bringup, bringup_log = start_bringup(robots, folder, output)
            started.append((bringup, bringup_log))
            slow, slow_log = start_slow_consumer(image_topics(robots), output)
            started.append((slow, slow_log))
            listener = Listener('mixed_soak', {r.topic: r.spec.message for r in robots})
            ros = Ros(listener.node, rng)
            if not until_flowing(robots, listener, ros, 120):
                silent = [r.plugin.title for r in robots if not listener.counts[r.topic]]
                raise RuntimeError(f'no data from {", ".join(silent)} (see {bringup_log.name})')
            drive(robots, bringup, slow, listener, ros, samples, reconnects, 60 * minutes)
            alive = {'bringup': bringup.poll() is None, 'slow consumer': slow.poll() is None}
            end_lifetimes(robots, listener)
        finally:
            if listener is not None:
                listener.close()
            for process, log in started:
                stop_process(process)
                log.close()
            for robot in robots:
                if robot.emulator is not None:
                    robot.emulator.kill()
                robot.log.close()
            samples.close()
    rows = judge(samples.rows, reconnects, alive, warm_up, window)
    rows += [row for robot in robots for row in lost_rows(robot)]
    rows += log_rows(output)
    rows += recording_rows(output / 'mixed-recordings')
    plot(samples.rows, output / 'mixed.png')
    return rows


def act(robots, ros, elapsed):
    for robot in robots:
        if robot.act is not None:
            robot.act(ros, robot, elapsed)


def until_flowing(robots, listener, ros, timeout):
    """Act (a rabbit's event needs a click) until every robot's topic has flowed."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if all(listener.counts[robot.topic] for robot in robots):
            return True
        act(robots, ros, time.monotonic() - started)
        time.sleep(TICK)
    return False


def drive(robots, bringup, slow, listener, ros, samples, reconnects, seconds):
    """The activities, the kills and the samples until seconds have passed."""
    started = time.monotonic()
    # a short run still kills every emulator once
    restart_period = min(RESTART_PERIOD, seconds / (len(robots) + 1))
    next_sample, next_kill, turn = started + SAMPLE_PERIOD, started + restart_period, 0
    counted = {robot.topic: listener.counts[robot.topic] for robot in robots}
    last_sample = started
    while time.monotonic() - started < seconds and bringup.poll() is None:
        act(robots, ros, time.monotonic() - started)
        now = time.monotonic()
        if now >= next_kill:
            robot = robots[turn % len(robots)]
            ended = len(robot.lifetimes)
            seconds_back = restart(robot, listener)
            reconnects[robot.plugin.name].append(seconds_back)
            samples.restart(
                round(now - started),
                robot.plugin.name,
                seconds_back,
                robot.lifetimes[-1] if len(robot.lifetimes) > ended else None,
            )
            turn, next_kill = turn + 1, next_kill + restart_period
        if now >= next_sample:
            sample(
                robots,
                bringup,
                slow,
                listener,
                samples,
                counted,
                now - last_sample,
                round(now - started),
            )
            last_sample, next_sample = now, next_sample + SAMPLE_PERIOD
        time.sleep(TICK)


def restart(robot, listener):
    """Kill the robot's emulator, start it again → seconds from ready to its topic flowing
    again (None: it never did within 30 s)."""
    end_lifetimes([robot], listener)
    seen = robot.counted_from = listener.counts[robot.topic]
    robot.emulator = Emulator([*robot.spec.emulator, *robot.extra], robot.log)
    if wait_until(lambda: listener.counts[robot.topic] > seen, 30, poll=0.005):
        return time.monotonic() - robot.emulator.ready
    return None


def end_lifetimes(robots, listener):
    """Silence the robots' emulators, kill them and note each one's lifetime: (sent, at risk,
    received). Counted once they are dead, so that a message a driver publishes as its link
    ends still counts in the lifetime it came from."""
    counted = [robot.emulator.hold() for robot in robots]
    time.sleep(SETTLE)
    for robot in robots:
        robot.emulator.kill()
    time.sleep(DOWN_TIME)
    for robot, frames in zip(robots, counted, strict=False):
        if frames is None or robot.counted_from is None:
            continue  # the Nabaztag's rabbits do not count; nor does the first lifetime
        received = listener.counts[robot.topic] - robot.counted_from
        robot.lifetimes.append((*frames, received))
        robot.log.write(f'soak: {received} messages on {robot.topic} in this lifetime\n')


def sample(robots, bringup, slow, listener, samples, counted, interval, seconds):
    samples.process(seconds, 'bringup', bringup.pid)
    samples.process(seconds, 'slow consumer', slow.pid)
    for robot in robots:
        samples.process(seconds, f'{robot.plugin.name} emulator', robot.emulator.process.pid)
        count = listener.counts[robot.topic]
        receipts = listener.receipts[robot.topic]
        listener.receipts[robot.topic] = []
        latencies = [arrival - stamp for stamp, arrival in receipts]
        samples.robot(
            seconds, robot.plugin.name, (count - counted[robot.topic]) / interval, latencies
        )
        counted[robot.topic] = count


# ---- the targets -----------------------------------------------------------------------------
def judge(rows, reconnects, alive, warm_up, window):
    out = [
        Row('mixed', name, 'running at the end' if up else 'EXITED', 'never exits', up)
        for name, up in alive.items()
    ]
    processes = [r for r in rows if r['kind'] == 'process' and r['seconds'] >= warm_up]
    for name in ('bringup', 'slow consumer'):
        mine = [r for r in processes if r['name'] == name]
        if len(mine) < 2:
            continue
        first, last = mine[0], mine[-1]
        growth = last['rss_mb'] / first['rss_mb'] - 1
        out.append(
            Row(
                'mixed',
                name,
                f'RSS {first["rss_mb"]:.1f} → {last["rss_mb"]:.1f} MB '
                f'({100 * growth:+.1f} %) after the warm-up',
                f'≤ {100 * RSS_GROWTH_LIMIT:g} %',
                growth <= RSS_GROWTH_LIMIT,
            )
        )
        fds = (min(r['fds'] for r in mine[:6]), min(r['fds'] for r in mine[-6:]))
        threads = (min(r['threads'] for r in mine[:6]), min(r['threads'] for r in mine[-6:]))
        out.append(
            Row(
                'mixed',
                name,
                f'fds {fds[0]} → {fds[1]}, threads {threads[0]} → '
                f'{threads[1]} (fewest of a minute)',
                'flat',
                fds[1] <= fds[0] and threads[1] <= threads[0],
            )
        )
    end = max((r['seconds'] for r in rows), default=0)
    for name, times in reconnects.items():
        out += robot_rows(
            name,
            [r for r in rows if r['kind'] == 'robot' and r['name'] == name],
            times,
            warm_up,
            window,
            end,
        )
    return out


def robot_rows(name, rows, reconnects, warm_up, window, end):
    out = []
    if reconnects:
        back = [t for t in reconnects if t is not None]
        worst = max(back, default=float('inf'))
        out.append(
            Row(
                'mixed',
                name,
                f'{len(reconnects)} emulator kills: reconnect max '
                f'{1000 * worst:.0f} ms, {len(reconnects) - len(back)} never',
                f'every ≤ {RECONNECT_LIMIT:g} s',
                len(back) == len(reconnects) and worst <= RECONNECT_LIMIT,
            )
        )
    rates = [r['messages_per_s'] for r in rows if r['seconds'] >= warm_up]
    if rates:
        out.append(
            Row(
                'mixed',
                name,
                f'main topic {min(rates):.1f} – {max(rates):.1f} /s',
                'keeps flowing',
                min(rates) > 0,
            )
        )
    start = [
        r['p99_ms']
        for r in rows
        if warm_up <= r['seconds'] < warm_up + window and r['p99_ms'] != ''
    ]
    finish = [r['p99_ms'] for r in rows if r['seconds'] > end - window and r['p99_ms'] != '']
    if start and finish:
        before, after = percentile(start, 0.5), percentile(finish, 0.5)
        out.append(
            Row(
                'mixed',
                name,
                f'p99 reception → subscriber {before:.2f} → {after:.2f} ms '
                '(median of the 10 s windows, first and last)',
                f'≤ {P99_GROWTH_LIMIT:g}x',
                after <= P99_GROWTH_LIMIT * before,
            )
        )
    return out


def lost_rows(robot):
    """Sent, at risk and received over the emulator lifetimes that were counted."""
    if not robot.lifetimes:
        return []
    sent, at_risk, received = (sum(column) for column in zip(*robot.lifetimes, strict=False))
    lost = sum(max(0, s - r - g) for s, r, g in robot.lifetimes)
    extra = sum(max(0, g - s) for s, r, g in robot.lifetimes)  # more messages than frames
    return [
        Row(
            'mixed',
            robot.plugin.name,
            f'{len(robot.lifetimes)} emulator lifetimes: '
            f'{sent} frames sent ({at_risk} at risk from the noise), {received} messages '
            f'received, {lost} lost, {extra} more than sent',
            '0 lost, 0 more',
            lost == 0 and extra == 0,
        )
    ]


def log_rows(output):
    logs = sorted(pathlib.Path(output).glob('mixed-*.log'))
    bad = [log.name for log in logs if 'Traceback' in log.read_text(errors='replace')]
    return [
        Row(
            'mixed',
            'logs',
            f'{len(bad)} of {len(logs)} with a traceback' + (f': {", ".join(bad)}' if bad else ''),
            '0',
            not bad,
        )
    ]


def recording_rows(folder):
    from legacy_robot_bringup.recordings import main as recording_command

    rows = []
    for path in sorted(pathlib.Path(folder).glob('*.mcap')):
        code = recording_command(['info', str(path)])
        rows.append(
            Row(
                'mixed',
                f'recording {path.name}',
                f'recording info: exit {code}',
                'readable to the end',
                code == 0,
            )
        )
    return rows or [Row('mixed', 'recordings', 'none written', 'one per robot', False)]


def plot(rows, path):
    import matplotlib

    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    figure, (rss, latency, rate) = plt.subplots(3, 1, figsize=(10, 10), sharex=True)
    for kind, axis, field in (
        ('process', rss, 'rss_mb'),
        ('robot', latency, 'p99_ms'),
        ('robot', rate, 'messages_per_s'),
    ):
        names = sorted({r['name'] for r in rows if r['kind'] == kind})
        for name in names:
            points = [
                (r['seconds'] / 60, r[field])
                for r in rows
                if r['kind'] == kind and r['name'] == name and r[field] != ''
            ]
            if points:
                axis.plot(*zip(*points, strict=False), label=name)
        axis.legend(fontsize='small', ncol=2)
    rss.set_ylabel('RSS (MB)')
    latency.set_ylabel('p99 reception → subscriber (ms)')
    rate.set_ylabel('main topic (msg/s)')
    rate.set_xlabel('minutes')
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


# ---- the slow consumer (its own process) -----------------------------------------------------
def slow_consumer(topics):
    import rclpy
    from rclpy.executors import ExternalShutdownException
    from sensor_msgs.msg import Image

    rclpy.init()
    node = rclpy.create_node('mixed_slow_consumer')
    for topic in topics:
        node.create_subscription(Image, topic, lambda msg: time.sleep(SLOW_CALLBACK), 10)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    return 0


if __name__ == '__main__' and sys.argv[1:2] == ['slow-consumer']:
    sys.exit(slow_consumer(sys.argv[2:]))
