"""Replaying a bridge's recording as the rabbits: each recorded HTTP request is sent again,
on its recorded timeline, to a bridge started with the recorded parameters.

The rabbit is the client here, so this is the other way round from the robots that
listen: the replay calls the bridge (retrying until it listens, as a rabbit would), and
compares each reply's status line with the recorded one. No rclpy.
"""

import pathlib
import socket
import threading
import time

from legacy_robot_common.emulator import free_port
from legacy_robot_common.recording import FROM_ROBOT, TO_ROBOT
from legacy_robot_common.replay import PlayClock, ReplayCounters

LINK = 'http'
CONNECT_PATIENCE = 30.0  # s to wait for the bridge to listen before the first request
REPLY_TIMEOUT = 10.0  # s for one reply


class NabaztagReplay:
    """start()/stop(), .parameters (the bridge's) and .description, like the emulator."""

    def __init__(self, recording, options):
        self.recording = recording
        self.options = options
        link = recording.links.get(LINK)
        if link is None:
            raise ValueError(f'{recording.path}: no {LINK!r} link in this recording')
        self.requests = [
            (c.start_ns, _joined(c, FROM_ROBOT), _status_line(_joined(c, TO_ROBOT)))
            for c in sorted(link.connections.values(), key=lambda c: c.start_ns)
        ]
        self.port = None  # a free loopback port, from start() on
        self.counters = ReplayCounters()
        self.status_differs = 0  # replies whose status line is not the recorded one
        self._stop = threading.Event()
        self._thread = None
        self.clock = PlayClock(options)

    @property
    def parameters(self):
        """The recorded bridge parameters at a free loopback port; files the recording names
        but this machine lacks are left out (the bridge answers 404 where it did not)."""
        parameters = {
            name: value
            for name, value in self.recording.parameters.items()
            if name not in ('record_path', 'use_sim_time') and value != []
        }
        for name in ('bytecode_file', 'media_root'):
            if parameters.get(name) and not pathlib.Path(parameters[name]).exists():
                parameters.pop(name)
        parameters.update(host=self.options.host, port=self.port)
        return parameters

    @property
    def description(self):
        return (
            f'replay of {self.recording.path} ({len(self.requests)} requests, '
            f'{self.recording.duration:.1f} s) to a bridge on '
            f'{self.options.host}:{self.port}'
        )

    @property
    def finished(self):
        return self.counters.finished

    def recorded_time(self, link):
        """The recorded time of the request sent last."""
        return self.counters.last_sent_ns

    def start(self):
        self.port = free_port()
        self.clock.start()
        self._thread = threading.Thread(target=self._run, name='nabaztag-replay', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(REPLY_TIMEOUT)

    def report(self):
        c = self.counters
        return [
            f'{LINK}: {c.answered} requests answered ({len(self.requests)} in the '
            f'recording), {self.status_differs} with another status than recorded, '
            f'{c.unanswered} unanswered'
        ]

    # ---- the thread ------------------------------------------------------------------------
    def _run(self):
        if (
            not self.clock.wait(self._stop.wait)
            or not self.requests
            or not self._wait_for_bridge()
        ):
            self.counters.finished = True
            return
        while True:
            self._play_once()
            if not self.options.loop or self._stop.is_set():
                break
        self.counters.finished = True

    def _wait_for_bridge(self):
        deadline = time.monotonic() + CONNECT_PATIENCE
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                socket.create_connection((self.options.host, self.port), timeout=1.0).close()
                return True
            except OSError:
                self._stop.wait(0.1)
        return False

    def _play_once(self):
        start_wall, start_ns = time.monotonic(), self.requests[0][0]
        for sent_ns, request, recorded_status in self.requests:
            if self.options.speed:
                due = start_wall + (sent_ns - start_ns) / 1e9 / self.options.speed
                if self._stop.wait(max(0.0, due - time.monotonic())):
                    return
            elif self._stop.is_set():
                return
            self.counters.last_sent_ns = sent_ns
            self._exchange(request, recorded_status)

    def _exchange(self, request, recorded_status):
        try:
            with socket.create_connection(
                (self.options.host, self.port), timeout=REPLY_TIMEOUT
            ) as sock:
                sock.sendall(request)
                self.counters.chunks_sent += 1
                reply = _read_all(sock)
        except OSError as exc:
            self._unanswered(request, exc)
            return
        if not reply:
            self._unanswered(request, 'closed without a reply')
            return
        self.counters.answered += 1
        if _status_line(reply) != recorded_status:
            self.status_differs += 1

    def _unanswered(self, request, why):
        self.counters.unanswered += 1
        if len(self.counters.unanswered_samples) < 3:
            self.counters.unanswered_samples.append(f'{request[:40]!r}: {why}')


def _joined(connection, direction):
    return b''.join(chunk.data for chunk in connection.chunks if chunk.direction == direction)


def _status_line(reply):
    return reply.split(b'\r\n', 1)[0]


def _read_all(sock):
    parts = []
    while True:
        data = sock.recv(65536)
        if not data:
            return b''.join(parts)
        parts.append(data)
