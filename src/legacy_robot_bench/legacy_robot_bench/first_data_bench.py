"""First data after start-up (issue 53): from `bringup ROBOT --sim` starting to the first
message at a subscriber in another process that was already waiting, over many starts.

    . tools/env.sh && first_data_bench [--starts 20] [--robot p2os] [--namespace NS]
        [--topic odom] [--type nav_msgs/msg/Odometry] [--limit 1.5] [--settle 1,4]
        [--subscriber-profile ours|none] [--cpu 30] [--output bench-output]

Each start: a new subscriber (first_data_subscriber.py) subscribes and says it is ready; after
a random wait of --settle seconds (so that bringup meets the subscriber at every point of its
periodic announcements, not always the same one) bringup starts; the time from just before
bringup's process is made to the subscriber's first message is one sample; then both stop.
Prints a table (starts, p50, p90, max, starts over --limit, when the subscriber first matched
the publisher) and writes <output>/first_data.json; exit 1 when a start took longer than
--limit. With --cpu S, one more bringup then runs S seconds idle (the robot connected, no
commands; the subscriber still subscribed) and its CPU and the subscriber's are measured: what
a change to the DDS settings costs in steady state.

The load average is printed beside the figures: other work on the machine moves them.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from legacy_robot_bench.common.bench import cpu_seconds, percentile, report, stop_process
from legacy_robot_common.distribution import distribution
from legacy_robot_common.middleware import named_profiles_file, profile_choice, profiles_path

SETTLE = (1.0, 4.0)  # s the subscriber waits before bringup starts (random in this range)
TIMEOUT = 30.0  # s a subscriber waits for its first message before the start counts as failed
CPU_SETTLE = 5.0  # s after the first message before the CPU window starts


def bringup_command(robot, namespace):
    command = [sys.executable, '-m', 'legacy_robot_bringup.compose', robot, '--sim']
    return command + (['--namespace', namespace] if namespace else [])


def topic_name(namespace, topic):
    return '/' + '/'.join(part.strip('/') for part in (namespace, topic) if part.strip('/'))


class Subscriber:
    """first_data_subscriber.py as its own process; read() returns its next JSON line."""

    def __init__(self, topic, type_name, profile, keep=False, timeout=TIMEOUT):
        self.errors = tempfile.TemporaryFile('w+')
        self.process = subprocess.Popen(
            [
                sys.executable,
                '-m',
                'legacy_robot_bench.first_data_subscriber',
                topic,
                '--type',
                type_name,
                '--profile',
                profile,
                '--timeout',
                str(timeout),
                *(['--keep'] if keep else []),
            ],
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
        )

    def read(self):
        """{event: monotonic time} of the subscriber's next line; RuntimeError at its end."""
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            self.errors.seek(0)
            raise RuntimeError(f'the subscriber ended (exit {code}): {self.errors.read()[-2000:]}')
        return json.loads(line)

    def until(self, *events):
        """Lines up to the first of events; {event: time} of all read."""
        seen = {}
        while not seen.keys() & set(events):
            seen.update(self.read())
        return seen

    def stop(self):
        stop_process(self.process)
        self.errors.close()


def one_start(args, rng, log):
    """(first message, first match), s after bringup's start; first is None on a timeout."""
    subscriber = Subscriber(args.topic_name, args.type, args.subscriber_profile)
    bringup = None
    try:
        subscriber.until('ready')
        time.sleep(rng.uniform(*args.settle))
        started = time.monotonic()
        bringup = subprocess.Popen(
            bringup_command(args.robot, args.namespace), stdout=log, stderr=log
        )
        seen = subscriber.until('first', 'timeout')
    finally:
        if bringup is not None:
            stop_process(bringup)
        subscriber.stop()
    matched = seen.get('matched')
    return (
        seen['first'] - started if 'first' in seen else None,
        matched - started if matched is not None else None,
    )


def steady_cpu(args, seconds, log):
    """(bringup's CPU, the subscriber's), % of a core over seconds of idle running."""
    subscriber = Subscriber(args.topic_name, args.type, args.subscriber_profile, keep=True)
    bringup = None
    try:
        subscriber.until('ready')
        bringup = subprocess.Popen(
            bringup_command(args.robot, args.namespace), stdout=log, stderr=log
        )
        if 'first' not in subscriber.until('first', 'timeout'):
            raise RuntimeError('no message reached the subscriber: no CPU figure')
        time.sleep(CPU_SETTLE)
        pids = (bringup.pid, subscriber.process.pid)
        before, begun = [cpu_seconds(pid) for pid in pids], time.monotonic()
        time.sleep(seconds)
        used = [cpu_seconds(pid) - start for pid, start in zip(pids, before, strict=True)]
        elapsed = time.monotonic() - begun
    finally:
        if bringup is not None:
            stop_process(bringup)
        subscriber.stop()
    return tuple(100.0 * value / elapsed for value in used)


def profiles_in_use(subscriber_profile):
    """What profiles file bringup and the subscriber load (middleware.use_our_dds_profiles)."""
    ours = named_profiles_file() or str(profiles_path(profile_choice()) or 'none installed')
    return ours, (ours if subscriber_profile == 'ours' else "none (Fast DDS's defaults)")


def settle_range(text):
    low, _, high = text.partition(',')
    low, high = float(low), float(high or low)
    if not 0 <= low <= high:
        raise argparse.ArgumentTypeError(f'{text!r}: LOW,HIGH seconds with 0 <= LOW <= HIGH')
    return low, high


def build_parser():
    parser = argparse.ArgumentParser(prog='first_data_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--starts', type=int, default=20, help='bringup starts to measure')
    parser.add_argument('--robot', default='p2os', help='the robot bringup runs with --sim')
    parser.add_argument('--namespace', default='', help="bringup's --namespace")
    parser.add_argument('--topic', default='odom', help='the topic waited for (relative)')
    parser.add_argument('--type', default='nav_msgs/msg/Odometry', help="the topic's type")
    parser.add_argument('--limit', type=float, default=1.5, help='s a start may take (target)')
    parser.add_argument(
        '--settle',
        type=settle_range,
        default=SETTLE,
        metavar='LOW,HIGH',
        help='s the subscriber waits before bringup starts, random in this range',
    )
    parser.add_argument(
        '--subscriber-profile',
        choices=('ours', 'none'),
        default='ours',
        help="the subscriber's DDS profiles: ours (as every process of ours) or none",
    )
    parser.add_argument('--cpu', type=float, default=30.0, help='s of idle CPU (0: none)')
    parser.add_argument('--seed', type=int, default=1, help='of the random waits')
    parser.add_argument('--output', default='bench-output', help='folder for first_data.json')
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    args.topic_name = topic_name(args.namespace, args.topic)
    rng = random.Random(args.seed)
    load_before = os.getloadavg()
    firsts, matches, failed = [], [], 0
    with tempfile.TemporaryFile('w+') as log:
        for start in range(args.starts):
            first, matched = one_start(args, rng, log)
            failed += first is None
            firsts.append(first if first is not None else float('inf'))
            matches.append(matched if matched is not None else float('inf'))
            print(
                f'start {start + 1}: first message {first_text(first)}, '
                f'matched {first_text(matched)}',
                flush=True,
            )
        load_after = os.getloadavg()
        cpu = steady_cpu(args, args.cpu, log) if args.cpu > 0 else None
    bringup_profiles, subscriber_profiles = profiles_in_use(args.subscriber_profile)
    rows = start_rows(args, firsts, matches) if firsts else []
    if cpu is not None:
        rows += [
            (f'bringup CPU idle, {args.cpu:g} s (% of a core)', cpu[0], f'{cpu[0]:.2f}', None),
            (f'subscriber CPU, same {args.cpu:g} s (% of a core)', cpu[1], f'{cpu[1]:.2f}', None),
        ]
    settings = {
        'ROS 2': distribution(),
        'RMW_IMPLEMENTATION': os.environ.get('RMW_IMPLEMENTATION'),
        'ROS_AUTOMATIC_DISCOVERY_RANGE': os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE'),
        'ROS_DOMAIN_ID': os.environ.get('ROS_DOMAIN_ID'),
        'bringup DDS profiles': bringup_profiles,
        'subscriber DDS profiles': subscriber_profiles,
        'load average before': [round(value, 2) for value in load_before],
        'load average after the starts': [round(value, 2) for value in load_after],
    }
    for name, value in settings.items():
        print(f'{name}: {value}')
    extra = {'settings': settings, 'first_s': as_json(firsts), 'matched_s': as_json(matches)}
    code = report('First data after start-up', rows, args.output, 'first_data', extra)
    return 1 if failed else code


def start_rows(args, firsts, matches):
    """The table's rows of the starts: (label, value, text, target)."""
    over = sum(value > args.limit for value in firsts)
    what = f'{args.topic_name} after `bringup {args.robot} --sim` starts'
    return [
        (f'starts; {what}', len(firsts), f'{len(firsts)}', None),
        ('first message p50 (s)', percentile(firsts, 0.5), seconds(firsts, 0.5), None),
        ('first message p90 (s)', percentile(firsts, 0.9), seconds(firsts, 0.9), None),
        ('first message max (s)', max(firsts), seconds(firsts, 1.0), ('<=', args.limit)),
        (f'starts over {args.limit:g} s', over, f'{over}', ('<=', 0)),
        ('subscriber matched the publisher p50 (s)', percentile(matches, 0.5),
         seconds(matches, 0.5), None),
        ('subscriber matched the publisher max (s)', max(matches), seconds(matches, 1.0), None),
    ]  # fmt: skip


def first_text(first):
    return 'none (timeout)' if first is None else f'{first:.3f} s'


def seconds(values, fraction):
    value = percentile(values, fraction)
    return 'timeout' if value == float('inf') else f'{value:.3f}'


def as_json(values):
    return [None if value == float('inf') else round(value, 4) for value in values]


if __name__ == '__main__':
    sys.exit(main())
