"""`make soak` as a process, on short runs: the table, soak.json, and the parts' rows."""

import json
import re
import subprocess
import sys


def soak(tmp_path, *arguments, timeout=180):
    return subprocess.run(
        [sys.executable, '-m', 'legacy_robot_bench.soak', '--output', str(tmp_path), *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rows_of(tmp_path):
    return json.loads((tmp_path / 'soak.json').read_text())['rows']


def test_fuzz_part_reports_every_target(tmp_path):
    done = soak(tmp_path, '--parts', 'fuzz', '--only', 'pleo', '--cases', '200')
    assert done.returncode == 0, done.stdout + done.stderr
    rows = rows_of(tmp_path)
    assert {row['subject'] for row in rows} >= {'Pleo URF reader', 'Pleo monitor output'}
    assert all(row['ok'] and row['measured'].startswith('0 uncaught in 200') for row in rows)
    assert 'missed: nothing' in done.stdout


def test_restart_part_kills_the_emulator_under_a_running_driver(tmp_path):
    done = soak(tmp_path, '--parts', 'restart', '--only', 'p2os', '--cycles', '4')
    rows = {row['measured'].split(' ')[0]: row for row in rows_of(tmp_path)}
    assert rows['driver']['ok'], done.stdout + done.stderr  # "driver still running"
    assert rows['reconnect']['measured'].endswith('0 never')  # it came back every time
    assert rows['fds']['subject'] == 'P2OS (4 emulator kills)'
    assert (tmp_path / 'p2os-driver.log').read_text()


def test_bad_options_are_usage_errors(tmp_path):
    done = soak(tmp_path, '--cycles', '2')
    assert done.returncode == 2 and '--cycles' in done.stderr


def test_mixed_part_runs_every_robot_at_once_and_samples_it(tmp_path):
    """A 45-second mixed run (the real one is hours): every emulator killed once under the
    one bringup and back, the stream emulators' frames counted against the messages, the CSV,
    the plot and the recordings; not the long run's targets."""
    done = soak(tmp_path, '--parts', 'mixed', '--minutes', '0.75', timeout=300)
    rows = rows_of(tmp_path)
    assert rows and not [row for row in rows if row['subject'] == 'run'], done.stdout[-3000:]
    by_subject = {}
    for row in rows:
        by_subject.setdefault(row['subject'], []).append(row)
    robots = ('aibo', 'ipaq', 'nabaztag', 'p2os', 'pleo')
    for robot in robots:
        kills = [row for row in by_subject[robot] if 'emulator kills' in row['measured']]
        assert kills and kills[0]['measured'].endswith('0 never'), by_subject[robot]
        flow = [row for row in by_subject[robot] if row['measured'].startswith('main topic')]
        assert flow and flow[0]['ok'], by_subject[robot]
    for robot in ('aibo', 'ipaq', 'p2os', 'pleo'):  # the stream emulators count their frames
        counted = [row for row in by_subject[robot] if 'emulator lifetimes' in row['measured']]
        assert counted, by_subject[robot]
        sent, received = re.search(
            r'(\d+) frames sent .* (\d+) messages received', counted[0]['measured']
        ).groups()
        assert 0 < int(received) <= int(sent), counted[0]
    for name in ('bringup', 'slow consumer'):
        assert by_subject[name][0]['measured'] == 'running at the end'
    assert by_subject['logs'][0]['ok'], by_subject['logs']
    assert all(by_subject[f'recording {robot}.mcap'][0]['ok'] for robot in robots)
    header, *samples = (tmp_path / 'mixed.csv').read_text().splitlines()
    assert header.startswith('seconds,kind,name,pid,rss_mb,fds,threads')
    named = {line.split(',')[2] for line in samples}
    restarts = [line for line in samples if line.split(',')[1] == 'restart']
    assert len(restarts) >= len(robots), restarts  # one row per kill, with its time
    assert named >= {'bringup', 'slow consumer', *robots, *(f'{r} emulator' for r in robots)}
    assert (tmp_path / 'mixed.png').stat().st_size > 10_000
