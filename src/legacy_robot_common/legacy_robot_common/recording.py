"""Recording a driver's links to MCAP: the raw bytes each way, with connection boundaries.

File layout (one MCAP file, zstd-compressed chunks, indexed):
- channel ``<link>/from_robot`` and ``<link>/to_robot`` per link: one message per read or
  write, the bytes exactly as they crossed the wire (message encoding ``octet-stream``, no
  schema); log time = host clock (ns) when the bytes were read or written;
- channel ``<link>/events`` (JSON): ``{"event": "connected" | "closed", "detail": ...}``;
- the message's ``sequence`` field is the connection number on that link (1, 2, ...), so
  interleaved connections (the Nabaztag's, one per HTTP request) stay apart;
- a metadata record ``recording``: format, robot node, driver version, the node's parameters
  (JSON) and the link names (JSON).

The link thread only appends to a queue; a writer thread compresses and writes. A full disk,
or a writer that falls behind by more than max_pending_bytes, ends the recording (its state
says why), never the link. No rclpy here.
"""

import collections
import ctypes
import dataclasses
import io
import json
import os
import threading
import time

from mcap.reader import make_reader
from mcap.records import Channel, Message, Metadata
from mcap.stream_reader import StreamReader
from mcap.writer import CompressionType, Writer

FORMAT = 'legacy_robots link recording 1'
WRITER_THREAD = 'recorder'  # also its name in the OS (/proc/<pid>/task/*/comm)
BYTES_ENCODING = 'octet-stream'
FROM_ROBOT, TO_ROBOT, EVENTS = 'from_robot', 'to_robot', 'events'
EVENT_SCHEMA = json.dumps(
    {
        'type': 'object',
        'title': 'link event',
        'properties': {
            'event': {'type': 'string', 'enum': ['connected', 'closed']},
            'detail': {'type': 'string'},
        },
    }
).encode()


class RecordingError(Exception):
    """The recording cannot be opened (a user error: bad path, no permission)."""


class Recorder:
    """One MCAP file for one driver process; tap(link) gives each link its recorder."""

    # s between the writer thread's batches: each wake-up of a Python thread in a busy driver
    # costs about 0.15 ms of CPU (measured: 0.3 % of a core at 20 a second, whatever the data)
    FLUSH_PERIOD = 0.5

    def __init__(
        self,
        path,
        node_name,
        driver_version,
        parameters,
        *,
        max_pending_bytes=64 << 20,
        chunk_size=1 << 20,
        compress=True,
    ):
        self.path = str(path)
        self.max_pending_bytes = max_pending_bytes
        try:
            # the folder is made as `ros2 bag record -o` makes its own
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            self._file = open(self.path, 'wb')
        except OSError as exc:
            raise RecordingError(f'cannot record to {self.path}: {exc.strerror or exc}') from None
        self._writer = Writer(
            self._file,
            chunk_size=chunk_size,
            compression=CompressionType.ZSTD if compress else CompressionType.NONE,
        )
        self._writer.start(profile='', library='legacy_robots')
        self._event_schema = self._writer.register_schema(
            'legacy_robots/LinkEvent', 'jsonschema', EVENT_SCHEMA
        )
        self._meta = {
            'format': FORMAT,
            'node': node_name,
            'driver_version': driver_version,
            'parameters': json.dumps(parameters, sort_keys=True),
            'links': [],
        }
        self._queue = collections.deque()
        self._write_lock = threading.Lock()  # the MCAP writer: writer thread and set-up
        self._count_lock = threading.Lock()  # the pending byte count: link threads too
        self._pending = 0
        self.messages = 0
        self.bytes = 0
        self.failure = ''
        self._stop = threading.Event()
        self._thread = None

    # ---- set-up (before the links start) ----------------------------------------------------
    def tap(self, link):
        """The LinkTap for one link (a name without '/': 'telemetry', 'monitor', 'http')."""
        with self._write_lock:
            channels = {
                direction: self._writer.register_channel(
                    f'{link}/{direction}',
                    BYTES_ENCODING,
                    0,
                    {'link': link, 'direction': direction},
                )
                for direction in (FROM_ROBOT, TO_ROBOT)
            }
            channels[EVENTS] = self._writer.register_channel(
                f'{link}/{EVENTS}', 'json', self._event_schema, {'link': link}
            )
        self._meta['links'].append(link)
        return LinkTap(self, channels)

    def start(self):
        meta = dict(self._meta, links=json.dumps(self._meta['links']))
        with self._write_lock:
            self._writer.add_metadata('recording', meta)
        self._thread = threading.Thread(target=self._write_loop, name=WRITER_THREAD, daemon=True)
        self._thread.start()
        return self

    # ---- from any thread ----------------------------------------------------------------------
    def put(self, channel, connection, data):
        """Queue one message (bytes, or an event's (name, detail)); never blocks beyond a
        counter update, never raises."""
        if self.failure:
            return
        with self._count_lock:
            self._pending += len(data)
            overflow = self._pending > self.max_pending_bytes
        if overflow:
            self._fail(f'the writer fell more than {self.max_pending_bytes >> 20} MiB behind')
            return
        self._queue.append((channel, time.time_ns(), connection, data))

    @property
    def state(self):
        if self.failure:
            return f'stopped: {self.failure}'
        return 'recording' if self._thread is not None else 'closed'

    def stop(self):
        """Write what is queued, then the summary; safe to call twice."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(10.0)
        self._thread = None
        if not self.failure:
            try:
                with self._write_lock:
                    self._writer.finish()
            except OSError as exc:
                self.failure = f'cannot finish {self.path}: {exc.strerror or exc}'
        try:
            self._file.close()
        except OSError:
            pass  # its buffered tail cannot be written: already reported as failure

    # ---- the writer thread --------------------------------------------------------------------
    def _write_loop(self):
        _name_os_thread(WRITER_THREAD)
        while not self._stop.wait(self.FLUSH_PERIOD):
            self._write_queued()
        self._write_queued()

    def _write_queued(self):
        queue, batch = self._queue, []
        while queue:
            batch.append(queue.popleft())
        try:
            with self._write_lock:  # once per batch: a lock costs as much as a message
                for channel, stamp, connection, item in batch:
                    if self.failure:
                        break
                    data = _encode(item)
                    self._writer.add_message(channel, stamp, data, stamp, connection)
                    self.messages += 1
                    self.bytes += len(data)
        except (OSError, ValueError) as exc:  # a full disk, a file closed under us
            self._fail(f'cannot write {self.path}: {getattr(exc, "strerror", None) or exc}')
        with self._count_lock:
            self._pending -= sum(len(item) for *_, item in batch)  # as put() counted them

    def _fail(self, reason):
        if not self.failure:
            self.failure = reason
            self._queue.clear()


def _encode(data):
    """A message's bytes: raw link bytes as they are, an event (name, detail) as JSON."""
    if isinstance(data, tuple):
        name, detail = data
        return b'{"event": "%s", "detail": %s}' % (name.encode(), json.dumps(detail).encode())
    return data


def _name_os_thread(name):
    """Give the calling thread its name in the OS too (Linux), so that its CPU can be read
    from /proc apart from the driver's (the benchmark's recording column does)."""
    try:
        ctypes.CDLL(None).prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass  # not Linux: only the name in tools is lost


class LinkTap:
    """What one link tells the recorder. A link with one connection at a time uses the
    current connection number; a server with many passes each connection's own."""

    def __init__(self, recorder, channels):
        self._recorder = recorder
        self._channels = channels
        self._connections = 0
        self.connection = 0

    def opened(self, detail=''):
        """A new connection: its number, and a connected event with detail (the peer)."""
        self.event('connected', detail, self.next_connection())
        return self.connection

    def next_connection(self):
        """A new connection number without an event (an HTTP exchange: its messages' new
        number is the boundary)."""
        self._connections += 1
        self.connection = self._connections
        return self.connection

    def closed(self, detail='', connection=None):
        self.event('closed', detail, connection)

    def event(self, name, detail, connection=None):
        # encoded by the writer thread (_encode): the link thread only queues
        self._recorder.put(self._channels[EVENTS], connection or self.connection, (name, detail))

    def received(self, data, connection=None):
        self._recorder.put(self._channels[FROM_ROBOT], connection or self.connection, data)

    def sent(self, data, connection=None):
        self._recorder.put(self._channels[TO_ROBOT], connection or self.connection, data)


# ---- reading ------------------------------------------------------------------------------------
@dataclasses.dataclass
class Chunk:
    time_ns: int  # host clock when the bytes crossed the wire
    direction: str  # FROM_ROBOT or TO_ROBOT
    data: bytes


@dataclasses.dataclass
class Connection:
    number: int
    start_ns: int
    opened: str = ''  # the connected event's detail (the peer)
    closed: str = None  # the closed event's detail; None: the recording ended first
    chunks: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class LinkRecording:
    name: str
    connections: dict = dataclasses.field(default_factory=dict)  # number → Connection

    def chunk_count(self, direction):
        return sum(
            1 for c in self.connections.values() for k in c.chunks if k.direction == direction
        )

    def byte_count(self, direction):
        return sum(
            len(k.data)
            for c in self.connections.values()
            for k in c.chunks
            if k.direction == direction
        )


@dataclasses.dataclass
class RecordingFile:
    path: str
    node: str
    driver_version: str
    parameters: dict
    links: dict  # name → LinkRecording
    start_ns: int = 0
    end_ns: int = 0
    problem: str = ''  # e.g. a file cut short: what was read before it is kept

    @property
    def duration(self):
        return (self.end_ns - self.start_ns) / 1e9


def read_recording(path):
    """The recording at path (or in bytes), grouped by link and connection → RecordingFile.

    RecordingError when it is no recording of ours or is damaged before its first record; a
    file cut short later (a driver killed mid-recording) keeps what was read and says so in
    .problem.
    """
    if isinstance(path, (bytes, bytearray)):
        return _read('<bytes>', io.BytesIO(path))
    try:
        with open(path, 'rb') as stream:
            return _read(path, stream)
    except OSError as exc:
        raise RecordingError(f'cannot read {path}: {exc.strerror or exc}') from None


def _read(path, stream):
    messages, problem = [], ''
    try:
        reader = make_reader(stream)
        metas = list(reader.iter_metadata())
        messages = reader.iter_messages(log_time_order=False)
    except Exception as exc:  # the mcap library raises many types for damaged files
        # no readable summary (a file cut short): read from the start, as far as it goes
        stream.seek(0)
        metas, messages, problem = _read_forward(stream)
        if not metas:
            raise RecordingError(f'{path}: not a readable MCAP file ({exc!r})') from None
    recording = _from_metadata(
        path, next((m.metadata for m in metas if m.name == 'recording'), None)
    )
    recording.problem = problem
    try:
        for _, channel, message in messages:
            _add_message(recording, channel, message)
    except Exception as exc:  # a damaged tail: keep what came before it
        recording.problem = f'read stopped early: {exc!r}'
    if recording.problem and not recording.end_ns:
        raise RecordingError(
            f'{path}: damaged before its first record '
            f'({recording.problem}): nothing to inspect or replay'
        )
    return recording


def _read_forward(stream):
    """(metadata, [(schema, channel, message)], problem) of a file without a usable summary."""
    metas, messages, problem = [], [], 'no summary (the file was cut short)'
    channels = {}
    try:
        for record in StreamReader(stream, skip_magic=False).records:
            if isinstance(record, Metadata):
                metas.append(record)
            elif isinstance(record, Channel):
                channels[record.id] = record
            elif isinstance(record, Message) and record.channel_id in channels:
                messages.append((None, channels[record.channel_id], record))
    except Exception as exc:  # the cut itself
        problem = f'read stopped early: {exc!r}'
    return metas, messages, problem


def _from_metadata(path, meta):
    if meta is None or meta.get('format') != FORMAT:
        raise RecordingError(
            f'{path}: not a legacy_robots link recording '
            f'(no "recording" metadata of format {FORMAT!r})'
        )
    try:
        parameters = json.loads(meta.get('parameters', '{}'))
        links = {
            str(name): LinkRecording(str(name)) for name in json.loads(meta.get('links', '[]'))
        }
    except (ValueError, KeyError, TypeError) as exc:
        raise RecordingError(f'{path}: damaged "recording" metadata ({exc})') from None
    return RecordingFile(
        str(path),
        meta.get('node', ''),
        meta.get('driver_version', ''),
        parameters if isinstance(parameters, dict) else {},
        links,
    )


def _add_message(recording, channel, message):
    link_name, _, kind = channel.topic.rpartition('/')
    link = recording.links.get(link_name)
    if link is None or kind not in (FROM_ROBOT, TO_ROBOT, EVENTS):
        return  # a channel someone added: not ours to replay
    stamp = message.log_time
    recording.start_ns = min(recording.start_ns or stamp, stamp)
    recording.end_ns = max(recording.end_ns, stamp)
    connection = link.connections.get(message.sequence)
    if connection is None:
        connection = link.connections[message.sequence] = Connection(message.sequence, stamp)
    if kind != EVENTS:
        connection.chunks.append(Chunk(stamp, kind, bytes(message.data)))
        return
    try:
        event = json.loads(message.data)
        name, detail = event['event'], str(event.get('detail', ''))
    except (ValueError, KeyError, TypeError):
        return
    if name == 'connected':
        connection.opened = detail
    elif name == 'closed':
        connection.closed = detail


def write_recording(path, recording, chunks_per_connection=None, compress=True):
    """Write recording (a RecordingFile) again, e.g. an excerpt (the first chunks of each
    connection) or with changed chunks: fuzz seeds and damaged copies for tests."""
    recorder = Recorder(
        path, recording.node, recording.driver_version, recording.parameters, compress=compress
    )
    taps = {name: recorder.tap(name) for name in recording.links}
    recorder.start()
    for name, link in recording.links.items():
        for number in sorted(link.connections):
            connection = link.connections[number]
            taps[name].opened(connection.opened)
            for chunk in connection.chunks[:chunks_per_connection]:
                put = taps[name].received if chunk.direction == FROM_ROBOT else taps[name].sent
                put(chunk.data)
            if connection.closed is not None:
                taps[name].closed(connection.closed)
    recorder.stop()
