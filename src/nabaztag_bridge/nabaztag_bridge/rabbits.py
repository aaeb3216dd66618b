"""What the bridge knows about each rabbit, and what it will tell it next (no I/O).

A Rabbit holds the state kept per serial (docs/protocols/nabaztag.md §7): bytecode
version, last ping, tc, ping interval, ambient (services, ears, nose), a queue
of forced packets and the per-rabbit plugin. RabbitRegistry is the thread-safe
collection the HTTP handlers and the ROS services share; reply_packet() is the
rule for what a ping or RFID request gets back.
"""

import collections
import dataclasses
import hashlib
import threading
import time

from legacy_robot_common.errors import MalformedFrame

from . import protocol as p

PLUGINS = ('none', 'echo')
FORCED_PACKET_INTERVAL = 1  # s: ping interval while forced packets wait (as jNab does)
RECENT_UPLOADS = 4  # digests kept per rabbit: a rabbit retries an upload up to 3 times
RETRY_WINDOW = 30.0  # s: a retry comes within seconds; the same audio later is new
PROGRAM_ENDS = ('end_of_message', 'click_while_playing', 'double_click')
IDLE_REPLIES_KEPT = 1024  # distinct (interval, ambient) idle replies cached
KEPT_RECORDINGS = 8  # recordings served back per rabbit (echo plugin, MU URLs)


class UnknownRabbit(KeyError):
    def __str__(self):
        return self.args[0]


@dataclasses.dataclass
class Rabbit:
    serial: str
    ping_interval: int
    plugin: str
    bytecode_version: int = 0
    last_seen: float = 0.0  # time.time() of the last request
    tc: int = p.BOOTED_TC
    ambient: p.Ambient = p.Ambient()
    queue: collections.deque = dataclasses.field(default_factory=collections.deque)
    upload_digests: collections.deque = dataclasses.field(  # (digest, time.time())
        default_factory=lambda: collections.deque(maxlen=RECENT_UPLOADS)
    )
    recordings: collections.OrderedDict = dataclasses.field(
        default_factory=collections.OrderedDict
    )  # name → WAV bytes
    echo_pending: str = ''  # recording name the echo plugin plays next
    finished_program: int = -1  # tc stays the last program's ID after it ends

    @property
    def state(self):
        return p.state_from_tc(self.tc)  # idle only when the rabbit says so

    @property
    def needs_idle(self):
        """Booted, or a program ended and its ID is still the rabbit's state: until it is sent
        the idle program it ignores the ambient ears and does not move them (nabaztag.md §7.3)."""
        return self.tc == p.BOOTED_TC or (
            self.tc == self.finished_program and self.tc not in (p.IDLE_ID, p.SLEEP_ID)
        )

    def online(self, now):
        return is_online(self.last_seen, self.ping_interval, now)


def is_online(last_seen, ping_interval, now):
    """A rabbit that missed two pings (and 10 s of slack) is offline."""
    return now - last_seen <= 2 * ping_interval + 10


RabbitView = collections.namedtuple(
    'RabbitView',
    'serial bytecode_version last_seen state tc ping_interval plugin ears queued_packets',
)


class RabbitRegistry:
    def __init__(
        self,
        ping_interval=20,
        plugin='none',
        allowed=(),
        message_first_byte=0,
        trailing_newline=False,
        wake_after_boot=True,
        clock=time.time,
    ):
        check_plugin(plugin)
        self.ping_interval = ping_interval
        self.plugin = plugin
        self.allowed = frozenset(allowed)
        self.message_first_byte = message_first_byte
        self.trailing_newline = trailing_newline
        self.wake_after_boot = wake_after_boot
        self._clock = clock
        self.recordings_url = ''  # where the HTTP server serves recordings (set by it)
        self._rabbits = {}
        self._lock = threading.Lock()
        self._next_program = 1
        self._idle_replies = {}  # (interval, ambient) → encoded packet

    # ---- lookup -------------------------------------------------------------------------
    def seen(self, serial):
        """(rabbit, first contact?) for the rabbit that just made a request, or
        UnknownRabbit when the bridge is restricted to a list that lacks it."""
        with self._lock:
            rabbit = self._rabbits.get(serial)
            new = rabbit is None
            if new:
                if self.allowed and serial not in self.allowed:
                    raise UnknownRabbit(f'rabbit {serial} is not in allowed_serials')
                rabbit = self._rabbits[serial] = Rabbit(serial, self.ping_interval, self.plugin)
            rabbit.last_seen = self._clock()
            return rabbit, new

    def select(self, serial):
        """The rabbits a command addresses: one by serial, or all known for ''; UnknownRabbit
        when that is none (a command that would reach nobody is not a success)."""
        key = p.normalize_serial(serial) if serial else ''
        with self._lock:
            if not key:
                if not self._rabbits:
                    raise UnknownRabbit(
                        'no rabbit has called the bridge yet: the command would reach nobody'
                    )
                return list(self._rabbits.values())
            if key not in self._rabbits:
                raise UnknownRabbit(f'no rabbit {serial!r} has called the bridge yet')
            return [self._rabbits[key]]

    def view(self, serial):
        """The RabbitView of one rabbit, None before its first call."""
        with self._lock:
            rabbit = self._rabbits.get(serial)
            return None if rabbit is None else self._view(rabbit)

    @staticmethod
    def _view(r):
        return RabbitView(
            r.serial,
            r.bytecode_version,
            r.last_seen,
            r.state,
            r.tc,
            r.ping_interval,
            r.plugin,
            r.ambient.ears,
            len(r.queue),
        )

    def snapshot(self):
        """A RabbitView of every rabbit. The lock, which the HTTP thread needs on every
        request, is held only to copy the list: each field is read whole (the GIL), so a view
        may mix two pings of one rabbit, never half a value. Built under the lock, 1,000
        rabbits' views kept every ping waiting 0.7 - 4 ms once a second."""
        with self._lock:
            rabbits = list(self._rabbits.values())
        return [self._view(r) for r in rabbits]

    def counts(self):
        """(known, online): the list copied under the lock, counted outside it (snapshot)."""
        now = self._clock()
        with self._lock:
            rabbits = list(self._rabbits.values())
        return len(rabbits), sum(r.online(now) for r in rabbits)

    # ---- what the rabbit gets back ------------------------------------------------------
    def reply_packet(self, rabbit):
        """A forced packet if one waits, else the plugin's or the default reply. Always a
        valid packet with a block, so that the rabbit acknowledges its event."""
        with self._lock:
            if rabbit.queue:
                entry = rabbit.queue.popleft()
                if isinstance(entry, bytes):
                    return entry  # a raw packet goes out as given
                interval = FORCED_PACKET_INTERVAL if rabbit.queue else rabbit.ping_interval
                blocks = list(entry)
                if not any(b.type == p.BLOCK_PING_INTERVAL for b in blocks):
                    blocks.append(p.ping_interval_block(interval))
                return self._encode(blocks)
            if rabbit.echo_pending and rabbit.tc != p.BOOTED_TC:
                name, rabbit.echo_pending = rabbit.echo_pending, ''
                program = self._new_program((('MU', self.recordings_url + name), ('MW', '')))
            elif rabbit.needs_idle and (self.wake_after_boot or rabbit.tc != p.BOOTED_TC):
                program = p.Program(p.IDLE_ID)
            else:
                return self._idle_reply(rabbit.ping_interval, rabbit.ambient)
            return self._encode(
                [
                    self._message(program),
                    p.ping_interval_block(rabbit.ping_interval),
                    p.ambient_block(rabbit.ambient),
                ]
            )

    def _idle_reply(self, interval, ambient):
        """The reply of almost every ping, encoded once per (interval, ambient)."""
        key = (interval, ambient)
        reply = self._idle_replies.get(key)
        if reply is None:
            if len(self._idle_replies) >= IDLE_REPLIES_KEPT:
                self._idle_replies.clear()
            reply = self._idle_replies[key] = self._encode(
                [p.ping_interval_block(interval), p.ambient_block(ambient)]
            )
        return reply

    def _encode(self, blocks):
        return p.encode_packet(blocks, self.trailing_newline)

    def _message(self, program):
        return p.message_block(p.program_text(program), self.message_first_byte)

    def _new_program(self, commands):
        program_id = self._next_program
        self._next_program = self._next_program % (p.SLEEP_ID - 1) + 1
        return p.Program(program_id, tuple(commands))

    # ---- commands (ROS services, XML API) -----------------------------------------------
    def queue_blocks(self, rabbits, blocks):
        with self._lock:
            for rabbit in rabbits:
                rabbit.queue.append(tuple(blocks))

    def next_program_id(self):
        with self._lock:
            return self._new_program(()).id

    def queue_program(self, rabbits, commands, program_id=None):
        """A new program (fresh ID, or program_id from next_program_id) for the rabbits;
        returns the ID."""
        with self._lock:
            if program_id is None:
                program = self._new_program(commands)
            else:
                program = p.Program(program_id, tuple(commands))
        self.queue_blocks(rabbits, [self._message(program)])
        return program.id

    def queue_program_text(self, rabbits, text):
        """User program text, checked; an ID line is added when missing. Returns the ID."""
        if not any(line.strip().startswith('ID') for line in text.splitlines()):
            with self._lock:
                text = f'ID {self._new_program(()).id}\n{text}'
        program = p.parse_program(text)
        self.queue_blocks(rabbits, [self._message(program)])
        return program.id

    def queue_special(self, rabbits, program_id):
        """Sleep (SLEEP_ID) or wake (IDLE_ID)."""
        self.queue_blocks(rabbits, [self._message(p.Program(program_id))])

    def queue_raw(self, rabbits, packet):
        p.decode_packet(packet)  # what the rabbit would refuse is refused here
        with self._lock:
            for rabbit in rabbits:
                rabbit.queue.append(bytes(packet))

    def update(self, rabbits, **changes):
        """Set fields (ambient, ping_interval, plugin) of each rabbit."""
        if 'plugin' in changes:
            check_plugin(changes['plugin'])
        with self._lock:
            for rabbit in rabbits:
                for name, value in changes.items():
                    setattr(rabbit, name, value)

    def set_ears(self, rabbits, ears):
        with self._lock:
            for rabbit in rabbits:
                rabbit.ambient = dataclasses.replace(rabbit.ambient, ears=tuple(ears))

    # ---- what the rabbit reported -------------------------------------------------------
    def note_ping(self, rabbit, version, tc, event):
        with self._lock:
            rabbit.bytecode_version = version
            rabbit.tc = tc
            if event.kind in PROGRAM_ENDS:
                rabbit.finished_program = tc
            if event.kind == 'ears_moved':  # keep them where the hand put them
                rabbit.ambient = dataclasses.replace(rabbit.ambient, ears=event.ears)

    def note_boot(self, rabbit):
        with self._lock:
            rabbit.tc = p.BOOTED_TC

    def add_recording(self, rabbit, wav):
        """Store an upload; None for a retry of one already stored, else its name."""
        digest, now = hashlib.sha256(wav).digest(), self._clock()
        with self._lock:
            if any(
                seen == digest and now - at <= RETRY_WINDOW for seen, at in rabbit.upload_digests
            ):
                return None
            rabbit.upload_digests.append((digest, now))
            name = f'{rabbit.serial}-{digest.hex()[:12]}.wav'
            rabbit.recordings[name] = wav
            while len(rabbit.recordings) > KEPT_RECORDINGS:
                rabbit.recordings.popitem(last=False)
            if rabbit.plugin == 'echo':
                rabbit.echo_pending = name
            return name

    def recording(self, name):
        serial = name.split('-', 1)[0]
        with self._lock:
            rabbit = self._rabbits.get(serial)
            return rabbit.recordings.get(name) if rabbit else None

    def call_plugin_method(self, rabbits, method):
        """The XML API's <method>: echo knows replay (the last recording again) and forget."""
        with self._lock:
            for rabbit in rabbits:
                if rabbit.plugin != 'echo' or method not in ('replay', 'forget'):
                    raise MalformedFrame(
                        f'plugin {rabbit.plugin!r} of {rabbit.serial} has no '
                        f'method {method!r} (echo: replay, forget)'
                    )
            for rabbit in rabbits:
                if method == 'forget':
                    rabbit.recordings.clear()
                    rabbit.echo_pending = ''
                elif rabbit.recordings:
                    rabbit.echo_pending = next(reversed(rabbit.recordings))


def check_plugin(name):
    if name not in PLUGINS:
        raise ValueError(f'plugin {name!r} is not one of {", ".join(PLUGINS)}')
