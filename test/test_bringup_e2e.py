"""bringup as a real process: a robot and its emulator, seen from another process over DDS."""

import re
import signal

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from helpers import Lines, listening_node, run_module, spin_until, start_module, wait_for
from std_msgs.msg import UInt32

from legacy_robot_bringup.registry import PluginError, select
from legacy_robot_common.emulator import free_port

BRINGUP = 'legacy_robot_bringup.compose'
TICK = ('--plugin', 'tick_robot:PLUGIN')


@pytest.fixture
def listener():
    with listening_node('bringup_listener') as pair:
        yield pair


@pytest.mark.parametrize('stop_signal', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_robot_runs_with_its_emulator_and_stops_cleanly(listener, stop_signal):
    node, executor = listener
    ticks, link_status = [], []
    node.create_subscription(UInt32, '/lab/ticks', lambda m: ticks.append(m.data), 10)

    def on_diagnostics(msg):
        link_status.extend(s for s in msg.status if s.name.endswith('tick_driver: link'))

    node.create_subscription(DiagnosticArray, '/diagnostics', on_diagnostics, 10)
    process = start_module(BRINGUP, *TICK, 'tick', '--sim', '--namespace', '/lab')
    try:
        assert spin_until(executor, lambda: len(ticks) >= 20 and link_status, 30), (
            process.stderr.read() if process.poll() is not None else 'no data'
        )
        assert ticks[-1] > ticks[0]
        status = link_status[-1]
        values = {kv.key: kv.value for kv in status.values}
        assert status.message == 'connected' and values['state'] == 'connected'
        assert int(values['frames']) > 0 and values['bad frames'] == '0'
    finally:
        process.send_signal(stop_signal)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert 'tick: emulator tcp 127.0.0.1:' in out


def test_unknown_robot_is_a_clear_error():
    result = run_module(BRINGUP, *TICK, 'nosuchrobot')
    assert result.returncode == 2
    assert 'unknown robot(s): nosuchrobot' in result.stderr and 'tick' in result.stderr


def test_bad_plugin_spec_is_a_clear_error():
    result = run_module(BRINGUP, '--plugin', 'no_such_module:PLUGIN', '--list')
    assert result.returncode == 2
    assert "cannot load plugin 'no_such_module:PLUGIN'" in result.stderr


def test_invalid_parameter_value_stops_with_a_clear_message(tmp_path):
    params = tmp_path / 'bad.yaml'
    params.write_text('/**/tick_driver:\n  ros__parameters:\n    port: 70000\n')
    result = run_module(BRINGUP, *TICK, 'tick', '--params-file', str(params), '--duration', '5')
    assert result.returncode == 2
    assert "parameter 'port' must be an integer within 1..65535" in result.stderr


def test_list_shows_extra_plugins():
    result = run_module(BRINGUP, *TICK, '--list')
    assert result.returncode == 0
    assert 'tick\tnode tick_driver\tpackage tick_robot' in result.stdout


def test_selecting_from_no_installed_robots_names_the_problem():
    assert select({}, []) == []
    with pytest.raises(PluginError, match='known: none installed'):
        select({}, ['p2os'])


def test_missing_or_unparsable_parameter_file_is_exit_2_not_a_traceback(tmp_path):
    result = run_module(BRINGUP, *TICK, 'tick', '--sim', '--params-file', 'nosuch.yaml')
    assert result.returncode == 2 and 'no such file: nosuch.yaml' in result.stderr
    broken = tmp_path / 'broken.yaml'
    broken.write_text('/**:\n  ros__parameters: [unclosed\n')
    result = run_module(BRINGUP, *TICK, 'tick', '--sim', '--params-file', str(broken))
    assert result.returncode == 2 and 'Traceback' not in result.stderr
    assert 'bad ROS arguments or parameter file' in result.stderr


def test_ros_args_reach_every_node(listener):
    """Everything after --ros-args goes to rclpy: here autostart:=false leaves the driver
    unconfigured (no link, no ticks), waiting for a lifecycle manager."""
    node, executor = listener
    ticks = []
    node.create_subscription(UInt32, '/ticks', ticks.append, 10)
    process = start_module(
        BRINGUP,
        *TICK,
        'tick',
        '--sim',
        '--log-level',
        'warn',
        '--ros-args',
        '-p',
        'autostart:=false',
    )
    try:
        assert not spin_until(executor, lambda: ticks, 3)
        assert spin_until(executor, lambda: node.count_publishers('/ticks') == 1, 10)
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert 'waiting for configure' not in err  # --log-level warn: no INFO lines


def test_a_bad_value_for_a_shared_parameter_is_exit_2_not_a_traceback():
    result = run_module(BRINGUP, *TICK, 'tick', '--sim', '--ros-args', '-p', 'autostart:=maybe')
    assert result.returncode == 2 and 'Traceback' not in result.stderr, result.stderr
    assert "parameter 'autostart' must be true or false" in result.stderr


def test_an_unknown_executor_is_a_user_error(monkeypatch):
    monkeypatch.setenv('LEGACY_ROBOTS_EXECUTOR', 'multi')
    result = run_module(BRINGUP, *TICK, '--sim', '--duration', '1')
    assert result.returncode == 2, result.stderr
    assert 'LEGACY_ROBOTS_EXECUTOR' in result.stderr and 'Traceback' not in result.stderr


def _switch_interval(module, *args):
    """The GIL switch interval a process of ours reports in its process settings line."""
    process = start_module(module, *args)
    err = Lines(process, process.stderr)
    setting = re.compile(r'process settings: .*GIL switch interval s ([0-9.e-]+)')
    try:
        assert wait_for(lambda: err.find(setting), 30), err.lines
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(20)
    return float(err.find(setting).group(1))


def test_the_bridge_gets_its_switch_interval_alone_and_under_bringup():
    alone = _switch_interval('nabaztag_bridge.node', '--ros-args', '-p', f'port:={free_port()}')
    composed = _switch_interval(BRINGUP, *TICK, 'tick', 'nabaztag', '--sim')
    assert alone == composed == 0.0005  # the Nabaztag plugin's; the tick robot asks none
