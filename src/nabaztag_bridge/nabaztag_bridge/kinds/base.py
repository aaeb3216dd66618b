"""The one rabbit interface: what the node, the services and the rules ask of any rabbit.

How a kind plugs in:

1. Write `kinds/<kind>.py` with a subclass of `RabbitLink` that sets `kind` and implements
   the abstract commands. A command never blocks its caller: it returns a
   `concurrent.futures.Future` (see `done()` for one already finished) whose result is a short
   text saying what was done, or whose exception is `RabbitUnreachable` (the rabbit did not
   answer within `rabbit_timeout`) or `ValueError` (the rabbit refused it). A command the kind
   has no way to carry out raises `KindCannot` at once, before any I/O.
2. The link reports what the rabbit did as `RabbitEvent`s through the `on_event` callback it
   was built with, from any thread; the node hands them to the executor.
3. `state()` answers at once (no I/O) from what the link last learnt.
4. Add the kind's name and constructor to `kinds.KINDS`; the rabbits file names the kind.

Nothing outside `kinds/` asks which kind a rabbit is.
"""

import abc
import concurrent.futures
import dataclasses

EARS_MAX = 16  # ear positions 0..16 on every kind (the motors' holes)


class KindCannot(ValueError):
    """This kind of rabbit has no way to do that: the service answers success false."""

    def __init__(self, kind, what):
        super().__init__(f'a {kind} rabbit cannot {what}')
        self.kind, self.what = kind, what


class RabbitUnreachable(ConnectionError):
    """The rabbit did not answer within rabbit_timeout (or refused the connection)."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


@dataclasses.dataclass(frozen=True)
class RabbitState:
    """What the bridge knows about one rabbit, whatever its kind."""

    serial: str
    kind: str
    connected: bool = False
    asleep: bool = False
    ears: tuple = (-1, -1)  # positions 0..16, -1 unknown
    last_seen: float = 0.0  # time.time() of the last word from the rabbit, 0 never
    address: str = ''  # where the bridge reaches it ('' for a rabbit that calls us)
    detail: str = ''  # kind-specific, one line (a state name, the last error)


@dataclasses.dataclass(frozen=True)
class RabbitEvent:
    """Something a rabbit did. event: click, double_click, ears_moved, rfid, rfid_removed,
    recording, intent (and the Violet kind's others: boot, locate, end_of_message, ...)."""

    serial: str
    kind: str
    event: str
    time: float = 0.0  # time.time() when the bridge heard it
    ears: tuple = ()  # ears_moved: (left, right) positions
    rfid: str = ''  # rfid, rfid_removed: the tag id in hex
    audio: bytes = b''  # recording: the WAV file as the rabbit sent it
    double_click: bool = False  # recording: made with a long double click
    intent: str = ''  # intent: the recognised intent's name
    slots: tuple = ()  # intent: (name, value) pairs


def done(text):
    """A finished future with text as its result (a command carried out without waiting)."""
    future = concurrent.futures.Future()
    future.set_result(text)
    return future


def failed(exc):
    future = concurrent.futures.Future()
    future.set_exception(exc)
    return future


def check_ears(left, right):
    for value in (left, right):
        if not 0 <= value <= EARS_MAX:
            raise ValueError(f'ear position {value} is not 0..{EARS_MAX}')


class RabbitLink(abc.ABC):
    """One declared (or, for violet, self-announced) rabbit. serial: its id on every topic
    and service (a MAC's 12 hex digits, or the name the rabbits file gives it)."""

    kind = ''

    def __init__(self, serial, on_event=None):
        self.serial = serial
        self.on_event = on_event or (lambda event: None)
        self.counters = {}  # name → count, shown in the rabbit's diagnostics status

    # ---- life cycle (the node's configure / cleanup) -------------------------------------
    def start(self):
        """Open what the kind needs (a connection, a worker thread); never blocks long."""
        return None  # a kind with nothing to open (violet: the rabbit calls the bridge)

    def stop(self):
        """Close it; pending commands fail with RabbitUnreachable."""
        return None

    @abc.abstractmethod
    def state(self):
        """A RabbitState, at once."""

    # ---- commands: each returns a Future of a text -------------------------------------
    @abc.abstractmethod
    def set_ears(self, left, right):
        """Move the ears to positions 0..16."""

    @abc.abstractmethod
    def play_url(self, url):
        """Play an MP3 the rabbit fetches from url (the bridge serves speech and media)."""

    def play_urls(self, urls, gesture_url=None, program_id=None):
        """Play several files one after another (speech split in parts); gesture_url: a
        choreography to play with the first (where the kind can); program_id: from
        reserve_program_id."""
        if len(urls) == 1:
            return self.play_url(urls[0])
        raise KindCannot(self.kind, 'play several files in one go')

    def reserve_program_id(self):
        """An id the rabbit will report when the next play_urls ends, or None (it reports
        no end)."""
        return None

    def stream_url(self, url):
        raise KindCannot(self.kind, 'stream a sound')

    def set_nose(self, value):
        """The nose: 0 off, 1.. blinking (what the kind makes of it)."""
        raise KindCannot(self.kind, 'set its nose')

    def set_leds(self, colors):
        """colors: {'nose'|'left'|'center'|'right'|'base': '#rrggbb'}."""
        raise KindCannot(self.kind, 'set its LEDs')

    def choreography(self, name_or_url):
        """A choreography: a URL the rabbit fetches (violet), or a name the kind knows."""
        raise KindCannot(self.kind, 'play a choreography')

    @abc.abstractmethod
    def sleep(self):
        """Go to sleep (ears down, lights off)."""

    @abc.abstractmethod
    def wakeup(self):
        """Wake up."""

    @abc.abstractmethod
    def raw(self, text):
        """The kind's own escape: a Violet program, a Forth line, a nabd packet (JSON)."""

    def set_ambient(self, ambient):
        """Violet's ambient block (services, ears, nose blinks)."""
        raise KindCannot(self.kind, 'take an ambient block')

    def setting(self, name, value, text):
        """Violet's settings: ping_interval, plugin, reboot."""
        raise KindCannot(self.kind, f'change {name}')

    def raw_packet(self, packet):
        raise KindCannot(self.kind, 'take a Violet packet')

    def diagnostics(self):
        """The link's counters for its rabbit's diagnostics status."""
        return dict(self.counters)

    def accepts(self, address):
        """Whether a request from address (a hook) comes from this rabbit."""
        return False

    # ---- for the links ------------------------------------------------------------------
    def cannot(self, what):
        raise KindCannot(self.kind, what)
