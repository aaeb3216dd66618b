"""The rabbits' replay started paused (recording replay --start-paused): it calls no bridge
until it is resumed. A real listening socket stands in for the bridge."""

import socket

from legacy_robot_common.recording import Recorder, read_recording
from legacy_robot_common.replay import ReplayOptions
from nabaztag_bridge.replay import LINK, NabaztagReplay


def test_started_paused_the_rabbits_call_no_bridge_until_resumed(tmp_path):
    recorder = Recorder(tmp_path / 'r.mcap', 'nabaztag_bridge', '0', {})
    tap = recorder.tap(LINK)
    recorder.start()
    tap.opened('rabbit')
    tap.received(b'GET /vl/p4.jsp?sn=0013d3849e0a HTTP/1.0\r\n\r\n')
    tap.sent(b'HTTP/1.0 200 OK\r\n\r\n')
    tap.closed('done')
    recorder.stop()
    replay = NabaztagReplay(read_recording(tmp_path / 'r.mcap'), ReplayOptions(start_paused=True))
    replay.start()
    with socket.create_server(('127.0.0.1', replay.port)) as bridge:
        try:
            bridge.settimeout(0.5)
            try:
                bridge.accept()[0].close()
                called = True
            except socket.timeout:
                called = False
            assert not called and replay.clock.paused
            replay.clock.resume()
            bridge.settimeout(5)
            bridge.accept()[0].close()  # its first look whether the bridge listens
            call, _ = bridge.accept()
            with call:
                assert call.recv(100).startswith(b'GET /vl/p4.jsp')
                call.sendall(b'HTTP/1.0 200 OK\r\n\r\n')
        finally:
            replay.stop()
