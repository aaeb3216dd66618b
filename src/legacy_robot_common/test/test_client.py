"""ReconnectingClient against a real TCP emulator (the tick robot from test/support)."""

import threading
import time

import pytest
from helpers import wait_for
from tick_robot import TickClient, TickEmulator

from legacy_robot_common.backoff import Backoff
from legacy_robot_common.client import Link, LinkState
from legacy_robot_common.errors import ConnectionLost, LinkTimeout, MalformedFrame


class Collector:
    def __init__(self):
        self.records = []
        self.lock = threading.Lock()

    def __call__(self, record):
        with self.lock:
            self.records.append(record)


@pytest.fixture
def emulator():
    emu = TickEmulator(rate=100).start()
    yield emu
    emu.stop()


def make_client(emulator, **kwargs):
    kwargs.setdefault('read_timeout', 0.5)
    kwargs.setdefault('backoff', Backoff(initial=0.05, maximum=0.2))
    client = TickClient('127.0.0.1', emulator.server.port, **kwargs)
    client.on_record = Collector()
    return client


def test_records_arrive_in_order(emulator):
    client = make_client(emulator)
    client.start()
    try:
        assert wait_for(lambda: len(client.on_record.records) >= 20)
        numbers = [n for n, _ in client.on_record.records[:20]]
        assert numbers == list(range(numbers[0], numbers[0] + 20))
        assert client.state == LinkState.CONNECTED
        assert client.counters.connects == 1 and client.counters.bad_frames == 0
        assert client.counters.bytes_in > 0
    finally:
        client.stop()
    assert client.state == LinkState.STOPPED


def test_malformed_lines_are_counted_and_skipped(emulator):
    emulator.garbage_every = 5
    client = make_client(emulator)
    client.start()
    try:
        assert wait_for(lambda: client.counters.bad_frames >= 3)
        assert all(n % 5 for n, _ in client.on_record.records)
        assert 'not a TICK line' in client.counters.last_error
        assert client.counters.frames == len(client.on_record.records)
    finally:
        client.stop()


def test_reconnects_after_the_robot_drops_the_connection(emulator):
    client = make_client(emulator)
    client.start()
    try:
        assert wait_for(lambda: client.connected and emulator.server.client_count == 1)
        emulator.server.drop_clients()
        assert wait_for(lambda: client.counters.reconnects >= 1)
        before = len(client.on_record.records)
        assert wait_for(lambda: len(client.on_record.records) > before + 5)
    finally:
        client.stop()


def test_reconnects_after_the_emulator_is_restarted_on_the_same_port():
    first = TickEmulator(rate=100).start()
    port = first.server.port
    client = TickClient(
        '127.0.0.1', port, read_timeout=0.5, backoff=Backoff(initial=0.05, maximum=0.2)
    )
    client.on_record = Collector()
    client.start()
    try:
        assert wait_for(lambda: client.connected)
        first.stop()
        assert wait_for(lambda: not client.connected)
        assert wait_for(lambda: client.counters.connect_failures >= 1)
        second = TickEmulator(rate=100, port=port).start()
        try:
            assert wait_for(lambda: client.counters.reconnects == 1)
        finally:
            second.stop()
    finally:
        client.stop()


def test_a_silent_robot_trips_the_read_timeout():
    silent = TickEmulator(rate=100, silent=True).start()
    client = make_client(silent, read_timeout=0.2)
    client.start()
    try:
        assert wait_for(lambda: client.counters.connects >= 2)
        assert 'no data' in client.counters.last_error
    finally:
        client.stop()
        silent.stop()


def test_stop_says_goodbye_to_the_robot(emulator):
    client = make_client(emulator)
    client.start()
    assert wait_for(lambda: client.connected)
    client.stop()
    assert wait_for(lambda: b'BYE' in emulator.received)


def test_send_reaches_the_robot_and_fails_clearly_when_disconnected(emulator):
    client = make_client(emulator)
    with pytest.raises(ConnectionLost, match='not connected'):
        client.send(b'RESET\n')
    client.start()
    try:
        assert wait_for(lambda: client.connected)
        client.send(b'RESET\n')
        assert wait_for(lambda: b'RESET' in emulator.received)
    finally:
        client.stop()


def test_unreachable_robot_is_retried_with_backoff_and_counted():
    emu = TickEmulator().start()
    port = emu.server.port
    emu.stop()
    client = TickClient('127.0.0.1', port, backoff=Backoff(initial=0.02, maximum=0.05))
    client.start()
    try:
        assert wait_for(lambda: client.counters.connect_failures >= 3)
        assert client.state in (LinkState.CONNECTING, LinkState.WAITING)
        assert f'127.0.0.1:{port}' in client.counters.last_error
    finally:
        client.stop()


def test_a_bug_in_the_session_does_not_end_the_link_thread(emulator):
    calls = []

    class Buggy(TickClient):
        def run_session(self, link):
            calls.append(1)
            if len(calls) == 1:
                raise KeyError('bug')
            super().run_session(link)

    client = Buggy(
        '127.0.0.1',
        emulator.server.port,
        read_timeout=0.5,
        backoff=Backoff(initial=0.02, maximum=0.05),
    )
    client.on_record = Collector()
    client.start()
    try:
        assert wait_for(lambda: len(client.on_record.records) > 3)
        assert len(calls) >= 2  # the session was started again after the bug
    finally:
        client.stop()


class ScriptedStream:
    """A stream that returns prepared chunks (for Link unit tests)."""

    description = 'scripted'

    def __init__(self, chunks):
        self.chunks = list(chunks)

    def read(self, max_bytes=65536, timeout=None):
        if self.chunks:
            return self.chunks.pop(0)
        time.sleep(min(timeout or 0, 0.01))
        return b''


def make_link(chunks, read_timeout=0.05):
    from legacy_robot_common.client import LinkCounters

    return Link(ScriptedStream(chunks), LinkCounters(), read_timeout, threading.Event())


def test_link_read_exact_and_read_until_reassemble_split_input():
    link = make_link([b'ab', b'cd\nef', b'g\n'])
    assert link.read_exact(3) == b'abc'
    assert link.read_until(b'\n', 10) == b'd\n'
    assert link.read_until(b'\n', 10) == b'efg\n'


def test_link_read_until_gives_up_on_endless_input():
    link = make_link([b'x' * 50, b'y' * 50])
    with pytest.raises(MalformedFrame, match='no'):
        link.read_until(b'\n', 60)


def test_discard_input_drops_buffered_and_trailing_bytes():
    link = make_link([b'stale', b'more stale'])
    assert link.discard_input(quiet_time=0.05) is True
    with pytest.raises(LinkTimeout):
        link.read()


class EndlessStream:
    description = 'endless'

    def read(self, max_bytes=65536, timeout=None):
        time.sleep(0.005)
        return b'sip'


def test_discard_input_gives_up_on_a_peer_that_never_goes_quiet():
    from legacy_robot_common.client import Link, LinkCounters

    link = Link(EndlessStream(), LinkCounters(), 1.0, threading.Event())
    started = time.monotonic()
    assert link.discard_input(quiet_time=0.05, max_time=0.3) is False
    assert time.monotonic() - started < 2.0


def test_link_times_out_when_nothing_arrives():
    link = make_link([])
    with pytest.raises(LinkTimeout):
        link.read_exact(1)


class StalledReaderStream(ScriptedStream):
    """The first read returns late and empty (the reading thread was stalled); data then waits."""

    def __init__(self, stall):
        super().__init__([b'x'])
        self.stall = stall
        self.stalled = False

    def read(self, max_bytes=65536, timeout=None):
        if not self.stalled:
            self.stalled = True
            time.sleep(self.stall)
            return b''
        return super().read(max_bytes, timeout)


def test_a_stalled_reader_thread_is_not_mistaken_for_a_silent_robot():
    from legacy_robot_common.client import LinkCounters

    link = Link(StalledReaderStream(stall=0.1), LinkCounters(), 0.05, threading.Event())
    assert link.read_exact(1) == b'x'
