"""diagnostic_msgs/DiagnosticArray on /diagnostics at 1 Hz, without diagnostic_updater.

Tasks are callables returning (level, message, {key: value}); the link task
reports a ReconnectingClient's state, counters and rates.
"""

import collections
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

OK = DiagnosticStatus.OK
WARN = DiagnosticStatus.WARN
ERROR = DiagnosticStatus.ERROR
STALE = DiagnosticStatus.STALE


class DiagnosticsPublisher:
    """One status per task, named "<namespace>/<node>: <task>" (stable: no ports, unique per
    robot, as a diagnostic_aggregator groups them) with hardware_id naming the robot."""

    def __init__(self, node, hardware_id, period=1.0):
        self._node = node
        self.hardware_id = hardware_id
        self._tasks = []
        self._groups = []
        self._pub = node.create_publisher(DiagnosticArray, '/diagnostics', 10)
        self._timer = node.create_timer(period, self.publish)

    @property
    def prefix(self):
        return self._node.get_fully_qualified_name().lstrip('/')

    def add_task(self, name, task):
        self._tasks.append((name, task))

    def add_group(self, group):
        """group() → [(name, hardware_id, level, message, values)]: a status per item of a
        changing set (one per rabbit)."""
        self._groups.append(group)

    def collect(self):
        statuses = [self._status(name, self.hardware_id, task) for name, task in self._tasks]
        for group in self._groups:
            try:
                items = group()
            except Exception as exc:  # a broken group must not stop the others
                items = [
                    ('group', self.hardware_id, ERROR, f'diagnostic group failed: {exc!r}', {})
                ]
            for name, hardware_id, level, message, values in items:
                result = (level, message, values)
                statuses.append(self._status(name, hardware_id, lambda result=result: result))
        return statuses

    def _status(self, name, hardware_id, task):
        status = DiagnosticStatus(name=f'{self.prefix}: {name}', hardware_id=hardware_id)
        try:
            level, message, values = task()
        except Exception as exc:  # a broken task must not stop the others
            level, message, values = ERROR, f'diagnostic task failed: {exc!r}', {}
        status.level = level
        status.message = message
        status.values = [KeyValue(key=str(k), value=_text(v)) for k, v in values.items()]
        return status

    def publish(self):
        msg = DiagnosticArray()
        msg.header.stamp = self._node.get_clock().now().to_msg()
        msg.status = self.collect()
        self._pub.publish(msg)


def _text(value):
    if isinstance(value, float):
        return f'{value:.3f}'
    return str(value)


class LinkStatusTask:
    """Connection state, counters and per-second rates of one ReconnectingClient."""

    def __init__(self, client, clock=time.monotonic):
        self._client = client
        self._clock = clock
        self._previous = (clock(), client.counters.snapshot())

    def __call__(self):
        now, counters = self._clock(), self._client.counters.snapshot()
        then, before = self._previous
        self._previous = (now, counters)
        elapsed = max(now - then, 1e-9)
        state = self._client.state.value
        values = {
            'state': state,
            'frames': counters.frames,
            'frames per second': (counters.frames - before.frames) / elapsed,
            'bad frames': counters.bad_frames,
            'bad frames per second': (counters.bad_frames - before.bad_frames) / elapsed,
            'connects': counters.connects,
            'reconnects': counters.reconnects,
            'connect failures': counters.connect_failures,
            'bytes in': counters.bytes_in,
            'bytes out': counters.bytes_out,
            'last error': counters.last_error,
        }
        if self._client.connected:
            if counters.bad_frames > before.bad_frames:
                return WARN, 'connected; receiving malformed frames', values
            return OK, 'connected', values
        detail = f': {counters.last_error}' if counters.last_error else ''
        return ERROR, f'{state}{detail}', values


class RateMeter:
    """Events per second over a sliding window (for a diagnostics value)."""

    def __init__(self, window=2.0, clock=time.monotonic):
        self.window = window
        self._clock = clock
        self._times = collections.deque()

    def tick(self):
        now = self._clock()
        self._times.append(now)
        while now - self._times[0] > self.window:
            self._times.popleft()

    @property
    def rate(self):
        times = list(self._times)  # a copy: tick() may run on a link thread meanwhile
        if len(times) < 2 or times[-1] <= times[0]:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0])
