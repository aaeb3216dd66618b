"""The benchmark helpers that turn raw times into the numbers of the `make bench` table."""

import json
import threading
import time

import pytest

from legacy_robot_bench.common.bench import (
    HEADROOM_TARGET,
    PipelineSummary,
    driver_summary,
    latency_summary,
    percentile,
    report,
    wire_latencies,
)
from legacy_robot_bench.hosts.bench import main as hosts_bench
from legacy_robot_bench.hosts.bench import rss_summary
from legacy_robot_common.emulator import SendLog


def test_each_message_is_matched_to_the_latest_frame_sent_before_its_stamp():
    sent = [10.0, 10.1, 10.2]
    receipts = [
        (10.0004, 10.002),  # stamped by the driver just after the first frame
        (10.1010, 10.103),
        (10.2003, 10.2009),
        (9.5, 9.6),
    ]  # stamped before any frame: cannot be explained, left out
    latencies = wire_latencies(sent, receipts)
    assert latencies == pytest.approx([0.002, 0.003, 0.0009])


def test_latency_summary_and_percentiles():
    latencies = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    summary = latency_summary(latencies)
    assert summary['p50_ms'] == pytest.approx(51) and summary['p99_ms'] == pytest.approx(100)
    assert summary['max_ms'] == pytest.approx(100) and summary['samples'] == 100
    assert percentile([3, 1, 2], 0.0) == 1
    with pytest.raises(RuntimeError, match='no message'):
        latency_summary([])


def test_send_log_is_bounded_and_safe_from_many_threads():
    log = SendLog(keep=1000)
    threads = [threading.Thread(target=lambda: [log.mark() for _ in range(500)]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    times = log.times()
    assert len(log) == len(times) == 1000
    assert all(abs(t - time.time()) < 60 for t in times)


def test_driver_summary_takes_the_floors_and_the_recording_as_measured():
    wire = latency_summary([0.001, 0.002])
    summary = driver_summary('SIP', 10.0, 1e5, 200.0, 1.5, wire, (1.0, 0.5, 1.2), None)
    assert summary == PipelineSummary(
        'SIP', 10.0, 1e5, 200.0, 1.5, wire, 1.0, 0.5, None, single_floor=1.2
    )


def test_pipeline_summary_rows_and_json(tmp_path):
    wire = latency_summary([0.001, 0.002, 0.004])
    summary = PipelineSummary('SIP', 20.0, 150_000.0, 300.0, 1.5, wire)
    assert summary.headroom == 15.0
    labels = [row[0] for row in summary.rows()]
    assert any('headroom' in label for label in labels)
    code = report(
        'test',
        [('decode rate', 150_000.0, '150,000', ('>=', 100_000))],
        tmp_path,
        'robot',
        summary=summary,
    )
    assert code == 1  # 15x < 20x: missed
    written = json.loads((tmp_path / 'robot.json').read_text())
    assert written['summary']['headroom'] == 15.0 and written['summary']['stream'] == 'SIP'
    headroom_label = next(label for label in written['targets'] if 'headroom' in label)
    assert written['targets'][headroom_label] == ['>=', HEADROOM_TARGET]


def test_recording_overhead_alternates_runs_and_counts_what_the_recording_spends():
    from legacy_robot_bench.common.bench import recording_overhead
    from legacy_robot_common.recording import Recorder

    calls = []

    def measure(record_path):
        calls.append(record_path)
        if record_path is None:
            return 2.0, 0.0
        recorder = Recorder(record_path, 'bench', '0', {})  # what the driver would write
        tap = recorder.tap('link')
        recorder.start()
        for _ in range(300):
            tap.received(bytes(100))
        recorder.stop()
        return 2.2, 0.05

    cost = recording_overhead(measure, seconds=30.0, pairs=2)
    assert [path is None for path in calls] == [True, False, True, False]
    assert calls[1] != calls[3] and calls[1].endswith('.mcap')
    assert (cost.cpu_off, cost.cpu_on, cost.writer_cpu) == (2.0, 2.2, 0.05)
    assert cost.messages_per_second == 10.0 and 0 < cost.tap_call < 1e-4
    assert cost.recording_cpu == 0.05 + 100 * 10.0 * cost.tap_call
    assert abs(cost.extra - 100 * cost.recording_cpu / 2.0) < 1e-9
    assert abs(cost.measured_difference - 10.0) < 1e-9 and cost.mb_per_minute > 0


def test_desk_gone_rss_summary_separates_what_fills_once_from_growth():
    filled_then_flat = [100.0, 102.0, 104.0, 106.0] + [106.0] * 6  # MB, one a second
    summary = rss_summary(filled_then_flat)
    assert (summary['start'], summary['max'], summary['end']) == (100.0, 106.0, 106.0)
    assert summary['slope_mb_min'] > 0 and summary['late_slope_mb_min'] == 0
    growing = [100.0 + t / 60 for t in range(10)]  # 1 MB a minute
    assert rss_summary(growing)['late_slope_mb_min'] == pytest.approx(1.0)
    assert rss_summary([5.0])['slope_mb_min'] == 0


def test_desk_gone_needs_a_duration_of_zero_or_more(capsys):
    with pytest.raises(SystemExit) as exited:
        hosts_bench(['--desk-gone', '-1'])
    assert exited.value.code == 2
    assert '--desk-gone: must be 0 or more seconds' in capsys.readouterr().err
