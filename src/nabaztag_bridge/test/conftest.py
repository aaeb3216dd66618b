"""The bridge in its own process with one emulated rabbit (test_node_e2e's and
test_heard_e2e's fixture), or with declared rabbits it calls (the serverless and pynab tests')."""

import pytest
from helpers import wait_for
from ros_observer import DriverProcesses

from legacy_robot_common.driver_node import LATCHED
from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import RabbitEvent, RabbitList
from nabaztag_bridge import protocol as p
from nabaztag_bridge import recording
from nabaztag_bridge.emulator import RabbitEmulator, RabbitOptions


@pytest.fixture
def setup(tmp_path):
    drivers = DriverProcesses()
    (tmp_path / 'media').mkdir()
    (tmp_path / 'media' / 'tone.wav').write_bytes(recording.encode_wav(recording.tone(0.2)))
    (tmp_path / 'bytecode.bin').write_bytes(p.wrap_bytecode(b'test /vl/p4.jsp?sn='))

    def start(**parameters):
        port = free_port()
        emulator = RabbitEmulator(
            RabbitOptions(server=f'127.0.0.1:{port}/vl', time_scale=0.2)
        ).start()
        parameters = {
            'host': '127.0.0.1',
            'port': port,
            'ping_interval': 1,
            'bytecode_file': str(tmp_path / 'bytecode.bin'),
            'media_root': str(tmp_path / 'media'),
            **parameters,
        }
        emulator, process, ros = drivers.start(
            'nabaztag_bridge.node', '/rabbit', emulator, parameters
        )
        rabbit = emulator.rabbits[0]
        assert wait_for(lambda: rabbit.status()['state'] == 'idle', 20), 'rabbit not up'
        return rabbit, process, ros

    yield start
    drivers.stop_all()


@pytest.fixture(scope='module')
def declared_bridge(tmp_path_factory):
    """start(emulator, rabbits, rules, rabbit_timeout) → (emulator, ros, events, rabbits list,
    port): the bridge as a process whose rabbits file declares `rabbits` (the YAML list's
    lines), with `rules` (a rules file's text, or ''), a media folder holding tone.wav, and the
    emulator stopped with it. For the rabbits the bridge calls (serverless, pynab)."""
    drivers = DriverProcesses()

    def start(emulator, rabbits, rules='', rabbit_timeout=2.0, port=None):
        folder = tmp_path_factory.mktemp('declared')
        (folder / 'media').mkdir()
        (folder / 'media' / 'tone.wav').write_bytes(recording.encode_wav(recording.tone(0.2)))
        (folder / 'rabbits.yaml').write_text('rabbits:\n' + rabbits)
        port = port or free_port()
        parameters = {
            'host': '127.0.0.1',
            'port': port,
            'media_root': str(folder / 'media'),
            'rabbits_file': str(folder / 'rabbits.yaml'),
            'rabbit_timeout': rabbit_timeout,
            'rabbit_status_period': 1.0,
            'tts_engine': 'espeak',
        }
        if rules:
            (folder / 'rules.yaml').write_text(rules)
            parameters['rules_file'] = str(folder / 'rules.yaml')
        _, _, ros = drivers.start('nabaztag_bridge.node', '/rabbit', emulator, parameters)
        events = ros.listen(RabbitEvent, 'events')
        rabbits_seen = ros.listen(RabbitList, 'rabbits', LATCHED)
        assert ros.spin_until(lambda: ros.node.count_publishers('/rabbit/events') == 1, 20)
        return emulator, ros, events, rabbits_seen, port

    yield start
    drivers.stop_all()
