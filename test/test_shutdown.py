"""Ctrl-C of a launch stops a robot's emulator and its driver at the same moment. A link that is
already closed at shutdown is normal: at most one INFO line about it, never a traceback."""

import signal

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from helpers import start_module
from ros_observer import DriverProcesses

from legacy_robot_bringup.registry import discover_plugins

ROBOTS = discover_plugins()


@pytest.mark.parametrize('name', sorted(ROBOTS))
@pytest.mark.parametrize('emulator_first', [True, False], ids=['emulator-first', 'driver-first'])
def test_stopping_robot_and_driver_together_prints_no_traceback(name, emulator_first):
    plugin = ROBOTS[name]
    drivers = DriverProcesses()
    try:
        emulator = plugin.start_emulator()
        emulator, process, ros = drivers.start(
            f'{plugin.package}.node', f'/{name}', emulator, emulator.parameters
        )
        running = []
        ros.node.create_subscription(
            DiagnosticArray,
            '/diagnostics',
            lambda m: running.extend(
                s
                for s in m.status
                if s.name.partition(': ')[0].endswith(plugin.node_name)
                and s.level == DiagnosticStatus.OK
            ),
            10,
        )
        assert ros.spin_until(lambda: running, 30), process.stderr.read() if process.poll() else ''
        ros.spin_until(lambda: False, 1.0)
        first, second = (emulator.stop, lambda: process.send_signal(signal.SIGINT))
        if not emulator_first:
            first, second = second, first
        first()
        second()
        _, err = process.communicate(timeout=30)
    finally:
        drivers.stop_all()
    assert process.returncode == 0, err
    assert 'Traceback' not in err and 'Exception in thread' not in err, err
    closed_lines = [line for line in err.splitlines() if 'goodbye not delivered' in line]
    assert len(closed_lines) <= 1 and all('[INFO]' in line for line in closed_lines), err


@pytest.mark.parametrize(
    'stream, marker', [('stderr', 'process settings'), ('stdout', 'running:')]
)
def test_ctrl_c_while_bringup_starts_is_a_normal_stop(stream, marker):
    """A SIGINT between the process settings line and the spin (rclpy.init, the drivers being
    made, the lines that say so) stops bringup as one during the spin does: exit 0, no
    traceback (it was a KeyboardInterrupt traceback and -2)."""
    bringup = start_module('legacy_robot_bringup.compose', 'p2os', '--sim')
    try:
        assert any(marker in line for line in getattr(bringup, stream))
        bringup.send_signal(signal.SIGINT)
        _, errors = bringup.communicate(timeout=30)
    finally:
        bringup.kill()
    assert bringup.returncode == 0 and 'Traceback' not in errors, errors[-2000:]
