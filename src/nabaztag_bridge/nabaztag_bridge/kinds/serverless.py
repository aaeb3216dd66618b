"""The serverless kind: a Nabaztag/tag on the ServerlessNabaztag firmware.

The rabbit serves an HTTP API of its own (GET /left?p=&d=, /right, /play?u=, /nose?v=,
/sleep, /wakeup, /taichi, /stop, /status as JSON, POST /forth with c=<Forth>), optionally
behind HTTP Basic authentication, and POSTs its events to the server it booted from (hooks.py).

Each link has one worker thread and a short queue: a rabbit that is off costs its own commands
rabbit_timeout each and delays no other rabbit and never the executor. Between commands the
worker reads /status every status_period to keep the state (asleep, ears, connected) fresh.
"""

import base64
import concurrent.futures
import http.client
import ipaddress
import json
import queue
import socket
import threading
import time
import urllib.parse

from .base import KindCannot, RabbitLink, RabbitState, RabbitUnreachable, check_ears, failed
from .roster import split_address

DEFAULT_PORT = 80
QUEUE_SIZE = 16  # commands waiting per rabbit; more answer "busy" at once
NOSE_MAX = 4  # /nose?v=0..4 (messages waiting)
DEFAULT_USER = 'nabaztag'  # the firmware's login user unless the owner changed it


class ServerlessLink(RabbitLink):
    kind = 'serverless'

    def __init__(self, entry, on_event=None, timeout=3.0, status_period=10.0, log=None):
        super().__init__(entry.id, on_event)
        self.address = entry.address
        self.host, self.port = split_address(entry.address, DEFAULT_PORT)
        self.mac = entry.mac
        self.timeout, self.status_period = timeout, status_period
        self.log = log  # (key, text) → rate-limited warning, or None
        self._auth = None
        if entry.password:
            token = f'{entry.user or DEFAULT_USER}:{entry.password}'.encode()
            self._auth = 'Basic ' + base64.b64encode(token).decode('ascii')
        self._addresses = resolve(self.host)
        self._jobs = queue.Queue(QUEUE_SIZE)
        self._thread = None
        self._running = False
        self.connected = False
        self.asleep = False
        self.ears = (-1, -1)
        self.last_seen = 0.0
        self.last_error = ''
        self.counters = {'commands': 0, 'failures': 0, 'bad_status': 0, 'hooks': 0}

    # ---- life cycle ----------------------------------------------------------------------
    def start(self):
        if self._thread is None:
            self._running = True
            self._thread = threading.Thread(
                target=self._work, name=f'serverless-{self.serial}', daemon=True
            )
            self._thread.start()

    def stop(self):
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._running = False
        self._put(None)
        thread.join(self.timeout + 1.0)
        while True:  # commands still waiting fail now rather than never
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is not None:
                job[1].set_exception(RabbitUnreachable(f'{self.serial}: the bridge stopped'))

    def _put(self, job):
        try:
            self._jobs.put_nowait(job)
        except queue.Full:
            return False
        return True

    # ---- what the hooks and the boot tell the link (HTTP server thread) ---------------------
    def accepts(self, address):
        """Whether a hook from address is this rabbit's."""
        return address in self._addresses

    def heard_from(self, ears=()):
        self.counters['hooks'] += 1
        self.connected, self.last_seen = True, time.time()
        if ears:
            self.ears = tuple(ears)

    def moved_to(self, address):
        """The rabbit booted from the bridge at a new address (its MAC matched)."""
        if not self.accepts(address):
            self._addresses = {address}
            self.host = address
            self.address = f'{address}:{self.port}' if self.port != DEFAULT_PORT else address

    def state(self):
        return RabbitState(
            self.serial,
            self.kind,
            connected=self.connected,
            asleep=self.asleep,
            ears=self.ears,
            last_seen=self.last_seen,
            address=self.address,
            detail=self.last_error,
        )

    # ---- commands ------------------------------------------------------------------------
    def set_ears(self, left, right):
        check_ears(left, right)
        self._refuse_asleep('move its ears')

        def move():
            self._get('/left', p=left, d=0)
            self._get('/right', p=right, d=0)
            return f'ears going to ({left}, {right})'

        return self._submit(move)

    def play_url(self, url):
        if not url.startswith('http://'):
            raise ValueError(f'{url!r}: a serverless rabbit plays http:// URLs only')
        self._refuse_asleep('play a sound')
        return self._submit(lambda: self._get('/play', u=url) or f'playing {url}')

    def set_nose(self, value):
        if not 0 <= value <= NOSE_MAX:
            raise ValueError(f'nose {value}: a serverless rabbit takes 0..{NOSE_MAX}')
        return self._submit(lambda: self._get('/nose', v=value) or f'nose {value}')

    def choreography(self, name_or_url):
        if name_or_url != 'taichi':
            raise KindCannot(self.kind, f'play the choreography {name_or_url!r} (it has taichi)')
        return self._submit(lambda: self._get('/taichi') or 'taichi')

    def sleep(self):
        return self._submit(lambda: self._get('/sleep') or self._now_asleep(True))

    def wakeup(self):
        return self._submit(lambda: self._get('/wakeup') or self._now_asleep(False))

    def raw(self, text):
        if not text.strip():
            raise ValueError('an empty Forth line')
        return self._submit(lambda: self._post('/forth', c=text).strip() or 'ok')

    def _now_asleep(self, asleep):
        self.asleep = asleep
        return 'asleep' if asleep else 'awake'

    def _refuse_asleep(self, what):
        if self.asleep:  # the firmware answers 204 and does nothing: say so instead
            raise ValueError(f'{self.serial} is asleep and would not {what}: wake it first')

    def _submit(self, action):
        if self._thread is None:
            return failed(RabbitUnreachable(f'{self.serial}: the link is not started'))
        future = concurrent.futures.Future()
        if not self._put((action, future)):
            raise ValueError(f'{self.serial} is busy: {QUEUE_SIZE} commands wait already')
        return future

    # ---- the worker --------------------------------------------------------------------
    def _work(self):
        next_status = 0.0
        while self._running:
            wait = max(0.0, next_status - time.monotonic())
            try:
                job = self._jobs.get(timeout=wait)
            except queue.Empty:
                self._read_status()
                next_status = time.monotonic() + self.status_period
                continue
            if job is None:
                break
            action, future = job
            if not future.set_running_or_notify_cancel():
                continue
            self.counters['commands'] += 1
            try:
                future.set_result(action())
            except (RabbitUnreachable, ValueError) as exc:
                self.counters['failures'] += 1
                future.set_exception(exc)

    def _read_status(self):
        try:
            text = self._get('/status')
        except (RabbitUnreachable, ValueError):
            return
        try:
            status = json.loads(text)
            self.asleep = bool(status.get('sleep_state'))
            ears = status.get('ears', {})
            self.ears = tuple(
                int(ears.get(side, {}).get('last_position', -1)) for side in ('left', 'right')
            )
        except (ValueError, AttributeError, TypeError) as exc:
            self.counters['bad_status'] += 1
            self._warn('bad-status', f'{self.serial}: /status is not the JSON expected ({exc})')

    # ---- HTTP --------------------------------------------------------------------------
    def _get(self, path, **params):
        query = urllib.parse.urlencode(params)
        return self._request('GET', f'{path}?{query}' if query else path, None)

    def _post(self, path, **fields):
        return self._request('POST', path, urllib.parse.urlencode(fields).encode())

    def _request(self, method, target, body):
        """One request, each socket operation bounded by timeout; the answer's text, or
        RabbitUnreachable / ValueError (refused) naming the rabbit, never the password."""
        headers = {'Connection': 'close'}
        if body is not None:
            headers['Content-Type'] = 'application/x-www-form-urlencoded'
        if self._auth:
            headers['Authorization'] = self._auth
        connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            connection.request(method, target, body, headers)
            reply = connection.getresponse()
            data = reply.read()
        except (OSError, http.client.HTTPException) as exc:
            self._lost(f'{self.serial} at {self.address}: {exc or type(exc).__name__}')
        finally:
            connection.close()
        self.connected, self.last_seen = True, time.time()
        if reply.status == 401:
            raise ValueError(f'{self.serial} refused the password (HTTP 401)')
        if reply.status >= 400:
            raise ValueError(f'{self.serial} answered {reply.status} to {target.split("?")[0]}')
        self.last_error = ''
        return data.decode('utf-8', 'replace')

    def _lost(self, reason):
        self.connected, self.last_error = False, reason
        self._warn('unreachable', reason)
        raise RabbitUnreachable(reason)

    def _warn(self, key, text):
        if self.log is not None:
            self.log(f'{self.serial}-{key}', text)


def resolve(host):
    """The addresses a host name stands for (hooks come from an address), once, at start."""
    try:
        return {ipaddress.ip_address(host).compressed}
    except ValueError:
        pass
    try:
        return {info[4][0] for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
    except OSError:
        return set()
