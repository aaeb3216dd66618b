"""P2osClient against the emulator over a real pseudo-terminal and real TCP."""

import os
import socket
import threading
import time

import pytest
from helpers import wait_for

from legacy_robot_common.emulator import PtyEmulatorPort
from p2os_driver import client as p2os_client
from p2os_driver import protocol as p
from p2os_driver.client import AuxBytes, Connected, Encoders, P2osClient, Settings
from p2os_driver.emulator import EmulatorOptions, P2osEmulator

C = p.Command


class Records(list):
    def of(self, kind):
        return [r for r in self if isinstance(r, kind)]


def make_client(port, **settings):
    client = P2osClient(Settings(port=port, **settings))
    records = Records()
    client.on_record = records.append
    client.records = records
    return client


@pytest.fixture
def emulator():
    emulators = []

    def start(**options):
        emulators.append(P2osEmulator(EmulatorOptions(**options)))
        return emulators[-1]

    yield start
    for e in emulators:
        e.stop()


@pytest.fixture
def clients():
    started = []

    def start(client):
        started.append(client)
        client.start()
        return client

    yield start
    for c in started:
        c.stop()


def commands(emulator):
    return [(n, a) for _, n, a in emulator.received_commands()]


@pytest.mark.parametrize('transport', ['pty', 'tcp'])
def test_connects_identifies_the_model_and_streams(emulator, clients, transport):
    robot = emulator(model='p2pb', name='pb1')
    port = robot.start_pty() if transport == 'pty' else f'tcp://127.0.0.1:{robot.start_tcp()}'
    client = make_client(port)
    client.startup_state = lambda: {'encoder': True}
    clients(client)
    assert wait_for(lambda: len(client.records.of(p.StandardSip)) >= 5, 10), client.counters
    connected = client.records.of(Connected)[0]
    assert (connected.identity.name, connected.identity.subclass) == ('pb1', 'p2pb')
    assert connected.identity.model.dist_conv == 0.424 and connected.identity.known_model
    assert connected.config.values['subtype'] == 'p2pb'
    assert wait_for(lambda: client.records.of(Encoders), 2)
    assert client.counters.bad_frames == 0
    assert commands(robot)[:2] == [(C.OPEN, None), (C.PULSE, None)]  # OPEN sent without argument


def test_stale_sips_during_sync_close_wait_and_retry(emulator, clients):
    """A previous client died without CLOSE: the robot still sends SIPs
    (docs/protocols/p2os.md §3.2)."""
    robot = emulator()
    device = robot.start_pty()
    fd = os.open(device, os.O_RDWR | os.O_NOCTTY)
    receiver = p.PacketReceiver()
    for step in range(3):
        os.write(fd, p.encode_command(step))
        time.sleep(0.1)
    os.write(fd, p.encode_command(C.OPEN))
    time.sleep(0.3)
    assert any(b[0] == 0x32 for b in receiver.feed(os.read(fd, 4096)) if isinstance(b, bytes))
    os.close(fd)  # gone without CLOSE: SIPs keep coming
    client = clients(make_client(device, resync_wait=1.0))
    assert wait_for(lambda: client.connected, 10), client.counters.last_error
    sent = commands(robot)
    assert sent.index((C.CLOSE, None)) < len(sent) - 1 - sent[::-1].index((C.OPEN, None))


def test_silent_serial_port_cycles_bauds_and_keeps_retrying(clients):
    silent = PtyEmulatorPort(
        lambda stream, stop: [stream.read(4096, 0.1) for _ in iter(stop.is_set, True)]
    )
    device = silent.start()
    try:
        client = clients(
            make_client(device, baud_cycle=(9600, 38400, 19200), sync_timeout=0.1, sync_attempts=1)
        )
        seen = set()
        assert wait_for(lambda: seen.add(client.baud) or len(seen) == 3, 15)
        assert 'no SYNC handshake' in client.counters.last_error
        assert not client.connected and client.counters.connects == 0
    finally:
        silent.stop()


def test_reconnects_after_the_emulator_is_killed_and_restarted(emulator, clients):
    first = emulator()
    port = first.start_tcp()
    client = clients(make_client(f'tcp://127.0.0.1:{port}'))
    assert wait_for(lambda: client.connected, 5)
    first.stop()
    assert wait_for(lambda: not client.connected, 5)
    second = emulator()
    second.start_tcp(port=port)
    assert wait_for(lambda: client.counters.reconnects == 1 and client.connected, 15)
    count = len(client.records.of(p.StandardSip))
    assert wait_for(lambda: len(client.records.of(p.StandardSip)) > count + 3, 3)


def test_silent_robot_is_detected_by_the_sip_timeout(emulator, clients):
    robot = emulator()
    client = clients(make_client(f'tcp://127.0.0.1:{robot.start_tcp()}', read_timeout=0.5))
    assert wait_for(lambda: client.connected, 5)
    robot.faults.silent = True
    assert wait_for(
        lambda: 'no SIP' in client.counters.last_error or 'no data' in client.counters.last_error,
        5,
    ), client.counters.last_error
    robot.faults.silent = False
    assert wait_for(lambda: client.connected and client.counters.reconnects >= 1, 15)


def test_stop_says_goodbye_in_the_recommended_order(emulator, clients):
    robot = emulator()
    client = clients(make_client(f'tcp://127.0.0.1:{robot.start_tcp()}'))
    assert wait_for(lambda: client.connected, 5)
    client.command(C.ENABLE, 1)
    client.stop()
    assert wait_for(lambda: commands(robot)[-1:] == [(C.CLOSE, None)], 3)
    assert commands(robot)[-4:] == [(C.SONAR, 0), (C.STOP, None), (C.ENABLE, 0), (C.CLOSE, None)]
    assert not robot.robot.enabled


def test_stop_during_start_up_still_closes_the_opened_robot(emulator, clients):
    robot = emulator(config_command=False)  # P2OS < 1.4: the client waits 1 s for CONFIG
    client = clients(make_client(f'tcp://127.0.0.1:{robot.start_tcp()}'))
    assert wait_for(lambda: (C.OPEN, None) in commands(robot), 5, poll=0.001)
    client.stop()  # while it waits for the CONFIGpac
    assert client.counters.connects == 0
    assert wait_for(lambda: commands(robot)[-1:] == [(C.CLOSE, None)], 3), commands(robot)


def test_robot_without_config_command_connects_after_the_wait(emulator, clients):
    robot = emulator(config_command=False)
    client = clients(make_client(f'tcp://127.0.0.1:{robot.start_tcp()}'))
    assert wait_for(lambda: client.connected, 5)
    assert client.records.of(Connected)[0].config is None


def test_a_lost_configpac_is_asked_for_again_not_waited_out(emulator, clients):
    robot = emulator(config_replies_lost=1)  # the first answer to CONFIG dies on the line
    client = clients(make_client(f'tcp://127.0.0.1:{robot.start_tcp()}'))
    assert wait_for(lambda: client.connected, 5)
    assert robot.config_replies_lost == 1
    assert client.records.of(Connected)[0].config is not None  # the robot's config, kept
    assert [n for n, _ in commands(robot)].count(C.CONFIG) == 2  # asked once more


class DamagingLine:
    """A loopback TCP line between the client and the robot that flips one bit in the last byte
    of chunk `damaged` of what the robot sends (the robot answers each SYNC with one write, so
    chunk n is the echo of SYNCn): a noisy line, the robot itself untouched."""

    def __init__(self, robot_port, damaged):
        self.robot_port, self.damaged, self.chunks = robot_port, damaged, 0
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.port = self.listener.getsockname()[1]
        self.sockets = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        client, _ = self.listener.accept()
        robot = socket.create_connection(('127.0.0.1', self.robot_port))
        self.sockets += [client, robot]
        threading.Thread(target=self._pump, args=(client, robot, False), daemon=True).start()
        self._pump(robot, client, True)

    def _pump(self, source, sink, from_robot):
        try:
            while data := source.recv(65536):
                if from_robot:
                    if self.chunks == self.damaged:
                        data = data[:-1] + bytes([data[-1] ^ 0x10])
                    self.chunks += 1
                sink.sendall(data)
        except OSError:
            pass  # close() at the test's end: the line is gone, nothing left to carry

    def close(self):
        for sock in self.sockets:
            sock.close()


@pytest.mark.parametrize('echo', [0, 1, 2])  # 2: the SYNC2 reply, the 2-hour mixed run's 1038 ms
def test_a_damaged_sync_echo_starts_the_handshake_again_not_waited_out(emulator, clients, echo):
    robot = emulator()
    line = DamagingLine(robot.start_tcp(), damaged=echo)
    try:
        # the old wait for a SYNC echo was the whole sync_timeout: 30 s here
        client = clients(make_client(f'tcp://127.0.0.1:{line.port}', sync_timeout=30.0))
        assert wait_for(lambda: client.connected, 10)
        assert line.chunks > echo
        assert client.counters.bad_frames >= 1  # counted, then SYNC0 again
    finally:
        line.close()


def test_corrupted_bytes_are_counted_and_the_stream_goes_on(emulator, clients):
    robot = emulator(corrupt_rate=0.002, seed=7)
    client = clients(make_client(f'tcp://127.0.0.1:{robot.start_tcp()}'))
    assert wait_for(lambda: client.connected, 10)
    assert wait_for(lambda: client.counters.bad_frames >= 1, 20)
    count = len(client.records.of(p.StandardSip))
    assert wait_for(lambda: len(client.records.of(p.StandardSip)) > count + 5, 5)


def test_requests_get_their_replies(emulator, clients):
    robot = emulator(model='amigo')
    client = clients(make_client(f'tcp://127.0.0.1:{robot.start_tcp()}'))
    assert wait_for(lambda: client.connected, 5)
    replies, done = [], threading.Event()

    def resolve(record):
        replies.append(record)
        done.set()

    assert client.aux_write(b'ping') == 'TTY2'
    assert client.request_aux(4, resolve) == 'SERAUX'
    assert done.wait(2) and replies == [AuxBytes(b'ping')]
    done.clear()
    assert client.request_playlist(resolve) == 'PLAYLIST'
    assert done.wait(2) and [n for n, _, _ in replies[-1]][:1] == ['hello']
    done.clear()
    assert client.request_io(resolve) == 'IO'
    assert done.wait(2) and isinstance(replies[-1], p.IoPacket)
    done.clear()
    assert client.request_stream('encoder', resolve) == 'ENCODER'
    assert done.wait(2) and isinstance(replies[-1], Encoders)


def test_robot_terms_become_the_commands_the_robot_expects(emulator, clients):
    robot = emulator()
    accelerations = {
        'linear_acceleration': 300.0,  # mm/s²
        'linear_deceleration': 400.0,
        'angular_acceleration': 1.0,  # rad/s²: 57 deg/s²
        'angular_deceleration': 0.0,  # keeps the robot's
    }
    client = make_client(
        f'tcp://127.0.0.1:{robot.start_tcp()}', accelerations=accelerations, bump_stall=2
    )
    client.startup_state = lambda: {'sonar': False, 'motors': True, 'io': True, 'gripper': False}
    clients(client)
    assert wait_for(lambda: client.connected, 5)
    # connected comes with the robot's first SIP; the start-up commands may still be on their way
    # (under load none had reached the emulator yet: seen once)
    assert wait_for(lambda: len(commands(robot)) >= 10, 5)
    assert commands(robot)[3:] == [  # after OPEN, PULSE, CONFIG, in the ROS p2os order
        (C.SONAR, 0),
        (C.SETA, 300),
        (C.SETA, -400),
        (C.SETRA, 57),
        (C.BUMP_STALL, 2),
        (C.IOREQUEST, 2),
        (C.ENABLE, 1),
    ]
    robot.clear_commands()
    # no stop and no resend of its own in this test: under load a resend of the drive could
    # land between the commands below
    client.motion.timeout = 0
    client.motion.repeat_period = None
    client.drive(250.0, -0.5)
    assert client.set_sonar(True) == 'SONAR'
    assert client.gripper(16, 120) == 'GRIPPERVAL'
    assert client.gripper(1) == 'GRIPPER'
    assert client.digital_output(0x0F, 0x05) == 'DIGOUT'
    assert client.say([10, 20], [60, 70]) == 'SAY'
    assert client.set_bump_stall(3) == 'BUMP_STALL'
    assert client.play_sound(4) == 'SOUND'
    assert client.select_analog_port(2) == 'ADSEL'
    assert client.stop_stream('io') == 'IOREQUEST'
    assert client.aux_flush() == 'GETAUX'
    assert client.reset_odometry() == 'SETO'
    assert client.enable_motors(False) == 'ENABLE'
    assert client.stop_motion() == 'STOP'
    assert client.stop_motion(emergency=True) == 'E_STOP'
    expected = [
        (C.VEL, 250),
        (C.RVEL, -29),  # degrees per second
        (C.SONAR, 1),
        (C.GRIPPER, 16),
        (C.GRIPPERVAL, 120),  # at once after its GRIPPER command
        (C.GRIPPER, 1),
        (C.DIGOUT, 0x0F05),  # mask high, values low
        (C.SAY, bytes([10, 60, 20, 70])),
        (C.BUMP_STALL, 3),
        (C.SOUND, 4),
        (C.ADSEL, 2),
        (C.IOREQUEST, 0),
        (C.GETAUX, 0),
        (C.SETO, None),
        (C.ENABLE, 0),
        (C.STOP, None),
        (C.E_STOP, None),
    ]
    assert wait_for(lambda: len(moves(robot)) >= len(expected), 3), moves(robot)
    assert moves(robot) == expected


def moves(robot):
    return [c for c in commands(robot) if c[0] != C.PULSE]


def test_drive_is_resent_then_stopped_once_when_commands_stop(emulator, clients):
    robot = emulator()
    client = make_client(
        f'tcp://127.0.0.1:{robot.start_tcp()}', motion_timeout=0.6, repeat_period=0.2
    )
    clients(client)
    assert wait_for(lambda: client.connected, 5)
    robot.clear_commands()
    client.drive(100.0, 0.0)
    assert wait_for(lambda: client.motion.timeouts == 1, 3)
    # from the stop on only PULSE keeps the link alive: wait for one, then look
    assert wait_for(lambda: commands(robot)[-1] == (C.PULSE, None), 3)
    vels = [a for n, a in commands(robot) if n == C.VEL]
    assert vels[0] == 100 and vels[-1] == 0 and vels.count(0) == 1
    assert len(vels) >= 3  # sent, then resent at least once before the stop


def test_wheel_mode_drives_with_vel2(emulator, clients):
    robot = emulator()
    client = make_client(f'tcp://127.0.0.1:{robot.start_tcp()}', wheel_mode=True)
    clients(client)
    assert wait_for(lambda: client.connected, 5)
    robot.clear_commands()
    client.drive(400.0, 0.0)  # p2dx: Vel2Divisor 20 mm/s
    assert wait_for(lambda: (C.VEL2, 20 * 256 + 20) in commands(robot), 2), commands(robot)


def test_a_simulator_is_never_sent_its_laser_commands(emulator, clients):
    robot = emulator()
    client = make_client(f'tcp://127.0.0.1:{robot.start_tcp()}', simulator='true')
    client.startup_state = lambda: {'gripper': True, 'encoder': True}
    clients(client)
    assert wait_for(lambda: client.connected, 5)
    assert client.is_simulator
    sent = [n for n, _ in commands(robot)]
    assert C.ENCODER in sent and C.GRIPREQUEST not in sent
    for call in (
        lambda: client.select_analog_port(1),
        lambda: client.gripper(16, 5),  # GRIPPER goes out, its GRIPPERVAL may not
        lambda: client.request_stream('gripper', lambda _: None),
    ):
        with pytest.raises(p2os_client.CommandRefused, match='--no-srisim-laser-compat'):
            call()
    assert wait_for(lambda: (C.GRIPPER, 16) in commands(robot), 2)
    assert not {C.ADSEL, C.GRIPPERVAL, C.GRIPREQUEST} & {n for n, _ in commands(robot)}
    permissive = make_client('tcp://127.0.0.1:1', simulator='true', simulator_laser_compat=False)
    assert permissive.refusal(C.ADSEL) is None


def test_bad_arguments_are_refused_before_anything_is_sent():
    client = make_client('tcp://127.0.0.1:1')  # never started: a send would fail otherwise
    with pytest.raises(ValueError, match='unknown gripper command 9'):
        client.gripper(9)
    with pytest.raises(ValueError, match='equal numbers of durations and tones'):
        client.say([1, 2], [3])
    with pytest.raises(ValueError, match='at most 20'):
        client.say([1] * 21, [1] * 21)
    with pytest.raises(ValueError, match='bump_stall takes 0 off, 1 front'):
        client.set_bump_stall(7)
    with pytest.raises(ValueError, match='simulator must be'):
        Settings(simulator='maybe')
    with pytest.raises(ValueError, match='bump_stall must be'):
        Settings(bump_stall=9)


def test_settings_reject_bad_addresses_and_models():
    with pytest.raises(ValueError, match='expected tcp://host:port'):
        Settings(port='tcp://localhost')
    with pytest.raises(ValueError, match='unknown robot model'):
        Settings(model='r2d2')


def test_a_simulator_gets_the_laser_and_simstat_asked_for_and_scans_come_whole(emulator, clients):
    from p2os_driver.world import default_world_path

    robot = emulator(model='p3dx', world=default_world_path(), noise=False)
    client = clients(
        make_client(f'tcp://127.0.0.1:{robot.start_tcp()}', laser_scan=(-45, 45, 0.5))
    )
    assert wait_for(lambda: client.connected, 5)
    assert client.is_simulator and client.laser_wanted  # CONFIG serial "SIM"
    assert wait_for(lambda: client.records.of(p.LaserPacket) and client.records.of(p.SimStat), 5)
    sent = commands(robot)
    assert (C.SIM_STAT, 2) in sent
    assert [a for n, a in sent if n in (p.LASER_START, p.LASER_END, p.LASER_RESOLUTION)] == [
        -45,
        45,
        50,
    ]
    assert (p.LASER_ENABLE, 2) in sent
    scan = client.records.of(p.LaserPacket)[-1]
    assert scan.total == len(scan.ranges) == 181 and len(scan.reflectance) == 181
    stat = client.records.of(p.SimStat)[-1]
    assert (stat.true_x, stat.true_y) == (-8500, 0)
    client.set_true_pose(-5000, 300, 45)
    assert wait_for(lambda: client.records.of(p.SimStat)[-1].true_x == -5000, 5)
    plain = make_client('tcp://127.0.0.1:1', laser='false', simulator='true')
    assert not plain.laser_wanted


def test_bad_laser_packets_are_counted_and_their_scan_dropped():
    client = make_client('tcp://127.0.0.1:1')
    bodies = p.encode_laser_packets(p.PacketType.LASER_EXTENDED, [1000] * 70, [0] * 70)
    bad_count = bytearray(bodies[1])
    bad_count[5] = 33  # n: 33 readings announced, over the 32 a packet holds
    for body in (bodies[0], bytes(bad_count), bodies[2]):
        client._dispatch(body)
    assert client.counters.bad_frames == 1
    assert client.laser_assembler.dropped == 1 and not client.records.of(p.LaserPacket)
    for body in (bodies[0], bodies[2], bodies[1]):  # out of order
        client._dispatch(body)
    assert client.laser_assembler.dropped == 2 and not client.records.of(p.LaserPacket)
    for body in bodies:
        client._dispatch(body)
    assert len(client.records.of(p.LaserPacket)) == 1
