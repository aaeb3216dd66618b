"""kinds_bench: its rabbits file and rows, and one tiny real run (the bridge as its own process,
one emulated rabbit of each kind, 3 calls and clicks each). No figure is asserted against its
target: timings are the benchmark's business, not a test's."""

import json
import math

import yaml

from legacy_robot_bench.nabaztag_bridge import kinds_bench


class _Port:
    def __init__(self, port):
        self.port = port


def test_the_rabbits_file_declares_each_emulator_by_kind_and_port():
    text = kinds_bench.rabbits_file_text({'serverless0': _Port(8081)}, {'pynab0': _Port(10543)})
    assert yaml.safe_load(text)['rabbits'] == [
        {'name': 'serverless0', 'kind': 'serverless', 'address': '127.0.0.1:8081'},
        {'name': 'pynab0', 'kind': 'pynab', 'address': '127.0.0.1:10543'},
    ]


def test_latency_rows_target_p99_and_count_lost_samples():
    rows = kinds_bench.latency_rows('call', {'pynab': [0.001, 0.002], 'serverless': []}, 2)
    by_label = {label: (value, target) for label, value, _, target in rows}
    assert by_label['pynab: call p99 (ms)'] == (2.0, ('<=', kinds_bench.LATENCY_TARGET_MS))
    assert by_label['pynab: call p50 (ms)'][1] is None
    assert by_label['pynab: call, lost of 2'] == (0, ('<=', 0))
    assert math.isinf(by_label['serverless: call p99 (ms)'][0])  # all lost: a miss, no crash
    assert by_label['serverless: call, lost of 2'][0] == 2


def test_a_tiny_run_measures_every_kind_and_writes_its_json(tmp_path):
    code = kinds_bench.main(
        ['--output', str(tmp_path), '--calls', '3', '--rabbits', '2', '--seconds', '0.5']
    )
    result = json.loads((tmp_path / 'nabaztag_kinds.json').read_text())
    assert code in (0, 1)  # 1: a target missed on a loaded machine
    for measure in ('call_to_rabbit', 'event_to_topic'):
        for kind in kinds_bench.KINDS:
            assert result['latencies_ms'][measure][kind]['samples'] == 3, (measure, kind)
    assert result['results']['serverless: set_ears call -> rabbit, lost of 3'] == 0
    assert result['idle']['rabbits'] == 2 and result['idle']['cpu'] >= 0
    assert any('idle rabbits' in label for label in result['targets'])
