"""A pynab rabbit: the bridge is a service of its nabd (kinds/nabd_protocol.py).

One TCP connection per rabbit, kept in a thread of its own with bounded back-off (the shared
ReconnectingClient). The bridge stays in nabd's idle mode and asks for every event (button,
ears, rfid/*, asr/*): interactive mode would take the rabbit from nabd's other services, stop
their commands and keep ears packets for later, so the bridge never holds it.

Every command is a request with a request_id of ours; its Future is settled by the response
with that id, by the link's loss, or after rabbit_timeout (a command that plays: when nabd
stops answering the liveness probe, since nabd answers a command only once it has played).
Nothing here blocks a caller. Bad lines and unknown packet types are counted, logged once per
kind of error, and skipped.
"""

import concurrent.futures
import dataclasses
import itertools
import json
import logging
import threading
import time
import urllib.error
import urllib.request

from legacy_robot_common.backoff import Backoff
from legacy_robot_common.client import ReconnectingClient
from legacy_robot_common.errors import ConnectionLost, LinkTimeout, MalformedFrame
from legacy_robot_common.ratelimit import RateLimitedLogger
from legacy_robot_common.streams import SocketStream

from . import nabd_protocol as n
from .base import (
    RabbitEvent,
    RabbitLink,
    RabbitState,
    RabbitUnreachable,
    check_ears,
    done,
    failed,
)
from .roster import split_address

TICK = 0.2  # s between looks at the requests' deadlines while nothing arrives
KEEPALIVE = 15.0  # s of silence from nabd before a liveness probe (a gestalt)
PLAY_LIMIT = 600.0  # s a command may play before it counts as lost
LOG_PERIOD = 3600.0  # s: each kind of bad input is logged once, then at most hourly
BACKOFF = (0.5, 5.0)  # s: first and longest wait between connection attempts
BUTTON_EVENTS = {'click': 'click', 'double_click': 'double_click'}  # the rest are not events
LEDS = ('left', 'center', 'right')  # what an info animation lights
PROBE = 'bridge-probe'


@dataclasses.dataclass
class PynabCounters:
    lines: int = 0
    malformed_lines: int = 0
    unknown_types: int = 0
    events: int = 0
    requests: int = 0
    timeouts: int = 0
    refused: int = 0  # answers other than ok
    stray_responses: int = 0  # a request_id we no longer wait for
    last_error: str = ''


@dataclasses.dataclass
class _Pending:
    future: concurrent.futures.Future
    what: str
    deadline: float
    on_ok: object  # Response → the result text


def nabd_color(color):
    """'#rrggbb' (the interface's) → 'rrggbb', as nabd reads it: nabd parses the text as hex and
    a '#' in an info animation stopped nabd itself (seen running it, pynab f24d3e1)."""
    digits = color.removeprefix('#').lower()
    if len(digits) != 6 or any(c not in '0123456789abcdef' for c in digits):
        raise ValueError(f'colour {color!r} is not #rrggbb')
    return digits


class _NabdClient(ReconnectingClient):
    """The connection: reads lines, hands them to the link; the link does the rest."""

    def __init__(self, link, host, port, timeout, logger):
        super().__init__(
            f'pynab {link.serial}',
            lambda: SocketStream.connect(host, port, connect_timeout=timeout),
            read_timeout=timeout,
            backoff=Backoff(BACKOFF[0], BACKOFF[1], 2.0),
            logger=logger,
        )
        self._owner = link

    def run_session(self, link):
        try:
            self._serve(link)
        except Exception as exc:  # the link is lost (or stopping): no answer will come
            self._owner.session_ended(str(exc) or type(exc).__name__)
            raise

    def _serve(self, link):
        owner = self._owner
        line = link.read_until(b'\n', n.MAX_LINE, timeout=owner.timeout)  # nabd's state
        self.mark_connected(f'nabd at {owner.address}')
        owner.session_started()
        owner.receive(line)
        while True:
            try:
                line = link.read_until(b'\n', n.MAX_LINE, timeout=TICK)
            except LinkTimeout:
                owner.tick()
                continue
            except MalformedFrame as exc:  # a line longer than MAX_LINE: dropped
                owner.bad_line(exc)
                continue
            owner.receive(line)
            owner.tick()


class PynabLink(RabbitLink):
    kind = 'pynab'

    def __init__(self, entry, on_event=None, timeout=3.0, log=None, keepalive=KEEPALIVE):
        """entry: .id (the rabbit's name on topics) and .address (its nabd, host[:port]).
        log: (key, text) → a rate-limited warning, or None for this module's logger."""
        super().__init__(entry.id, on_event)
        if timeout <= 0:
            raise ValueError('rabbit_timeout must be positive')
        self.address = entry.address
        self.host, self.port = split_address(entry.address, n.PORT)
        self.timeout, self.keepalive = timeout, keepalive
        logger = logging.getLogger(f'nabaztag_bridge.pynab.{self.serial}')
        self._log = log or RateLimitedLogger(logger, LOG_PERIOD).warning
        self._client = _NabdClient(self, self.host, self.port, timeout, logger)
        self._lock = threading.Lock()
        self._pending = {}  # request_id → _Pending
        self._ids = itertools.count(1)
        self.counters = PynabCounters()
        self.nabd_state = ''
        self.ears = (-1, -1)
        self.last_seen = 0.0
        self._last_line = 0.0  # monotonic
        self._probe_deadline = None

    # ---- life cycle ----------------------------------------------------------------------
    def start(self):
        self._client.start()

    def stop(self):
        self._client.stop()
        self._fail_all('the bridge closed the link')

    @property
    def connected(self):
        return self._client.connected

    def state(self):
        detail = self.nabd_state or self._client.state.value
        if not self.connected and self._client.counters.last_error:
            detail = f'{self._client.state.value}: {self._client.counters.last_error}'
        return RabbitState(
            serial=self.serial,
            kind=self.kind,
            connected=self.connected,
            asleep=self.nabd_state == 'asleep',
            ears=self.ears,
            last_seen=self.last_seen,
            address=self.address,
            detail=detail,
        )

    def diagnostics(self):
        """Counters for the diagnostics: the link's and the connection's."""
        link = self._client.counters.snapshot()
        return dict(
            dataclasses.asdict(self.counters),
            connects=link.connects,
            reconnects=link.reconnects,
            connect_failures=link.connect_failures,
            link_error=link.last_error,
        )

    # ---- commands ----------------------------------------------------------------------
    def set_ears(self, left, right):
        check_ears(left, right)

        def moved(_response):
            if self.nabd_state == 'idle':
                self.ears = (left, right)
                return f'ears at {left}, {right}'
            return f'ears kept for idle (nabd is {self.nabd_state}): {left}, {right}'

        return self._request('ears', n.encode_ears, moved, left=left, right=right)

    def play_url(self, url):
        return self.play_urls([url])

    def play_urls(self, urls, gesture_url=None, program_id=None):
        """One command: the files one after another; gesture_url (a .chor the bridge serves)
        plays with them, fetched here and sent as a data: URL. program_id: nabd reports no
        program ends (its answer is the end), so none is used."""
        if not urls:
            raise ValueError('nothing to play')

        def play(choreography=None):
            return self._request(
                'play',
                n.encode_command,
                lambda _r: f'played {len(urls)} file(s)',
                PLAY_LIMIT,
                sequence=[n.audio_item(*urls, choreography=choreography)],
            )

        if not gesture_url:
            return play()
        return self._after_fetch(gesture_url, lambda data: play(n.choreography_data_url(data)))

    def set_leds(self, colors):
        """left/center/right (and 'middle' for center) as an info animation, which nabd shows
        while idle; the nose and the base are not in nabd's info."""
        colors = {('center' if k == 'middle' else k): v for k, v in colors.items()}
        unknown = sorted(set(colors) - set(LEDS))
        if unknown:
            self.cannot(f'set the {", ".join(unknown)} LED (nabd shows left, center, right)')
        animation = {'tempo': 1000, 'colors': [{k: nabd_color(v) for k, v in colors.items()}]}
        return self._request(
            'leds',
            n.encode_info,
            lambda _r: 'LEDs shown while idle',
            info_id='nabaztag_bridge',
            animation=animation,
        )

    def choreography(self, name_or_url):
        """A nabd choreography name, a urn:x-chor: URN, a data: URL, or an http(s) URL of a
        .chor file (fetched here, in a thread, and sent as a data: URL)."""
        if not name_or_url.startswith(('http://', 'https://')):
            return self._play_choreography(name_or_url)
        return self._after_fetch(
            name_or_url, lambda data: self._play_choreography(n.choreography_data_url(data))
        )

    def _after_fetch(self, url, then):
        """Fetch url in a thread of its own (bounded by rabbit_timeout), then then(bytes) → a
        Future whose outcome becomes the returned Future's."""
        result = concurrent.futures.Future()

        def fetch():
            try:
                with urllib.request.urlopen(url, timeout=self.timeout) as reply:
                    data = reply.read(1 << 20)
            except (urllib.error.URLError, OSError, ValueError) as exc:
                result.set_exception(ValueError(f'cannot fetch {url}: {exc}'))
                return
            _chain(then(data), result)

        threading.Thread(target=fetch, name=f'pynab-fetch-{self.serial}', daemon=True).start()
        return result

    def _play_choreography(self, choreography):
        return self._request(
            'choreography',
            n.encode_command,
            lambda _r: 'choreography played',
            PLAY_LIMIT,
            sequence=[n.choreography_item(choreography)],
        )

    def sleep(self):
        return self._request('sleep', n.encode_sleep, lambda _r: 'asleep')

    def wakeup(self):
        return self._request('wakeup', n.encode_wakeup, lambda _r: 'awake')

    def raw(self, text):
        """A nabd packet (a JSON object with its type); our request_id is added when it has
        none. A cancel has no answer of its own: it is settled once sent."""
        try:
            packet = json.loads(text)
        except ValueError as exc:
            raise ValueError(f'not JSON: {exc}') from None
        if not isinstance(packet, dict) or not isinstance(packet.get('type'), str):
            raise ValueError('a nabd packet is a JSON object with a text "type"')
        if packet['type'] == 'cancel':
            try:
                self._client.send(n.encode(packet))
            except ConnectionLost as exc:
                return failed(RabbitUnreachable(self._unreachable(exc)))
            return done('cancel sent (the command it cancels answers canceled)')
        limit = PLAY_LIMIT if packet['type'] in ('command', 'message') else None

        def encode(request_id, **slots):
            return n.encode({**packet, 'request_id': packet.get('request_id') or request_id})

        return self._request(f'raw {packet["type"]}', encode, _answer_text, limit)

    # ---- requests ------------------------------------------------------------------------
    def _request(self, what, encode, on_ok, limit=None, **slots):
        """Send encode(request_id, **slots); the Future settles on nabd's answer."""
        request_id = f'ros-{next(self._ids)}'
        line = encode(request_id=request_id, **slots)
        request_id = json.loads(line)['request_id']  # a raw packet may bring its own
        future = concurrent.futures.Future()
        deadline = time.monotonic() + (limit or self.timeout)
        with self._lock:
            self._pending[request_id] = _Pending(future, what, deadline, on_ok)
            self.counters.requests += 1
        try:
            self._client.send(line)
        except ConnectionLost as exc:
            self._settle(request_id, error=RabbitUnreachable(self._unreachable(exc)))
        return future

    def _unreachable(self, exc):
        last = self._client.counters.last_error
        return f'{self.serial}: nabd at {self.address} not connected ({last or exc})'

    def _settle(self, request_id, result=None, error=None):
        with self._lock:
            pending = self._pending.pop(request_id, None)
        if pending is None:
            return False
        if error is not None:
            pending.future.set_exception(error)
        else:
            pending.future.set_result(result)
        return True

    def _fail_all(self, reason):
        with self._lock:
            pending, self._pending = self._pending, {}
        for request in pending.values():
            request.future.set_exception(RabbitUnreachable(f'{self.serial}: {reason}'))

    # ---- the link thread -------------------------------------------------------------------
    def session_started(self):
        self._last_line = time.monotonic()
        self._probe_deadline = None
        self._client.send(n.encode_mode('idle', n.EVENT_KINDS, 'bridge-mode'))

    def session_ended(self, reason):
        self._fail_all(f'the link to nabd at {self.address} was lost ({reason})')

    def receive(self, line):
        self.counters.lines += 1
        self.last_seen = time.time()
        self._last_line = time.monotonic()
        self._probe_deadline = None
        try:
            record = n.decode(line)
        except n.UnknownPacketType as exc:
            self.counters.unknown_types += 1
            self.counters.last_error = str(exc)
            self._log('unknown-type', f'{self.serial}: nabd sent {exc}; skipped')
            return
        except MalformedFrame as exc:
            self.bad_line(exc)
            return
        handler = getattr(self, '_on_' + type(record).__name__)
        handler(record)

    def bad_line(self, exc):
        self.counters.malformed_lines += 1
        self.counters.last_error = str(exc)
        self._log('malformed', f'{self.serial}: malformed line from nabd skipped: {exc}')

    def tick(self):
        """Deadlines: requests nabd has not answered, and the liveness probe."""
        now = time.monotonic()
        with self._lock:
            late = [rid for rid, p in self._pending.items() if p.deadline <= now]
            playing = any(p.deadline - now > self.timeout for p in self._pending.values())
        for request_id in late:
            self.counters.timeouts += 1
            self._settle(request_id, error=RabbitUnreachable(self._late(request_id)))
        if self._probe_deadline is not None and now > self._probe_deadline:
            raise ConnectionLost(f'nabd did not answer a gestalt within {self.timeout:.1f} s')
        silence = now - self._last_line
        if self._probe_deadline is None and silence > (
            self.timeout if playing else self.keepalive
        ):
            self._probe_deadline = now + self.timeout
            self._client.send(n.encode_gestalt(PROBE))

    def _late(self, request_id):
        why = ''
        if self.nabd_state == 'interactive':
            why = ' (another service holds interactive mode: nabd waits until it is idle)'
        elif self.nabd_state == 'asleep':
            why = ' (the rabbit is asleep: nabd keeps commands until it wakes up)'
        return f'{self.serial}: nabd did not answer within {self.timeout:.1f} s{why}'

    def _on_State(self, record):
        self.nabd_state = record.state

    def _on_Response(self, record):
        if record.request_id in (PROBE, 'bridge-mode'):
            if not record.ok:
                self._log(
                    'mode', f'{self.serial}: nabd refused {record.request_id}: {record.reason()}'
                )
            return
        with self._lock:
            pending = self._pending.get(record.request_id)
        if pending is None:
            self.counters.stray_responses += 1
            return
        if record.ok:
            self._settle(record.request_id, result=pending.on_ok(record))
        else:
            self.counters.refused += 1
            self._settle(record.request_id, error=ValueError(f'{pending.what}: {record.reason()}'))

    def _on_ButtonEvent(self, record):
        event = BUTTON_EVENTS.get(record.event)
        if event:
            self._emit(event)

    def _on_EarsEvent(self, record):
        self.ears = (record.left, record.right)
        self._emit('ears_moved', ears=self.ears)

    def _on_EarEvent(self, record):
        self._emit('ears_moved')  # interactive mode says which ear, not where

    def _on_RfidEvent(self, record):
        self._emit('rfid' if record.event == 'detected' else 'rfid_removed', rfid=record.tag)

    def _on_AsrEvent(self, record):
        slots = tuple(sorted((str(k), _slot_text(v)) for k, v in record.slots.items()))
        self._emit('intent', intent=record.intent, slots=slots)

    def _emit(self, event, **values):
        self.counters.events += 1
        self.on_event(RabbitEvent(self.serial, self.kind, event, time.time(), **values))


def _slot_text(value):
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _answer_text(response):
    extra = json.dumps(response.fields, sort_keys=True) if response.fields else ''
    return f'nabd answered {response.status or "ok"}' + (f': {extra}' if extra else '')


def _chain(source, target):
    def copy(done):
        if done.exception() is not None:
            target.set_exception(done.exception())
        else:
            target.set_result(done.result())

    source.add_done_callback(copy)
