"""The clients against the emulator over real TCP on loopback (ports chosen by the OS)."""

import math
import socket
import threading
import time

import pytest
from helpers import wait_for

from ipaq_driver import protocol as p
from ipaq_driver.client import CommandFailed, ControlClient, Settings, StreamClient
from ipaq_driver.emulator import EmulatorOptions, IpaqEmulator
from ipaq_driver.units import Units

L = p.Letter
FREE_PORTS = dict(control_port=0, frame_dump_port=0, tracking_port=0)
RED = (180, 240, 16, 90, 16, 110)  # the ball's colour with margin


class Robot:
    """An emulator plus the three clients pointed at it; records what the clients deliver."""

    def __init__(self, **options):
        self.emulator = IpaqEmulator(EmulatorOptions(**{**FREE_PORTS, **options})).start()
        self.records = []
        self.clients = []

    def settings(self, **overrides):
        ports = self.emulator.ports
        return Settings(
            host='127.0.0.1',
            control_port=ports['control_port'],
            stream_ports=(ports['frame_dump_port'], ports['tracking_port']),
            **overrides,
        )

    def connect(self, streams=True, **overrides):
        settings = self.settings(**overrides)
        self.control = ControlClient(settings)
        self.streams = (
            [StreamClient(settings, port) for port in settings.stream_ports] if streams else []
        )
        for client in [self.control, *self.streams]:
            client.on_record = self.records.append
            client.start()
            self.clients.append(client)
        assert wait_for(lambda: all(c.connected for c in self.clients), 5)
        return self.control

    def ask(self, packet, timeout=3.0):
        done = threading.Event()
        result = []
        self.control.request(packet, lambda r: (result.append(r), done.set()))
        assert done.wait(timeout), 'no resolution'
        return result[0]

    def of_type(self, kind):
        return [r for r in list(self.records) if isinstance(r, kind)]

    def close(self):
        for client in self.clients:
            client.stop()
        self.emulator.stop()


@pytest.fixture
def robot():
    robots = []

    def make(**options):
        robots.append(Robot(**options))
        return robots[-1]

    yield make
    for r in robots:
        r.close()


def test_polls_deliver_range_wheel_power_and_pose(robot):
    r = robot()
    r.connect(streams=False, poll_period=0.05)
    assert wait_for(lambda: len(r.of_type(p.FullResponse)) >= 10, 3)
    polls = [c for c in r.emulator.received_commands() if c[1] is L.SET_PARAMETERS]
    assert all(fields[5] == 0 for _, _, fields in polls)  # a poll changes nothing


def test_drive_then_motion_timeout_stops(robot):
    units = Units()
    r = robot()
    control = r.connect(
        streams=False, vel_timeout=20, stop_velocity=units.velocity_to_raw(0), motion_timeout=0.4
    )
    vel, direction = units.twist_to_drive(0.5, 0.0)
    for _ in range(10):
        control.set_drive(vel, direction)
        time.sleep(0.05)
    assert wait_for(lambda: r.emulator.trike.v > 0.3, 2)
    sent = r.emulator.received_commands()
    drives = [(t, f) for t, letter, f in sent if letter is L.SET_PARAMETERS and f[1] == vel]
    assert drives and drives[0][1][5] == p.MaskBits().mask('vel_timeout', 'vel', 'direction')
    assert wait_for(lambda: r.emulator.trike.v_setpoint == 0.0, 2)
    stop = [
        t
        for t, letter, f in r.emulator.received_commands()
        if letter is L.SET_PARAMETERS and f[1] == 0 and f[5] & 2
    ]
    assert stop and 0.35 < stop[0] - drives[-1][0] < 0.8
    assert control.motion.timeouts == 1
    x, y, _ = r.emulator.trike.integrated
    assert x > 0.05


def test_robot_side_velocity_timeout_stops_a_robot_whose_driver_went_quiet():
    units = Units()
    emulator = IpaqEmulator(EmulatorOptions(**FREE_PORTS)).start()
    try:
        drive = p.SetParameters(
            vel_timeout=3,
            vel=units.velocity_to_raw(0.4),  # 0.3 s
            mask=p.MaskBits().mask('vel_timeout', 'vel'),
        )
        (reply,) = _raw_ask(emulator.ports['control_port'], p.encode_set_parameters(drive))
        assert reply.status == 0
        started = time.monotonic()
        assert emulator.trike.v_setpoint == pytest.approx(0.4)
        assert wait_for(lambda: emulator.trike.v_setpoint == 0, 1.5)
        assert 0.25 < time.monotonic() - started < 0.6
    finally:
        emulator.stop()


def test_stop_says_goodbye_with_zero_velocity(robot):
    units = Units()
    r = robot()
    control = r.connect(streams=False, stop_velocity=units.velocity_to_raw(0), motion_timeout=0)
    control.set_drive(units.velocity_to_raw(0.4), units.steering_to_raw(0.0))
    assert wait_for(lambda: r.emulator.trike.v_setpoint > 0, 1)
    control.stop()
    assert wait_for(lambda: r.emulator.trike.v_setpoint == 0, 1)
    # the emulator parses N just after P: wait for it rather than race it
    assert wait_for(lambda: r.emulator.received_commands()[-1][1] is L.STOP_TRACKING, 1)
    assert r.emulator.received_commands()[-2][1] is L.SET_PARAMETERS


def test_pass_through_replies_and_error_statuses(robot):
    r = robot()
    r.connect(streams=False)
    reply = r.ask(p.encode_pass_through(L.CMUCAM, 'GV'))
    assert reply == p.StringResponse(0, b'ACK\rCMUcam v1.12 \r')
    assert r.ask(p.encode_pass_through(L.CMUCAM, 'XX 1')).data == b'NCK\r'
    overflow = r.ask(p.encode_pass_through(L.CMUCAM, 'TC 1 2 3 4 5 6'))
    assert isinstance(overflow, CommandFailed) and overflow.status == p.Status.CAMERA_OVERFLOW
    ir = r.ask(p.encode_pass_through(L.BRAINSTEM, bytes([2, 2, 30, 0x80])))
    assert ir.data[:4] == bytes([2, 3, 4, 0])
    r.ask(p.encode_pass_through(L.BRAINSTEM, bytes([2, 3, 33, 1, 200])))  # pan servo
    assert wait_for(lambda: r.emulator.trike.pan == 200, 2)
    silent = r.ask(p.encode_pass_through(L.BRAINSTEM, bytes([6, 2, 30, 0])))
    assert isinstance(silent, CommandFailed) and silent.status == p.Status.BRAINSTEM_SILENT
    assert 'BrainStem failed to respond' in str(silent)


def test_fault_options_give_camera_timeout_and_silent_brainstem(robot):
    r = robot(camera_timeout=True, brainstem_silent=True)
    r.connect(streams=False)
    for packet, status in (
        (p.encode_color_tracking(0, RED), p.Status.CAMERA_TIMEOUT),
        (p.encode_command(L.DUMP_FRAME), p.Status.CAMERA_TIMEOUT),
        (p.encode_pass_through(L.BRAINSTEM, bytes([2, 2, 30, 0])), p.Status.BRAINSTEM_SILENT),
    ):
        result = r.ask(packet)
        assert isinstance(result, CommandFailed) and result.status == status


@pytest.mark.parametrize('swap', [False, True], ids=['port-table', 'packet-descriptions'])
def test_tracking_and_dumps_are_found_on_either_port_assignment(robot, swap):
    r = robot(swap_stream_ports=swap, ball_orbit=0.0)
    r.connect()
    assert r.ask(p.encode_color_tracking(0, RED)) == p.MiniResponse(0)
    assert wait_for(lambda: len(r.of_type(p.TrackingPacket)) >= 5, 3)
    assert r.ask(p.encode_command(L.DUMP_FRAME)) == p.MiniResponse(0)
    assert wait_for(lambda: r.of_type(p.FrameDump), 3)
    dump_client, tracking_client = r.streams if not swap else r.streams[::-1]
    assert set(dump_client.carries) == {'FrameDump'}
    assert set(tracking_client.carries) == {'TrackingPacket'}
    frame = r.of_type(p.FrameDump)[0].pixels
    assert frame.shape == (143, 80, 3)
    red = (frame[..., 0] > 180) & (frame[..., 1] < 90)
    assert red.sum() > 20  # the ball is in view
    # the camera follows: the ball ends up near the middle of the image
    assert wait_for(lambda: abs(r.of_type(p.TrackingPacket)[-1].x - 40) <= 4, 5)
    last = r.of_type(p.TrackingPacket)[-1]
    assert last.confidence > 100 and last.pixels > 0


def test_tracking_without_moving_the_camera_then_stop(robot):
    r = robot()
    r.connect()
    r.ask(p.encode_color_tracking(3, RED))
    assert wait_for(lambda: len(r.of_type(p.TrackingPacket)) >= 5, 3)
    assert {t.pan for t in r.of_type(p.TrackingPacket)} == {128}
    r.ask(p.encode_command(L.STOP_TRACKING))
    time.sleep(0.2)
    count = len(r.of_type(p.TrackingPacket))
    time.sleep(0.4)
    assert len(r.of_type(p.TrackingPacket)) == count


def test_window_tracking_and_line_mode_bitmaps(robot):
    r = robot(ball_orbit=0.0)
    r.connect()
    r.ask(p.encode_color_tracking(0, RED))  # centre the ball first
    assert wait_for(
        lambda: (
            r.of_type(p.TrackingPacket)
            and abs(r.of_type(p.TrackingPacket)[-1].x - 40) <= 2
            and abs(r.of_type(p.TrackingPacket)[-1].y - 72) <= 6
        ),
        5,
    )
    assert r.ask(p.encode_pass_through(L.CMUCAM, 'LM 1')).data == b'ACK\r'
    assert r.ask(p.encode_window_tracking(0)) == p.MiniResponse(0)
    r.records.clear()
    assert wait_for(lambda: len(r.of_type(p.Bitmap)) >= 3, 3)
    bitmap = r.of_type(p.Bitmap)[-1].pixels
    assert bitmap.shape == (48, 80) and 0 < bitmap.sum() < 80 * 48 / 4
    kinds = [type(x).__name__ for x in r.records if isinstance(x, (p.Bitmap, p.TrackingPacket))]
    assert 'Bitmap,TrackingPacket,Bitmap,TrackingPacket' in ','.join(kinds)


def test_safety_distance_stops_before_the_wall(robot):
    units = Units()
    r = robot(room_width=2.0, ball_orbit=0.0)
    r.emulator.trike.ball.centre = (0.0, 5.0)  # out of the way
    control = r.connect(streams=False)
    threshold = units.range_to_raw(0.3)
    assert r.ask(p.encode_safety(threshold)) == p.MiniResponse(0)
    for _ in range(100):  # 0.6 m to go at 0.3 m/s
        control.set_drive(units.velocity_to_raw(0.3), units.steering_to_raw(0.0))
        time.sleep(0.05)
        if r.emulator.trike.safety_stops:
            break
    assert r.emulator.trike.safety_stops > 0
    assert r.emulator.trike.v == 0.0
    assert 0.2 < r.emulator.trike.range_ahead() < 0.35


def test_set_integration_values_by_mask(robot):
    units = Units()
    r = robot()
    r.connect(streams=False)
    x, y, theta = units.pose_to_raw(1.5, -2.0, 0.5)
    assert r.ask(p.encode_set_integration(x, y, theta, 0b101)) == p.MiniResponse(0)
    ix, iy, ith = r.emulator.trike.integrated
    assert ix == pytest.approx(1.5) and iy == 0.0 and ith == pytest.approx(0.5)


@pytest.mark.parametrize(
    'variant', [dict(framed_responses=False), dict(checksum_over_stuffed=True)]
)
def test_response_variants_work_when_both_sides_agree(robot, variant):
    r = robot(**variant)
    r.connect(streams=False, **variant)
    assert r.ask(
        p.encode_pass_through(L.CMUCAM, 'GV', variant.get('checksum_over_stuffed', False))
    ).data.startswith(b'ACK')
    assert wait_for(lambda: len(r.of_type(p.FullResponse)) >= 3, 3)
    assert r.control.counters.bad_frames == 0


def test_commands_in_robot_terms_are_encoded_with_the_links_options(robot):
    """Every command the node asks for goes out with the link's checksum rule and is answered
    (the pan servo to 255 needs a stuffed byte: there the two checksum rules differ)."""
    r = robot(checksum_over_stuffed=True, ball_orbit=0.0)
    control = r.connect(streams=False, checksum_over_stuffed=True)
    results = []

    def ask(call):
        done = threading.Event()
        call(lambda reply: (results.append(reply), done.set()))
        assert done.wait(3), 'no resolution'
        return results[-1]

    units = Units()
    assert ask(lambda resolve: control.cmucam('GV\r', resolve)).data.startswith(b'ACK')
    ask(lambda resolve: control.brainstem([2, 3, 33, 1, 255], resolve))  # pan servo
    assert wait_for(lambda: r.emulator.trike.pan == 255, 2)
    assert ask(lambda resolve: control.start_color_tracking(3, RED, resolve)) == p.MiniResponse(0)
    assert ask(lambda resolve: control.start_window_tracking(3, resolve)) == p.MiniResponse(0)
    assert ask(control.stop_tracking) == p.MiniResponse(0)
    assert ask(control.dump_frame) == p.MiniResponse(0)
    x, y, theta = units.pose_to_raw(1.5, -2.0, 0.5)
    assert ask(lambda resolve: control.set_pose(x, y, theta, 0b001, resolve)) == p.MiniResponse(0)
    assert r.emulator.trike.integrated[0] == pytest.approx(1.5)
    raw = units.range_to_raw(0.3)
    assert ask(lambda resolve: control.set_safety_distance(raw, resolve)) == p.MiniResponse(0)
    letters = [letter for _, letter, _ in r.emulator.received_commands()]
    for letter in (L.CMUCAM, L.BRAINSTEM, L.COLOR_TRACK_NO_MOVE, L.WINDOW_TRACK_NO_MOVE):
        assert letter in letters
    for letter in (L.STOP_TRACKING, L.DUMP_FRAME, L.SET_INTEGRATION, L.SAFETY):
        assert letter in letters
    assert control.counters.bad_frames == 0 and control.failed_commands == 0


def test_a_checksum_variant_mismatch_is_counted_not_fatal(robot):
    r = robot(checksum_over_stuffed=True)
    units = Units()
    control = r.connect(streams=False, poll_period=0.05)
    control.set_drive(units.velocity_to_raw(-1.27), units.steering_to_raw(0))  # vel 0x81
    control.set_camera(pan=255)  # a 255 field: the two checksum rules now differ
    assert wait_for(lambda: control.counters.bad_frames + control.failed_commands > 0, 3)
    assert control.connected


def test_corrupted_responses_are_counted_and_the_link_recovers(robot):
    r = robot(corrupt_rate=0.02, seed=3)
    control = r.connect(streams=False, poll_period=0.02, response_timeout=0.3, missed_responses=50)
    assert wait_for(lambda: len(r.of_type(p.FullResponse)) >= 50, 10)
    assert control.counters.bad_frames + control.timeouts + control.stray_responses > 0


def test_reconnect_after_the_emulator_dies(robot):
    r = robot()
    control = r.connect()
    ports = r.emulator.ports
    r.emulator.stop()
    assert wait_for(lambda: not control.connected, 5)
    again = IpaqEmulator(EmulatorOptions(**ports)).start()
    try:
        assert wait_for(lambda: all(c.connected for c in r.clients), 15)
        assert control.counters.reconnects >= 1
        before = len(r.of_type(p.FullResponse))
        assert wait_for(lambda: len(r.of_type(p.FullResponse)) > before + 3, 3)
    finally:
        again.stop()


def test_unanswered_commands_time_out_then_the_link_reconnects(robot):
    r = robot()
    control = r.connect(streams=False, response_timeout=0.3, missed_responses=2)
    r.emulator.faults.silent = True
    result = r.ask(p.encode_command(L.STOP_TRACKING), timeout=3)
    assert isinstance(result, TimeoutError)
    assert wait_for(lambda: control.counters.reconnects >= 1 or not control.connected, 5)
    r.emulator.faults.silent = False
    assert wait_for(lambda: control.counters.reconnects >= 1 and control.connected, 10)


def test_a_late_reply_is_not_taken_for_the_next_commands(robot):
    """A reply that comes after its command timed out belongs to that command (the iPaq
    answers in order), not to the command sent next."""
    r = robot(camera_timeout=True)  # a frame request is answered CAMERA_TIMEOUT
    control = r.connect(streams=False, poll_period=0.2, response_timeout=1.0)
    assert wait_for(lambda: r.of_type(p.FullResponse), 5)  # the session's first poll
    results, first_done = [], threading.Event()
    with r.emulator.trike.lock:  # the emulator cannot answer the safety command yet
        control.request(p.encode_safety(20), lambda x: (results.append(x), first_done.set()))
        control.request(p.encode_command(L.DUMP_FRAME), results.append)
        assert first_done.wait(5)
    assert wait_for(lambda: len(results) == 2, 5)
    assert isinstance(results[0], TimeoutError)
    assert isinstance(results[1], CommandFailed)
    assert results[1].status == p.Status.CAMERA_TIMEOUT
    assert (control.late_responses, control.stray_responses) == (1, 0)


def test_requests_while_disconnected_fail_at_once():
    control = ControlClient(Settings(host='127.0.0.1', control_port=1))
    results = []
    control.request(p.encode_command(L.STOP_TRACKING), results.append)
    assert isinstance(results[0], ConnectionError)


def _raw_ask(port, data, expect=1):
    with socket.create_connection(('127.0.0.1', port), timeout=3) as sock:
        sock.sendall(data)
        receiver, items = p.FrameReceiver(), []
        while len(items) < expect:
            items += receiver.feed(sock.recv(4096))
        return [p.decode_response(b) for b in items]


def test_emulator_answers_bad_checksum_and_unknown_type():
    emulator = IpaqEmulator(EmulatorOptions(**FREE_PORTS)).start()
    try:
        port = emulator.ports['control_port']
        assert _raw_ask(port, b'\xff\x38N\x00\xff\x37') == [p.MiniResponse(p.Status.BAD_CHECKSUM)]
        assert _raw_ask(port, p.frame(p.with_checksum(b'Q'))) == [
            p.MiniResponse(p.Status.UNKNOWN_TYPE)
        ]
        # junk outside packets gets no answer; the next packet does
        assert _raw_ask(port, b'junk' + p.encode_command(L.STOP_TRACKING)) == [p.MiniResponse(0)]
        assert emulator.bad_packets == 3  # two refused packets, one run of junk
    finally:
        emulator.stop()


def test_terminate_code_ends_the_control_program():
    emulator = IpaqEmulator(EmulatorOptions(**FREE_PORTS)).start()
    with socket.create_connection(('127.0.0.1', emulator.ports['control_port'])) as sock:
        sock.sendall(p.TERMINATE)
        assert emulator.terminated.wait(3)
    assert wait_for(lambda: _refused(emulator.ports['control_port']), 3)


def _refused(port):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=0.5).close()
        return False
    except OSError:
        return True


def test_twist_to_drive_turns_the_tricycle_as_asked():
    units = Units()
    vel, direction = units.twist_to_drive(0.5, 0.5)
    v, steer = units.raw_to_velocity(vel), units.raw_to_steering(direction)
    assert v == pytest.approx(0.5)
    assert v * math.tan(steer) / units.wheelbase == pytest.approx(0.5, rel=0.05)


def test_the_sims_ball_is_in_view_whenever_tracking_starts():
    """bringup ipaq --sim: tracking started 8 s (or any time) after the start finds the ball,
    the camera still centred; the old scene's ball circled behind the robot after about 10 s
    and a late start saw confidence 0 throughout."""
    from ipaq_driver.plugin import DEMO_SCENE, RED_BALL
    from ipaq_driver.simulation import Ball, Trike, track_colour

    bounds = tuple(RED_BALL[k] for k in ('r_min', 'r_max', 'g_min', 'g_max', 'b_min', 'b_max'))
    trike = Trike(
        ball=Ball(
            centre=DEMO_SCENE['ball_centre'],
            orbit=DEMO_SCENE['ball_orbit'],
            speed=DEMO_SCENE['ball_speed'],
        )
    )
    orbit_seconds = 2 * math.pi * DEMO_SCENE['ball_orbit'] / DEMO_SCENE['ball_speed']
    for step in range(int(orbit_seconds * 4) + 1):  # a whole orbit, every 0.25 s
        _, blob = track_colour(trike.render(), bounds)
        assert blob.confidence > 0 and blob.pixels > 0, f'ball lost at {step / 4:.2f} s'
        trike.step(0.25, 0.0)


def test_the_sims_camera_tilts_the_same_way_for_the_floor_and_the_ball():
    """Looking up (positive tilt) moves the ball and the horizon down the image alike."""
    import numpy as np

    from ipaq_driver.plugin import RED_BALL
    from ipaq_driver.simulation import Ball, Trike, track_colour

    bounds = tuple(RED_BALL[k] for k in ('r_min', 'r_max', 'g_min', 'g_max', 'b_min', 'b_max'))

    def view(tilt_raw):
        trike = Trike(ball=Ball(orbit=0.0))
        trike.tilt = tilt_raw
        image = trike.render()
        sky = np.all(image == [70, 90, 120], axis=2).all(axis=1)  # rows of sky only
        return int(sky.sum()), track_colour(image, bounds)[1].y

    level_sky, level_ball = view(128)
    up_sky, up_ball = view(140)
    assert up_sky > level_sky and up_ball > level_ball
