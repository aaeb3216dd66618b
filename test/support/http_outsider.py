"""An outsider on the rabbits' network, against the Nabaztag bridge's HTTP server.

    python http_outsider.py HOST PORT [--hold N]

Sends each of REQUESTS on a connection of its own and prints one JSON line per request:
{"name": ..., "status": the reply's status (0: none), "body": the reply's body, cut}. Then,
with --hold, opens N connections that each send half a request line and never finish, prints
{"held": connections still open, "closed": connections the server closed}, and keeps them open
until its standard input closes.
"""

import argparse
import json
import select
import socket
import sys

SERIAL = '0019db9c2a11'
QUIET = 0.5  # s without a close: the server has closed all it will
PING = f'/vl/p4.jsp?sn={SERIAL}&v=65808&st=1&sd=0&tc=7fffffff&h=4'
RABBIT_HEADERS = 'User-Agent: MTL\r\nHost: robot\r\n'


def get(target, headers=''):
    return f'GET {target} HTTP/1.0\r\n{RABBIT_HEADERS}{headers}\r\n'.encode()


REQUESTS = {
    'dot-dot': get('/../../../../etc/passwd'),
    'dot-dot in media': get('/local/../secret.txt'),
    'encoded dots': get('/local/%2e%2e/secret.txt'),
    'encoded slash': get('/local/..%2fsecret.txt'),
    'all encoded': get('/local/%2e%2e%2fsecret.txt'),
    'double slash': get('//etc/passwd'),
    'backslash': get('/local/..\\secret.txt'),
    'encoded backslash': get('/local/..%5csecret.txt'),
    'NUL': get('/local/secret.txt%00.mp3'),
    'recording traversal': get('/recordings/..%2f..%2fsecret.txt'),
    'serial with path': get('/vl/p4.jsp?sn=../../x&v=65808&st=1&sd=0&tc=0&h=4'),
    'speech file with path': get('/local/tts/..%2f..%2fsecret.txt'),
    'absolute URL with dots': get('http://robot/local/../secret.txt'),
    'double-encoded dots': get('/local/%252e%252e/secret.txt'),
    'symbolic link out': get('/local/link.txt'),
    'speech cache traversal': get('/tts/..%2f..%2fsecret.txt'),
    'choreography traversal': get('/chorlibrary/..%2f..%2fsecret.txt'),
    'boot serial with path': get('/vl/bc.jsp?m=../../x&v=65808'),
    'record.jsp serial with path': (
        b'POST /vl/record.jsp?sn=..%2f..%2fevil&v=65808&h=4&m=0 HTTP/1.0\r\n'
        b'Content-length: 4\r\n\r\nRIFF'
    ),
    '40 kB header': get(PING, 'X-Padding: ' + 'a' * 40000 + '\r\n'),
    '20 MB body': (
        f'POST /vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0 HTTP/1.0\r\n'.encode()
        + b'Content-length: 20000000\r\n\r\n'
        + b'\0' * 65536
    ),
    'recording over its limit': (
        f'POST /vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0 HTTP/1.0\r\n'.encode()
        + b'Content-length: 40000\r\n\r\nRIFF'
        + b'\0' * 39996
    ),
    'chunked body': (
        f'POST /vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0 HTTP/1.1\r\n'.encode()
        + b'Transfer-Encoding: chunked\r\n\r\n'
        + (b'4000\r\n' + b'\0' * 0x4000 + b'\r\n') * 8
    ),
    'unknown serial': get(PING.replace(SERIAL, '0019db000000')),
    'click hook from an outsider': (
        b'POST /hooks/click.php HTTP/1.0\r\nContent-length: 6\r\n\r\ntime=1'
    ),
    'rfid hook from an outsider': (
        b'POST /hooks/rfid.php HTTP/1.0\r\nContent-length: 20\r\n\r\ntag=d0021a0102030405'
    ),
    'xml api without token': (
        b'POST /xml/jnabserverinfo.xml HTTP/1.0\r\nContent-length: 0\r\n\r\n'
    ),
}


def exchange(host, port, request):
    """(status, body) of one request (status 0: no reply)."""
    with socket.create_connection((host, port), timeout=10) as connection:
        try:
            connection.sendall(request)
        except OSError:
            pass  # refused while we were still sending: the reply may be there
        reply = b''
        try:
            while chunk := connection.recv(65536):
                reply += chunk
        except OSError:
            pass  # reset after its reply (a refusal closes at once): what came is the answer
    head, _, body = reply.partition(b'\r\n\r\n')
    parts = head.split(b' ', 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    return status, body[:2000].decode('latin-1')


def hold(host, port, count):
    """count connections with half a request line each; (still open, closed by the server)."""
    held = []
    for _ in range(count):
        connection = socket.create_connection((host, port), timeout=10)
        connection.sendall(b'GET /vl/p4.jsp?sn=')
        held.append(connection)
    open_ones, closed = list(held), 0
    while True:  # until the server has closed nothing more for QUIET s
        readable, _, _ = select.select(open_ones, [], [], QUIET)
        if not readable:
            return held, len(open_ones), closed
        for connection in readable:
            open_ones.remove(connection)
            closed += 1  # a half request is never answered: readable means closed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('host')
    parser.add_argument('port', type=int)
    parser.add_argument('--hold', type=int, default=0)
    args = parser.parse_args()
    for name, request in REQUESTS.items():
        status, body = exchange(args.host, args.port, request)
        print(json.dumps({'name': name, 'status': status, 'body': body}), flush=True)
    if args.hold:
        held, still_open, closed = hold(args.host, args.port, args.hold)
        print(json.dumps({'held': still_open, 'closed': closed}), flush=True)
        sys.stdin.read()
        for connection in held:
            connection.close()


if __name__ == '__main__':
    main()
