"""Replaying recordings as the robot, over real sockets and a real pseudo-terminal: the
stream timeline and its gates, replies matched to requests, the recording's end."""

import os
import socket

import pytest
from helpers import wait_for

from legacy_robot_common.recording import Recorder, read_recording
from legacy_robot_common.replay import GATE_TIMEOUT, RecordingReplay, ReplayLink, ReplayOptions


def make_recording(path, connections, link='robot', parameters=None):
    """connections: [(closed detail, [('from' | 'to', bytes), ...]), ...] on one link."""
    recorder = Recorder(path, 'test_driver', '0', parameters or {})
    tap = recorder.tap(link)
    recorder.start()
    for closed, chunks in connections:
        tap.opened('robot')
        for direction, data in chunks:
            (tap.received if direction == 'from' else tap.sent)(data)
        if closed is not None:
            tap.closed(closed)
    recorder.stop()
    return read_recording(path)


def serve(recording, **spec):
    options = ReplayOptions(speed=0, loop=spec.pop('loop', False))
    return RecordingReplay(recording, [ReplayLink('robot', 'port', **spec)], options).start()


def connect(replay):
    sock = socket.create_connection(('127.0.0.1', replay.servers['robot'].address), timeout=5)
    sock.settimeout(5)
    return sock


def receive(sock, count):
    data = b''
    while len(data) < count:
        part = sock.recv(count - len(data))
        if not part:
            break
        data += part
    return data


def nothing_arrives(sock, within=0.3):
    sock.settimeout(within)
    try:
        sock.recv(100)  # data, or the end of the stream
        return False
    except socket.timeout:
        return True
    finally:
        sock.settimeout(5)


def test_stream_holds_at_a_gate_until_the_driver_sends_that_request(tmp_path):
    recording = make_recording(
        tmp_path / 'r.mcap',
        [
            (
                None,
                [
                    ('from', b'HELLO'),
                    ('to', b'SYNC'),
                    ('from', b'DATA1'),
                    ('to', b'PULSE'),
                    ('from', b'DATA2'),
                ],
            )
        ],
    )
    replay = serve(recording, gate=lambda data: data == b'SYNC')
    try:
        with connect(replay) as sock:
            assert receive(sock, 5) == b'HELLO'
            assert nothing_arrives(sock)
            sock.sendall(b'xxSYNC')  # bytes before the request do not matter
            assert receive(sock, 10) == b'DATA1DATA2'  # no gate at PULSE
            assert wait_for(lambda: replay.finished)
    finally:
        replay.stop()
    counters = replay.servers['robot'].counters
    assert counters.gates_met == 1 and counters.gates_missed == 0 and counters.chunks_sent == 3


def test_replies_answer_the_same_request_in_recorded_order(tmp_path):
    recording = make_recording(
        tmp_path / 'r.mcap',
        [
            (
                None,
                [
                    ('from', b'WELCOME'),
                    ('to', b'A'),
                    ('from', b'a1'),
                    ('to', b'BB'),
                    ('from', b'b1'),
                    ('from', b'b1+'),
                    ('to', b'A'),
                    ('from', b'a2'),
                ],
            )
        ],
    )
    replay = serve(recording, mode='reply')
    try:
        with connect(replay) as sock:
            assert receive(sock, 7) == b'WELCOME'
            sock.sendall(b'BB')
            assert receive(sock, 5) == b'b1b1+'
            sock.sendall(b'AA')  # two requests in one segment
            assert receive(sock, 4) == b'a1a2'
            assert wait_for(lambda: replay.finished)
            sock.sendall(b'A')  # its recorded replies are used up
            assert nothing_arrives(sock)
            sock.sendall(b'ZZZ')  # never recorded
            assert nothing_arrives(sock)
    finally:
        replay.stop()
    counters = replay.servers['robot'].counters
    assert counters.answered == 3 and counters.unanswered == 2
    assert counters.unanswered_samples == [b'A', b'ZZZ']
    assert 'unanswered' in replay.report()[0]


def test_as_fast_as_possible_a_reply_link_ends_when_its_driver_stops_asking(tmp_path):
    """At speed 0 no clock ends a reply link: a command a user gave in the live run (USER) is
    never sent by the replayed driver. Once the other link has played past it and the driver
    has asked nothing for GATE_TIMEOUT, the replay is at its end; it used to wait for good,
    and decoding the AIBO's recording gave up after its patience."""
    recorder = Recorder(tmp_path / 'r.mcap', 'test_driver', '0', {})
    command, robot = recorder.tap('command'), recorder.tap('robot')
    recorder.start()
    command.opened('robot')
    for request, reply in ((b'C', b'c1'), (b'USER', b'done')):
        command.sent(request)
        command.received(reply)
    robot.opened('robot')
    robot.sent(b'?')
    robot.received(b'1')
    recorder.stop()
    links = [
        ReplayLink('command', 'command_port', mode='reply'),
        ReplayLink('robot', 'port', mode='reply'),
    ]
    replay = RecordingReplay(
        read_recording(tmp_path / 'r.mcap'), links, ReplayOptions(speed=0)
    ).start()
    try:
        with connect(replay) as sock:
            sock.sendall(b'?')
            assert receive(sock, 1) == b'1'
        port = replay.servers['command'].address
        with socket.create_connection(('127.0.0.1', port), timeout=5) as sock:
            sock.settimeout(5)
            sock.sendall(b'C')
            assert receive(sock, 2) == b'c1'
            assert not replay.finished  # its driver is still asking
            assert wait_for(lambda: replay.finished, GATE_TIMEOUT + 3)
            assert not replay.servers['command'].counters.finished  # USER was never played
    finally:
        replay.stop()


def test_loop_answers_again_from_the_first_reply(tmp_path):
    recording = make_recording(
        tmp_path / 'r.mcap',
        [(None, [('to', b'A'), ('from', b'a1'), ('to', b'A'), ('from', b'a2')])],
    )
    replay = serve(recording, mode='reply', loop=True)
    try:
        with connect(replay) as sock:
            for expected in (b'a1', b'a2', b'a1'):
                sock.sendall(b'A')
                assert receive(sock, 2) == expected
    finally:
        replay.stop()
    assert replay.servers['robot'].counters.repeated == 1


def test_a_connection_the_robot_dropped_is_dropped_again_and_the_next_one_served(tmp_path):
    recording = make_recording(
        tmp_path / 'r.mcap',
        [
            ('closed by peer', [('from', b'FIRST')]),
            ('closed by the driver', [('from', b'SECOND')]),
        ],
    )
    replay = serve(recording)
    try:
        with connect(replay) as sock:
            assert receive(sock, 100) == b'FIRST'  # then the end of the stream
        with connect(replay) as sock:
            assert receive(sock, 6) == b'SECOND'
            assert nothing_arrives(sock)  # the end: open and silent
        with connect(replay) as sock:
            assert nothing_arrives(sock)  # after the end: a silent robot
    finally:
        replay.stop()
    assert replay.servers['robot'].counters.connections == 3 and replay.finished


def test_a_serial_link_is_served_on_a_pseudo_terminal(tmp_path):
    recording = make_recording(
        tmp_path / 'r.mcap',
        [(None, [('to', b'\n'), ('from', b'> '), ('from', b'monitor output\n')])],
    )
    replay = serve(recording, serial=True, address='{device}')
    try:
        device = replay.parameters['port']
        fd = os.open(device, os.O_RDWR | os.O_NOCTTY)
        try:
            os.write(fd, b'\n')
            data = b''
            while len(data) < 17:
                data += os.read(fd, 100)
            assert data == b'> monitor output\n'
        finally:
            os.close(fd)
    finally:
        replay.stop()


def test_parameters_are_the_recorded_ones_pointed_at_the_replay(tmp_path):
    recording = make_recording(
        tmp_path / 'r.mcap',
        [(None, [('from', b'x')])],
        parameters={
            'host': '192.168.0.7',
            'port': 5000,
            'rate': 2.5,
            'record_path': '/tmp/x.mcap',
            'names': [],
            'use_sim_time': False,
        },
    )
    replay = RecordingReplay(recording, [ReplayLink('robot', 'port')], ReplayOptions())
    replay.start()
    try:
        assert replay.parameters == {
            'host': '127.0.0.1',
            'rate': 2.5,
            'port': replay.servers['robot'].transport.port,
        }
        assert 'test_driver' in replay.description and 'x1' in replay.description
    finally:
        replay.stop()


def test_links_the_robot_does_not_have_and_bad_options_are_refused(tmp_path):
    recording = make_recording(tmp_path / 'r.mcap', [(None, [('from', b'x')])], link='other')
    with pytest.raises(ValueError, match='links other are not links of test_driver'):
        RecordingReplay(recording, [ReplayLink('robot', 'port')])
    with pytest.raises(ValueError, match='speed'):
        ReplayOptions(speed=-1)
    with pytest.raises(ValueError, match='mode'):
        ReplayLink('robot', 'port', mode='sometimes')


def test_started_paused_it_plays_nothing_until_resumed(tmp_path):
    """--start-paused: the driver connects and asks, and gets nothing until resume(); what
    it asked meanwhile is answered then. A driver that gives up waiting and connects again
    gets the recorded connection on its new one."""
    recording = make_recording(
        tmp_path / 'r.mcap', [(None, [('from', b'WELCOME'), ('to', b'A'), ('from', b'a1')])]
    )
    options = ReplayOptions(speed=0, start_paused=True)
    replay = RecordingReplay(recording, [ReplayLink('robot', 'port', mode='reply')], options)
    replay.start()
    try:
        with connect(replay) as sock:
            sock.sendall(b'A')
            assert nothing_arrives(sock)
        with connect(replay) as sock:
            sock.sendall(b'A')
            assert nothing_arrives(sock) and replay.clock.paused
            replay.clock.resume()
            assert receive(sock, 9) == b'WELCOMEa1' and not replay.clock.paused
            assert wait_for(lambda: replay.finished)
    finally:
        replay.stop()
    counters = replay.servers['robot'].counters
    assert counters.connections == 1 and counters.answered == 1
