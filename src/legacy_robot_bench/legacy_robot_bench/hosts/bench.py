"""Across hosts, measured (issue 49): `bringup p2os aibo ipaq --sim` on a robot host and a meter
on a desk host (network namespaces, network.py), per link and DDS profile: when each stream
was first seen at the desk, its rate there and the age of what arrived. Needs root and `ip`.

    . tools/env.sh && hosts_bench [--window 10] [--cases 'one host,clean,5%,20%']
        [--profiles default,lossy] [--image-qos reliable] [--json FILE]

Prints a Markdown table (and --json FILE writes the numbers). The link cut, stop distance and
time to resume are measured by test/test_two_hosts.py (-s prints them).
"""

import argparse
import json
import os
import subprocess
import sys
import time

from . import network as two_hosts

STREAMS = {
    '/p2os/odom': 'P2OS odom (10/s)',
    '/p2os/sonar': 'P2OS sonar (10/s)',
    '/p2os/joint_states': 'P2OS joints',
    '/diagnostics': 'diagnostics (3 nodes, 1/s each)',
    '/aibo/audio/audio_stamped': 'AIBO audio',
    '/aibo/camera/image_raw': 'AIBO camera',
    '/ipaq/range': 'iPaq range',
    '/ipaq/odom': 'iPaq odom',
    '/p2os/cmd_vel': 'cmd_vel at the robot (10/s)',
}
COMMANDS = '/p2os/cmd_vel'  # the desk sends, the robot's host measures
LINKS = {
    'one host': {},  # robot and meter on the same host: shared memory, loopback
    'clean': {},
    'no multicast + peers': {'drop_multicast': True},
    '5%': {'loss': 0.05, 'delay': 0.02, 'jitter': 0.01},
    '20%': {'loss': 0.20, 'delay': 0.02, 'jitter': 0.01},
}
DOMAIN = '43'  # inside the namespaces only
ENV = {**os.environ, 'PYTHONUNBUFFERED': '1'}


def run_case(link, profile, window, settle, image_qos):
    with two_hosts.Network(['robot', 'desk'], link='tun') as net:
        net.impair(**LINKS[link])
        peers = LINKS[link].get('drop_multicast')
        ros = ['--ros-args', '-p', f'image_qos:={image_qos}']
        robot_env = net.ros_env(
            'robot', peers=['desk'] if peers else None, base=ENV,
            ROS_DOMAIN_ID=DOMAIN,
        )  # fmt: skip
        robot = net.popen(
            'robot',
            [
                sys.executable,
                '-m',
                'legacy_robot_bringup.compose',
                'p2os',
                'aibo',
                'ipaq',
                '--sim',
                '--dds-profile',
                profile,
                *ros,
            ],  # fmt: skip
            env=robot_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        best_effort = (
            ['--best-effort', '/aibo/camera/image_raw'] if image_qos == 'best_effort' else []
        )
        desk_env = net.ros_env(
            'desk', peers=['robot'] if peers else None, base=ENV,
            ROS_DOMAIN_ID=DOMAIN,
        )  # fmt: skip
        meter_host = 'robot' if link == 'one host' else 'desk'
        timing = ['--profile', profile, '--settle', str(settle), '--window', str(window)]
        desk_topics = ['--command', COMMANDS, *[t for t in STREAMS if t != COMMANDS]]
        meter = start_meter(
            net, meter_host, [*timing, *desk_topics, *best_effort],
            robot_env if meter_host == 'robot' else desk_env,
        )  # fmt: skip
        commands = start_meter(net, 'robot', [*timing, '--commands-in', COMMANDS], robot_env)
        time.sleep(settle)
        cpu_start, t_start = cpu_seconds(robot.pid), time.monotonic()
        rss_start = rss_kb(robot.pid)
        time.sleep(window)
        cpu = (cpu_seconds(robot.pid) - cpu_start) / (time.monotonic() - t_start)
        rss = (rss_kb(robot.pid) - rss_start) / 1024
        out, err = meter.communicate(timeout=60)
        lines = [line for line in out.splitlines() if line.startswith('{')]
        if not lines:
            raise RuntimeError(f'meter failed: {err[-2000:]}')
        commanded = json.loads(commands.communicate(timeout=60)[0].splitlines()[-1])
        stats = net.stats()
        lost = stats['lost'] / max(1, stats['received'])
        streams = {**json.loads(lines[-1]), **commanded}
        return streams, {'robot_cpu': round(100 * cpu, 1), 'rss_growth_mb': rss, 'loss': lost}


def start_meter(net, host, args, env):
    """stream_meter.py with args on host, its output piped."""
    argv = [sys.executable, '-m', 'legacy_robot_bench.hosts.stream_meter', *args]
    kwargs = {'stdout': subprocess.PIPE, 'stderr': subprocess.PIPE, 'text': True}
    return net.popen(host, argv, env=env, **kwargs)


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    with open(f'/proc/{pid}/stat') as stream:
        fields = stream.read().rpartition(')')[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def rss_kb(pid):
    with open(f'/proc/{pid}/status') as stream:
        return next(int(line.split()[1]) for line in stream if line.startswith('VmRSS:'))


def cell(numbers):
    if numbers['first'] is None:
        return 'none'
    age = f', p99 {numbers["age_p99"]:.0f} ms' if numbers['age_p99'] is not None else ''
    return f'{numbers["rate"]:.1f}/s{age}'


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--window', type=float, default=10.0)
    parser.add_argument('--settle', type=float, default=10.0, help='s from start to window')
    parser.add_argument('--cases', default=','.join(LINKS))
    parser.add_argument('--profiles', default='default,lossy')
    parser.add_argument('--image-qos', default='reliable', choices=('reliable', 'best_effort'))
    parser.add_argument('--json')
    args = parser.parse_args(argv)
    reason = two_hosts.unavailable()
    if reason:
        print(f'hosts_bench: {reason}', file=sys.stderr)
        return 2
    os.environ.pop('ROS_STATIC_PEERS', None)
    rows = []
    for profile in args.profiles.split(','):
        for link in args.cases.split(','):
            began = time.monotonic()
            result, stats = run_case(link, profile, args.window, args.settle, args.image_qos)
            first = [n['first'] for n in result.values() if n['first'] is not None]
            every = max(first) if len(first) == len(result) else None
            rows.append(
                {'profile': profile, 'link': link, 'streams': result, 'discovery': every, **stats}
            )
            print(f'{profile} / {link}: {time.monotonic() - began:.0f} s', file=sys.stderr)
    header = ['profile', 'link', 'all seen after', 'bringup CPU %', 'RSS Δ MB', *STREAMS.values()]
    print('| ' + ' | '.join(header) + ' |')
    print('|' + '---|' * len(header))
    for row in rows:
        seen = f'{row["discovery"]:.1f} s' if row['discovery'] is not None else 'not all'
        cells = [cell(row['streams'][topic]) for topic in STREAMS]
        cpu = f'{row["robot_cpu"]:.1f}'
        rss = f'{row["rss_growth_mb"]:+.1f}'
        print('| ' + ' | '.join([row['profile'], row['link'], seen, cpu, rss, *cells]) + ' |')
    if args.json:
        with open(args.json, 'w') as stream:
            json.dump(rows, stream, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
