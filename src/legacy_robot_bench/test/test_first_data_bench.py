"""first_data_bench's arguments and table, without starting anything (the benchmark itself
starts bringup; its figures are in docs/dds.md, not asserted here)."""

import argparse

import pytest

from legacy_robot_bench.first_data_bench import build_parser, settle_range, start_rows, topic_name


def test_the_topic_waited_for_is_under_bringups_namespace():
    assert topic_name('', 'odom') == '/odom'
    assert topic_name('p2os', 'odom') == '/p2os/odom'
    assert topic_name('/lab/r1/', 'odom') == '/lab/r1/odom'


def test_settle_takes_a_range_or_one_value():
    assert settle_range('1,4') == (1.0, 4.0)
    assert settle_range('2.5') == (2.5, 2.5)


@pytest.mark.parametrize('text', ['4,1', '-1,2'])
def test_settle_rejects_a_backwards_or_negative_range(text):
    with pytest.raises(argparse.ArgumentTypeError, match='LOW,HIGH'):
        settle_range(text)


@pytest.mark.parametrize('text', ['4,1', 'soon', '1,x'])
def test_a_bad_settle_is_a_usage_error(text, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(['--settle', text])
    assert exit_.value.code == 2 and '--settle' in capsys.readouterr().err


def test_a_start_without_a_message_counts_over_the_limit_and_shows_as_timeout():
    args = build_parser().parse_args(['--limit', '1.5'])
    args.topic_name = '/odom'
    rows = {label: (value, text, target) for label, value, text, target in start_rows(
        args, [0.8, 1.2, float('inf')], [0.7, 1.0, float('inf')]
    )}  # fmt: skip
    assert rows['starts over 1.5 s'][:2] == (1, '1')
    assert rows['first message max (s)'][1:] == ('timeout', ('<=', 1.5))
    assert rows['first message p50 (s)'][1] == '1.200'
