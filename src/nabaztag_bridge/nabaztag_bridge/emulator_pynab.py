"""An emulated pynab rabbit: a nabd that serves the service protocol (kinds/nabd_protocol.py)
as nabd was seen to behave, for the bridge's tests, the demo and users without a rabbit.

    nabaztag_emulator --kind pynab --port 10543 --console

It listens on 127.0.0.1 (nabd's own default). What it plays out, as nabd does:
- every connection gets the state at once, and every change of state;
- commands and messages wait for the rabbit to be idle (not asleep, not interactive with
  another service), "play" (each audio URL is fetched over HTTP and lasts as long as its
  audio; a choreography lasts CHOREOGRAPHY_SECONDS) and are answered ok when done,
  canceled when a click or a cancel stopped them, expired when their date passed;
- the service in interactive mode plays its commands at once; ears sent then are kept for
  idle, and a sleep waits until the rabbit is idle again; wakeup answers at once;
- events reach the services that asked for them, or only the interactive one;
- bad lines are answered with an error response, as nabd answers them.
A console and methods (click, move_ears, show_tag, remove_tag, hear_intent) make events.
"""

import collections
import dataclasses
import datetime
import json
import sys
import threading
import time
import urllib.error
import urllib.request

from legacy_robot_common.emulator import TcpEmulatorServer
from legacy_robot_common.errors import ConnectionLost, MalformedFrame

from . import mp3, recording
from .kinds import nabd_protocol as n

SLEEP_EAR_POSITION = 10  # where nabd puts the ears to sleep
EAR_SETTLE = 0.5  # s nabd waits after an ear moved by hand before it detects the positions
CHOREOGRAPHY_SECONDS = 0.5  # how long a choreography without audio "plays"
UNKNOWN_AUDIO_SECONDS = 0.3  # an audio entry that is not a URL (a nabd resource name)
FETCH_TIMEOUT = 5.0
MP3_BYTES_PER_SECOND = 16000  # the length of a file that is neither MP3 nor WAV (128 kbit/s)
DEFAULT_EVENTS = ('ears', 'button')  # what interactive mode sends when events are not given


@dataclasses.dataclass(eq=False)
class Service:
    """One connected client of nabd."""

    stream: object
    events: list = dataclasses.field(default_factory=list)
    lock: object = dataclasses.field(default_factory=threading.Lock)

    def send(self, data):
        with self.lock:
            try:
                self.stream.write(data)
            except ConnectionLost:
                pass  # its reader notices and removes it


@dataclasses.dataclass
class Playing:
    request_id: str
    cancelable: bool
    stop: threading.Event = dataclasses.field(default_factory=threading.Event)
    canceled: bool = False


class NabdEmulator:
    def __init__(self, host='127.0.0.1', port=0, time_scale=1.0, fetch=None):
        self.time_scale = time_scale
        self._fetch = fetch or _http_get
        self._server = TcpEmulatorServer(self._serve, host, port, name='nabd')
        self._lock = threading.RLock()
        self._work = threading.Condition(self._lock)
        self._queue = collections.deque()  # (packet, service) waiting for idle
        self._services = {}  # Service → True, in connection order
        self._interactive = None  # the Service holding interactive mode
        self._interactive_events = []
        self._playing = None
        self._running = False
        self._started = time.monotonic()
        self.state = 'idle'
        self.ears = [0, 0]  # where the ears are
        self.idle_ears = [0, 0]  # where they go in idle (set by ears packets)
        self.info = {}
        self.played = []  # (request_id, audio entries) of every command played, in order
        self.received = []  # every packet received, as decoded
        self.counters = collections.Counter()
        self.last_audio_error = ''
        self.description = ''

    # ---- life cycle ---------------------------------------------------------------------
    def start(self):
        self._running = True
        port = self._server.start()
        self.description = f'nabd on {self._server.address[0]}:{port}'
        threading.Thread(target=self._idle_worker, name='nabd-idle', daemon=True).start()
        return self

    @property
    def port(self):
        return self._server.port

    @property
    def address(self):
        return self._server.address

    def stop(self):
        with self._lock:
            self._running = False
            if self._playing:
                self._playing.stop.set()
            self._work.notify_all()
        self._server.stop()

    def drop_clients(self):
        self._server.drop_clients()

    def send_raw(self, data):
        """Bytes to every service as they are (a test's malformed line)."""
        for service in self._connected():
            service.send(data)

    def _connected(self):
        with self._lock:
            return list(self._services)

    # ---- a service's connection ---------------------------------------------------------
    def _serve(self, stream, stop):
        service = Service(stream)
        with self._lock:
            self._services[service] = True
            service.send(n.state_packet(self.state))
        buffer = bytearray()
        try:
            while not stop.is_set():
                data = stream.read(65536, 0.2)
                buffer += data
                while b'\n' in buffer:
                    line, _, rest = bytes(buffer).partition(b'\n')
                    buffer[:] = rest
                    if line.strip():
                        self._handle(line, service)
                if len(buffer) > n.MAX_LINE:
                    buffer.clear()
                    self.counters['bad_lines'] += 1
                    service.send(n.response_packet(None, 'error', 'LimitOverrun', 'line too long'))
        finally:
            with self._lock:
                self._services.pop(service, None)
                if self._interactive is service:
                    self._leave_interactive()

    def _handle(self, line, service):
        try:
            packet = n.decode_request(line)
        except MalformedFrame as exc:
            self.counters['bad_lines'] += 1
            request_id = _request_id_of(line)
            error_class = 'MalformedPacket' if _is_json_object(line) else 'JSONDecodeError'
            service.send(n.response_packet(request_id, 'error', error_class, str(exc)))
            return
        self.counters[packet['type']] += 1
        with self._lock:
            self.received.append(packet)
        getattr(self, '_on_' + packet['type'])(packet, service)

    def _answer(self, packet, service, status='ok', **fields):
        service.send(n.response_packet(packet.get('request_id'), status, **fields))

    def _error(self, packet, service, error_class, message):
        service.send(n.response_packet(packet.get('request_id'), 'error', error_class, message))

    # ---- packets ------------------------------------------------------------------------
    def _on_info(self, packet, service):
        bad = _bad_colors(packet.get('animation'))
        if bad:
            # nabd itself answers ok, then stops on its first frame (int(text, 16) raises)
            self.counters['bad_colors'] += 1
            self._error(packet, service, 'ValueError', f'colors not hex rrggbb: {bad}')
            return
        with self._lock:
            if 'animation' in packet:
                self.info[packet['info_id']] = packet['animation']
            else:
                self.info.pop(packet['info_id'], None)
        self._answer(packet, service)

    def _on_ears(self, packet, service):
        with self._lock:
            for index, side in enumerate(('left', 'right')):
                if side in packet:
                    self.idle_ears[index] = packet[side]
            if self.state == 'idle':  # in any other state they are kept for idle
                self.ears = list(self.idle_ears)
                if packet.get('event'):
                    self._broadcast('ears', n.ears_event_packet(*self.ears, time.time()))
        self._answer(packet, service)

    def _on_command(self, packet, service):
        self._perform_or_queue(packet, service)

    def _on_message(self, packet, service):
        self._perform_or_queue(packet, service)

    def _perform_or_queue(self, packet, service):
        with self._lock:
            if self._interactive is service:
                threading.Thread(target=self._perform, args=(packet, service), daemon=True).start()
                return
            self._queue.append((packet, service))
            self._work.notify_all()

    def _on_cancel(self, packet, service):
        with self._lock:
            playing = self._playing
            if playing is None or playing.request_id != packet['request_id']:
                self._error(
                    packet,
                    service,
                    'NotPlaying',
                    'Cancel packet does not refer to running command',
                )
            elif not playing.cancelable:
                self._error(packet, service, 'NotCancelable', 'Playing command is not cancelable')
            else:  # no answer of its own: the command's says canceled
                playing.canceled = True
                playing.stop.set()

    def _on_wakeup(self, packet, service):
        self._answer(packet, service)
        with self._lock:
            if self.state == 'asleep':
                self._set_state('idle')

    def _on_sleep(self, packet, service):
        with self._lock:
            if self.state == 'asleep':
                self._answer(packet, service)
                return
            self._queue.append((packet, service))
            self._work.notify_all()

    def _on_mode(self, packet, service):
        events = list(packet.get('events', []))
        with self._lock:
            if packet['mode'] == 'idle':
                service.events = events
                if self._interactive is service:
                    self._leave_interactive()
                self._answer(packet, service)
            elif self._interactive is service:
                self._interactive_events = events or list(DEFAULT_EVENTS)
                self._answer(packet, service)
            elif self._interactive is not None:
                self._error(
                    packet,
                    service,
                    'AlreadyInInteractiveMode',
                    'Nabd is already in interactive mode',
                )
            else:
                self._queue.append((packet, service))
                self._work.notify_all()

    def _on_gestalt(self, packet, service):
        with self._lock:
            values = dict(
                state=self.state,
                connections=len(self._services),
                hardware={'model': 'nabaztag_emulator'},
                uptime=int(time.monotonic() - self._started),
            )
        service.send(n.response_packet(packet.get('request_id'), '', **values))

    def _on_rfid_write(self, packet, service):
        self._answer(packet, service, uid=packet['uid'])

    # ---- states ---------------------------------------------------------------------------
    def _set_state(self, state):
        """Under the lock."""
        if state == self.state:
            return
        self.state = state
        if state == 'idle':
            self.ears = list(self.idle_ears)
            self._work.notify_all()
        elif state == 'asleep':
            self.ears = [SLEEP_EAR_POSITION, SLEEP_EAR_POSITION]
        packet = n.state_packet(state)
        for service in self._services:
            service.send(packet)

    def _leave_interactive(self):
        self._interactive = None
        self._interactive_events = []
        self._set_state('idle')

    def _idle_worker(self):
        """Takes the queue's items one by one while the rabbit is idle."""
        while True:
            with self._lock:
                while self._running and not (self.state == 'idle' and self._queue):
                    self._work.wait()
                if not self._running:
                    return
                packet, service = self._queue.popleft()
                if service not in self._services:
                    continue
                kind = packet['type']
                if kind == 'sleep':
                    self._answer(packet, service)
                    self._set_state('asleep')
                    continue
                if kind == 'mode':
                    self._answer(packet, service)
                    self._interactive = service
                    self._interactive_events = list(packet.get('events') or DEFAULT_EVENTS)
                    self._set_state('interactive')
                    continue
                # the command is the one playing before any service hears "playing" (a
                # cancel sent on that news finds it)
                playing = self._start_playing(packet)
                self._set_state('playing')
            self._perform(packet, service, playing)
            with self._lock:
                if self.state == 'playing':
                    self._set_state('idle')

    def _start_playing(self, packet):
        """Under the lock: packet's command becomes the one playing."""
        self._playing = Playing(
            packet.get('request_id', ''), packet.get('cancelable', True) is not False
        )
        return self._playing

    def _perform(self, packet, service, playing=None):
        if _expired(packet.get('expiration')):
            with self._lock:
                if self._playing is playing:
                    self._playing = None
            self._answer(packet, service, 'expired')
            return
        if playing is None:  # an interactive service's command, played beside the queue
            with self._lock:
                playing = self._start_playing(packet)
        if packet['type'] == 'command':
            items = packet['sequence']
        else:
            signature = [packet['signature']] if isinstance(packet.get('signature'), dict) else []
            items = signature + packet['body'] + signature
        self._play(items, playing)
        with self._lock:
            self.played.append((playing.request_id, n.sequence_audio(items)))
            if self._playing is playing:
                self._playing = None
        self._answer(packet, service, 'canceled' if playing.canceled else 'ok')

    def _play(self, items, playing):
        for item in items:
            audio = [a for a in item.get('audio', []) if isinstance(a, str)]
            seconds = sum(self._audio_seconds(a) for a in audio) if audio else 0.0
            if not audio and item.get('choreography'):
                seconds = CHOREOGRAPHY_SECONDS
            if playing.stop.wait(seconds * self.time_scale):
                return

    def _audio_seconds(self, entry):
        if not entry.startswith(('http://', 'https://')):
            return UNKNOWN_AUDIO_SECONDS
        try:
            data = self._fetch(entry)
        except OSError as exc:
            self.counters['audio_errors'] += 1
            self.last_audio_error = f'{entry}: {exc}'
            return 0.0
        try:
            if data[:4] == b'RIFF':
                samples, rate = recording.decode_wav(data)
                return len(samples) / rate
            return mp3.scan(data).seconds
        except MalformedFrame:
            self.counters['bad_audio'] += 1
            return len(data) / MP3_BYTES_PER_SECOND

    # ---- events (what someone does to the rabbit) --------------------------------------------
    def _broadcast(self, event_type, packet):
        """Under the lock: to the interactive service if it asked, else to every service that
        asked for this type."""
        if self._interactive is not None:
            if _wants(self._interactive_events, event_type):
                self._interactive.send(packet)
            return
        for service in self._services:
            if _wants(service.events, event_type):
                service.send(packet)

    def button(self, event):
        """down, up, click, double_click, click_and_hold: a click in a cancelable command
        cancels it (and is not sent) unless the interactive service takes the button."""
        if event not in n.BUTTON_EVENTS:
            raise ValueError(f'button event {event!r} is not one of {n.BUTTON_EVENTS}')
        with self._lock:
            interactive_takes_it = self._interactive is not None and _wants(
                self._interactive_events, 'button'
            )
            playing = self._playing
            if event == 'click' and not interactive_takes_it and playing and playing.cancelable:
                playing.canceled = True
                playing.stop.set()
                return
            self._broadcast('button', n.button_event_packet(event, time.time()))

    def click(self):
        self.button('click')

    def double_click(self):
        self.button('double_click')

    def move_ears(self, left, right):
        """Turn the ears by hand: the interactive service hears which ear moved; otherwise,
        after EAR_SETTLE, every service hears the positions (not while asleep)."""
        with self._lock:
            if self._interactive is not None:
                for index, side in enumerate(('left', 'right')):
                    if (left, right)[index] != self.ears[index]:
                        self.ears[index] = (left, right)[index]
                        if _wants(self._interactive_events, 'ears'):
                            self._interactive.send(n.ear_event_packet(side, time.time()))
                return
        threading.Timer(EAR_SETTLE * self.time_scale, self._ears_settled, (left, right)).start()

    def _ears_settled(self, left, right):
        with self._lock:
            self.ears = [left, right]
            self.idle_ears = [left, right]
            if self.state != 'asleep':
                self._broadcast('ears', n.ears_event_packet(left, right, time.time()))

    def show_tag(self, tag, app=None, data=None):
        self._rfid(tag, 'detected', app, data)

    def remove_tag(self, tag):
        self._rfid(tag, 'removed')

    def _rfid(self, tag, event, app=None, data=None):
        uid = n.uid_text(tag)
        packet = {'type': 'rfid_event', 'tech': 'st25tb', 'uid': uid, 'event': event}
        packet['time'] = time.time()
        if event == 'detected':
            packet['support'] = 'formatted' if app else 'unknown'
            if app:
                packet.update(app=app, data=data or '', picture=0)
        with self._lock:
            self._broadcast(f'rfid/{app}' if app else 'rfid/*', n.encode(packet))

    def hear_intent(self, intent, **slots):
        """Someone held the button and spoke; nabd understood intent (recording, then idle,
        then the asr_event). Only an idle rabbit listens, as nabd."""
        with self._lock:
            if self.state != 'idle':
                raise ValueError(f'the rabbit listens only when idle (it is {self.state})')
            self._set_state('recording')
            self._set_state('idle')
            app = intent.split('/', 1)[0] if '/' in intent else '*'
            self._broadcast(f'asr/{app}', n.asr_event_packet(intent, time.time(), **slots))

    def status(self):
        with self._lock:
            return dict(
                state=self.state,
                ears=tuple(self.ears),
                idle_ears=tuple(self.idle_ears),
                services=len(self._services),
                interactive=self._interactive is not None,
                queued=len(self._queue),
                info=sorted(self.info),
                counts=dict(self.counters),
            )


def _wants(events, event_type):
    """nabd's event mask: the type itself, or its family's 'x/*'."""
    if event_type in events:
        return True
    return '/' in event_type and event_type.split('/', 1)[0] + '/*' in events


def _expired(expiration):
    if not isinstance(expiration, str):
        return False
    try:
        date = datetime.datetime.fromisoformat(expiration)
    except ValueError:
        return False
    now = datetime.datetime.now(date.tzinfo) if date.tzinfo else datetime.datetime.now()
    return date < now


def _is_json_object(line):
    """Whether line is a JSON object, with or without a type (nabd: MalformedPacket, not
    JSONDecodeError, for an object it cannot use)."""
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, TypeError):
        return False


def _request_id_of(line):
    try:
        request_id = n.parse_line(line).get('request_id')
    except MalformedFrame:
        return None
    return request_id if isinstance(request_id, str) else None


def _http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as reply:
            return reply.read(8 << 20)
    except (urllib.error.URLError, ValueError) as exc:
        raise OSError(str(exc)) from None


# ---- command line ----------------------------------------------------------------------------
CONSOLE_HELP = (
    'commands: click | double-click | button <event> | ears <left> <right> | rfid <hex> [app] '
    '| rfid-removed <hex> | intent <name> [slot=value ...] | status | help'
)


def run_console_command(nabd, words):
    command, args = words[0], words[1:]
    if command == 'click':
        nabd.click()
    elif command == 'double-click':
        nabd.double_click()
    elif command == 'button':
        nabd.button(args[0])
    elif command == 'ears':
        nabd.move_ears(int(args[0]), int(args[1]))
    elif command == 'rfid':
        nabd.show_tag(args[0], *args[1:2])
    elif command == 'rfid-removed':
        nabd.remove_tag(args[0])
    elif command == 'intent':
        slots = dict(a.split('=', 1) for a in args[1:] if '=' in a)
        nabd.hear_intent(args[0], **slots)
    elif command == 'status':
        return str(nabd.status())
    else:
        return CONSOLE_HELP
    return f'ok: {command}'


def console(nabd, lines=sys.stdin, out=sys.stdout):
    for line in lines:
        words = line.split()
        if not words:
            continue
        try:
            print(run_console_command(nabd, words), file=out, flush=True)
        except (ValueError, IndexError) as exc:
            print(f'error: {exc}; {CONSOLE_HELP}', file=out, flush=True)


def make_emulator(args):
    """The pynab emulator from nabaztag_emulator's options (--host, --port, --console)."""
    nabd = NabdEmulator(args.host, args.port, args.time_scale)
    if args.console:
        threading.Thread(target=console, args=(nabd,), daemon=True).start()
    return nabd


def _bad_colors(animation):
    """The colours of an info animation that nabd cannot read (it parses each as hex)."""
    frames = animation.get('colors', []) if isinstance(animation, dict) else []
    return [
        value
        for frame in frames
        if isinstance(frame, dict)
        for value in frame.values()
        if value and not (isinstance(value, str) and _is_hex(value))
    ]


def _is_hex(text):
    return all(c in '0123456789abcdefABCDEF' for c in text)
