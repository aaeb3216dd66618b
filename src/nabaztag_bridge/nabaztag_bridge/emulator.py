"""Emulated Nabaztag/tag rabbits running the ping-era program, against any server.

    nabaztag_emulator --server 127.0.0.1:8080/vl --rabbits 3 --console

Each rabbit boots (bc.jsp), locates (locate.jsp), pings (p4.jsp) with the sd /
tc semantics of docs/protocols/nabaztag.md §3.4-3.5, applies every reply by the
rabbit's rules, plays message programs (resources downloaded first; LEDs, ears, audio and
streams as state), reports the end of a program at once, and can be told to click,
double-click, move its ears, show an RFID tag or record (an IMA ADPCM WAV,
uploaded with up to 3 attempts). Many rabbits run in one process for load tests.
"""

import argparse
import collections
import dataclasses
import importlib.util
import pathlib
import queue
import socket
import sys
import threading
import time

from legacy_robot_common.artifacts import save_wav
from legacy_robot_common.emulator import add_host_argument, run_emulator
from legacy_robot_common.errors import MalformedFrame

from . import choreography as chor
from . import mp3, recording
from . import protocol as p
from .kinds.roster import split_address

NET_TIMEOUT = 10.0  # s of silence before the rabbit gives up a request
RETRY_DELAY = 1.0  # s between boot / locate attempts
RECORD_DELAY = 4.0  # s after an upload before the next ping
STREAMING_PING = 60  # s between pings while streaming
MP3_BYTES_PER_SECOND = 16000  # audio length estimate for non-WAV files (128 kbit/s)
LONG_CLICK = 1.5  # s: a longer press records
MP3_DECODER_PACKAGE = 'miniaudio'  # optional: only the WAVs of --audio-dir need it
PLAYED_KEPT = 100  # resources remembered per rabbit: a fleet runs for days


@dataclasses.dataclass(frozen=True)
class PlayedAudio:
    """A program's audio as audio_dir received it: the WAV and the URLs it came from, and how
    many programs' audio the rabbit had received by then, this one included."""

    path: pathlib.Path
    urls: tuple
    number: int = 0


@dataclasses.dataclass(frozen=True)
class RabbitOptions:
    server: str = '127.0.0.1:8080/vl'  # the rabbit's "Violet Platform" setting
    serial: str = '0019db000001'
    firmware: str = '0.0.0.13'
    bytecode_version: int = 65808
    boot: bool = True  # False: skip bc.jsp (bridge without a bytecode)
    time_scale: float = 1.0  # multiplies playback and record durations
    upload_attempts: int = 3
    stream_seconds: float = 5.0
    net_timeout: float = NET_TIMEOUT  # s of server silence before a request is given up
    start_delay: float = 0.0  # s before the rabbit is switched on
    audio_dir: str = ''  # write what each program played (MU/MC audio) as a WAV here


def split_url(url):
    """'http://host:port/path' or 'host/path' → (host, port, '/path'); port 80 by default."""
    if url.startswith('http://'):
        url = url[len('http://') :]
    location, slash, path = url.partition('/')
    host, _, port = location.partition(':')
    return host, int(port or 80), slash + path


def ping_url(base, serial, version, sd, tc):
    """The rabbit's ping: p4.jsp with its serial, bytecode version, event (sd) and state (tc)."""
    return f'{base}/vl/p4.jsp?sn={serial}&v={version}&st=1&sd={sd:x}&tc={tc:x}&h=4'


def rabbit_request(url, body=None, timeout=NET_TIMEOUT, limit=1 << 20):
    """One request as the rabbit makes it: HTTP/1.0, its four headers, Content-length
    without Content-Type on a POST; the reply is read until the server closes, and
    the body is whatever follows the first blank line (the status is not checked)."""
    host, port, path = split_url(url)
    head = (
        f'{"POST" if body is not None else "GET"} {path} HTTP/1.0\r\n'
        f'User-Agent: MTL\r\nPragma: no-cache\r\nIcy-MetaData:1\r\nHost: {host}\r\n'
    )
    if body is not None:
        head += f'Content-length: {len(body)}\r\n'
    with socket.create_connection((host, port), timeout=timeout) as connection:
        connection.sendall(head.encode() + b'\r\n' + (body or b''))
        chunks, size = [], 0
        while size < limit:
            data = connection.recv(65536)
            if not data:
                break
            chunks.append(data)
            size += len(data)
    return b''.join(chunks).partition(b'\r\n\r\n')[2][:limit]


class VirtualRabbit:
    def __init__(self, options):
        self.options = options
        self.serial = p.normalize_serial(options.serial)
        self.last_error = ''  # the last failed request, for the reachability report
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._actions = queue.SimpleQueue()
        self._thread = None
        self._player = None
        self._player_stop = threading.Event()
        self.phase = 'boot' if options.boot else 'locate'
        self.ping_base = self.broad = ''
        self.ping_delay = p.DEFAULT_PING_INTERVAL
        self.sd = 0
        self.tc = p.BOOTED_TC
        self.ambient = p.Ambient()
        self.leds = [(0, 0, 0)] * chor.LEDS
        self.ears = [0, 0]
        self.palette = [(0, 0, 0)] * 8
        self.playing = None  # program ID while a program runs
        self.audio_until = 0.0
        self._streaming = False
        # (command, url, bytes) of the last resources used
        self.played = collections.deque(maxlen=PLAYED_KEPT)
        self.counters = dict(
            boots=0,
            pings=0,
            bad_packets=0,
            programs=0,
            uploads=0,
            upload_attempts=0,
            rfid=0,
            errors=0,
            truncated_audio=0,  # MU/MC files longer than the cap: the rabbit cuts them
            bad_audio=0,  # MU/MC files that are neither MP3 nor WAV
        )
        self.audio_seconds = 0.0  # of MU/MC audio played, over all programs
        self.last_audio_error = ''
        # PlayedAudio of the last PLAYED_KEPT programs audio_dir received, in playing order
        self.played_audio = collections.deque(maxlen=PLAYED_KEPT)
        self.audio_programs = 0  # programs whose audio audio_dir received, ever

    # ---- life cycle ---------------------------------------------------------------------
    def start(self):
        self._thread = threading.Thread(
            target=self._run, name=f'rabbit-{self.serial}', daemon=True
        )
        self._thread.start()
        return self

    def request_stop(self):
        self._stop.set()
        self._player_stop.set()
        self._wake.set()

    def stop(self):
        self.request_stop()
        if self._thread is not None:
            self._thread.join(NET_TIMEOUT + 1)

    # ---- what a user does to the rabbit -------------------------------------------------
    def click(self):
        """Single click: replay while waiting (sd 3), stop while playing (sd 5). The firmware
        pings at once on a click, not at its next scheduled ping."""
        with self._lock:
            self.sd = p.SD_VALUES['click_while_playing' if self.playing else 'click']
            self._interrupt_program()
        self._wake.set()

    def double_click(self):
        with self._lock:
            self.sd = p.SD_VALUES['double_click']
            self._interrupt_program()
        self._wake.set()

    def move_ears(self, ear0, ear1):
        """Turn the ears by hand (while waiting): reported on the next ping."""
        with self._lock:
            if self.playing is None:
                self.ears = [ear0 % p.EAR_POSITIONS, ear1 % p.EAR_POSITIONS]
                self.sd = int(p.encode_sd('ears_moved', self.ears), 16)

    def show_tag(self, tag):
        self._actions.put(('rfid', p.normalize_rfid(tag)))
        self._wake.set()

    def record(self, seconds=2.0, double=False):
        """A long click held for seconds (at most 8): the recording is uploaded."""
        self._actions.put(('record', min(seconds, recording.MAX_SECONDS), double, None))
        self._wake.set()

    def record_sound(self, wav, double=False):
        """A long click while this sound is heard: wav (the rabbit's IMA ADPCM WAV, see
        recording.as_rabbit_records) is uploaded as the recording, as the rabbit uploads."""
        pcm, rate = recording.decode_wav(wav)
        self._actions.put(('record', len(pcm) / rate, double, wav))
        self._wake.set()

    def status(self):
        with self._lock:
            return dict(
                serial=self.serial,
                phase=self.phase,
                tc=format(self.tc, 'x'),
                state=p.state_from_tc(self.tc),
                playing=self.playing,
                ears=tuple(self.ears),
                leds=tuple(self.leds),
                ping_delay=self.ping_delay,
                services=self.ambient.services,
                nose_blinks=self.ambient.nose_blinks,
                **self.counters,
            )

    # ---- the rabbit program -------------------------------------------------------------
    def _request(self, url, body=None, limit=1 << 20):
        return rabbit_request(url, body, timeout=self.options.net_timeout, limit=limit)

    def _run(self):
        steps = {'boot': self._boot, 'locate': self._locate, 'ping': self._ping_cycle}
        self._stop.wait(self.options.start_delay)
        while not self._stop.is_set():
            try:
                steps[self.phase]()
            except (OSError, MalformedFrame) as exc:
                self.counters['errors'] += 1
                self.last_error = f'{PHASE_REQUESTS[self.phase]}: {exc or type(exc).__name__}'
                self._stop.wait(RETRY_DELAY if self.phase != 'ping' else self.ping_delay)

    def _boot(self):
        mac = ':'.join(self.serial[i : i + 2] for i in range(0, 12, 2))
        zero = '00:00:00:00:00:00'
        data = self._request(
            f'{self.options.server}/bc.jsp?v={self.options.firmware}&m={mac}&l={zero}&p={zero}&h=4'
        )
        p.check_bytecode(data)  # the boot code checks only the wrapper
        with self._lock:
            self.counters['boots'] += 1
            self.phase = 'locate'

    def _locate(self):
        values = p.parse_locate(
            self._request(f'{self.options.server}/locate.jsp?sn={self.serial}&h=4').decode(
                'latin-1'
            )
        )
        with self._lock:
            self.ping_base, self.broad = values['ping'], values['broad']
            self.phase = 'ping'
            self.tc = p.BOOTED_TC

    def _ping_cycle(self):
        self._do_actions()
        if self.phase != 'ping' or self._stop.is_set():
            return
        with self._lock:
            sent = self.sd
            url = ping_url(
                self.ping_base, self.serial, self.options.bytecode_version, sent, self.tc
            )
        self._wake.clear()
        reply = self._request(url)
        with self._lock:
            self.counters['pings'] += 1
        self._apply(reply, sent)
        with self._lock:
            delay = STREAMING_PING if self._streaming else self.ping_delay
        self._wake.wait(delay)

    def _do_actions(self):
        while not self._actions.empty():
            action = self._actions.get()
            if action[0] == 'rfid':
                with self._lock:
                    self.counters['rfid'] += 1
                self._apply(
                    self._request(
                        f'{self.ping_base}/vl/rfid.jsp?sn={self.serial}'
                        f'&v={self.options.bytecode_version}&h=4&t={action[1]}'
                    )
                )
            elif action[0] == 'record':
                self._upload(*action[1:])

    def _upload(self, seconds, double, wav):
        self._stop.wait(seconds * self.options.time_scale)  # the button is held
        if wav is None:
            wav = recording.encode_wav(recording.tone(seconds, 330.0 if double else 440.0))
        url = (
            f'{self.ping_base}/vl/record.jsp?sn={self.serial}'
            f'&v={self.options.bytecode_version}&h=4&m={int(double)}'
        )
        for _ in range(self.options.upload_attempts):
            with self._lock:
                self.counters['upload_attempts'] += 1
            try:
                self._request(url, wav)
                with self._lock:
                    self.counters['uploads'] += 1
                break
            except OSError:
                continue
        self._stop.wait(RECORD_DELAY * self.options.time_scale)

    # ---- replies ------------------------------------------------------------------------
    def _apply(self, reply, sent_sd=None):
        """A packet, by the rabbit's rules: invalid → ignored (sd stays to be sent again);
        valid → acknowledges the event sent (one that came up meanwhile waits its turn)."""
        try:
            blocks = p.decode_packet(reply)
        except MalformedFrame:
            with self._lock:
                self.counters['bad_packets'] += 1
            return
        with self._lock:
            if self.sd == sent_sd:
                self.sd = 0
        program = None
        for block in blocks:
            if block.type == p.BLOCK_PING_INTERVAL and block.data:
                with self._lock:
                    self.ping_delay = max(1, block.data[0])
            elif block.type == p.BLOCK_AMBIENT:
                self._apply_ambient(block.data)
            elif block.type == p.BLOCK_REBOOT:
                with self._lock:
                    self._interrupt_program()
                    self.phase = 'boot' if self.options.boot else 'locate'
                return
            elif block.type == p.BLOCK_MESSAGE and program is None:  # the first one wins
                program = block.data
        if program is not None:
            self._start_program(program)

    def _apply_ambient(self, data):
        try:
            ambient = p.decode_ambient(data)
        except MalformedFrame:
            return
        with self._lock:
            self.ambient = ambient
            # the ping-era firmware applies the ambient ears only while idle: after a program
            # its tc stays that program's ID until a server sends the idle program
            # (nabaztag.md §7.3)
            if self.playing is None and self.tc == p.IDLE_ID:
                self.ears = list(ambient.ears)

    def _start_program(self, data):
        try:
            program = p.parse_program(p.message_text(data))
        except MalformedFrame:
            with self._lock:
                self.counters['bad_packets'] += 1
            return
        with self._lock:
            self._interrupt_program()
            self.tc = program.id
            if program.id == p.IDLE_ID:
                self.ears = list(self.ambient.ears)
                return
            if program.id == p.SLEEP_ID:
                self.leds = [(0, 0, 0)] * chor.LEDS
                self.ears = [p.SLEEP_EAR_POSITION] * 2
                return
            self.counters['programs'] += 1
            self.playing = program.id
            self._player_stop = threading.Event()
            self._player = threading.Thread(
                target=self._play,
                args=(program, self._player_stop),
                name=f'rabbit-{self.serial}-player',
                daemon=True,
            )
            self._player.start()

    def _interrupt_program(self):
        self._player_stop.set()
        self.playing = None
        self.audio_until = 0.0
        self._streaming = False

    # ---- playing a program --------------------------------------------------------------
    def _play(self, program, stopped):
        resources = {}
        heard = []  # (url, audio) this program played, for audio_dir
        for key, url in program.commands:  # everything is downloaded before playing
            if key in p.PRELOADED_COMMANDS and url not in resources:
                resources[url] = self._download(url, p.PRELOADED_COMMANDS[key])
        for key, value in program.commands:
            if stopped.is_set():
                return
            if key in ('MU', 'MC'):
                self._note_played(key, value, resources[value])
                seconds = self._duration(resources[value])
                heard.append((value, resources[value]))
                with self._lock:
                    self.audio_seconds += seconds
                    self.audio_until = time.monotonic() + seconds * self.options.time_scale
            elif key == 'MW':
                stopped.wait(max(0.0, self.audio_until - time.monotonic()))
            elif key == 'CH':
                self._note_played(key, value, resources[value])
                self._dance(chor.parse(resources[value], strict=False), stopped)
            elif key in p.STREAM_COMMANDS:
                self._stream(key, value, stopped)
            elif key == 'PL':
                self._note_played(key, value, b'')
            elif key == 'CL':
                colour = int(value)
                with self._lock:
                    self.palette[colour >> 24 & 7] = tuple(
                        (colour >> s) & 0xFF for s in (16, 8, 0)
                    )
        if heard and self.options.audio_dir:
            self._write_wav(program.id, heard)
        self._end_program(program.id, stopped)

    def _write_wav(self, program_id, heard):
        """What a program played, as one WAV (MP3s decoded with miniaudio)."""
        try:
            pcm, rate = decode_audio([audio for _, audio in heard])
        except (ImportError, ValueError) as exc:
            with self._lock:
                self.last_audio_error = f'no WAV of program {program_id:x}: {exc}'
            return
        path = pathlib.Path(self.options.audio_dir) / f'{self.serial}-{program_id:x}.wav'
        save_wav(path, pcm, rate)
        with self._lock:
            self.audio_programs += 1
            urls = tuple(url for url, _ in heard)
            self.played_audio.append(PlayedAudio(path, urls, self.audio_programs))

    def audio_since(self, count):
        """The PlayedAudio still kept of the programs after the first count (audio_programs
        when asked)."""
        with self._lock:
            return [played for played in self.played_audio if played.number > count]

    def _end_program(self, program_id, stopped):
        with self._lock:
            if stopped.is_set() or self.playing != program_id:
                return
            self.playing = None
            self.sd = p.SD_VALUES['end_of_message']
        self._wake.set()  # the end is reported at once

    def _download(self, url, cap):
        """The resource as the rabbit keeps it: its first cap bytes (a longer one is cut,
        and counted here as truncated_audio)."""
        try:
            data = self._request(p.resolve_url(url, self.broad), limit=cap + 1)
        except OSError:
            return b''
        if len(data) > cap:
            with self._lock:
                self.counters['truncated_audio'] += 1
                self.last_audio_error = f'{url}: over the {cap}-byte cap, cut'
            data = data[:cap]
        return data

    def _note_played(self, key, url, data):
        with self._lock:
            self.played.append((key, url, len(data)))

    def _duration(self, data):
        """Seconds an MU/MC file plays: a WAV's samples, an MP3's frames; a file that is
        neither (or an MP3 cut short) is counted as bad_audio and timed at 128 kbit/s."""
        try:
            if data[:4] == b'RIFF':
                samples, rate = recording.decode_wav(data)
                return len(samples) / rate
            return mp3.scan(data).seconds
        except MalformedFrame as exc:
            with self._lock:
                self.counters['bad_audio'] += 1
                self.last_audio_error = str(exc)
        return len(data) / MP3_BYTES_PER_SECOND

    def _dance(self, steps, stopped):
        start = time.monotonic()
        for at, step in chor.timeline(steps):
            if stopped.wait(max(0.0, start + at * self.options.time_scale - time.monotonic())):
                return
            self._apply_step(step)

    def _apply_step(self, step):
        name, args = chor.OPCODES[step.opcode].name, step.args
        with self._lock:
            if name == 'led':
                self.leds[args[0]] = tuple(args[1:4])
            elif name == 'all_leds':
                self.leds = [tuple(args)] * chor.LEDS
            elif name == 'led_off':
                self.leds[args[0]] = (0, 0, 0)
            elif name == 'led_palette':
                self.leds[args[0]] = self.palette[args[1]]
            elif name == 'ear':
                self.ears[args[0]] = args[1] % p.EAR_POSITIONS
            elif name == 'ear_step':
                self.ears[args[0]] = (self.ears[args[0]] + args[1]) % p.EAR_POSITIONS

    def _stream(self, key, url, stopped):
        """ST blocks while the stream plays; MS and SP do not (the emulator reads the first
        stream_seconds of it either way, in this thread)."""
        with self._lock:
            self._streaming = key == 'ST'
        try:
            data = self._request(
                p.resolve_url(url, self.broad),
                limit=int(self.options.stream_seconds * MP3_BYTES_PER_SECOND),
            )
        except OSError:
            data = b''
        self._note_played(key, url, data)
        if key == 'ST':
            stopped.wait(self.options.stream_seconds * self.options.time_scale)
        with self._lock:
            self._streaming = False


def decode_audio(files):
    """MP3 / WAV files → (16-bit mono PCM bytes, sample rate of the first); ImportError
    without miniaudio (the MP3 decoder), ValueError for a file it cannot decode."""
    import array

    try:
        import miniaudio
    except ImportError as exc:
        raise ImportError(f'{exc}: pip install {MP3_DECODER_PACKAGE}') from None

    pcm, rate = array.array('h'), None
    for data in files:
        try:
            if rate is None:  # the first file's own rate; the others are converted to it
                info = miniaudio.wav_get_info(data) if data[:4] == b'RIFF' else mp3.scan(data)
                rate = info.sample_rate
            decoded = miniaudio.decode(
                data, miniaudio.SampleFormat.SIGNED16, nchannels=1, sample_rate=rate
            )
        except (miniaudio.DecodeError, MalformedFrame) as exc:
            raise ValueError(f'cannot decode it: {exc}') from None
        pcm.extend(decoded.samples)
    return pcm.tobytes(), rate


PHASE_REQUESTS = {'boot': 'bc.jsp', 'locate': 'locate.jsp', 'ping': 'p4.jsp'}
UNREACHABLE_REPORT_PERIOD = 30.0  # s between "cannot reach" lines while it lasts


class ReachabilityReport:
    """Says when the rabbits cannot reach their server (at once, then every 30 s while it
    lasts) and when they reach it again: an emulator pointed at nothing must not look fine."""

    def __init__(self, emulator, server, write=print):
        self._emulator, self._server, self._write = emulator, server, write
        self._stop = threading.Event()
        self._failing_since = None

    def start(self):
        threading.Thread(target=self._watch, name='reachability', daemon=True).start()

    def stop(self):
        self._stop.set()

    def _watch(self):
        errors, successes, last_said = 0, 0, 0.0
        while not self._stop.wait(0.5):
            rabbits = self._emulator.rabbits
            now_errors = sum(r.counters['errors'] for r in rabbits)
            now_successes = sum(r.counters['boots'] + r.counters['pings'] for r in rabbits)
            if now_successes > successes and self._failing_since is not None:
                self._write(f'nabaztag_emulator: the rabbits reach {self._server} again')
                self._failing_since = None
            elif now_errors > errors and now_successes == successes:
                now = time.monotonic()
                if self._failing_since is None or now - last_said >= UNREACHABLE_REPORT_PERIOD:
                    self._failing_since = self._failing_since or now
                    last_said = now
                    detail = next((r.last_error for r in rabbits if r.last_error), '')
                    self._write(
                        f'nabaztag_emulator: cannot reach the server {self._server} '
                        f'({detail}); {now_errors} failed requests so far, retrying'
                    )
            errors, successes = now_errors, now_successes


def server_setting(text):
    """The rabbit's "Violet Platform" setting from a command line: host[:port]/path (an
    http:// in front is dropped); ValueError for what a rabbit cannot call."""
    if text.startswith('https://'):
        raise ValueError(f'--server {text}: a Nabaztag/tag speaks plain HTTP only')
    setting = text.removeprefix('http://')
    host, slash, path = setting.partition('/')
    if not host or not slash or not path.strip('/'):
        raise ValueError(
            f'--server {text}: give host[:port]/path, the rabbit\'s "Violet '
            'Platform" setting, e.g. 127.0.0.1:8080/vl (the bridge serves /vl)'
        )
    return setting.rstrip('/')


class RabbitEmulator:
    """Several rabbits with consecutive serials; what the command line and the demo run."""

    def __init__(self, options, count=1, scenario=False, spread=0.0):
        """spread: the rabbits are switched on one after another over this many seconds, so
        that their pings do not all arrive in the same instant (real rabbits boot at
        different times)."""
        first = int(p.normalize_serial(options.serial), 16)
        self.rabbits = [
            VirtualRabbit(
                dataclasses.replace(
                    options, serial=format(first + i, '012x'), start_delay=spread * i / count
                )
            )
            for i in range(count)
        ]
        self.scenario = Scenario(self.rabbits[0]) if scenario else None
        self.description = (
            f'{count} rabbit(s) from {self.rabbits[0].serial} calling {options.server}'
        )

    def start(self):
        for rabbit in self.rabbits:
            rabbit.start()
        if self.scenario:
            self.scenario.start()
        return self

    def errors(self):
        """Failed requests and refused replies, over all the rabbits."""
        return sum(r.status()['errors'] + r.status()['bad_packets'] for r in self.rabbits)

    def stop(self):
        if self.scenario:
            self.scenario.stop()
        for rabbit in self.rabbits:  # all at once, then wait for each
            rabbit.request_stop()
        for rabbit in self.rabbits:
            rabbit.stop()


class Scenario:
    """A rabbit with someone next to it: every period it is clicked, has an ear turned,
    is shown a tag and records a short message (actions: (s into the period, the rabbit's
    method, its arguments))."""

    PERIOD = 14.0
    ACTIONS = (
        (2.0, 'move_ears', (5, 12)),
        (4.0, 'click', ()),
        (8.0, 'show_tag', ('d0021a0352d64cec',)),
        (11.0, 'record', (1.5,)),
    )

    def __init__(self, rabbit, actions=ACTIONS, period=PERIOD):
        self.rabbit = rabbit
        self.actions, self.period = actions, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name='rabbit-scenario', daemon=True)

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(2.0)

    def _run(self):
        start = time.monotonic()
        while not self._stop.is_set():
            for at, action, args in self.actions:
                if self._stop.wait(max(0.0, start + at - time.monotonic())):
                    return
                getattr(self.rabbit, action)(*args)
            start += self.period


# ---- command line ----------------------------------------------------------------------
CONSOLE_HELP = (
    'commands: click [n] | double-click [n] | ears <e0> <e1> [n] | rfid <16 hex> [n] '
    '| record [seconds] [n] | record-wav <file.wav> [n] | record-say <text> (rabbit 0) '
    '| status [n] | help   (n = rabbit index, default 0)'
)


def console(emulator, lines=sys.stdin, out=sys.stdout):
    """Tell the rabbits what to do, one command per line."""
    for line in lines:
        words = line.split()
        if not words:
            continue
        try:
            print(run_console_command(emulator, words), file=out, flush=True)
        except (ValueError, IndexError, MalformedFrame) as exc:
            print(f'error: {exc}; {CONSOLE_HELP}', file=out, flush=True)


def wav_recording(path):
    """A WAV file (16-bit PCM or IMA ADPCM, mono, any rate) as the rabbit would upload it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(f'cannot read {path}: {exc.strerror or exc}') from None
    pcm, rate = recording.decode_wav(data)
    return recording.as_rabbit_records(pcm, rate)


def spoken_recording(text, voice='en', neural=False):
    """text spoken by the light engine (espeak-ng), or the neural voice (piper, its bundled
    English voice) if neural and installed, downsampled and encoded as the rabbit records it."""
    from . import tts
    from .tts_worker import EngineError, EspeakEngine, PiperEngine

    catalogue = tts.VoiceCatalogue()
    try:
        if neural and catalogue.piper_installed and catalogue.piper_voices:
            model = catalogue.resolve('piper', '', voice).model
            rate, pcm = PiperEngine().synthesize({'model': model, 'rate': 1.0}, text)
        else:
            rate, pcm = EspeakEngine().synthesize({'voice': voice, 'rate': 1.0}, text)
    except (EngineError, tts.SpeechError) as exc:
        raise ValueError(str(exc)) from None
    return recording.as_rabbit_records(pcm, rate)


def run_console_command(emulator, words):
    command, args = words[0], words[1:]
    if command == 'record-say':
        if not args:
            raise ValueError('record-say needs the text to say')
        rabbit = emulator.rabbits[0]
        rabbit.record_sound(spoken_recording(' '.join(args)))
        return f'ok: {command} on {rabbit.serial}'
    arity = {'click': 0, 'double-click': 0, 'ears': 2, 'rfid': 1, 'record': 1, 'status': 0}
    arity['record-wav'] = 1
    if command == 'help' or command not in arity:
        return CONSOLE_HELP
    index = int(args[arity[command]]) if len(args) > arity[command] else 0
    rabbit = emulator.rabbits[index]
    if command == 'click':
        rabbit.click()
    elif command == 'double-click':
        rabbit.double_click()
    elif command == 'ears':
        rabbit.move_ears(int(args[0]), int(args[1]))
    elif command == 'rfid':
        rabbit.show_tag(args[0])
    elif command == 'record':
        rabbit.record(float(args[0]) if args else 2.0)
    elif command == 'record-wav':
        rabbit.record_sound(wav_recording(pathlib.Path(args[0])))
    else:
        return str(rabbit.status())
    return f'ok: {command} on {rabbit.serial}'


def build_parser():
    parser = argparse.ArgumentParser(
        prog='nabaztag_emulator',
        description='Emulated ping-era Nabaztag/tag rabbits that call '
        'a bridge (or any ping-era server), or a pynab rabbit (--kind pynab) the bridge calls.',
    )
    parser.add_argument(
        '--kind',
        choices=('violet', 'serverless', 'pynab'),
        default='violet',
        help='violet: ping-era rabbits that poll --server (default); serverless: a '
        'ServerlessNabaztag rabbit serving its API on --host:--port and posting hooks to '
        '--server (host:port); pynab: a nabd that listens on --host:--port',
    )
    add_host_argument(parser)
    parser.add_argument(
        '--port',
        type=int,
        default=None,
        help='serverless: its API port (default 8081, 0: any); pynab: the port nabd listens on '
        "(default 10543, nabd's own)",
    )
    parser.add_argument(
        '--server',
        default='127.0.0.1:8080/vl',
        help='the rabbits\' "Violet Platform" setting: host[:port]/path (default %(default)s)',
    )
    parser.add_argument('--password', default='', help='serverless: HTTP Basic password')
    parser.add_argument('--rabbits', type=int, default=1, help='how many rabbits (default 1)')
    parser.add_argument(
        '--serial',
        default='0019db000001',
        help='serial (MAC) of the first rabbit; the others count up',
    )
    parser.add_argument(
        '--spread',
        type=float,
        default=1.0,
        help='switch the rabbits on one after another over this many seconds (default 1)',
    )
    parser.add_argument(
        '--no-boot', action='store_true', help='skip bc.jsp (for a bridge without a bytecode file)'
    )
    parser.add_argument(
        '--time-scale',
        type=float,
        default=1.0,
        help='multiply playback and recording durations (default 1)',
    )
    parser.add_argument(
        '--scenario',
        action='store_true',
        help='the first rabbit clicks, turns an ear, sees a tag and records, '
        f'every {Scenario.PERIOD:.0f} s',
    )
    parser.add_argument(
        '--console', action='store_true', help='read commands from standard input: ' + CONSOLE_HELP
    )
    parser.add_argument(
        '--audio-dir',
        default='',
        help='write the audio each program played (MU/MC files, MP3 decoded) as '
        '<serial>-<program id>.wav into this folder',
    )
    return parser


KIND_PORTS = {'serverless': 8081, 'pynab': 10543}  # --port's default per kind


def _kind_arguments_problem(args):
    """What is wrong with --port, and with --server for a serverless rabbit (it posts its
    hooks to host[:port]), or ''."""
    if not 0 <= args.port <= 65535:
        return f'--port {args.port}: a TCP port is 0-65535'
    if args.kind == 'serverless':
        try:
            split_address(args.server.partition('/')[0], 80)
        except ValueError:
            return (
                f'--server {args.server}: give host[:port][/path], where the serverless rabbit '
                'posts its hooks (the bridge), e.g. 127.0.0.1:8080'
            )
    return ''


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.port is None:
        args.port = KIND_PORTS.get(args.kind, 0)
    problem = _kind_arguments_problem(args)
    if problem:
        print(f'error: {problem}', file=sys.stderr)
        return 2
    if args.kind == 'serverless':
        from . import emulator_serverless

        return emulator_serverless.run(args)
    if args.rabbits < 1 or args.time_scale < 0 or args.spread < 0:
        print('error: --rabbits must be ≥ 1, --time-scale and --spread ≥ 0', file=sys.stderr)
        return 2
    if args.kind == 'pynab':
        from . import emulator_pynab

        return run_emulator('Nabaztag emulator', lambda: emulator_pynab.make_emulator(args))

    try:
        server = server_setting(args.server)
    except ValueError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    if args.audio_dir and importlib.util.find_spec('miniaudio') is None:
        print(
            f'error: --audio-dir needs the MP3 decoder: pip install {MP3_DECODER_PACKAGE}',
            file=sys.stderr,
        )
        return 2

    def make():
        emulator = RabbitEmulator(
            RabbitOptions(
                server=server,
                serial=args.serial,
                boot=not args.no_boot,
                time_scale=args.time_scale,
                audio_dir=args.audio_dir,
            ),
            args.rabbits,
            args.scenario,
            args.spread,
        )
        if args.console:
            threading.Thread(target=console, args=(emulator,), daemon=True).start()
        ReachabilityReport(emulator, server, lambda line: print(line, flush=True)).start()
        return emulator

    return run_emulator('Nabaztag emulator', make)


if __name__ == '__main__':
    sys.exit(main())
