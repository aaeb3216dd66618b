"""An emulated Nabaztag/tag on the ServerlessNabaztag firmware (nabaztag_emulator --kind
serverless): the subset of its HTTP API the bridge uses, with plausible state, and the hooks it
POSTs to the server it booted from.

    nabaztag_emulator --kind serverless --server 127.0.0.1:8080 --port 8081 --console

API: GET /left|/right ?p=0..16&d=0|1 (the ear travels there, about 6 holes a second), /play?u=
(the file is fetched, as the rabbit would), /nose?v=0..4, /sleep, /wakeup, /taichi, /stop,
/status (JSON), POST /forth (c=<code>; the emulator keeps the lines, runs `on-click`-style hook
words). Hooks: click, dblclick, ears (left=&right=), rfid (tag=), record (a WAV).
"""

import base64
import http.server
import json
import threading
import time
import urllib.parse
import urllib.request

EAR_HOLES_PER_SECOND = 6.0
HOOK_TIMEOUT = 5.0
# /status ears.mode of a rabbit whose ears are in service (the firmware: -1 before its ears
# start, 0 while they find their reference after a boot, then 2)
EARS_MODE_WAIT_AND_DETECT = 2


class Ear:
    def __init__(self):
        self.start, self.target, self.since = 0, 0, 0.0

    def position(self, now):
        travelled = int((now - self.since) * EAR_HOLES_PER_SECOND)
        if self.target >= self.start:
            return min(self.target, self.start + travelled)
        return max(self.target, self.start - travelled)

    def go(self, target, now):
        self.start, self.target, self.since = self.position(now), target, now


class ServerlessRabbit:
    """server: the 'Violet Platform' setting (host:port), where hooks go. host, port: where its
    API listens (port 0: any free one, read back from .port). password: HTTP Basic, user
    'nabaztag' (None: open)."""

    def __init__(self, server, host='127.0.0.1', port=0, password=None):
        self.server = server
        self.password = password
        self.ears = (Ear(), Ear())
        self.asleep = False
        self.nose = 0
        self.forth = []  # Forth lines received
        self.played = []  # (url, bytes fetched) of each /play
        self.requests = []  # paths served, in order
        self.changed = threading.Condition()
        self._http = http.server.ThreadingHTTPServer((host, port), _handler(self))
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self._thread = None

    @property
    def description(self):
        host = self._http.server_address[0]
        return f'serverless rabbit API on {host}:{self.port}, hooks to {self.server}'

    def start(self):
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._http.shutdown()
        self._http.server_close()

    # ---- state ------------------------------------------------------------------------
    def status(self):
        now = time.monotonic()
        ears = {
            side: {'last_position': ear.position(now), 'target': ear.target, 'broken': 0}
            for side, ear in zip(('left', 'right'), self.ears, strict=True)
        }
        return {
            'sleep_state': 1 if self.asleep else 0,
            'ears': dict(ears, mode=EARS_MODE_WAIT_AND_DETECT),
            'leds': {'base_breathing': 0},
            'info': {'messages': self.nose},
            'rev': 'emulator',
        }

    def ear_positions(self):
        now = time.monotonic()
        return tuple(ear.position(now) for ear in self.ears)

    def wait_for(self, predicate, timeout=5.0):
        """Wait until predicate(self) is true (after a request changed something)."""
        with self.changed:
            return self.changed.wait_for(lambda: predicate(self), timeout)

    def _changed(self):
        with self.changed:
            self.changed.notify_all()

    # ---- hooks (the console and the tests) ----------------------------------------------
    def click(self):
        return self.post_hook('click', f'time={int(time.monotonic() * 1000)}'.encode())

    def double_click(self):
        return self.post_hook('dblclick', f'time={int(time.monotonic() * 1000)}'.encode())

    def turn_ears(self, left, right):
        """A hand turns the ears: they are there, and the hook says so."""
        now = time.monotonic()
        for ear, position in zip(self.ears, (left, right), strict=True):
            ear.start = ear.target = position
            ear.since = now
        return self.post_hook('ears', f'left={left}&right={right}'.encode())

    def show_tag(self, tag):
        return self.post_hook('rfid', f'tag={tag}'.encode())

    def record(self, wav):
        return self.post_hook('record', wav)

    def post_hook(self, name, body):
        """POST a hook to the server; its HTTP status (0 when it could not be reached)."""
        request = urllib.request.Request(
            f'http://{self.server}/hooks/{name}.php', data=body, method='POST'
        )
        try:
            with urllib.request.urlopen(request, timeout=HOOK_TIMEOUT) as reply:
                return reply.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return 0

    # ---- the API ----------------------------------------------------------------------
    def answer(self, method, path, args):
        """(status, body, content type) for one API request."""
        self.requests.append(path)
        if path == '/status':
            return 200, json.dumps(self.status()).encode(), 'application/json'
        if path == '/forth' and method == 'POST':
            code = args.get('c', '')
            self.forth.append(code)
            return 200, f'ok {code}\n'.encode(), 'text/plain'
        action = ACTIONS.get(path)
        if action is None:
            return 404, b'Not found', 'text/plain'
        action(self, args)
        self._changed()
        return 204, b'', 'text/plain'

    def _ear(self, index, args):
        if not self.asleep:  # the firmware ignores the ears while asleep
            position = min(16, max(0, int(args.get('p', '0') or 0)))
            self.ears[index].go(position, time.monotonic())

    def _play(self, args):
        url = args.get('u', '')
        if self.asleep or not url.startswith('http://'):
            return
        threading.Thread(target=self._fetch, args=(url,), daemon=True).start()

    def _fetch(self, url):
        try:
            with urllib.request.urlopen(url, timeout=HOOK_TIMEOUT) as reply:
                data = reply.read()
        except OSError:
            data = b''
        self.played.append((url, len(data)))
        self._changed()

    def _sleep(self, asleep):
        self.asleep = asleep
        now = time.monotonic()
        for ear in self.ears:
            ear.go(10 if asleep else 0, now)


ACTIONS = {
    '/left': lambda r, a: r._ear(0, a),
    '/right': lambda r, a: r._ear(1, a),
    '/play': lambda r, a: r._play(a),
    '/nose': lambda r, a: setattr(r, 'nose', int(a.get('v', '0') or 0)),
    '/sleep': lambda r, a: r._sleep(True),
    '/wakeup': lambda r, a: r._sleep(False),
    '/taichi': lambda r, a: None,
    '/stop': lambda r, a: None,
}


def _handler(rabbit):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            path, _, query = self.path.partition('?')
            self._reply(path, dict(urllib.parse.parse_qsl(query)))

        def do_POST(self):
            length = int(self.headers.get('Content-Length') or 0)
            body = self.rfile.read(length).decode('utf-8', 'replace')
            self._reply(self.path.partition('?')[0], dict(urllib.parse.parse_qsl(body)))

        def _reply(self, path, args):
            if rabbit.password and not self._authorised():
                status, body, content_type = 401, b'', 'text/plain'
            else:
                status, body, content_type = rabbit.answer(self.command, path, args)
            self.send_response(status)
            self.send_header('Content-Type', content_type)
            self.send_header('Content-Length', str(len(body)))
            self.send_header('Connection', 'close')
            self.end_headers()
            self.wfile.write(body)

        def _authorised(self):
            given = self.headers.get('Authorization', '')
            token = base64.b64encode(f'nabaztag:{rabbit.password}'.encode()).decode()
            return given == f'Basic {token}'

    return Handler


CONSOLE_HELP = 'click | dblclick | ears L R | rfid TAG | record FILE.wav | status'


def console(rabbit, lines):
    for line in lines:
        words = line.split()
        if not words:
            continue
        try:
            print(console_command(rabbit, words[0], words[1:]), flush=True)
        except (ValueError, IndexError, OSError) as exc:
            print(f'error: {exc} ({CONSOLE_HELP})', flush=True)


def console_command(rabbit, command, args):
    if command == 'click':
        return f'click: {rabbit.click()}'
    if command == 'dblclick':
        return f'double click: {rabbit.double_click()}'
    if command == 'ears':
        return f'ears: {rabbit.turn_ears(int(args[0]), int(args[1]))}'
    if command == 'rfid':
        return f'rfid: {rabbit.show_tag(args[0])}'
    if command == 'record':
        with open(args[0], 'rb') as file:
            return f'record: {rabbit.record(file.read())}'
    return json.dumps(rabbit.status())


def run(args):
    """nabaztag_emulator --kind serverless."""
    import sys

    from legacy_robot_common.emulator import run_emulator

    def make():
        rabbit = ServerlessRabbit(args.server, args.host, args.port, args.password or None)
        if args.console:
            threading.Thread(target=console, args=(rabbit, sys.stdin), daemon=True).start()
        return rabbit

    return run_emulator('Nabaztag emulator (serverless)', make)
