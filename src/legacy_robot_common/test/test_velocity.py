"""VelocityWatchdog: keep-alive and stop-on-timeout with a hand-stepped clock."""

import threading

import pytest

from legacy_robot_common.velocity import VelocityWatchdog


class Robot:
    """Records what the watchdog hands over, stamped with the fake clock."""

    def __init__(self):
        self.now = 100.0
        self.sent = []

    def clock(self):
        return self.now

    def send(self, velocity):
        self.sent.append((self.now, velocity))

    def stop(self):
        self.sent.append((self.now, 'stop'))

    def watchdog(self, **kwargs):
        return VelocityWatchdog(self.send, self.stop, clock=self.clock, **kwargs)


def test_a_command_goes_out_at_once_and_stops_once_when_stale():
    robot = Robot()
    w = robot.watchdog(timeout=0.5)
    w.command((300, 0.1))
    assert robot.sent == [(100.0, (300, 0.1))] and w.active
    robot.now += 0.49
    assert w.poll() is None
    robot.now += 0.01
    assert w.poll() == 'stop'
    assert robot.sent[-1] == (100.5, 'stop') and not w.active and w.timeouts == 1
    robot.now += 10
    assert w.poll() is None and len(robot.sent) == 2  # stays stopped: no second stop
    w.command((0, 0.0))  # the next command starts over
    assert robot.sent[-1] == (110.5, (0, 0.0)) and w.active


def test_each_command_restarts_the_timeout():
    robot = Robot()
    w = robot.watchdog(timeout=0.5)
    for _ in range(10):
        w.command(1)
        robot.now += 0.3
        assert w.poll() is None
    robot.now += 0.2
    assert w.poll() == 'stop' and w.timeouts == 1


def test_resends_every_repeat_period_until_the_timeout():
    robot = Robot()  # steps in binary fractions: exact comparisons
    w = robot.watchdog(timeout=1.0, repeat_period=0.25)
    w.command('v')
    assert w.next_deadline() == 100.25
    robot.now = 100.125
    assert w.poll() is None
    robot.now = 100.25
    assert w.poll() == 'resend'
    robot.now = 100.375
    w.command('v')  # a command sends at once and restarts the repeat period too
    assert w.next_deadline() == 100.625
    for robot.now in (100.625, 100.875, 101.125):
        assert w.poll() == 'resend'
    robot.now = 101.375
    assert w.poll() == 'stop'
    assert [t for t, _ in robot.sent] == [
        100.0,
        100.25,
        100.375,
        100.625,
        100.875,
        101.125,
        101.375,
    ]
    assert robot.sent[-1][1] == 'stop'


def test_timeout_zero_never_stops_and_may_change_at_run_time():
    robot = Robot()
    w = robot.watchdog(timeout=0.0, repeat_period=0.5)
    w.command('v')
    assert w.next_deadline() == pytest.approx(100.5)
    robot.now += 1000
    assert w.poll() == 'resend' and w.active
    w.timeout = 0.2
    robot.now += 0.2
    assert w.poll() == 'stop'


def test_without_resend_or_timeout_nothing_is_ever_due():
    robot = Robot()
    w = robot.watchdog(timeout=0.0)
    w.command('v')
    assert w.next_deadline() is None and w.seconds_left(7.0) == 7.0
    robot.now += 1e6
    assert w.poll() is None and robot.sent == [(100.0, 'v')]


def test_seconds_left_counts_down_to_the_next_duty():
    robot = Robot()
    w = robot.watchdog(timeout=0.5)
    assert w.seconds_left() == float('inf')  # idle
    w.command('v')
    robot.now += 0.2
    assert w.seconds_left() == pytest.approx(0.3)
    robot.now += 0.4
    assert w.seconds_left() == pytest.approx(-0.1)  # overdue: poll at once


def test_clear_forgets_without_a_stop():
    robot = Robot()
    w = robot.watchdog(timeout=0.5, repeat_period=0.1)
    w.command('v')
    w.clear()
    robot.now += 5
    assert w.poll() is None and w.next_deadline() is None
    assert robot.sent == [(100.0, 'v')] and w.timeouts == 0


def test_poll_takes_the_loops_own_time():
    robot = Robot()
    w = robot.watchdog(timeout=0.5, repeat_period=0.2)
    w.command('v')
    assert w.poll(now=100.25) == 'resend'
    assert robot.sent[-1] == (100.0, 'v')  # sent at the fake clock; stamped 100.25 inside
    assert w.next_deadline() == pytest.approx(100.45)


def test_a_failed_send_propagates_and_the_command_is_still_kept():
    robot = Robot()

    def offline(_velocity):
        raise ConnectionError('not connected')

    w = VelocityWatchdog(offline, robot.stop, timeout=0.5, clock=robot.clock)
    with pytest.raises(ConnectionError):
        w.command('v')
    robot.now += 0.5
    assert w.poll() == 'stop'  # the robot may have got it: still owed its stop


def test_bad_arguments_are_refused():
    robot = Robot()
    with pytest.raises(ValueError, match='timeout'):
        robot.watchdog(timeout=-1)
    with pytest.raises(ValueError, match='repeat_period'):
        robot.watchdog(repeat_period=0)
    with pytest.raises(ValueError, match='None'):
        robot.watchdog().command(None)


def test_a_command_racing_the_stop_is_never_undone_by_it():
    """stop() runs under the lock: a command() arriving meanwhile goes out after the stop."""
    robot = Robot()
    in_stop = threading.Event()
    release = threading.Event()

    def slow_stop():
        robot.sent.append((robot.now, 'stop'))
        in_stop.set()
        release.wait(5)

    w = VelocityWatchdog(robot.send, slow_stop, timeout=0.5, clock=robot.clock)
    w.command('old')
    robot.now += 0.5
    poller = threading.Thread(target=w.poll)
    poller.start()
    assert in_stop.wait(5)
    commander = threading.Thread(target=w.command, args=('new',))
    commander.start()
    release.set()
    poller.join(5)
    commander.join(5)
    assert [v for _, v in robot.sent] == ['old', 'stop', 'new'] and w.active
