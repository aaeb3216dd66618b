"""`recording info / csv / replay` as real processes, on the recordings in recordings/."""

import csv
import io
import json
import subprocess
import sys
import time

from legacy_robot_bringup.paths import recording_file


def recording(*args, timeout=120):
    return subprocess.run(
        [sys.executable, '-m', 'legacy_robot_bringup.recordings', *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_info_lists_links_and_decodes_with_the_driver():
    path = str(recording_file('p2os'))
    started = time.monotonic()
    counted = recording('info', path)  # the file's own counts: at once
    assert counted.returncode == 0, counted.stderr
    assert time.monotonic() - started < 10  # a process start, not the recording's 24 s
    assert 'p2os_driver' in counted.stdout and 'p2os: 1 connections, from robot' in counted.stdout
    assert 'decoded' not in counted.stdout
    decoded = recording('info', path, '--decode', '--speed', '0')
    assert decoded.returncode == 0, decoded.stderr
    line = next(line for line in decoded.stdout.splitlines() if 'decoded:' in line)
    assert 'StandardSip' in line and 'decode errors: 0' in line, decoded.stdout
    assert 'replay p2os: 1 connections' in decoded.stdout
    assert 'not reached' not in decoded.stdout


def test_info_says_when_decoding_gave_up_before_the_end():
    from legacy_robot_bringup.recordings import Decoded, info_lines
    from legacy_robot_common.recording import read_recording

    recording_ = read_recording(str(recording_file('p2os')))
    lines = info_lines(recording_, Decoded(rows=[], bad_frames={}, report=[], finished=False))
    assert lines[-1] == (
        '  replay: the end of the recording was not reached; decoding gave up '
        "20 s after the recording's length at this speed"
    )


def test_csv_has_a_row_per_decoded_record_on_the_recorded_clock(tmp_path):
    out = tmp_path / 'pleo.csv'
    done = recording('csv', str(recording_file('pleo')), '--speed', '0', '-o', str(out))
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert rows and set(rows[0]) == {'time_s', 'link', 'record', 'fields'}
    kinds = {row['record'] for row in rows}
    assert {'JointDump', 'SensorDump'} <= kinds, kinds
    times = [float(row['time_s']) for row in rows]
    assert times == sorted(times) and 0 <= times[0] < times[-1] < 30
    assert all(row['link'] == 'monitor' for row in rows)
    json.loads(rows[-1]['fields'])
    assert f'{len(rows)} records written' in done.stdout


def test_user_errors_exit_2_with_a_message(tmp_path):
    not_mcap = tmp_path / 'notes.mcap'
    not_mcap.write_text('hello')
    for args in (
        ('info', str(not_mcap)),
        ('replay', str(tmp_path / 'absent.mcap')),
        ('replay', str(recording_file('p2os')), '--speed', '-1'),
    ):
        done = recording(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.startswith('error: ') and 'Traceback' not in done.stderr, done.stderr


def test_a_recording_cut_before_its_first_record_is_a_clear_error(tmp_path):
    cut = tmp_path / 'cut.mcap'
    cut.write_bytes(recording_file('p2os').read_bytes()[:3000])
    for command in ('info', 'csv', 'replay'):
        done = recording(command, str(cut))
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert 'damaged before its first record' in done.stderr


def test_csv_checks_its_output_folder_before_decoding(tmp_path):
    started = time.monotonic()
    done = recording('csv', str(recording_file('pleo')), '-o', str(tmp_path / 'nodir' / 'x.csv'))
    assert done.returncode == 2 and 'no folder' in done.stderr and 'Traceback' not in done.stderr
    assert time.monotonic() - started < 10  # not after the whole decode


def test_replay_started_paused_plays_on_a_line_of_input():
    """The command's --start-paused: paused until a line (Enter) arrives on its input."""
    import os

    from helpers import wait_for

    from legacy_robot_bringup.recordings import _Announced, build_parser, open_replay
    from legacy_robot_common.replay import ReplayOptions

    args = build_parser().parse_args(['replay', str(recording_file('aibo')), '--start-paused'])
    assert args.start_paused
    _, replay = open_replay(args.path, ReplayOptions(start_paused=True))
    read_end, write_end = os.pipe()
    with os.fdopen(read_end) as controls, os.fdopen(write_end, 'w') as keyboard:
        announced = _Announced(replay, controls=controls)
        announced.start()
        try:
            assert replay.clock.paused and 'paused: press Enter to play' in announced.description
            keyboard.write('\n')
            keyboard.flush()
            assert wait_for(lambda: not replay.clock.paused)
        finally:
            announced.stop()
