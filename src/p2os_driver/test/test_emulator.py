"""The emulator as a robot: raw packets over a real TCP socket
(docs/protocols/p2os.md §3.1, §3.8)."""

import math
import time

import pytest
from helpers import wait_for
from p2os_raw_client import RawClient

from p2os_driver import protocol as p
from p2os_driver.emulator import EmulatorOptions, Fleet, P2osEmulator
from p2os_driver.emulator import main as emulator_main
from p2os_driver.models import MODELS

C = p.Command


@pytest.fixture
def robot():
    emulator = P2osEmulator(EmulatorOptions(model='p2pb', name='tester'))
    port = emulator.start_tcp()
    clients = []

    def connect():
        clients.append(RawClient(port))
        return clients[-1]

    yield emulator, connect
    for c in clients:
        c.close()
    emulator.stop()


@pytest.mark.parametrize('open_argument', [None, 1], ids=['OPEN', 'OPEN int 1 (ARIA)'])
def test_handshake_then_sips_every_100_ms_with_motors_disabled(robot, open_argument):
    emulator, connect = robot
    client = connect()
    assert client.sync(open_argument) == ('tester', 'Pioneer', 'p2pb')
    first = client.sip()
    started = time.monotonic()
    for _ in range(10):
        sip = client.sip()
    assert 0.8 < time.monotonic() - started < 1.5
    assert not first.motors_enabled and not sip.motors_enabled and sip.sonar_enabled
    assert sip.extra == b''  # P2OS: the SIP ends after DIGOUT


def test_unconnected_robot_ignores_everything_but_syncs(robot):
    _, connect = robot
    client = connect()
    client.send(C.ENABLE, 1)
    with pytest.raises(TimeoutError):
        client.packet(timeout=0.4)
    client.send(1)  # SYNC1 out of sequence: echoed, restart
    assert client.packet()[0] == 1
    assert client.sync()[2] == 'p2pb'


def start_driving(connect, speed):
    client = connect()
    client.sync()
    client.send(C.ENABLE, 1)
    client.send(C.VEL, speed)
    return client


def test_enable_and_drive(robot):
    emulator, connect = robot
    client = start_driving(connect, 300)
    assert wait_for(lambda: emulator.robot.pose[0] > 100, 5)
    sip = client.fresh_sip()
    assert sip.motors_enabled and sip.moving and sip.left_velocity > 100


def test_watchdog_stops_then_resumes_on_the_next_command(robot):
    emulator, connect = robot
    client = start_driving(connect, 200)
    # silence: the 2 s watchdog trips
    assert wait_for(lambda: emulator.watchdog_trips == 1 and emulator.robot.v < 200, 5)
    client.send(C.PULSE)
    # back to the last setpoint
    assert wait_for(lambda: emulator.robot.v == pytest.approx(200), 3), emulator.robot.v
    assert emulator.watchdog_trips == 1


def test_close_ends_the_tcp_connection_and_disables_motors(robot):
    emulator, connect = robot
    client = connect()
    client.sync()
    client.send(C.ENABLE, 1)
    client.send(C.CLOSE)
    with pytest.raises(ConnectionError):
        while True:
            client.packet()
    assert not emulator.robot.enabled and not emulator.robot.sonar_enabled


def test_requested_packets(robot):
    emulator, connect = robot
    client = connect()
    client.sync()
    client.send(C.CONFIG)
    config = p.decode_config(client.packet(kind=p.PacketType.CONFIG))
    assert config.values['subtype'] == 'p2pb' and config.values['watchdog'] == 2000
    client.send(C.PLAYLIST, 0)
    assert p.decode_playlist(client.packet(kind=p.PacketType.PLAYLIST)) == []  # not an AmigoBot
    client.send(C.TTY2, b'hello')
    client.send(C.GETAUX, 5)
    assert p.decode_seraux(client.packet(kind=p.PacketType.SERAUX)) == b'hello'
    client.send(C.ENCODER, 1)
    assert len(p.decode_encoders(client.packet(kind=p.PacketType.ENCODER))) == 2
    client.send(C.IOREQUEST, 1)
    io = p.decode_io(client.packet(kind=p.PacketType.IO))
    assert len(io.analog) == 5 and all(0 <= v <= 2047 for v in io.analog)
    client.send(C.GRIPREQUEST, 2)
    assert p.decode_gripper(client.packet(kind=p.PacketType.GRIPPER)).gripper_type == 2
    client.sock.sendall(p.encode_two_bytes(C.DIGOUT, 0x0F, 0x05))
    assert wait_for(lambda: emulator.robot.digital_outputs == 0x05, 3)


def test_bad_packets_are_ignored(robot):
    emulator, connect = robot
    client = connect()
    client.sync()
    enable = bytearray(p.encode_command(C.ENABLE, 1))
    enable[-1] ^= 0xFF
    client.sock.sendall(bytes(enable) + p.build_packet(bytes([C.ENABLE, 0x3B, 1, 0]) + bytes(200)))
    client.sock.sendall(b'\xfa\xfb\x04\x07\x3b\x07\x3b')  # SETO as "07 3B" (old ROS p2os)
    # the SETO comes after both ENABLEs: once it is in, they were read
    assert wait_for(
        lambda: (C.SETO, None) in [(n, a) for _, n, a in emulator.received_commands()], 3
    )
    assert not emulator.robot.enabled  # neither ENABLE got through
    assert client.sip() is not None


def test_later_firmware_tail_and_arcos_gripper_order():
    emulator = P2osEmulator(EmulatorOptions(later_firmware_tail=True, gripper_in_high_byte=False))
    client = RawClient(emulator.start_tcp())
    try:
        client.sync()
        sip = p.decode_sip(client._any_sip(), gripper_in_high_byte=False)
        assert sip.analog_port == 5 and sip.tail['battery_x10'] == 130
    finally:
        client.close()
        emulator.stop()


def test_a_slow_sip_cycle_is_reported_as_255_ms_in_the_config_byte():
    emulator = P2osEmulator(EmulatorOptions(sip_cycle=1.0))
    client = RawClient(emulator.start_tcp())
    try:
        client.sync()
        client.send(C.CONFIG)
        config = p.decode_config(client.packet(timeout=3, kind=p.PacketType.CONFIG))
        assert config.values['sip_cycle'] == 255
    finally:
        client.close()
        emulator.stop()


def test_amigo_has_a_playlist_and_8_sonar():
    emulator = P2osEmulator(EmulatorOptions(model='amigo'))
    client = RawClient(emulator.start_tcp())
    try:
        client.sync()
        client.send(C.PLAYLIST, 0)
        names = [n for n, _, _ in p.decode_playlist(client.packet(kind=p.PacketType.PLAYLIST))]
        assert names == ['hello', 'beep', 'goodbye']
        discs = {d for _ in range(3) for d, _ in client.sip().sonar}
        assert discs <= set(range(8))
    finally:
        client.close()
        emulator.stop()


@pytest.mark.parametrize(
    'argv, message',
    [
        (['--no-tcp'], 'nothing to serve'),
        (['--room', 'big'], '--room must look like'),
        (['--sip-cycle', '5'], 'sip_cycle must be within'),
        (['--robot', 'r1=0,0,0', '--robot', 'r2=100,0,0'], 'robot r2: its start pose'),
        (['--robot', 'r1', '--robot', 'r2=4900,0,0'], 'robot r2: the start pose'),
        (['--robot', 'r1', '--robot', 'r1'], 'robot names must differ'),
        (['--robot', '=1,2,3'], '--robot takes NAME'),
        (['--robot', 'r1=1,2'], 'a start pose looks like'),
    ],
)
def test_emulator_command_line_errors(argv, message, capsys):
    assert emulator_main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_robot_pushing_into_a_wall_reports_the_stall_in_every_sip():
    """At 0.4 m/s into a wall, a stall that flickers (each blocked step stops the robot, the next
    ramps up from rest and creeps into the gap left) misleads a driver; the stall must hold in
    every SIP while the robot pushes, and clear once it backs off."""
    emulator = P2osEmulator(EmulatorOptions(model='p3dx', room_width=2.0, room_height=4.0))
    client = RawClient(emulator.start_tcp())
    try:
        client.sync()
        client.send(C.ENABLE, 1)
        client.send(C.VEL, 400)
        sip = client.sip()
        deadline = time.monotonic() + 10
        while not (sip.left_stall and sip.right_stall):
            assert time.monotonic() < deadline, 'no SIP reported a stall at the wall'
            client.send(C.VEL, 400)  # the client keeps commanding (and feeds the watchdog)
            sip = client.sip()
        pushing = []
        for count in range(40):  # 4 s of SIPs against the wall
            if count % 5 == 0:
                client.send(C.VEL, 400)
            sip = client.sip()
            pushing.append(sip.left_stall and sip.right_stall)
        assert all(pushing), f'{pushing.count(False)} of 40 SIPs lost the stall while pushing'
        client.send(C.VEL, -200)
        assert wait_for(lambda: not client.sip().left_stall, 3)
    finally:
        client.close()
        emulator.stop()


def test_two_robots_in_one_world_on_two_ports_stop_against_each_other():
    """A Fleet: r1 on the first port, r2 on the next; r1 driving at r2 stops at their contact
    circles and reports the stall in every SIP while it pushes; SIMSTAT gives both true poses
    in the one world's frame."""
    fleet = Fleet(
        EmulatorOptions(model='p3dx', room_width=10.0, room_height=6.0, simulator=True),
        [('r1', (-1000.0, 0.0, 0.0)), ('r2', (1000.0, 0.0, math.pi))],
    )
    ports = fleet.start_tcp(port=0)
    clients = {name: RawClient(port) for name, port in ports.items()}
    try:
        assert len(set(ports.values())) == 2
        assert clients['r1'].sync() == ('r1', 'Pioneer', 'p3dx')
        assert clients['r2'].sync()[0] == 'r2'
        r1 = clients['r1']
        r1.send(C.ENABLE, 1)
        sip = r1.sip()
        deadline = time.monotonic() + 15
        while not sip.left_stall:
            assert time.monotonic() < deadline, 'r1 never stalled against r2'
            r1.send(C.VEL, 400)
            sip = r1.sip()
        for _ in range(10):
            r1.send(C.VEL, 400)
            assert r1.sip().left_stall
        a, b = fleet.emulators['r1'].robot.pose, fleet.emulators['r2'].robot.pose
        radius = MODELS['p3dx'].radius
        assert b[0] - a[0] == pytest.approx(2 * radius, abs=10)
        assert b[:2] == pytest.approx([1000.0, 0.0])  # r2 is not pushed
        clients['r2'].send(C.SIM_STAT, 1)
        stat = p.decode_simstat(clients['r2'].packet(kind=p.PacketType.SIMSTAT))
        assert (stat.true_x, stat.true_y) == (1000, 0)
    finally:
        for client in clients.values():
            client.close()
        fleet.stop()
