"""The simulated laser's life cycle across driver restarts and link losses (issue 56; docs/p2os.md,
"Restarting against AMRISim"): real TCP, a real driver process stopped with SIGINT, and the
emulator made strict (a scan change while the laser runs is refused and counted) with a laser
that outlives its client."""

import signal

import pytest
from helpers import start_module, wait_for
from p2os_raw_client import RawClient

from p2os_driver import protocol as p
from p2os_driver.client import P2osClient, Settings
from p2os_driver.emulator import EmulatorOptions, P2osEmulator
from p2os_driver.world import default_world_path

C = p.Command


@pytest.fixture
def strict_simulator():
    emulator = P2osEmulator(
        EmulatorOptions(
            world=default_world_path(), noise=False, strict_laser=True, laser_outlives_client=True
        )
    )
    port = emulator.start_tcp()
    yield emulator, port
    emulator.stop()


def sent(emulator):
    return [(n, a) for _, n, a in emulator.received_commands()]


def laser_packet(emulator):
    with emulator.robot.lock:
        return emulator.robot.laser.packet


def test_strict_emulator_refuses_a_scan_change_while_on_and_keeps_the_laser(strict_simulator):
    emulator, port = strict_simulator
    first = RawClient(port)
    first.sync()
    first.send(p.LASER_ENABLE, 2)
    first.send(p.LASER_START, -45)  # refused: the laser runs
    first.packet(kind=p.PacketType.LASER_EXTENDED)
    assert wait_for(lambda: emulator.laser_reconfigured_while_on == 1)
    with emulator.robot.lock:
        assert emulator.robot.laser.start == -90.0
    first.sock.close()  # gone without CLOSE or laser off
    second = RawClient(port)
    try:
        second.sync()
        assert laser_packet(emulator) == p.PacketType.LASER_EXTENDED  # still on
        second.send(p.LASER_ENABLE, 0)
        second.send(p.LASER_START, -45)  # taken: the laser is off
        assert wait_for(lambda: emulator.robot.laser.start == -45.0)
        assert emulator.laser_reconfigured_while_on == 1
    finally:
        second.sock.close()


def test_driver_restarted_ten_times_never_reconfigures_a_running_laser(strict_simulator):
    emulator, port = strict_simulator
    for start in range(10):
        process = start_module(
            'p2os_driver.node',
            *('--ros-args', '-r', '__ns:=/pioneer', '-p', f'port:=tcp://127.0.0.1:{port}'),
        )
        try:
            assert wait_for(lambda: laser_packet(emulator), 30), f'start {start}: laser never on'
        finally:
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        assert laser_packet(emulator) == 0, f'start {start}: the laser was left on'
    assert emulator.laser_reconfigured_while_on == 0
    assert sent(emulator).count((p.LASER_START, -90)) == 10


def test_after_a_link_loss_the_laser_goes_off_before_it_is_set_up_again(strict_simulator):
    emulator, port = strict_simulator
    client = P2osClient(Settings(port=f'tcp://127.0.0.1:{port}'))
    client.startup_state = lambda: {'motors': False}
    client.start()
    try:
        assert wait_for(lambda: laser_packet(emulator) and client.connected_event.is_set(), 10)
        sessions = emulator.sessions
        emulator.drop_clients()  # the link breaks; the simulator's laser stays on
        assert laser_packet(emulator)
        assert wait_for(lambda: emulator.sessions > sessions and laser_packet(emulator), 15)
        assert wait_for(lambda: sent(emulator).count((p.LASER_START, -90)) == 2, 15)
        assert emulator.laser_reconfigured_while_on == 0
    finally:
        client.stop()
    assert laser_packet(emulator) == 0  # the orderly stop turned it off


def test_a_robot_gone_silent_on_an_open_link_gets_the_laser_off(strict_simulator):
    emulator, port = strict_simulator
    client = P2osClient(Settings(port=f'tcp://127.0.0.1:{port}', read_timeout=0.5))
    client.startup_state = lambda: {'motors': False}
    client.start()
    try:
        assert wait_for(lambda: laser_packet(emulator) and client.connected_event.is_set(), 10)
        emulator.faults.silent = True  # no SIP; the socket stays open
        assert wait_for(lambda: laser_packet(emulator) == 0, 10)
        assert (p.LASER_ENABLE, 0) in sent(emulator)[-3:]
    finally:
        emulator.faults.silent = False
        client.stop()
    assert emulator.laser_reconfigured_while_on == 0
