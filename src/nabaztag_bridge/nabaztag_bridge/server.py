"""The HTTP server the rabbits poll (this robot's transport layer; no rclpy).

The other robots' drivers are clients of the robot; here the rabbit is the
client, so the transport is a server: HTTP/1.0 on an event loop (transport.py),
closing every connection (the rabbit reads a reply until the server closes).
Requests become records for the node
(RabbitEvent, Recording, RabbitsChanged) through on_record; the registry
(rabbits.py) decides what each rabbit is told.
"""

import dataclasses
import hmac
import itertools
import pathlib
import re
import time
import urllib.parse
import xml.etree.ElementTree as ElementTree

from legacy_robot_common.client import LinkState
from legacy_robot_common.errors import MalformedFrame

from . import protocol as p
from . import recording
from .kinds.serverless_hooks import HOOKS, RECORD_PATH, HookError
from .rabbits import RabbitRegistry, UnknownRabbit
from .transport import HttpServer, Limits

CHOREOGRAPHIES_KEPT = 256
SPEECH_PATH = '/tts/'
_SPEECH_FILE = re.compile(r'[0-9a-f]{32}-[0-9]{1,4}\.mp3')


@dataclasses.dataclass(frozen=True)
class RabbitEvent:
    serial: str
    kind: str  # boot, locate, ping, click, double_click, click_while_playing,
    # end_of_message, ears_moved, rfid, recording, unknown
    ears: tuple = ()
    rfid: str = ''
    program_id: int = None
    time: float = 0.0
    double_click: bool = False  # recordings: m=1, a long double click (m=0: a long click)


@dataclasses.dataclass(frozen=True)
class Recording:
    serial: str
    wav: bytes
    pcm: object  # int16 NumPy array
    sample_rate: int
    double_click: bool
    time: float


@dataclasses.dataclass(frozen=True)
class RabbitsChanged:
    """A rabbit registered: the node republishes the rabbit list."""


@dataclasses.dataclass(frozen=True)
class Settings:
    host: str = '0.0.0.0'
    port: int = 8080
    advertised_host: str = ''  # '' → host, or this machine's address when host is 0.0.0.0
    locate_ping: str = ''  # '' → advertised_host:port
    locate_broad: str = ''  # '' → advertised_host:port/broadcast
    path_prefix: str = '/vl'
    path_extension: str = '.jsp'
    bytecode: bytes = None  # the checked bc.jsp file, or None (404)
    media_root: pathlib.Path = None
    xml_api: bool = True
    xml_token: str = ''
    max_body_bytes: int = 65536  # every POST but record.jsp's
    max_recording_bytes: int = recording.MAX_UPLOAD_BYTES
    client_timeout: float = 10.0
    max_header_bytes: int = 16384
    max_connections_per_address: int = 64
    publish_pings: bool = False
    speech_folder: pathlib.Path = None  # the speech cache, served under /tts/


class HttpError(Exception):
    """A refused request: its status, and the counter of its kind of refusal, if any."""

    def __init__(self, status, message, counter=None):
        super().__init__(message)
        self.status = status
        self.counter = counter


# The transport's refusals by status, each counted under its kind.
REFUSAL_COUNTERS = {
    413: 'refused_bodies',
    414: 'refused_heads',
    431: 'refused_heads',
    503: 'refused_connections',
}


@dataclasses.dataclass
class Counters:
    connects: int = 0  # rabbits that registered (called for the first time)
    requests: int = 0
    bad_requests: int = 0
    pings: int = 0
    events: int = 0
    recordings: int = 0
    duplicate_uploads: int = 0
    unknown_events: int = 0  # sd values nabaztag.md §3.4 does not define
    dropped_clients: int = 0  # connections silent until client_timeout, closed unanswered
    # refusals by kind (each is also a bad request)
    refused_paths: int = 0  # outside the media or speech cache folder, path characters, NUL
    refused_heads: int = 0  # request line and headers over max_header_bytes
    refused_bodies: int = 0  # a body over its route's limit, or a recording over 8 s
    refused_connections: int = 0  # over max_connections_per_address: closed at once
    unknown_serials: int = 0  # not in allowed_serials: 403, not registered
    refused_xml: int = 0  # the XML API without its token, or with a wrong one
    hooks: int = 0  # ServerlessNabaztag hooks accepted
    refused_hooks: int = 0  # hooks from an address no declared serverless rabbit has: 403
    bad_hooks: int = 0  # hooks with a field missing or malformed: 400
    last_error: str = ''

    @property
    def bad_frames(self):
        """What the other robots' links call their malformed input (tools read any link's)."""
        return self.bad_requests


class BridgeServer:
    """Started and stopped like the other robots' clients; state and counters.connects
    say the same things: whether rabbits are calling, and how many have."""

    name = 'http server'

    def __init__(self, settings, registry=None, logger=None, serverless=None):
        """serverless: a kinds.serverless_hooks.ServerlessHooks to serve ServerlessNabaztag
        rabbits their boot and take their hooks (None: neither is served)."""
        self.settings = settings
        self.serverless = serverless
        self.registry = registry or RabbitRegistry()
        self.log = logger
        self.on_record = lambda record: None
        self.tap = None  # set before start() to record every request and reply
        self.counters = Counters()
        self._choreographies = {}
        self._choreography_count = itertools.count(1)  # names stay unique after evictions
        self._http = None
        self.port = settings.port
        self._record_path = f'{settings.path_prefix}/record{settings.path_extension}'
        self._routes = {
            f'{settings.path_prefix}/{name}{settings.path_extension}': handler
            for name, handler in (
                ('bc', self._bytecode),
                ('locate', self._locate),
                ('p4', self._ping),
                ('record', self._record),
                ('rfid', self._rfid),
            )
        }
        if settings.xml_api:
            self._routes.update(
                {
                    '/xml/rawrequest.xml': self._xml_raw_request,
                    '/xml/jnabcommand.xml': self._xml_command,
                    '/xml/jnabserverinfo.xml': self._xml_server_info,
                }
            )
        if serverless is not None:
            self._routes.update({f'/hooks/{name}.php': self._hook_route(name) for name in HOOKS})
        self._prefixes = (
            ('/local/', self._media),
            ('/broadcast/chorlibrary/', self._choreography),
            ('/broadcast/', self._media),
            ('/chorlibrary/', self._choreography),
            ('/recordings/', self._recording),
        )

    # ---- life cycle ---------------------------------------------------------------------
    def start(self):
        limits = Limits(
            client_timeout=self.settings.client_timeout,
            max_head_bytes=self.settings.max_header_bytes,
            max_body_bytes=self.settings.max_body_bytes,
            max_connections_per_address=self.settings.max_connections_per_address,
        )
        self._http = HttpServer(
            self.settings.host,
            self.settings.port,
            self.handle,
            limits,
            on_refused=lambda status, text: self.count_bad_request(
                f'{status} {text}', REFUSAL_COUNTERS.get(status)
            ),
            on_dropped=lambda: self._count('dropped_clients'),
            tap=self.tap,
            body_limit=self.body_limit,
        ).start()
        self.port = self._http.port
        host = self.advertised_host()
        self.locate_ping = self.settings.locate_ping or f'{host}:{self.port}'
        self.locate_broad = self.settings.locate_broad or f'{host}:{self.port}/broadcast'
        # program URLs (MU, CH, echo) reach the bridge the way the rabbit does: through the
        # host:port locate advertises (a port forward or proxy), never the bind port
        # (nabaztag.md §7.4)
        self.base_url = f'http://{self.locate_ping}'
        self.registry.recordings_url = f'{self.base_url}/recordings/'
        return self

    def stop(self):
        if self._http is not None:
            self._http.stop()
            self._http = None

    @property
    def connected(self):
        return self._http is not None

    @property
    def state(self):
        if self._http is None:
            return LinkState.STOPPED
        return LinkState.CONNECTED if self.registry.counts()[1] else LinkState.CONNECTING

    def advertised_host(self):
        if self.settings.advertised_host:
            return self.settings.advertised_host
        if self.settings.host not in ('', '0.0.0.0'):
            return self.settings.host
        return _primary_address()

    # ---- resources the programs point at ------------------------------------------------
    def add_choreography(self, data):
        """Serve .chor bytes under /chorlibrary/<name>; returns the URL the rabbit fetches."""
        name = f'ros-{next(self._choreography_count)}.chor'
        self._choreographies[name] = bytes(data)
        while len(self._choreographies) > CHOREOGRAPHIES_KEPT:
            self._choreographies.pop(next(iter(self._choreographies)))
        return f'{self.base_url}/chorlibrary/{name}'

    def media_url(self, relative):
        """URL of a file under the media root (ValueError when it is not one)."""
        try:
            self._media_file(relative)
        except HttpError as exc:
            raise ValueError(str(exc)) from None
        return f'{self.base_url}/local/{urllib.parse.quote(relative)}'

    # ---- request handling ---------------------------------------------------------------
    def handle(self, method, target, headers, read_body):
        """(status, body bytes or a file path, content type) for one request; headers
        with lower-case names, read_body() → the body bytes received."""
        path, query = _split_target(target)
        self.counters.requests += 1  # inline: the one count every request makes
        try:
            if method not in ('GET', 'POST'):
                raise HttpError(405, f'{method[:16]!r}: the rabbit only GETs and POSTs')
            route = self._routes.get(path)
            if route is not None:
                return route(method, query, headers, lambda: self._body(headers, read_body, path))
            if path.startswith(SPEECH_PATH):
                return self._speech(_relative(path, SPEECH_PATH), query)
            for prefix, serve in self._prefixes:
                if path.startswith(prefix):
                    return serve(_relative(path, prefix))
            if self.serverless is not None:
                found = self.serverless.boot_file(_relative(path, ''), query, self._http.peer)
                if found is not None:
                    return 200, *found
            raise HttpError(404, f'no such resource {path}')
        except UnknownRabbit as exc:
            self.count_bad_request(f'403 {method} {path}: {exc}', 'unknown_serials')
            return 403, f'{exc}\n'.encode(), 'text/plain'
        except (HttpError, MalformedFrame) as exc:
            status = getattr(exc, 'status', 400)
            self.count_bad_request(
                f'{status} {method} {path}: {exc}', getattr(exc, 'counter', None)
            )
            return status, f'{exc}\n'.encode(), 'text/plain'
        except Exception as exc:  # a bug must cost one request, not the server
            self._count('bad_requests', f'500 {path}: {exc!r}')
            if self.log:
                self.log.error('server-error', f'{method} {path}: {exc!r}')
            return 500, b'internal error\n', 'text/plain'

    def body_limit(self, target):
        """(bytes, parameter) a POST to target may send: recordings have a limit of their own,
        sized to the rabbit's longest; the XML API's bodies are small."""
        if _split_target(target)[0] in (self._record_path, RECORD_PATH):
            return self.settings.max_recording_bytes, 'max_recording_bytes'
        return self.settings.max_body_bytes, 'max_body_bytes'

    def _body(self, headers, read_body, path):
        """The POST body (Content-length in any casing), checked against its route's limit."""
        length = headers.get('content-length')
        if length is None:
            raise HttpError(411, 'a POST needs a Content-length header')
        if not length.strip().isdigit():
            raise HttpError(400, f'Content-length {length.strip()!r} is not a byte count')
        length, (limit, parameter) = int(length), self.body_limit(path)
        if length > limit:
            raise HttpError(
                413,
                f'body of {length} bytes; the limit is {limit} (parameter {parameter})',
                'refused_bodies',
            )
        body = read_body()
        if len(body) != length:
            raise HttpError(400, f'body ended after {len(body)} of {length} bytes')
        return body

    def count_bad_request(self, text, kind=None, log_key='bad-request'):
        """A refused request: a bad request, and one of its kind (a Counters field) if given;
        logged at most once a period per log_key."""
        self._count('bad_requests', text, kind)
        if self.log:
            self.log.warning(log_key, f'bad request: {text}')

    def _count(self, name, error='', kind=None):
        # No lock: every count is made on the HTTP server's one loop thread (requests,
        # refusals, drops), and readers on other threads only read whole ints.
        counters = self.counters
        setattr(counters, name, getattr(counters, name) + 1)
        if kind:
            setattr(counters, kind, getattr(counters, kind) + 1)
        if error:
            counters.last_error = error

    def _event(self, serial, kind, **fields):
        self._count('events')
        self.on_record(RabbitEvent(serial, kind, time=time.time(), **fields))

    def _rabbit(self, query, key='sn'):
        rabbit, new = self.registry.seen(p.normalize_serial(query.get(key, '')))
        if new:
            self._count('connects')
            self.on_record(RabbitsChanged())
        return rabbit

    def _bytecode(self, method, query, headers, read_body):
        rabbit = self._rabbit(query, 'm')
        self.registry.note_boot(rabbit)
        self._event(rabbit.serial, 'boot')
        if self.settings.bytecode is None:
            raise HttpError(
                404,
                'no bytecode configured (parameter bytecode_file); a rabbit '
                'cannot boot from this bridge',
            )
        return 200, self.settings.bytecode, 'application/octet-stream'

    def _hook_route(self, name):
        def hook(method, query, headers, read_body):
            if method != 'POST':
                raise HttpError(405, f'the {name} hook is a POST')
            try:  # the address is checked before the body is parsed
                self.serverless.hook(name, self._http.peer, read_body)
            except HookError as exc:  # each hook's refusals logged apart
                self.count_bad_request(
                    f'{exc.status} {name} hook: {exc}', exc.counter, f'hook-{name}'
                )
                return exc.status, f'{exc}\n'.encode(), 'text/plain'
            self._count('hooks')
            return 200, b'', 'text/plain'

        return hook

    def _locate(self, method, query, headers, read_body):
        rabbit = self._rabbit(query)
        self._event(rabbit.serial, 'locate')
        return 200, p.locate_reply(self.locate_ping, self.locate_broad).encode(), 'text/plain'

    def _ping(self, method, query, headers, read_body):
        rabbit = self._rabbit(query)
        version = _decimal(query, 'v')
        tc = p.decode_tc(query.get('tc', '0'))
        event = p.decode_sd(query.get('sd', '0'))
        self.registry.note_ping(rabbit, version, tc, event)
        self._count('pings')
        if event.kind != 'ping' or self.settings.publish_pings:
            if event.kind == 'unknown':
                self._count('unknown_events')
                if self.log:
                    self.log.warning(
                        'unknown-sd', f'rabbit {rabbit.serial}: unknown event sd={event.value:x}'
                    )
            self._event(rabbit.serial, event.kind, ears=event.ears, program_id=tc)
        return 200, self.registry.reply_packet(rabbit), 'application/octet-stream'

    def _rfid(self, method, query, headers, read_body):
        rabbit = self._rabbit(query)
        tag = p.normalize_rfid(query.get('t', ''))
        if tag != '0' * 16:  # pre-v19 rabbits send zeros when a read fails
            self._event(rabbit.serial, 'rfid', rfid=tag, program_id=rabbit.tc)
        return 200, self.registry.reply_packet(rabbit), 'application/octet-stream'

    def _record(self, method, query, headers, read_body):
        if method != 'POST':
            raise HttpError(405, 'record.jsp takes a POST of the recording')
        rabbit = self._rabbit(query)
        wav = read_body()
        pcm, rate = recording.decode_wav(wav)
        if len(pcm) > rate * (recording.MAX_SECONDS + 1):
            raise HttpError(
                413,
                f'a recording of {len(pcm) / rate:.1f} s; the rabbit records '
                f'at most {recording.MAX_SECONDS:.0f} s',
                'refused_bodies',
            )
        if self.registry.add_recording(rabbit, wav) is None:
            self._count('duplicate_uploads')
        else:
            self._count('recordings')
            now = time.time()
            double_click = query.get('m') == '1'
            self.on_record(Recording(rabbit.serial, wav, pcm, rate, double_click, now))
            self._event(
                rabbit.serial, 'recording', program_id=rabbit.tc, double_click=double_click
            )
        return 200, b'', 'text/plain'

    # ---- files --------------------------------------------------------------------------
    def _media_file(self, relative):
        root = self.settings.media_root
        if root is None:
            raise HttpError(404, 'no media root configured (parameter media_root)')
        return _file_under(root, relative, 'the media root')

    def _media(self, relative):
        return 200, self._media_file(relative), _content_type(relative)

    def speech_url(self, name, serial, program_id):
        """URL of a speech MP3 in the cache; the query tells who fetched it (say_fetched)."""
        if program_id is None:  # a kind whose programs have no id
            return f'{self.base_url}{SPEECH_PATH}{name}'
        return f'{self.base_url}{SPEECH_PATH}{name}?sn={serial}&id={program_id:x}'

    def _speech(self, name, query):
        folder = self.settings.speech_folder
        _refuse_path_characters(name)
        if folder is None or not _SPEECH_FILE.fullmatch(name):
            raise HttpError(404, f'no speech file {name!r}')
        path = _file_under(folder, name, 'the speech cache')
        serial, program = query.get('sn', ''), query.get('id', '')
        if re.fullmatch('[0-9a-f]{12}', serial) and re.fullmatch('[0-9a-f]{1,8}', program):
            self._event(serial, 'say_fetched', program_id=int(program, 16))
        return 200, path, 'audio/mpeg'

    def _choreography(self, name):
        _refuse_path_characters(name)
        data = self._choreographies.get(name)
        if data is None:
            raise HttpError(404, f'no choreography {name!r}')
        return 200, data, 'application/octet-stream'

    def _recording(self, name):
        _refuse_path_characters(name)
        data = self.registry.recording(name)
        if data is None:
            raise HttpError(404, f'no recording {name!r}')
        return 200, data, 'audio/wav'

    # ---- jNabServer's XML API (docs/protocols/nabaztag.md §8) -----------------------------
    def _check_token(self, query, headers):
        token = self.settings.xml_token
        if not token:  # it commands every rabbit, and the server faces the network
            raise HttpError(
                403,
                'the XML API is closed: set the parameter xml_token to open it',
                'refused_xml',
            )
        given = query.get('token') or headers.get('x-auth-token', '')
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HttpError(
                403,
                'the XML API needs the right token (token=... or X-Auth-Token)',
                'refused_xml',
            )

    def _xml_raw_request(self, method, query, headers, read_body):
        return self._xml_answer(
            query, headers, lambda: self._raw_request(_parse_xml(read_body(), 'rawrequest'))
        )

    def _raw_request(self, root):
        orders = []
        for packet in root.iter('packet'):
            rabbits = self.registry.select(p.normalize_serial(packet.get('serial', '')))
            blocks = [self._xml_block(element) for element in packet]
            if not blocks:
                raise MalformedFrame('a <packet> needs at least one block element')
            orders.append((rabbits, blocks))
        if not orders:
            raise MalformedFrame('<rawrequest> without a <packet>')
        for rabbits, blocks in orders:  # all checked before any is queued
            self.registry.queue_blocks(rabbits, blocks)

    def _xml_block(self, element):
        text = (element.text or '').strip()
        if element.tag == 'pingintervalblock':
            return p.ping_interval_block(_number(text, 'pingintervalblock'))
        if element.tag == 'rebootblock':
            return p.reboot_block()
        if element.tag == 'messageblock':
            program = p.parse_program(text.replace('\\n', '\n'))
            return p.message_block(p.program_text(program), self.registry.message_first_byte)
        if element.tag == 'ambientblock':
            services = tuple(
                tuple(_number(v, 'services') for v in pair.split(':'))
                for pair in element.get('services', '').split(',')
                if pair
            )
            try:
                return p.ambient_block(
                    p.Ambient(
                        services,
                        (
                            _number(element.get('ear0', '0'), 'ear0'),
                            _number(element.get('ear1', '0'), 'ear1'),
                        ),
                        _number(element.get('nose_blinks', '0'), 'nose_blinks'),
                    )
                )
            except ValueError as exc:
                raise MalformedFrame(f'ambientblock: {exc}') from None
        raise MalformedFrame(f'unknown block element <{element.tag}>')

    def _xml_command(self, method, query, headers, read_body):
        return self._xml_answer(
            query, headers, lambda: self._command(_parse_xml(read_body(), 'jnabcommand'))
        )

    def _command(self, root):
        rabbits = self.registry.select(p.normalize_serial(root.get('serial', '')))
        plugins = [_plugin_name(e.text) for e in root.iter('setPlugin')]
        methods = [e.get('name') or (e.text or '').strip() for e in root.iter('method')]
        if not plugins and not methods:
            raise MalformedFrame('<jnabcommand> needs <setPlugin> or <method>')
        for plugin in plugins:
            try:
                self.registry.update(rabbits, plugin=plugin)
            except ValueError as exc:
                raise MalformedFrame(str(exc)) from None
        for name in methods:
            self.registry.call_plugin_method(rabbits, name)

    def _xml_server_info(self, method, query, headers, read_body):
        return self._xml_answer(query, headers, self._server_info)

    def _server_info(self):
        root = ElementTree.Element('jNabServerInfo')
        registered = ElementTree.SubElement(root, 'registeredNabaztags')
        for rabbit in self.registry.snapshot():
            entry = ElementTree.SubElement(registered, 'nabaztag')
            ElementTree.SubElement(entry, 'plugin').text = rabbit.plugin
            ElementTree.SubElement(entry, 'serial').text = rabbit.serial
        return root

    def _xml_answer(self, query, headers, action):
        """The token check, then action(): its XML, or the manual's response forms
        <success>1</success> and <error><message>…</message></error>."""
        try:
            self._check_token(query, headers)
            root = action()
            if root is None:
                root = ElementTree.Element('response')
                ElementTree.SubElement(root, 'success').text = '1'
            status = 200
        except (HttpError, MalformedFrame, UnknownRabbit, ValueError) as exc:
            status = getattr(exc, 'status', 400)
            self.count_bad_request(f'{status} XML API: {exc}', getattr(exc, 'counter', None))
            root = ElementTree.Element('response')
            error = ElementTree.SubElement(root, 'error')
            ElementTree.SubElement(error, 'message').text = str(exc)
        return (
            status,
            ElementTree.tostring(root, xml_declaration=True, encoding='UTF-8'),
            'text/xml',
        )


# ---- helpers ---------------------------------------------------------------------------
def _relative(path, prefix):
    """The decoded rest of a URL path after prefix; control characters (a NUL) refused."""
    relative = urllib.parse.unquote(path[len(prefix) :])
    if any(ord(c) < 32 for c in relative):
        raise HttpError(400, 'control characters in the path', 'refused_paths')
    return relative


def _file_under(root, relative, what):
    """The file relative names under root, symbolic links and '..' resolved: the one place a
    request becomes a path on disk. Outside root or no such file: 404."""
    root = pathlib.Path(root).resolve()
    path = (root / relative).resolve()
    if not path.is_relative_to(root):  # 404 as for a missing file: nothing said about it
        raise HttpError(404, f'no file {relative!r} under {what}', 'refused_paths')
    if not path.is_file():
        raise HttpError(404, f'no file {relative!r} under {what}')
    return path


def _refuse_path_characters(name):
    """Names of one flat folder (speech, recordings, choreographies): no path in them."""
    if '/' in name or '\\' in name or name in ('.', '..'):
        raise HttpError(400, f'{name!r}: a file name with path characters', 'refused_paths')


def _split_target(target):
    """(path, {name: first non-blank value}) as urlsplit and parse_qs give them, in a
    fraction of their time: every ping goes through here."""
    if not target.startswith('/'):
        url = urllib.parse.urlsplit(target)  # an absolute URL (proxies send those)
        target = url.path + ('?' + url.query if url.query else '')
    path, _, query = target.partition('#')[0].partition('?')
    # in reverse, so that the first of a repeated name is the one kept
    pairs = (pair.partition('=') for pair in reversed(query.split('&')))
    if '%' in query or '+' in query:
        pairs = ((_unquote(name), _, _unquote(value)) for name, _, value in pairs)
    return path, {name: value for name, _, value in pairs if value}


def _unquote(text):
    return urllib.parse.unquote(text.replace('+', ' '))


def _parse_xml(data, root_tag):
    """The jNabServer manual's XML: entity declarations refused (no expansion, no external
    entities); the DOCTYPE, whose DTDs in the manual are not valid (nabaztag.md §10.1), is
    dropped before parsing."""
    text = data.decode('utf-8', errors='replace')
    if re.search(r'<!ENTITY', text, re.IGNORECASE):
        raise MalformedFrame('XML entity declarations are not accepted')
    text = re.sub(r'<!DOCTYPE[^\[>]*(\[.*?\]\s*)?>', '', text, flags=re.DOTALL | re.IGNORECASE)
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise MalformedFrame(f'not well-formed XML: {exc}') from None
    if root.tag != root_tag:
        raise MalformedFrame(f'expected <{root_tag}>, got <{root.tag}>')
    return root


def _plugin_name(text):
    """'echo', 'EchoPlugin' or 'jNab.plugins.EchoPlugin' → 'echo'."""
    name = (text or '').strip().rsplit('.', 1)[-1].lower()
    return name[: -len('plugin')] if name.endswith('plugin') and name != 'plugin' else name


def _number(text, what):
    if not text.strip().isdigit():
        raise MalformedFrame(f'{what}: {text!r} is not a number')
    return int(text)


def _decimal(query, key):
    value = query.get(key, '0')
    if not value.isdigit():
        raise MalformedFrame(f'{key}={value!r} is not a decimal number')
    return int(value)


def _content_type(name):
    suffix = pathlib.Path(name).suffix.lower()
    return {
        '.mp3': 'audio/mpeg',
        '.wav': 'audio/wav',
        '.chor': 'application/octet-stream',
        '.mid': 'audio/midi',
    }.get(suffix, 'application/octet-stream')


def _primary_address():
    """This machine's address on its default route (no packet is sent), else loopback."""
    import socket

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(('192.0.2.1', 80))  # TEST-NET-1: never routed anywhere
        return probe.getsockname()[0]
    except OSError:
        return '127.0.0.1'
    finally:
        probe.close()
