import pytest

from legacy_robot_common.backoff import Backoff
from legacy_robot_common.ratelimit import RateLimitedLogger


def test_backoff_grows_to_its_cap_and_resets():
    backoff = Backoff(initial=0.1, maximum=0.5, factor=2.0)
    assert [backoff.next_delay() for _ in range(5)] == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])
    backoff.reset()
    assert backoff.next_delay() == pytest.approx(0.1)


@pytest.mark.parametrize('kwargs', [dict(initial=0), dict(initial=2, maximum=1), dict(factor=0.5)])
def test_backoff_rejects_unbounded_settings(kwargs):
    with pytest.raises(ValueError):
        Backoff(**kwargs)


class RecordingLogger:
    def __init__(self):
        self.lines = []

    def warning(self, text):
        self.lines.append(text)


def test_rate_limited_logger_counts_what_it_suppresses():
    now = [0.0]
    sink = RecordingLogger()
    log = RateLimitedLogger(sink, period=5.0, clock=lambda: now[0])
    assert log.warning('bad', 'first')
    assert not log.warning('bad', 'second')
    assert not log.warning('bad', 'third')
    assert log.warning('other', 'a different problem')
    now[0] = 6.0
    assert log.warning('bad', 'fourth')
    assert sink.lines == ['first', 'a different problem', 'fourth (2 similar messages suppressed)']


def test_an_rclpy_logger_accepts_every_severity_through_one_wrapper():
    """rclpy raises if one call site logs at two severities; each level has its own site."""
    from rclpy.logging import get_logger

    log = RateLimitedLogger(get_logger('ratelimit_test'), period=0.0)
    for _ in range(2):
        assert log.info('a', 'info') and log.warning('b', 'warning') and log.error('c', 'error')


def test_default_back_off_tries_at_least_twice_a_second():
    # regression: a 5 s cap made the Pleo driver find its restarted robot 2.5-4.4 s late, and
    # a 1 s cap the mixed soak's P2OS in up to 996 ms (limit 1 s, handshake included)
    backoff = Backoff()
    delays = [backoff.next_delay() for _ in range(10)]
    assert delays[:3] == [0.2, 0.4, 0.5] and max(delays) == 0.5
