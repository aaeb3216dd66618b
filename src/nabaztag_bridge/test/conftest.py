"""The bridge in its own process with one emulated rabbit: test_node_e2e's and
test_heard_e2e's fixture."""

import pytest
from helpers import wait_for
from ros_observer import DriverProcesses

from legacy_robot_common.emulator import free_port
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
