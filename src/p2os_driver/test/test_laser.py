"""The simulated laser and SIMSTAT (docs/protocols/p2os.md §4.3, §4.6): codec round trips, scan
geometry, and the emulator answering the commands over a real TCP socket."""

import math
import struct

import numpy as np
import pytest
from p2os_raw_client import RawClient

from legacy_robot_common.errors import MalformedFrame
from p2os_driver import protocol as p
from p2os_driver.emulator import EmulatorOptions, P2osEmulator
from p2os_driver.simulation import SimLaser
from p2os_driver.world import default_world_path

C = p.Command
T = p.PacketType


@pytest.mark.parametrize('kind', [T.LASER_POSE, T.LASER_EXTENDED])
def test_laser_packets_round_trip_and_split_in_32s(kind):
    ranges = list(range(1000, 1181))
    reflect = [i % 40 for i in range(181)]
    bodies = p.encode_laser_packets(kind, ranges, reflect, pose=(-12, 3400, -90), flags=1)
    assert len(bodies) == 6  # 5 × 32 + 21
    full = [len(p.build_packet(b)) for b in bodies]
    assert full[0] == (81 if kind == T.LASER_POSE else 173)  # §4.3 sizes
    packets = [p.decode_laser(b) for b in bodies]
    assert [q.first for q in packets] == [0, 32, 64, 96, 128, 160]
    assert all(q.total == 181 for q in packets) and packets[-1].complete
    assembler = p.LaserAssembler()
    scans = [assembler.add(q) for q in packets]
    assert scans[:5] == [None] * 5
    assert scans[5].ranges == ranges
    if kind == T.LASER_EXTENDED:
        assert scans[5].reflectance == reflect
        assert packets[0].flags == 1 and packets[1].flags == 0
    else:
        assert packets[0].pose == (-12, 3400, -90)


def test_laser_packets_from_arrays_clamped_and_byte_for_byte():
    """NumPy arrays (what the simulation casts) encode as the same numbers in lists; ranges
    and reflectance outside their fields are clamped; each 0x61 reading is the range, the
    reflectance and two zero bytes."""
    ranges = np.array([-5, 0, 1234, 70000, 65535])
    reflect = np.array([300, 2, -1, 0, 255])
    bodies = p.encode_laser_packets(T.LASER_EXTENDED, ranges, reflect, flags=1)
    assert bodies == p.encode_laser_packets(
        T.LASER_EXTENDED, ranges.tolist(), reflect.tolist(), flags=1
    )
    readings = bodies[0][6:-2]
    assert [struct.unpack_from('<HBBB', readings, 5 * i) for i in range(5)] == [
        (0, 255, 0, 0),
        (0, 2, 0, 0),
        (1234, 0, 0, 0),
        (65535, 0, 0, 0),
        (65535, 255, 0, 0),
    ]
    assert bodies[0][-2:] == bytes([0, 1])
    with pytest.raises(ValueError):
        p.encode_laser_packets(T.LASER_EXTENDED, [1, 2, 3], [0, 0])


def test_laser_packet_bad_counts_and_out_of_order_first():
    body = p.encode_laser_packets(T.LASER_EXTENDED, [1000] * 10)[0]
    with pytest.raises(MalformedFrame, match='announces 10 readings'):
        p.decode_laser(body[:20])
    too_many = bytearray(p.encode_laser_packets(T.LASER_POSE, [1] * 40)[0])
    too_many[11] = 33  # n > 32
    with pytest.raises(MalformedFrame, match='33 readings'):
        p.decode_laser(bytes(too_many))
    past_total = bytearray(p.encode_laser_packets(T.LASER_POSE, [1] * 10)[0])
    past_total[7:9] = struct.pack('<H', 5)  # total 5 < 10 readings
    with pytest.raises(MalformedFrame):
        p.decode_laser(bytes(past_total))
    with pytest.raises(MalformedFrame):
        p.decode_laser(b'\x61\x01')
    # a packet out of order drops the partial scan; the next first = 0 starts afresh
    packets = [p.decode_laser(b) for b in p.encode_laser_packets(T.LASER_POSE, [7] * 70)]
    assembler = p.LaserAssembler()
    assert assembler.add(packets[0]) is None
    assert assembler.add(packets[2]) is None  # 32 skipped
    assert assembler.dropped == 1
    assert assembler.add(packets[1]) is None  # no scan in progress: ignored
    assert assembler.add(packets[0]) is None
    assert assembler.add(packets[0]) is None  # a new start drops the half scan
    assert assembler.dropped == 2
    assert assembler.add(packets[1]) is None
    assert len(assembler.add(packets[2]).ranges) == 70


def test_simstat_and_set_pose_round_trip():
    stat = p.SimStat(flags=4, true_x=-1234, true_y=5678, true_th=-45, dop=-1, odom_error=(1, 2, 3))
    body = p.encode_simstat(stat)
    assert len(body) == 1 + 56  # two empty strings and 54 bytes of fields (§4.6)
    assert p.decode_simstat(body) == stat
    with pytest.raises(MalformedFrame):
        p.decode_simstat(body[:30])
    packet = p.encode_sim_set_pose(-1500, 2000, 90)
    assert p.decode_sim_set_pose(packet[3:-2]) == (-1500, 2000, 90)
    with pytest.raises(MalformedFrame):
        p.decode_sim_set_pose(packet[3:10])


def test_stage_spacing_and_ideal_spacing():
    stage = SimLaser().angles()
    assert len(stage) == 181
    assert math.degrees(stage[0]) == pytest.approx(-90)
    assert math.degrees(stage[1] - stage[0]) == pytest.approx(180 / 181)
    assert math.degrees(stage[-1]) == pytest.approx(89.0055, abs=1e-4)
    ideal = SimLaser(ideal_spacing=True).angles()
    assert math.degrees(ideal[-1]) == pytest.approx(90) and len(ideal) == 181
    reverse = SimLaser(start=90, end=-90).angles()
    assert reverse[0] == pytest.approx(stage[-1])  # reverse_scan: ray k in slot samples-1-k
    half = SimLaser(start=-45, end=45, increment=0.5).angles()
    assert len(half) == 181 and math.degrees(half[0]) == pytest.approx(-45)


@pytest.fixture
def office():
    emulator = P2osEmulator(
        EmulatorOptions(
            model='p3dx', world=default_world_path(), noise=False, laser_mount=(0, 0, 0)
        )
    )
    port = emulator.start_tcp()
    client = RawClient(port)
    client.sync()
    yield emulator, client
    client.sock.close()
    emulator.stop()


def _scan(client, kind):
    """The next whole scan, from its first packet."""
    assembler = p.LaserAssembler()
    for _ in range(100):
        scan = assembler.add(p.decode_laser(client.packet(kind=kind)))
        if scan is not None and scan.total == len(scan.ranges):
            return scan
    raise AssertionError('no whole scan')


def test_emulator_laser_commands_packets_and_geometry(office):
    emulator, client = office
    # ARIA's sequence (§4.2): start -90, end 90, increment 1°, enable 2 (0x61)
    emulator.options.laser_compat = True  # as AMRISim by default
    client.send(C.GRIPPERVAL, -90)
    client.send(C.GRIPREQUEST, 90)
    client.send(C.OLD_LRF_CFG_INC, 100)
    client.send(C.ADSEL, 2)
    scan = _scan(client, T.LASER_EXTENDED)
    assert scan.total == 181
    # Home (-8500, 0) in the corridor (walls at y = ±1000, the west wall at x = -10000)
    angles = SimLaser().angles()
    expected = emulator.world.cast(-8500, 0, angles, 32767)[0].astype(int)
    assert scan.ranges == pytest.approx(list(expected), abs=1)
    assert scan.ranges[0] == pytest.approx(1000, abs=1)  # -90°: the south corridor wall
    assert scan.ranges[90] == pytest.approx(18480, abs=1)  # the reflector on the east wall
    assert scan.reflectance[90] == 32 and scan.reflectance[0] == 0
    # 230-233, 0x60 with the odometric pose
    client.send(p.LASER_START, -45)
    client.send(p.LASER_END, 45)
    client.send(p.LASER_RESOLUTION, 50)
    client.send(p.LASER_ENABLE, 1)
    scan = _scan(client, T.LASER_POSE)
    assert scan.total == 181 and scan.pose == (0, 0, 0)
    client.send(p.LASER_ENABLE, 0)


def test_emulator_simstat_set_pose_and_bad_commands(office):
    emulator, client = office
    client.send(C.SIM_STAT, 1)
    stat = p.decode_simstat(client.packet(kind=T.SIMSTAT))
    assert (stat.true_x, stat.true_y, stat.true_th) == (-8500, 0, 0)
    client.sock.sendall(p.encode_sim_set_pose(-5000, 200, 90))
    client.send(C.SIM_STAT, 2)
    for _ in range(20):
        stat = p.decode_simstat(client.packet(kind=T.SIMSTAT))
        if stat.true_x == -5000:
            break
    assert (stat.true_x, stat.true_y, stat.true_th) == (-5000, 200, 90)
    sip = p.decode_sip(client.packet(kind=T.SIP_STOPPED))
    assert (sip.x, sip.y) == (0, 0)  # odometry unchanged
    # bad: a pose in a wall, a short SIM_SET_POSE, an impossible enable value, resolution 0
    client.sock.sendall(p.encode_sim_set_pose(-10000, 0, 0))
    client.sock.sendall(p.build_packet(bytes([C.SIM_SET_POSE, 0x3B, 1, 2])))
    client.send(p.LASER_ENABLE, 7)
    client.send(p.LASER_RESOLUTION, 0)
    for _ in range(20):
        if emulator.bad_sim_commands >= 4:
            break
        client.packet()
    assert emulator.bad_sim_commands == 4
    client.pending.clear()
    stat = p.decode_simstat(client.packet(kind=T.SIMSTAT))
    assert stat.true_x == -5000  # still where it was, and still answering
    with emulator.robot.lock:
        assert emulator.robot.laser.packet == 0


def test_config_says_sim_with_a_world(office):
    _, client = office
    client.send(C.CONFIG)
    config = p.decode_config(client.packet(kind=T.CONFIG))
    assert config.values['serial_number'] == 'SIM'


def test_plain_robot_ignores_simulator_commands():
    emulator = P2osEmulator(EmulatorOptions())
    client = RawClient(emulator.start_tcp())
    try:
        client.sync()
        client.send(p.LASER_ENABLE, 2)
        client.send(C.SIM_STAT, 2)
        for _ in range(3):
            client.packet(kind=T.SIP_STOPPED)
        assert all(b[0] in (T.SIP_STOPPED, T.SIP_MOVING) for b in client.pending)
        assert emulator.laser_commands == emulator.sim_laser_commands == 0
    finally:
        client.sock.close()
        emulator.stop()


def test_scan_speed_is_bounded_by_the_vectorised_cast():
    """A 100,000-point map loads and casts a scan (no per-ray Python loop: a smoke check)."""
    from p2os_driver.world import ArMap, World

    rng = np.random.default_rng(1)
    armap = ArMap()
    armap.points = rng.integers(-20000, 20000, size=(100_000, 2))
    w = World.from_armap(armap)
    ranges = w.cast(0, 0, np.radians(np.arange(-90, 91)), 32767)[0]
    assert len(ranges) == 181 and (ranges < 32767).all()
