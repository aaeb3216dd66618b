"""Reconnecting client base: one connection to one robot, in its own thread.

A robot package subclasses ReconnectingClient and implements ``run_session``
(handshake, then the read loop) and, if the robot wants a goodbye, ``close_session``.
The base class opens the stream, restarts the session with bounded back-off
after any link loss, keeps counters, and hands decoded records to ``on_record``.
No rclpy here.
"""

import dataclasses
import enum
import logging
import threading
import time

from .backoff import Backoff
from .errors import ConnectionLost, LinkTimeout, MalformedFrame
from .ratelimit import RateLimitedLogger


class LinkState(str, enum.Enum):
    STOPPED = 'stopped'
    CONNECTING = 'connecting'
    CONNECTED = 'connected'
    WAITING = 'waiting to reconnect'


@dataclasses.dataclass
class LinkCounters:
    frames: int = 0
    bad_frames: int = 0
    connects: int = 0
    reconnects: int = 0
    connect_failures: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    last_error: str = ''

    def snapshot(self):
        return dataclasses.replace(self)


class _Stopping(Exception):
    """Raised inside a session when the client is asked to stop."""


class Link:
    """One open stream: buffered reads with a watchdog, locked writes, counters."""

    SLICE = 0.1  # how often a waiting read looks at the stop flag

    def __init__(self, stream, counters, read_timeout, stop_event, tap=None):
        self.stream = stream
        self._tap = tap  # a recording's LinkTap, or None
        self._counters = counters
        self.read_timeout = read_timeout
        self._stop = stop_event
        self._buffer = bytearray()
        self._write_lock = threading.Lock()
        self.closed = False

    def _fill(self, timeout):
        """Append newly arrived bytes to the buffer; LinkTimeout after timeout seconds of
        silence."""
        deadline = time.monotonic() + timeout
        while True:
            if self._stop.is_set():
                raise _Stopping()
            remaining = deadline - time.monotonic()
            # Read (at least poll) before judging the deadline: if this thread itself
            # was stalled, data may be waiting and the robot is not silent.
            data = self.stream.read(65536, max(0.0, min(self.SLICE, remaining)))
            if data:
                self._counters.bytes_in += len(data)
                self._buffer += data
                if self._tap is not None:
                    self._tap.received(data)
                return
            if remaining <= 0:
                raise LinkTimeout(f'no data from {self.stream.description} for {timeout:.1f} s')

    def read(self, timeout=None):
        """Whatever bytes are buffered or arrive next (at least one)."""
        if not self._buffer:
            self._fill(self.read_timeout if timeout is None else timeout)
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    def read_exact(self, count, timeout=None):
        """Exactly count bytes; the timeout restarts whenever bytes arrive."""
        while len(self._buffer) < count:
            self._fill(self.read_timeout if timeout is None else timeout)
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    def read_until(self, delimiter, max_length, timeout=None):
        """Bytes up to and including delimiter; MalformedFrame if max_length passes first."""
        while True:
            index = self._buffer.find(delimiter)
            if index >= 0:
                end = index + len(delimiter)
                data = bytes(self._buffer[:end])
                del self._buffer[:end]
                return data
            if len(self._buffer) > max_length:
                dropped = bytes(self._buffer)
                self._buffer.clear()
                raise MalformedFrame(
                    f'no {delimiter!r} within {max_length} bytes ({len(dropped)} bytes dropped)'
                )
            self._fill(self.read_timeout if timeout is None else timeout)

    def discard_input(self, quiet_time=0.0, max_time=None):
        """Drop buffered input, then keep dropping until quiet_time passes with nothing new.

        Returns False if max_time seconds pass first (the peer never went quiet).
        """
        self._buffer.clear()
        now = time.monotonic()
        deadline = now + quiet_time
        give_up = None if max_time is None else now + max_time
        while time.monotonic() < deadline:
            if self._stop.is_set():
                raise _Stopping()
            if give_up is not None and time.monotonic() >= give_up:
                return False
            data = self.stream.read(65536, max(0.0, min(self.SLICE, deadline - time.monotonic())))
            if data:
                if self._tap is not None:
                    self._tap.received(data)
                deadline = time.monotonic() + quiet_time
        return True

    def write(self, data):
        with self._write_lock:
            if self.closed:
                raise ConnectionLost('link closed')
            self.stream.write(data)
            self._counters.bytes_out += len(data)
            if self._tap is not None:
                self._tap.sent(data)

    def drain(self):
        with self._write_lock:
            self.stream.drain()

    def close(self):
        with self._write_lock:
            self.closed = True
        self.stream.close()


class ReconnectingClient:
    """Keeps one robot connection alive in a background thread.

    open_stream: callable returning a new stream (see streams.py); it raises
        ConnectionLost when the robot cannot be reached.
    read_timeout: seconds without any byte before the link counts as lost.
    """

    def __init__(self, name, open_stream, *, read_timeout=2.0, backoff=None, logger=None):
        if read_timeout <= 0:
            raise ValueError('read_timeout must be positive')
        self.name = name
        self._open_stream = open_stream
        self.read_timeout = read_timeout
        self._backoff = backoff or Backoff()
        self.logger = logger or logging.getLogger(name)
        self.log = RateLimitedLogger(self.logger)
        self.counters = LinkCounters()
        self.state = LinkState.STOPPED
        self.on_record = None
        self.tap = None  # set before start() to record the link (recording.py)
        self._stop = threading.Event()
        self._thread = None
        self._link = None
        self._link_lock = threading.Lock()
        self._connected_once = False
        self._goodbye_owed = False
        self._poked = threading.Event()
        self.connected_event = threading.Event()

    # ---- life cycle -----------------------------------------------------------
    def start(self):
        if self._thread is not None:
            raise RuntimeError(f'{self.name}: client already started')
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f'{self.name}-link', daemon=True)
        self._thread.start()

    def request_stop(self):
        """Ask the session to end (close_session runs first), without waiting: from now on a
        closed link is shutdown, not a fault to reconnect from."""
        self._stop.set()
        self._poked.set()

    def stop(self, timeout=5.0):
        """request_stop(), then wait for the thread."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self.logger.warning(f'{self.name}: link thread did not stop within {timeout} s')
            self._thread = None
        self.state = LinkState.STOPPED

    @property
    def connected(self):
        return self.state == LinkState.CONNECTED

    # ---- for subclasses -------------------------------------------------------
    def run_session(self, link):
        """Handshake, call mark_connected(), then read and deliver until the link fails."""
        raise NotImplementedError

    def close_session(self, link):
        """Say goodbye to the robot before the link closes on stop(); default: nothing."""

    def owe_goodbye(self):
        """The robot holds state for this session before it counts as connected (P2OS after
        OPEN): from now on a stop runs close_session. mark_connected() implies it."""
        self._goodbye_owed = True

    def mark_connected(self, detail=''):
        self._goodbye_owed = True
        self.state = LinkState.CONNECTED
        self.counters.connects += 1
        if self._connected_once:
            self.counters.reconnects += 1
        self._connected_once = True
        self._backoff.reset()
        self.connected_event.set()
        self.logger.info(f'{self.name}: connected{": " + detail if detail else ""}')

    def deliver(self, record):
        self.counters.frames += 1
        callback = self.on_record
        if callback is not None:
            callback(record)

    def reject(self, error, what='frame'):
        """Count and log (rate-limited) one malformed frame; the session goes on."""
        self.counters.bad_frames += 1
        self.counters.last_error = str(error)
        self.log.warning(
            'bad-' + what,
            f'{self.name}: bad {what} skipped: {error} ({self.counters.bad_frames} so far)',
        )

    def idle(self, timeout):
        """Wait in a session until timeout passes or poke() is called; ends the session on stop."""
        if self._poked.wait(max(0.0, timeout)):
            self._poked.clear()
        if self._stop.is_set():
            raise _Stopping()

    def poke(self):
        """Wake a session waiting in idle() (new work was queued, from any thread)."""
        self._poked.set()

    def send(self, data):
        """Write bytes to the robot now; ConnectionLost when not connected."""
        with self._link_lock:
            link = self._link
        if link is None or self.state != LinkState.CONNECTED:
            raise ConnectionLost(f'{self.name}: not connected')
        link.write(data)

    # ---- the thread -----------------------------------------------------------
    def _run(self):
        while not self._stop.is_set():
            self.state = LinkState.CONNECTING
            try:
                stream = self._open_stream()
            except ConnectionLost as exc:
                self._note_failure(exc, connecting=True)
                self._wait_before_retry()
                continue
            if self.tap is not None:
                self.tap.opened(stream.description)
            link = Link(stream, self.counters, self.read_timeout, self._stop, self.tap)
            with self._link_lock:
                self._link = link
            lost = None
            try:
                self.run_session(link)
            except _Stopping:
                pass
            except (ConnectionLost, MalformedFrame, TimeoutError) as exc:
                lost = exc
                if not self._stop.is_set():  # at shutdown a closed link is normal
                    self._note_failure(exc)
            except Exception as exc:  # a bug must not end the link thread
                self.counters.last_error = repr(exc)
                self.logger.error(f'{self.name}: session failed unexpectedly: {exc!r}')
            finally:
                self._end_session(link, lost)
            if not self._stop.is_set():
                self._wait_before_retry()
        self.state = LinkState.STOPPED

    def _end_session(self, link, lost=None):
        self.connected_event.clear()
        if self._stop.is_set() and self._goodbye_owed:
            self._say_goodbye(link, lost)
        self._goodbye_owed = False
        with self._link_lock:
            self._link = None
        link.close()
        if self.tap is not None:
            self.tap.closed(str(lost) if lost is not None else 'closed by the driver')

    def _say_goodbye(self, link, lost):
        """close_session on a live link. When the robot side closed first (its emulator stopped
        by the same Ctrl-C) there is no one to say goodbye to: one INFO line, nothing more."""
        if type(self).close_session is ReconnectingClient.close_session:
            return  # this link has no goodbye (e.g. a stream the robot only sends on)
        if lost is None:
            try:
                self.close_session(link)
                link.drain()
                return
            except (ConnectionLost, OSError) as exc:
                lost = exc
        self.logger.info(f'{self.name}: goodbye not delivered, the link closed first: {lost}')

    def _note_failure(self, exc, connecting=False):
        self.counters.last_error = str(exc)
        if connecting:
            self.counters.connect_failures += 1
            self.log.warning('connect', f'{self.name}: {exc}; retrying')
        else:
            self.log.warning('lost', f'{self.name}: link lost: {exc}; reconnecting')

    def _wait_before_retry(self):
        self.state = LinkState.WAITING
        self._stop.wait(self._backoff.next_delay())
