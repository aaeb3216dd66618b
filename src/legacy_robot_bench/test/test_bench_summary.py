"""`make bench`'s summary: the per-robot JSON files, as the robots' benchmarks write them,
turned into one table, summary.json and summary.png (the summarizer as a real process)."""

import json
import subprocess
import sys

from legacy_robot_bench.common.bench import PipelineSummary, RecordingCost, latency_summary, report


def write_robot(folder, name, headroom_rate, cpu_target=('<=', 5.0), cpu=1.0, recording=None):
    summary = PipelineSummary(
        f'{name} stream',
        10.0,
        50_000.0,
        headroom_rate,
        cpu,
        latency_summary([0.001, 0.002, 0.003]),
        recording=recording,
    )
    rows = [(f'{name} driver CPU', cpu, f'{cpu:.2f}', cpu_target)]
    report(name, rows, folder, name, summary=summary)


def summarize(folder, *names):
    return subprocess.run(
        [
            sys.executable,
            '-m',
            'legacy_robot_bench.bench',
            '--no-run',
            '--output',
            str(folder),
            '--only',
            *names,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_all_targets_met(tmp_path):
    write_robot(tmp_path, 'p2os', 2000.0)
    write_robot(tmp_path, 'pleo', 500.0)
    done = summarize(tmp_path, 'p2os', 'pleo')
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        'P2OS' in done.stdout and '200.0x ok' in done.stdout and 'missed: nothing' in done.stdout
    )
    written = json.loads((tmp_path / 'summary.json').read_text())
    assert set(written['robots']) == {'p2os', 'pleo'} and written['missed'] == []
    assert (tmp_path / 'summary.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'


def test_missed_targets_and_missing_results_fail_the_run(tmp_path):
    write_robot(tmp_path, 'p2os', 100.0)  # 10x: headroom missed
    write_robot(tmp_path, 'ipaq', 1000.0, cpu=4.0, cpu_target=('<=', 3.0))
    done = summarize(tmp_path, 'p2os', 'ipaq', 'aibo')  # aibo.json does not exist
    assert done.returncode == 1
    written = json.loads((tmp_path / 'summary.json').read_text())
    assert any('P2OS' in miss and 'headroom' in miss for miss in written['missed'])
    assert 'iPaq: ipaq driver CPU' in written['missed']
    assert 'AIBO: no result' in written['missed']
    assert '10.0x MISSED' in done.stdout


def test_unknown_robot_is_a_usage_error(tmp_path):
    done = summarize(tmp_path, 'roomba')
    assert done.returncode == 2 and 'invalid choice' in done.stderr


def test_the_recording_column_and_its_target(tmp_path):
    # the target is on the recording's own CPU: writer thread + messages/s x one tap call
    write_robot(
        tmp_path,
        'p2os',
        2000.0,
        recording=RecordingCost(
            2.0, 2.3, 60_000, 10.0, writer_cpu=0.08, messages_per_second=200, tap_call=1e-6
        ),
    )
    write_robot(
        tmp_path,
        'pleo',
        2000.0,
        recording=RecordingCost(
            2.0, 1.9, 60_000, 10.0, writer_cpu=0.45, messages_per_second=500, tap_call=1e-6
        ),
    )
    done = summarize(tmp_path, 'p2os', 'pleo')
    assert done.returncode == 1, done.stdout
    assert '+5.0 % ok' in done.stdout and '+25.0 % MISSED' in done.stdout
    written = json.loads((tmp_path / 'summary.json').read_text())
    assert written['missed'] == ['Pleo: pleo stream: recording, its CPU / driver CPU (%)']
    assert written['robots']['p2os']['summary']['recording']['cpu_on'] == 2.3


def test_a_tool_benchmark_gives_target_rows_and_no_pipeline_row(tmp_path):
    write_robot(tmp_path, 'p2os', 2000.0)
    report(
        'Foxglove relay and bag export',
        [('messages the relay dropped', 3, '3', ('<=', 0))],
        tmp_path,
        'foxglove',
    )
    done = summarize(tmp_path, 'p2os', 'foxglove')
    assert done.returncode == 1
    assert 'Foxglove / bags | messages the relay dropped' in done.stdout
    assert 'no result' not in done.stdout
    assert json.loads((tmp_path / 'summary.json').read_text())['missed'] == [
        'Foxglove / bags: messages the relay dropped'
    ]


def test_the_single_threaded_floor_column_and_its_target(tmp_path):
    for name, single_floor in (('p2os', 2.0), ('pleo', 0.8)):  # driver CPU 1.0 %
        summary = PipelineSummary(
            f'{name} stream',
            10.0,
            50_000.0,
            2000.0,
            1.0,
            latency_summary([0.001]),
            floor=0.9,
            lean_floor=0.5,
            single_floor=single_floor,
        )
        report(name, [], tmp_path, name, summary=summary)
    done = summarize(tmp_path, 'p2os', 'pleo')
    assert done.returncode == 1
    assert '0.50x ok' in done.stdout and '1.25x MISSED' in done.stdout
    written = json.loads((tmp_path / 'summary.json').read_text())
    assert written['robots']['p2os']['summary']['driver_over_single_threaded_floor'] == 0.5
    assert written['missed'] == ['Pleo: pleo stream: driver / single-threaded floor']
