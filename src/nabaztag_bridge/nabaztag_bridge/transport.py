"""HTTP/1.0 on an event loop: asyncio on uvloop, requests parsed by httptools (llhttp).

The rabbit opens one connection per request, sends it, and reads the reply until the
server closes (docs/protocols/nabaztag.md §2.1), so this serves exactly that: one request per
connection, an HTTP/1.0 reply, then the close. What a request means is decided by respond(method,
target, headers, read_body) → (status, bytes or a file path, content type); this module
only parses, enforces the limits and writes. It runs its own loop on one thread, so the
rclpy executor and the rabbits never wait for each other.

Limits per connection, so that a slow or hostile client costs one socket and nothing
else: a deadline for the whole request (client_timeout), a size limit for the request
line and headers (431 / 414), a header count (431), and a body limit per route (413, before the
body is read when its length is announced, else as soon as it passes the limit; nothing of it
is kept). Per address, a cap on open connections: one host holding many sockets open
cannot take the server's from the rabbits.
"""

import asyncio
import dataclasses
import http
import math
import pathlib
import threading

import httptools
import uvloop

from legacy_robot_common.streams import is_loopback

LINGER_SECONDS = 2.0  # reading (and dropping) what a refused client still sends
# Deadlines are checked by one sweep over the open connections this often (at most; a short
# client_timeout sweeps more often), not by a timer per connection: a timer made and cancelled
# for every ping was a tenth of the ping's cost.
SWEEP_SECONDS = 0.5


@dataclasses.dataclass(frozen=True)
class Limits:
    client_timeout: float = 10.0  # s for the whole request, from the connection on
    max_head_bytes: int = 16384  # request line and headers (h11 and Hypercorn take 16 KiB)
    max_headers: int = 100
    max_body_bytes: int = 65536  # for routes body_limit does not name
    max_connections_per_address: int = 64  # open at once from one address (0: no cap)
    backlog: int = 4096  # connections waiting for accept: thousands of rabbits


class RequestError(Exception):
    """A request refused before it reaches respond() (status, message)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def reply_bytes(status, body, content_type):
    """The whole HTTP/1.0 reply (body: bytes)."""
    reason = _REASONS.get(status, 'Unknown')
    return (
        f'HTTP/1.0 {status} {reason}\r\nContent-Type: {content_type}\r\n'
        f'Content-Length: {len(body)}\r\n\r\n'
    ).encode('latin-1') + body


_REASONS = {status.value: status.phrase for status in http.HTTPStatus}


class HttpServer:
    """start() binds and serves on a thread of its own; stop() closes every connection.
    respond is called on the loop thread, one request at a time; on_refused(status,
    text) for requests refused here (unparsable, over a limit); body_limit(target) →
    (bytes, the parameter that sets them) for a POST's body, by default max_body_bytes."""

    def __init__(
        self,
        host,
        port,
        respond,
        limits=Limits(),
        on_refused=None,
        on_dropped=None,
        tap=None,
        body_limit=None,
    ):
        self.host, self.port = host, port
        self.body_limit = body_limit or (lambda target: (limits.max_body_bytes, 'max_body_bytes'))
        self.tap = tap  # a recording's LinkTap: every connection's bytes
        self.respond = respond
        self.limits = limits
        self.on_refused = on_refused or (lambda status, text: None)
        self.on_dropped = on_dropped or (lambda: None)  # a client silent until the deadline
        self.connections = set()  # open ones: stop() closes them
        self.per_address = {}  # client address → its open connections
        self._loop = None
        self._thread = None
        self._server = None
        self._sweep_every = min(SWEEP_SECONDS, limits.client_timeout / 4)
        self.loop_time = None  # the loop's clock, once started
        self.peer = None  # the address of the client whose request respond() is answering

    def start(self):
        started, failure = threading.Event(), []
        self._loop = uvloop.new_event_loop()
        self.loop_time = self._loop.time

        def serve():
            asyncio.set_event_loop(self._loop)
            try:
                self._server = self._loop.run_until_complete(
                    self._loop.create_server(
                        lambda: _Connection(self),
                        self.host,
                        self.port,
                        backlog=self.limits.backlog,
                        reuse_address=True,
                    )
                )
            except OSError as exc:
                failure.append(exc)
                started.set()
                return
            self.port = self._server.sockets[0].getsockname()[1]
            self._loop.call_later(self._sweep_every, self._sweep)
            started.set()
            self._loop.run_forever()
            self._server.close()
            self._loop.run_until_complete(self._server.wait_closed())
            self._loop.close()

        self._thread = threading.Thread(target=serve, name='nabaztag-http', daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            raise failure[0]
        return self

    def stop(self):
        if self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._close_all)
        self._thread.join(5.0)
        self._thread = None

    def _sweep(self):
        """Every connection past its deadline: timed out (unanswered) or done lingering."""
        now = self._loop.time()
        for connection in [c for c in self.connections if c.expires <= now]:
            connection.expired()
        self._loop.call_later(self._sweep_every, self._sweep)

    def _close_all(self):
        self._server.close()
        for connection in list(self.connections):
            connection.transport.abort()
        self._loop.stop()


class _Connection(asyncio.Protocol):
    """One request: parse it within the limits, answer it, close."""

    def __init__(self, server):
        self.server = server
        self.limits = server.limits
        self.parser = httptools.HttpRequestParser(self)
        self.transport = None
        self.url = b''
        self.headers = {}
        self.body = []
        self.body_size = 0
        self.head_size = 0
        self.head_done = False
        self.line_done = False  # the request line's end has arrived (then 431, not 414)
        self.header_size = 0
        self.answered = False
        self.refused = False  # over the per-address cap: closed unserved
        self.expires = math.inf  # loop time: the server's sweep calls expired() after it
        self.tap = server.tap
        self.number = 0  # the connection's number in a recording
        self.address = None  # the client's, for the per-address cap
        self.max_body = (self.limits.max_body_bytes, 'max_body_bytes')  # the route's, from the URL

    # ---- asyncio ---------------------------------------------------------------------------
    def connection_made(self, transport):
        self.transport = transport
        self.server.connections.add(self)
        if not self._admitted():
            return
        if self.tap is not None:
            self.number = self.tap.next_connection()
        self.expires = self.server.loop_time() + self.limits.client_timeout

    def _admitted(self):
        """Count this connection against its address's cap; over it, close it at once (no
        reply: its peer holds too many already) and say so through on_refused. This host's own
        clients are not capped: a reverse proxy in front, the load benchmarks."""
        peer = self.transport.get_extra_info('peername')
        self.address = peer[0] if peer else None
        open_now = self.server.per_address.get(self.address, 0) + 1
        self.server.per_address[self.address] = open_now
        cap = self.limits.max_connections_per_address
        if cap and open_now > cap and not is_loopback(self.address):
            self.answered = True  # nothing more to read or answer
            self.refused = True
            self.server.on_refused(
                503, f'{self.address}: over {cap} open connections (max_connections_per_address)'
            )
            self.transport.abort()
            return False
        return True

    def connection_lost(self, exc):
        self.server.connections.discard(self)
        left = self.server.per_address.pop(self.address, 1) - 1
        if left:
            self.server.per_address[self.address] = left
        self.parser = None  # it refers back to this protocol: freed now, not by a GC pass
        if self.refused:
            return  # refused at the cap: never served
        if self.tap is not None and (exc is not None or not self.answered):
            # an exchange that ended as HTTP/1.0 ends, after its reply, needs no events: its
            # connection number is the boundary (events were 2 of 4 messages at 500 rabbits)
            reason = str(exc) if exc else 'closed unanswered'
            self.tap.closed(f'{_peer(self.transport)}: {reason}', self.number)

    def data_received(self, data):
        if self.tap is not None:
            self.tap.received(data, self.number)
        if self.answered:
            return  # lingering after a refusal: read and drop
        if not self.head_done:
            self.head_size += len(data)
            self.line_done = self.line_done or b'\n' in data
        try:
            self.parser.feed_data(data)
            if not self.head_done and self.head_size > self.limits.max_head_bytes:
                raise RequestError(
                    431 if self.line_done else 414,
                    f'request line and headers over {self.limits.max_head_bytes} bytes',
                )
        except RequestError as exc:
            self._refuse(exc.status, str(exc))
        except httptools.HttpParserUpgrade:
            self._refuse(400, 'protocol upgrades are not served')
        except httptools.HttpParserError as exc:
            refusal = exc.__context__  # httptools wraps what a callback raised
            if isinstance(refusal, RequestError):
                self._refuse(refusal.status, str(refusal))
            else:
                self._refuse(400, _parser_error(exc))

    def eof_received(self):
        if not self.answered and self.head_done:
            self._answer()  # a POST whose client stopped sending: respond() decides
        return False

    # ---- httptools callbacks -----------------------------------------------------------------
    def on_message_begin(self):
        # One request per connection. llhttp (httptools 0.2 on) stops after an HTTP/1.0 request
        # by itself; the http-parser of httptools 0.1.1 (Ubuntu 24.04's python3-httptools)
        # parses pipelined requests on, so a second one ends the parsing here.
        if self.answered:
            raise RequestError(400, 'one request per connection')

    def on_url(self, url):
        self.url += url
        if len(self.url) > self.limits.max_head_bytes:
            raise RequestError(414, f'request line over {self.limits.max_head_bytes} bytes')

    def on_header(self, name, value):
        self.header_size += len(name) + len(value)
        if len(self.headers) >= self.limits.max_headers:
            raise RequestError(431, f'more than {self.limits.max_headers} header lines')
        if self.header_size > self.limits.max_head_bytes:
            raise RequestError(431, f'headers over {self.limits.max_head_bytes} bytes')
        self.headers.setdefault(name.decode('latin-1').lower(), value.decode('latin-1'))

    def on_headers_complete(self):
        self.head_done = True
        if self.parser.get_method() != b'POST':
            self._answer()  # only POSTs have a body worth waiting for
            return
        self.max_body = self.server.body_limit(self.url.decode('latin-1'))
        self._check_body_size(self._content_length())

    def on_body(self, body):
        self.body.append(body)
        self.body_size += len(body)
        self._check_body_size(self.body_size)  # a chunked body announces no length

    def _check_body_size(self, size):
        limit, parameter = self.max_body
        if size > limit:
            self.body.clear()  # nothing of a refused body is kept
            raise RequestError(
                413, f'body of {size} bytes; the limit is {limit} (parameter {parameter})'
            )

    def on_message_complete(self):
        if not self.answered:
            self._answer()

    # ---- answers -----------------------------------------------------------------------------
    def _read_body(self):
        """The POST body as received; respond() compares it with Content-length."""
        return b''.join(self.body)

    def _answer(self):
        self.answered = True
        method = self.parser.get_method().decode('latin-1')
        target = self.url.decode('latin-1')
        self.server.peer = self.address
        status, body, content_type = self.server.respond(
            method, target, self.headers, self._read_body
        )
        if isinstance(body, pathlib.Path):
            body = body.read_bytes()
        self._send(reply_bytes(status, body, content_type), complete=self._complete())

    def _refuse(self, status, text):
        if self.answered:
            return  # a later request on the same connection: not served
        self.answered = True
        self.server.on_refused(status, text)
        self._send(reply_bytes(status, f'{text}\n'.encode(), 'text/plain'), complete=False)

    def _content_length(self):
        length = self.headers.get('content-length', '').strip()
        return int(length) if length.isdigit() else 0  # the parser refuses other values

    def _complete(self):
        return self.body_size >= self._content_length()

    def _send(self, reply, complete):
        self.transport.write(reply)
        if self.tap is not None:
            self.tap.sent(reply, self.number)
        if complete or not self.transport.can_write_eof():
            self.transport.close()
            return
        # the client may still be sending: closing now would reset the connection and could
        # destroy the reply before it is read, so half-close and drop its bytes for a while
        self.transport.write_eof()
        self.expires = self.server.loop_time() + LINGER_SECONDS

    def expired(self):
        """Past the deadline: unanswered (client_timeout), or done lingering after a refusal."""
        self.expires = math.inf  # once: a reply still being written closes on its own
        if not self.answered and self.head_done:
            self._answer()  # a body that stopped short: respond() says so (400)
            return
        if not self.answered:
            self.server.on_dropped()
        self.transport.close()


def _peer(transport):
    peer = transport.get_extra_info('peername')
    return f'{peer[0]}:{peer[1]}' if peer else 'unknown peer'


def _parser_error(exc):
    text = str(exc) or type(exc).__name__
    if 'content-length' in text.lower():
        return f'Content-length is not a byte count ({text})'
    return f'not an HTTP request ({text})'
