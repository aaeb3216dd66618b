"""DDS security as these wheels have it (none), said plainly: a process of ours asked to enforce
DDS-Security on a Fast DDS built without it exits 2 naming what is missing, instead of rcl's
'bad ROS arguments or parameter file'. The rest of docs/security.md's surfaces are tested where
they live (test_two_hosts.py: a second host; the Nabaztag and Foxglove tests), but for the
emulators' one option to listen elsewhere."""

import importlib
import signal
import subprocess
import sys

import pytest
from helpers import ROOT, env_with_support, listening_node, run_module, start_module, wait_for

from legacy_robot_common import middleware
from legacy_robot_common.distribution import distribution
from legacy_robot_common.params import ParameterError

ENFORCE = {'ROS_SECURITY_ENABLE': 'true', 'ROS_SECURITY_STRATEGY': 'Enforce'}
MISSING = 'this Fast DDS is built without DDS-Security'


@pytest.mark.parametrize('header', middleware.FASTDDS_CONFIG_HEADERS)
@pytest.mark.parametrize('value, has', [('0', False), ('1', True)])
def test_the_config_header_tells_whether_fast_dds_has_security(tmp_path, header, value, has):
    path = tmp_path / header
    path.parent.mkdir(parents=True)
    path.write_text(f'#ifndef HAVE_SECURITY\n#define HAVE_SECURITY {value}\n#endif\n')
    assert middleware.fastdds_has_security([str(tmp_path / 'none'), str(tmp_path)]) is has
    assert middleware.fastdds_has_security([str(tmp_path / 'none')]) is None


def test_these_wheels_have_no_security():
    """The ROS 2 wheels of the package index: HAVE_SECURITY 0 (Jazzy's fastrtps/config.h,
    Kilted's fastdds/config.hpp). On a full ROS install this says True, and the exit below
    does not happen."""
    assert middleware.fastdds_has_security([sys.prefix]) is False


# every process of ours that starts rclpy: bringup, each driver, the relay, the command-line tools
EVERY_PROCESS = [
    ['-m', 'legacy_robot_bringup.compose', 'p2os', '--sim', '--duration', '5'],
    *(['-m', f'{package}.node'] for package in ('aibo_driver', 'p2os_driver', 'ipaq_driver')),
    ['-m', 'nabaztag_bridge.node'],
    ['-m', 'pleo_driver.node'],
    ['-m', 'pleo_driver.builder_node'],
    ['-m', 'legacy_robot_bringup.foxglove'],
    ['-m', 'nabaztag_bridge.say', 'Hello.'],
    ['-m', 'legacy_robot_bringup.recordings', 'info', '--decode', 'recordings/p2os.mcap'],
]


@pytest.mark.parametrize('argv', EVERY_PROCESS, ids=lambda argv: argv[1])
def test_enforced_security_without_its_libraries_is_a_clear_usage_error(tmp_path, argv):
    env = {**env_with_support(), **ENFORCE, 'ROS_SECURITY_KEYSTORE': str(tmp_path)}
    result = subprocess.run(
        [sys.executable, *argv], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert MISSING in result.stderr and f'ros-{distribution()}-ros-base' in result.stderr, (
        result.stderr
    )
    assert 'bad ROS arguments' not in result.stderr and 'Traceback' not in result.stderr


@pytest.mark.parametrize(
    'enable, strategy',
    [('true', 'Permissive'), ('true', None), ('True', 'Enforce'), ('false', 'Enforce')],
)
def test_only_what_rcl_enforces_is_refused(monkeypatch, enable, strategy):
    """rcl compares both variables exactly; Permissive runs without security (with warnings)."""
    monkeypatch.setenv('ROS_SECURITY_ENABLE', enable)
    if strategy is None:
        monkeypatch.delenv('ROS_SECURITY_STRATEGY', raising=False)
    else:
        monkeypatch.setenv('ROS_SECURITY_STRATEGY', strategy)
    assert not middleware.security_enforced()
    middleware.check_dds_security()
    monkeypatch.setenv('ROS_SECURITY_ENABLE', 'true')
    monkeypatch.setenv('ROS_SECURITY_STRATEGY', 'Enforce')
    with pytest.raises(ParameterError, match=MISSING):
        middleware.check_dds_security()


def test_bringup_puts_its_nodes_in_the_enclave_it_is_given():
    """Without security the enclave is only a name, but the graph carries it: what a keystore's
    enclave (ros2 security create_enclave) would be matched against."""
    bringup = start_module(
        'legacy_robot_bringup.compose', 'p2os', '--sim', '--enclave', '/lab/p2os'
    )
    try:
        with listening_node('enclave_observer') as (node, _):

            def enclaves():
                return {
                    name: enclave
                    for name, _, enclave in node.get_node_names_and_namespaces_with_enclaves()
                }

            assert wait_for(lambda: enclaves().get('p2os_driver') == '/lab/p2os', 30), enclaves()
        # stopped once started: a SIGINT while bringup still makes its nodes ends it with
        # KeyboardInterrupt (the graph shows a node before all its services exist)
        assert any(line.startswith('running:') for line in bringup.stdout)
    finally:
        bringup.send_signal(signal.SIGINT)
        assert bringup.wait(30) == 0, bringup.stderr.read()[-2000:]


def test_an_enclave_that_is_not_absolute_is_a_usage_error():
    result = run_module('legacy_robot_bringup.compose', 'p2os', '--sim', '--enclave', 'p2os')
    assert result.returncode == 2
    assert "error: --enclave: enclave 'p2os': an absolute name" in result.stderr


# the emulators that listen (Pleo's is a pseudo-terminal; the rabbit's dials the bridge)
EMULATORS_WITH_PORTS = ('aibo_driver', 'ipaq_driver', 'p2os_driver')


@pytest.mark.parametrize('package', EMULATORS_WITH_PORTS)
def test_every_emulator_listens_on_loopback_unless_its_host_says(package):
    """One --host for every emulator (legacy_robot_common.emulator.add_host_argument), for a
    driver on another host; an address not of this machine is exit 2 with one line."""
    parser = importlib.import_module(f'{package}.emulator').build_parser()
    assert parser.parse_args([]).host == '127.0.0.1'
    assert parser.parse_args(['--host', '0.0.0.0']).host == '0.0.0.0'
    result = run_module(f'{package}.emulator', '--host', '192.0.2.77')  # no such address here
    assert result.returncode == 2
    assert 'cannot listen on 192.0.2.77' in result.stderr and 'Traceback' not in result.stderr
