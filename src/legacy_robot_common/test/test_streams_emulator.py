import argparse
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from helpers import wait_for

from legacy_robot_common.emulator import (
    FaultInjector,
    MainFrame,
    PtyEmulatorPort,
    TcpEmulatorServer,
    parse_main_frames,
)
from legacy_robot_common.errors import ConnectionLost
from legacy_robot_common.streams import SerialStream, SocketStream


def echo(stream, stop):
    while not stop.is_set():
        data = stream.read(4096, timeout=0.05)
        if data:
            stream.write(data.upper())


@pytest.fixture
def echo_server():
    server = TcpEmulatorServer(echo)
    server.start()
    yield server
    server.stop()


def read_some(stream, count, timeout=2.0):
    data = b''
    deadline = time.monotonic() + timeout
    while len(data) < count and time.monotonic() < deadline:
        data += stream.read(4096, timeout=0.1)
    return data


def test_tcp_server_on_port_zero_reports_its_real_port(echo_server):
    assert echo_server.port > 0
    stream = SocketStream.connect('127.0.0.1', echo_server.port)
    stream.write(b'hello')
    assert read_some(stream, 5) == b'HELLO'
    stream.close()


def test_socket_read_times_out_with_empty_bytes(echo_server):
    stream = SocketStream.connect(*echo_server.address)
    started = time.monotonic()
    assert stream.read(10, timeout=0.2) == b''
    assert time.monotonic() - started >= 0.19
    stream.close()


def test_dropped_client_sees_connection_lost(echo_server):
    stream = SocketStream.connect(*echo_server.address)
    wait_for(lambda: echo_server.client_count == 1, timeout=2)
    echo_server.drop_clients()
    with pytest.raises(ConnectionLost):
        for _ in range(20):
            stream.read(10, timeout=0.1)
    stream.close()


def test_connect_to_closed_port_is_connection_lost():
    server = TcpEmulatorServer(echo)
    port = server.start()
    server.stop()
    with pytest.raises(ConnectionLost, match=f'127.0.0.1:{port}'):
        SocketStream.connect('127.0.0.1', port, connect_timeout=1.0)


def test_listening_on_a_busy_port_says_which_port():
    first = TcpEmulatorServer(echo)
    port = first.start()
    try:
        import socket

        holder = socket.socket()
        holder.bind(('127.0.0.1', 0))
        holder.listen(1)
        busy = holder.getsockname()[1]
        with pytest.raises(OSError, match=f'127.0.0.1:{busy}'):
            TcpEmulatorServer(echo, port=busy).start()
        holder.close()
    finally:
        first.stop()
    assert port > 0


def test_pty_emulator_talks_to_pyserial():
    port = PtyEmulatorPort(echo)
    path = port.start()
    assert path.startswith('/dev/')
    serial_stream = SerialStream(path, 9600)
    try:
        serial_stream.write(b'abc')
        assert read_some(serial_stream, 3) == b'ABC'
        assert serial_stream.read(10, timeout=0.1) == b''
    finally:
        serial_stream.close()
        port.stop()


def test_pty_survives_a_driver_that_reopens_the_device():
    port = PtyEmulatorPort(echo)
    path = port.start()
    try:
        for word in (b'one', b'two'):
            serial_stream = SerialStream(path, 115200)
            serial_stream.write(word)
            assert read_some(serial_stream, 3) == word.upper()
            serial_stream.close()
    finally:
        port.stop()


def test_missing_serial_device_is_connection_lost():
    with pytest.raises(ConnectionLost, match='/dev/does-not-exist'):
        SerialStream('/dev/does-not-exist', 9600)


def test_fault_injector_drops_and_corrupts_at_about_the_given_rates():
    faults = FaultInjector(drop_rate=0.1, corrupt_rate=0.1, seed=1)
    data = bytes(range(256)) * 40
    out = faults.apply(data)
    assert faults.dropped + len(out) == len(data)
    assert 0.08 < faults.dropped / len(data) < 0.12
    assert 0.08 < faults.corrupted / len(data) < 0.12
    faults.silent = True
    assert faults.apply(b'xyz') == b''


def test_fault_injector_passes_data_unchanged_without_faults():
    assert FaultInjector().apply(b'\x00\xff') == b'\x00\xff'
    with pytest.raises(ValueError):
        FaultInjector(drop_rate=1.5)


def test_fault_arguments_read_back_as_emulator_options():
    parser = argparse.ArgumentParser()
    FaultInjector.add_arguments(parser)
    assert FaultInjector.options(parser.parse_args([])) == {
        'drop_rate': 0.0,
        'corrupt_rate': 0.0,
        'seed': None,
    }
    args = parser.parse_args(['--drop-rate', '0.1', '--corrupt-rate', '0.2', '--seed', '7'])
    assert FaultInjector.options(args) == {'drop_rate': 0.1, 'corrupt_rate': 0.2, 'seed': 7}


def test_main_frames_at_risk_are_the_damaged_ones_and_the_frames_after_them():
    """The mixed soak's accounting: a frame is at risk when damage touched it, the frame
    before it or what was written between them; nothing counts once held."""
    faults = FaultInjector()

    def damaged(data):
        faults.corrupt_rate = 1.0
        out = faults.apply(data)
        faults.corrupt_rate = 0.0
        return out

    assert faults.apply(MainFrame(b'A')) == b'A'  # clean
    damaged(b'event line')  # damage between frames
    faults.apply(MainFrame(b'B'))  # at risk: damage since A
    faults.apply(MainFrame(b'C'))  # clean again
    assert damaged(MainFrame(b'D')) != b'D'  # at risk: damaged itself
    faults.apply(MainFrame(b'E'))  # at risk: D was damaged
    faults.apply(MainFrame(b'F'))  # clean
    faults.apply(b'not a main frame')
    assert faults.hold() == (6, 3)
    assert faults.apply(MainFrame(b'G')) == b'' and faults.hold() == (6, 3)


EMULATOR_SCRIPT = textwrap.dedent("""
    import sys
    from legacy_robot_common.emulator import FaultInjector, MainFrame, run_emulator

    class Counting:
        description = 'on nowhere'

        def __init__(self, counted):
            if counted:
                self.faults = FaultInjector()
                for frame in (b'one', b'two'):
                    self.faults.apply(MainFrame(frame))

        def start(self):
            pass

        def stop(self):
            pass

    sys.exit(run_emulator('test emulator', lambda: Counting(sys.argv[1] == 'counted')))
""")


@pytest.mark.parametrize('counted, expected', [('counted', (2, 0)), ('not', None)])
def test_an_emulator_says_its_main_frame_count_on_sigusr1_and_keeps_running(counted, expected):
    process = subprocess.Popen(
        [sys.executable, '-c', EMULATOR_SCRIPT, counted], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().startswith('test emulator: on nowhere')
        process.send_signal(signal.SIGUSR1)
        line = process.stdout.readline()
        assert line.startswith('main frames') and parse_main_frames(line) == expected
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0
    finally:
        process.kill()
        process.stdout.close()


def test_server_stop_ends_handler_threads():
    stopped = threading.Event()

    def handler(stream, stop):
        stop.wait()
        stopped.set()

    server = TcpEmulatorServer(handler)
    server.start()
    stream = SocketStream.connect(*server.address)
    wait_for(lambda: server.client_count == 1, timeout=2)
    server.stop()
    assert stopped.wait(2)
    stream.close()
