"""The bridge's HTTP server over real sockets, with requests written byte for byte as the
rabbit writes them (HTTP/1.0, its four headers, Content-length, no Content-Type)."""

import random
import socket
import threading
import time
import xml.etree.ElementTree as ElementTree

import pytest

from nabaztag_bridge import protocol as p
from nabaztag_bridge import recording
from nabaztag_bridge.rabbits import RabbitRegistry
from nabaztag_bridge.server import BridgeServer, RabbitEvent, RabbitsChanged, Recording, Settings

SERIAL = '0019db9dbb96'
BYTECODE = p.wrap_bytecode(b'test bytecode /vl/p4.jsp?sn=')


def raw(port, data, timeout=5.0):
    """Send bytes as they are; read until the server closes → (status, headers, body)."""
    with socket.create_connection(('127.0.0.1', port), timeout=timeout) as connection:
        connection.sendall(data)
        reply = b''
        while chunk := connection.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b'\r\n\r\n')
    lines = head.decode('latin-1').split('\r\n')
    headers = dict(line.split(': ', 1) for line in lines[1:] if ': ' in line)
    return int(lines[0].split()[1]), headers, body


XML_TOKEN = 'the-lab-token'  # the XML API is closed without one


def rabbit_get(port, path):
    return raw(
        port,
        (
            f'GET {path} HTTP/1.0\r\nUser-Agent: MTL\r\nPragma: no-cache\r\n'
            f'Icy-MetaData:1\r\nHost: 127.0.0.1\r\n\r\n'
        ).encode(),
    )


def rabbit_post(port, path, body, length=None):
    length = len(body) if length is None else length
    return raw(
        port,
        (
            f'POST {path} HTTP/1.0\r\nUser-Agent: MTL\r\nPragma: no-cache\r\n'
            f'Icy-MetaData:1\r\nHost: 127.0.0.1\r\nContent-length: {length}\r\n\r\n'
        ).encode()
        + body,
    )


def ping(port, sd='0', tc='7fffffff', serial=SERIAL):
    return rabbit_get(port, f'/vl/p4.jsp?sn={serial}&v=65808&st=1&sd={sd}&tc={tc}&h=4')


@pytest.fixture
def bridge(tmp_path):
    started = []

    def start(**options):
        media = tmp_path / 'media'
        media.mkdir(exist_ok=True)
        (media / 'hello.mp3').write_bytes(b'ID3 not really an mp3')
        (tmp_path / 'secret.txt').write_text('outside the media root')
        registry = RabbitRegistry(
            ping_interval=options.pop('ping_interval', 7),
            allowed=options.pop('allowed', ()),
            plugin=options.pop('plugin', 'none'),
        )
        settings = Settings(
            **dict(
                dict(
                    host='127.0.0.1',
                    port=0,
                    bytecode=BYTECODE,
                    media_root=media,
                    client_timeout=1.0,
                    xml_token=XML_TOKEN,
                ),
                **options,
            )
        )
        server = BridgeServer(settings, registry)
        server.records = []
        server.on_record = server.records.append
        started.append(server.start())
        return server

    yield start
    for server in started:
        server.stop()


def events(server, kind=None):
    return [r for r in server.records if isinstance(r, RabbitEvent) and kind in (None, r.kind)]


# ---- the rabbit's requests --------------------------------------------------------------
def test_boot_serves_the_bytecode_and_closes(bridge):
    server = bridge()
    status, headers, body = rabbit_get(
        server.port,
        '/vl/bc.jsp?v=0.0.0.13&m=00:19:db:9d:bb:96&l=00:00:00:00:00:00&p=07:ff:ff:ff:00:00&h=4',
    )
    assert status == 200 and body == BYTECODE
    assert [e.kind for e in events(server)] == ['boot']
    assert isinstance(server.records[0], RabbitsChanged) and server.counters.connects == 1


def test_boot_without_a_bytecode_is_a_clear_404(bridge):
    server = bridge(bytecode=None)
    status, _, body = rabbit_get(server.port, '/vl/bc.jsp?v=0.0.0.13&m=00:19:db:9d:bb:96&h=4')
    assert status == 404 and b'bytecode_file' in body


def test_locate_answers_ping_and_broad_from_the_advertised_address(bridge):
    server = bridge(advertised_host='192.168.1.20')
    status, _, body = rabbit_get(server.port, f'/vl/locate.jsp?sn={SERIAL}&h=4')
    assert status == 200
    assert p.parse_locate(body.decode()) == {
        'ping': f'192.168.1.20:{server.port}',
        'broad': f'192.168.1.20:{server.port}/broadcast',
    }
    explicit = bridge(locate_ping='rabbits.lan:80', locate_broad='rabbits.lan/b')
    body = rabbit_get(explicit.port, f'/vl/locate.jsp?sn={SERIAL}&h=4')[2]
    assert body == b'ping rabbits.lan:80\nbroad rabbits.lan/b\n'


def test_first_ping_after_boot_gets_the_wake_up_program(bridge):
    server = bridge()
    status, _, body = ping(server.port, tc='0')
    blocks = p.decode_packet(body)
    assert status == 200 and p.message_text(blocks[0].data) == 'ID 2147483647\n'
    assert p.ping_interval_block(7) in blocks


def test_a_finished_program_is_followed_by_the_idle_program_until_the_rabbit_is_idle(bridge):
    server = bridge()
    ping(server.port)  # an idle rabbit calls
    rabbit = server.registry.select(SERIAL)[0]
    program_id = server.registry.queue_program([rabbit], [('MU', 'broadcast/x.mp3'), ('MW', '')])
    first = p.decode_packet(ping(server.port)[2])
    assert p.parse_program(p.message_text(first[0].data)).id == program_id
    ended = f'{program_id:x}'
    for sd in ('2', '0'):  # the end, then pings that still hold the program's ID
        blocks = p.decode_packet(ping(server.port, sd=sd, tc=ended)[2])
        assert p.message_text(blocks[0].data) == 'ID 2147483647\n'
        assert rabbit.state == 'playing'  # not idle until tc says so
    blocks = p.decode_packet(ping(server.port, tc='7fffffff')[2])
    assert rabbit.state == 'idle' and all(b.type != p.BLOCK_MESSAGE for b in blocks)


def test_default_reply_is_ping_interval_and_ambient_never_empty(bridge):
    server = bridge()
    body = ping(server.port)[2]
    assert body == p.encode_packet([p.ping_interval_block(7), p.ambient_block(p.Ambient())])
    assert events(server) == []  # a plain ping is not an event (publish_pings)


@pytest.mark.parametrize(
    'sd, kind, ears',
    [
        ('3', 'click', ()),
        ('1', 'double_click', ()),
        ('5', 'click_while_playing', ()),
        ('2', 'end_of_message', ()),
        ('8a05', 'ears_moved', (10, 5)),
    ],
)
def test_ping_events(bridge, sd, kind, ears):
    server = bridge()
    body = ping(server.port, sd=sd, tc='e411a')[2]
    assert p.decode_packet(body)  # a valid packet acknowledges the event
    [event] = events(server)
    assert (event.serial, event.kind, event.ears, event.program_id) == (SERIAL, kind, ears, 934170)


def test_unknown_sd_values_are_counted_and_still_acknowledged(bridge):
    server = bridge()
    assert p.decode_packet(ping(server.port, sd='6')[2])
    assert [e.kind for e in events(server)] == ['unknown'] and server.counters.unknown_events == 1


def test_ears_moved_by_hand_stay_where_they_are(bridge):
    server = bridge()
    ping(server.port, sd='8a05')
    ambient = p.decode_packet(ping(server.port)[2])[1]
    assert p.decode_ambient(ambient.data).ears == (10, 5)


def test_forced_packets_go_first_with_a_short_interval_then_the_default(bridge):
    server = bridge()
    ping(server.port)
    rabbits = server.registry.select(SERIAL)
    program_id = server.registry.queue_program(rabbits, [('MU', 'broadcast/a.mp3'), ('MW', '')])
    server.registry.queue_blocks(rabbits, [p.reboot_block()])
    first = p.decode_packet(ping(server.port)[2])
    assert p.message_text(first[0].data) == f'ID {program_id}\nMU broadcast/a.mp3\nMW\n'
    assert first[1] == p.ping_interval_block(1)  # another packet waits
    assert p.decode_packet(ping(server.port)[2]) == [p.reboot_block(), p.ping_interval_block(7)]
    assert p.decode_packet(ping(server.port)[2])[1].type == p.BLOCK_AMBIENT


def test_raw_packets_are_sent_as_given_and_invalid_ones_refused(bridge):
    server = bridge()
    ping(server.port)
    rabbits = server.registry.select(SERIAL)
    packet = bytes.fromhex('7F 03000001 05 09000000 FF 0A')
    server.registry.queue_raw(rabbits, packet)
    assert ping(server.port)[2] == packet
    for bad in (b'\x7f\xff', bytes.fromhex('7F 0B000001 01 FF')):
        with pytest.raises(ValueError):
            server.registry.queue_raw(rabbits, bad)


def test_rfid_event_and_reply_is_a_packet(bridge):
    server = bridge()
    status, _, body = rabbit_get(
        server.port, f'/vl/rfid.jsp?sn={SERIAL}&v=65808&h=4&t=d0021a0352d64cec'
    )
    assert status == 200 and p.decode_packet(body)
    assert [(e.kind, e.rfid) for e in events(server)] == [('rfid', 'd0021a0352d64cec')]
    rabbit_get(server.port, f'/vl/rfid.jsp?sn={SERIAL}&v=65808&h=4&t=0000000000000000')
    assert len(events(server, 'rfid')) == 1  # a failed read (zeros) is no tag


def test_recording_is_decoded_and_retries_are_stored_once(bridge):
    server = bridge(plugin='echo')
    wav = recording.encode_wav(recording.tone(1.0))
    for _ in range(3):  # the rabbit retries up to 3 times
        status, _, _ = rabbit_post(server.port, f'/vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=1', wav)
        assert status == 200
    [upload] = [r for r in server.records if isinstance(r, Recording)]
    assert upload.wav == wav and upload.sample_rate == 8000 and upload.double_click
    assert len(upload.pcm) >= 8000
    assert server.counters.recordings == 1 and server.counters.duplicate_uploads == 2
    assert len(events(server, 'recording')) == 1 and events(server, 'recording')[0].double_click
    # the echo plugin plays it back on the next ping, from the bridge's own URL
    message = p.decode_packet(ping(server.port)[2])[0]
    key, url = p.message_text(message.data).splitlines()[1].split(' ')
    assert key == 'MU' and url.startswith(server.base_url + '/recordings/')
    status, _, body = rabbit_get(server.port, url[len(server.base_url) :])
    assert status == 200 and body == wav


def test_the_same_audio_recorded_later_is_a_new_recording():
    now = [1000.0]
    registry = RabbitRegistry(clock=lambda: now[0])
    rabbit, _ = registry.seen(SERIAL)
    silence = recording.encode_wav(recording.tone(1.0))
    assert registry.add_recording(rabbit, silence) is not None
    now[0] += 5.0  # a retry
    assert registry.add_recording(rabbit, silence) is None
    now[0] += 60.0  # the same silence, a minute later
    assert registry.add_recording(rabbit, silence) is not None


def test_a_long_click_recording_says_so(bridge):
    server = bridge()
    wav = recording.encode_wav(recording.tone(0.5))
    assert rabbit_post(server.port, f'/vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0', wav)[0] == 200
    [upload] = [r for r in server.records if isinstance(r, Recording)]
    assert not upload.double_click and not events(server, 'recording')[0].double_click


def test_program_urls_use_the_address_locate_advertises(bridge):
    server = bridge(locate_ping='rabbits.example:8080')  # a port forward in front of the bridge
    assert server.media_url('hello.mp3') == 'http://rabbits.example:8080/local/hello.mp3'
    assert server.add_choreography(b'\0' * 4).startswith(
        'http://rabbits.example:8080/chorlibrary/'
    )
    assert server.registry.recordings_url == 'http://rabbits.example:8080/recordings/'


def test_a_negative_content_length_is_a_400_not_a_411(bridge):
    server = bridge()
    status, _, body = rabbit_post(server.port, f'/vl/record.jsp?sn={SERIAL}', b'x', length=-5)
    assert status == 400 and b'not a byte count' in body


def test_fuzzed_paths_and_headers_never_get_a_500(bridge):
    server = bridge()
    rng = random.Random(7)
    alphabet = [chr(c) for c in range(33, 127)] + ['%00', '%ff', '%2e', '%0a', '%', '%%', '%c0%af']
    for _ in range(300):
        path = (
            '/'
            + rng.choice(
                [
                    'vl/p4.jsp?sn=',
                    'local/',
                    'broadcast/',
                    'recordings/',
                    'chorlibrary/',
                    'vl/record.jsp?sn=',
                    'vl/locate.jsp?sn=',
                    '',
                ]
            )
            + ''.join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30)))
        )
        header = ''.join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        method = rng.choice(['GET', 'POST'])
        request = (
            f'{method} {path} HTTP/1.0\r\nContent-length: {header}\r\n'
            f'X-{rng.randrange(9)}: {header}\r\n\r\n'
        ).encode('latin-1')
        status = raw(server.port, request)[0]
        assert status < 500, (request, status)
    assert ping(server.port)[0] == 200  # still serving


def test_choreography_names_stay_unique_when_old_ones_are_dropped(bridge):
    server = bridge()
    urls = [server.add_choreography(bytes([n % 256]) * 8) for n in range(300)]
    assert len(set(urls)) == 300
    assert rabbit_get(server.port, urls[0][len(server.base_url) :])[0] == 404  # dropped
    assert rabbit_get(server.port, urls[-1][len(server.base_url) :])[2] == bytes([299 % 256]) * 8


def test_media_and_choreographies_are_served(bridge):
    server = bridge()
    for prefix in ('/local/', '/broadcast/'):
        status, headers, body = rabbit_get(server.port, prefix + 'hello.mp3')
        assert status == 200 and body == b'ID3 not really an mp3'
        assert headers['Content-Type'] == 'audio/mpeg'
    url = server.add_choreography(b'\x00\x00\x00\x00\x00\x00\x00\x00')
    path = url[len(server.base_url) :]
    for served in (path, '/broadcast' + path):
        assert rabbit_get(server.port, served)[2] == b'\x00' * 8
    assert server.media_url('hello.mp3') == f'{server.base_url}/local/hello.mp3'
    with pytest.raises(ValueError):
        server.media_url('../secret.txt')


# ---- what must not hurt the server ------------------------------------------------------
@pytest.mark.parametrize(
    'path, status',
    [
        ('/vl/p4.jsp?v=65808&sd=0&tc=0', 400),  # no serial
        ('/vl/p4.jsp?sn=0019db9dbb9&v=65808', 400),  # 11 digits
        ('/vl/p4.jsp?sn=0019db9dbb96&v=abc', 400),
        ('/vl/p4.jsp?sn=0019db9dbb96&v=1&sd=zz', 400),
        ('/vl/p4.jsp?sn=0019db9dbb96&v=1&tc=-1', 400),
        ('/vl/p4.jsp?sn=%00%01&&&==', 400),
        ('/vl/rfid.jsp?sn=0019db9dbb96&t=d002', 400),
        ('/vl/record.jsp?sn=0019db9dbb96', 405),  # GET, not POST
        ('/local/../secret.txt', 404),
        ('/local/%2e%2e/secret.txt', 404),
        ('/local/..%2fsecret.txt', 404),
        ('/broadcast/../../etc/passwd', 404),
        ('/vl/unknown.jsp', 404),
        ('/chorlibrary/none.chor', 404),
        ('/recordings/0019db9dbb96-000000000000.wav', 404),
        ('/local/%00', 400),  # was 500: embedded null byte
        ('/local/a%0d%0ab', 400),
    ],
)
def test_bad_requests_get_4xx_and_the_server_goes_on(bridge, path, status):
    server = bridge()
    assert rabbit_get(server.port, path)[0] == status
    assert server.counters.bad_requests == 1
    assert ping(server.port)[0] == 200


def test_bad_bodies(bridge):
    server = bridge(max_recording_bytes=4096)
    path = f'/vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0'
    assert rabbit_post(server.port, path, b'x' * 5000)[0] == 413  # over the limit
    assert rabbit_post(server.port, path, b'RIFF', length=100)[0] == 400  # truncated (timeout)
    assert rabbit_post(server.port, path, b'not a wav at all')[0] == 400
    no_length = (f'POST {path} HTTP/1.0\r\nHost: x\r\n\r\n').encode()
    assert raw(server.port, no_length)[0] == 411
    assert server.counters.bad_requests == 4 and server.counters.recordings == 0
    assert ping(server.port)[0] == 200


def test_a_recording_longer_than_the_rabbit_can_make_is_refused(bridge):
    server = bridge(max_recording_bytes=1 << 20)  # the decoded length decides
    wav = recording.encode_wav(recording.tone(10.0))
    assert rabbit_post(server.port, f'/vl/record.jsp?sn={SERIAL}&v=65808&h=4', wav)[0] == 413
    assert server.counters.refused_bodies == 1 and server.counters.recordings == 0


def test_record_jsp_takes_the_rabbits_longest_recording_and_no_more(bridge):
    """max_recording_bytes, from the format: 8 s (and a second of slack) of 8 kHz IMA ADPCM in
    256-byte blocks of 505 samples, after the 60-byte header; other POSTs keep max_body_bytes."""
    assert recording.MAX_UPLOAD_BYTES == 60 + 143 * 256 == 36668
    longest = recording.encode_wav(recording.tone(recording.MAX_SECONDS))
    assert len(longest) == recording.upload_bytes(recording.MAX_SECONDS) < 36668
    server = bridge()
    path = f'/vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0'
    assert rabbit_post(server.port, path, longest)[0] == 200
    status, _, body = rabbit_post(server.port, path, b'RIFF' + bytes(36668))
    assert status == 413 and b'max_recording_bytes' in body
    xml = b'<rawrequest/>' + b' ' * 40000  # the XML API's limit is max_body_bytes
    status, _, body = rabbit_post(server.port, f'/xml/rawrequest.xml?token={XML_TOKEN}', xml)
    assert status == 400 and b'without a &lt;packet&gt;' in body  # read, then refused as XML
    counters = server.counters
    assert (counters.recordings, counters.refused_bodies) == (1, 1)


def test_a_chunked_body_is_refused_once_it_passes_the_limit_and_not_kept(bridge):
    """No length announced: the transport counts the bytes as they come."""
    server = bridge(max_recording_bytes=4096)
    head = (
        f'POST /vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0 HTTP/1.1\r\n'
        'Transfer-Encoding: chunked\r\n\r\n'
    ).encode()
    chunk = b'1000\r\n' + b'x' * 4096 + b'\r\n'
    status, _, body = raw(server.port, head + chunk * 3 + b'0\r\n\r\n')
    assert status == 413 and b'max_recording_bytes' in body
    assert server.counters.refused_bodies == 1 and server.registry.counts() == (0, 0)


def test_garbage_and_silent_clients_do_not_block_others(bridge):
    server = bridge()
    silent = socket.create_connection(('127.0.0.1', server.port))  # never sends a byte
    half = socket.create_connection(('127.0.0.1', server.port))
    half.sendall(b'GET /vl/p4.jsp?sn=0019db9dbb96 HTTP/1.0\r\nHost')  # stops mid-header
    try:
        started = time.monotonic()
        assert ping(server.port)[0] == 200
        assert time.monotonic() - started < 1.0
        assert raw(server.port, b'\x16\x03\x01\x00\xa5garbage\r\n\r\n')[0] == 400
        assert raw(server.port, b'GET / HTTP/1.0\r\n' + b'X: y\r\n' * 200 + b'\r\n')[0] in (
            404,
            431,
        )
        silent.settimeout(3.0)
        assert silent.recv(100) == b''  # dropped after client_timeout
    finally:
        silent.close()
        half.close()
    assert ping(server.port)[0] == 200


def test_an_endless_request_line_is_414_and_endless_headers_431(bridge):
    server = bridge()
    assert raw(server.port, b'GET /' + b'a' * 70000 + b' HTTP/1.0\r\n\r\n')[0] == 414
    assert raw(server.port, b'GET / HTTP/1.0\r\nX-Long: ' + b'b' * 70000 + b'\r\n\r\n')[0] == 431
    assert server.counters.bad_requests == 2 and ping(server.port)[0] == 200


def test_a_silent_client_is_dropped_and_counted(bridge):
    server = bridge()
    with socket.create_connection(('127.0.0.1', server.port)) as silent:
        silent.settimeout(3.0)
        assert silent.recv(100) == b''
    assert server.counters.dropped_clients == 1 and server.counters.bad_requests == 0


def test_a_refused_upload_is_answered_while_the_client_is_still_sending(bridge):
    """413 is decided from the headers; closing at once would reset the connection under a
    client still sending its body and could destroy the answer before it is read."""
    server = bridge(max_recording_bytes=4096)
    with socket.create_connection(('127.0.0.1', server.port), timeout=5.0) as client:
        client.sendall(
            f'POST /vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0 HTTP/1.0\r\n'
            'Content-length: 400000\r\n\r\n'.encode()
        )
        for _ in range(25):
            client.sendall(b'x' * 16000)  # the rest of the upload, as the rabbit sends it
        reply = b''
        while chunk := client.recv(65536):
            reply += chunk
    assert reply.startswith(b'HTTP/1.0 413 ') and b'max_recording_bytes' in reply
    assert ping(server.port)[0] == 200


@pytest.mark.parametrize('method', ['HEAD', 'PUT', 'DELETE', 'OPTIONS'])
def test_other_methods_get_405(bridge, method):
    server = bridge()
    assert raw(server.port, f'{method} /vl/p4.jsp?sn={SERIAL} HTTP/1.0\r\n\r\n'.encode())[0] == 405


def test_one_answer_per_connection_even_for_pipelined_requests(bridge):
    server = bridge()
    one = f'GET /vl/p4.jsp?sn={SERIAL}&v=65808&st=1&sd=0&tc=7fffffff&h=4 HTTP/1.0\r\n\r\n'
    status, _, body = raw(server.port, (one * 3).encode())
    assert status == 200 and b'HTTP/1.0' not in body
    assert server.counters.pings == 1


def test_a_thousand_rabbits_connecting_at_the_same_moment_are_all_answered(bridge):
    server = bridge()
    connections = [
        socket.create_connection(('127.0.0.1', server.port), timeout=10.0) for _ in range(1000)
    ]
    try:
        for n, connection in enumerate(connections):
            connection.sendall(
                f'GET /vl/p4.jsp?sn=0019dbaa{n:04x}&v=65808&st=1&sd=0&'
                f'tc=7fffffff&h=4 HTTP/1.0\r\n\r\n'.encode()
            )
        statuses = [connection.recv(12)[9:12] for connection in connections]
    finally:
        for connection in connections:
            connection.close()
    assert statuses == [b'200'] * 1000 and server.registry.counts()[0] == 1000


def test_stop_closes_open_connections_and_frees_the_port(bridge):
    server = bridge()
    port = server.port
    silent = socket.create_connection(('127.0.0.1', port))
    try:
        server.stop()
        silent.settimeout(2.0)
        try:
            assert silent.recv(100) == b''
        except ConnectionResetError:
            pass  # closed either way, at once
        again = bridge(port=port)
        assert again.port == port and ping(port)[0] == 200
    finally:
        silent.close()


def test_header_names_are_case_insensitive_and_absolute_urls_work(bridge):
    server = bridge()
    wav = recording.encode_wav(recording.tone(0.2))
    request = (
        f'POST http://127.0.0.1:{server.port}/vl/record.jsp?sn={SERIAL}&v=1&h=4&m=0 '
        f'HTTP/1.0\r\nCONTENT-LENGTH: {len(wav)}\r\n\r\n'
    ).encode() + wav
    assert raw(server.port, request)[0] == 200 and server.counters.recordings == 1


def test_allowed_serials_restrict_registration(bridge):
    server = bridge(allowed=('0019db000001',))
    assert ping(server.port, serial='0019db000001')[0] == 200
    assert ping(server.port, serial='0019db000002')[0] == 403
    assert [r.serial for r in server.registry.snapshot()] == ['0019db000001']


def test_many_rabbits_at_once(bridge):
    server = bridge()
    statuses = []

    def one(index):
        statuses.append(ping(server.port, serial=format(0x0019DB000000 + index, '012x'))[0])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 100 and server.registry.counts() == (100, 100)


# ---- the XML API ------------------------------------------------------------------------
def xml_post(server, path, text, token=XML_TOKEN):
    query = f'?token={token}' if token else ''
    status, _, body = rabbit_post(server.port, path + query, text.encode())
    return status, ElementTree.fromstring(body)


def success(root):
    return root.findtext('success') == '1'


def test_rawrequest_with_the_seeds_broken_doctype(bridge):
    server = bridge()
    ping(server.port)
    text = (
        f'<?xml version="1.0"?><!DOCTYPE RAWREQUST [ <!ELEMENT rawrequest (packet+) > '
        f'<!ELEMENT ambientblock ()> ]><rawrequest><packet serial="{SERIAL}">'
        f'<ambientblock ear0="4" ear1="12" services="1:3,6:1" nose_blinks="1"/>'
        f'<pingintervalblock>5</pingintervalblock>'
        f'<messageblock>ID 42\nMU broadcast/hello.mp3\nMW</messageblock>'
        f'<rebootblock/></packet></rawrequest>'
    )
    status, root = xml_post(server, '/xml/rawrequest.xml', text)
    assert status == 200 and success(root)
    blocks = p.decode_packet(ping(server.port)[2])
    assert [b.type for b in blocks] == [4, 3, 10, 9]
    assert p.decode_ambient(blocks[0].data) == p.Ambient(((1, 3), (6, 1)), (4, 12), 1)
    assert p.message_text(blocks[2].data) == 'ID 42\nMU broadcast/hello.mp3\nMW\n'


@pytest.mark.parametrize(
    'text, problem',
    [
        ('<rawrequest/>', 'without a <packet>'),
        (f'<rawrequest><packet serial="{SERIAL}"/></rawrequest>', 'at least one block'),
        (f'<rawrequest><packet serial="{SERIAL}"><foo/></packet></rawrequest>', 'unknown block'),
        (
            '<rawrequest><packet serial="0019db000009"><rebootblock/></packet></rawrequest>',
            'has called',
        ),
        (
            f'<rawrequest><packet serial="{SERIAL}"><pingintervalblock>0</pingintervalblock>'
            '</packet></rawrequest>',
            '1..255',
        ),
        ('<rawrequest><packet', 'not well-formed'),
        (
            '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
            '<rawrequest>&x;</rawrequest>',
            'entity',
        ),
        (
            '<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><rawrequest>&b;'
            '</rawrequest>',
            'entity',
        ),
        ('<jnabcommand/>', 'expected <rawrequest>'),
    ],
)
def test_bad_rawrequests_get_the_seeds_error_form(bridge, text, problem):
    server = bridge()
    ping(server.port)
    status, root = xml_post(server, '/xml/rawrequest.xml', text)
    assert status == 400 and problem in root.findtext('error/message')
    assert not server.registry.select(SERIAL)[0].queue and server.counters.bad_requests == 1


def test_jnabcommand_sets_the_plugin_and_calls_its_methods(bridge):
    server = bridge()
    ping(server.port)
    status, root = xml_post(
        server,
        '/xml/jnabcommand.xml',
        f'<jnabcommand serial="{SERIAL}"><setPlugin>jNab.plugins.EchoPlugin'
        '</setPlugin><method name="forget"/></jnabcommand>',
    )
    assert status == 200 and success(root)
    assert server.registry.select(SERIAL)[0].plugin == 'echo'
    status, root = xml_post(
        server,
        '/xml/jnabcommand.xml',
        f'<jnabcommand serial="{SERIAL}"><setPlugin>dice</setPlugin></jnabcommand>',
    )
    assert status == 400 and 'dice' in root.findtext('error/message')
    status, root = xml_post(
        server,
        '/xml/jnabcommand.xml',
        f'<jnabcommand serial="{SERIAL}"><method name="fly"/></jnabcommand>',
    )
    assert status == 400 and 'no method' in root.findtext('error/message')


def test_serverinfo_lists_rabbits_and_token_guards_the_api(bridge):
    server = bridge(xml_token='s3cret')
    ping(server.port)
    assert rabbit_get(server.port, '/xml/jnabserverinfo.xml')[0] == 403
    status, _, body = rabbit_get(server.port, '/xml/jnabserverinfo.xml?token=s3cret')
    root = ElementTree.fromstring(body)
    assert status == 200 and root.tag == 'jNabServerInfo'
    assert [(n.findtext('serial'), n.findtext('plugin')) for n in root.iter('nabaztag')] == [
        (SERIAL, 'none')
    ]
    status, root = xml_post(server, '/xml/rawrequest.xml', '<rawrequest/>', token='wrong')
    assert status == 403


def test_the_xml_api_is_closed_without_a_token(bridge):
    server = bridge(xml_token='')
    ping(server.port)
    status, root = xml_post(server, '/xml/jnabserverinfo.xml', '', token=None)
    assert status == 403 and 'set the parameter xml_token' in root.findtext('error/message')
    status, _ = xml_post(server, '/xml/rawrequest.xml', '<rawrequest/>', token='anything')
    assert status == 403


def test_xml_api_can_be_switched_off(bridge):
    server = bridge(xml_api=False)
    assert rabbit_get(server.port, '/xml/jnabserverinfo.xml')[0] == 404


def test_other_path_layouts(bridge):
    server = bridge(path_prefix='/opennab', path_extension='.php')
    assert ping(server.port)[0] == 404
    status, _, body = rabbit_get(server.port, f'/opennab/p4.php?sn={SERIAL}&v=1&sd=0&tc=0')
    assert status == 200 and p.decode_packet(body)


def test_a_command_for_every_rabbit_with_none_known_is_refused():
    """set_ears (and every other command) to serial '' before any rabbit called reached nobody
    and answered success; now it says so."""
    from nabaztag_bridge.rabbits import UnknownRabbit

    registry = RabbitRegistry()
    with pytest.raises(UnknownRabbit, match='would reach nobody'):
        registry.select('')


def test_one_answer_per_connection_for_pipelined_keep_alive_requests(bridge):
    # HTTP/1.1 asks to keep the connection: the parser goes on to the next request, which
    # is not served (httptools 0.1.1, Ubuntu 24.04's, does the same with HTTP/1.0)
    server = bridge()
    one = (
        f'GET /vl/p4.jsp?sn={SERIAL}&v=65808&st=1&sd=0&tc=7fffffff&h=4 HTTP/1.1\r\n'
        'Host: bridge\r\nConnection: keep-alive\r\n\r\n'
    )
    status, _, body = raw(server.port, (one * 3).encode())
    assert status == 200 and b'HTTP/1.0' not in body
    assert server.counters.pings == 1


# ---- a hostile network: each refusal counted by its kind --------------------------------
@pytest.mark.parametrize(
    'path, status',
    [
        ('/local/../secret.txt', 404),
        ('/local/%2e%2e/secret.txt', 404),
        ('/local/..%2fsecret.txt', 404),
        ('/local/link.mp3', 404),  # a symbolic link out of the media root
        ('/local/secret.txt%00.mp3', 400),
        ('/tts/..%2f..%2fsecret.txt', 400),
        ('/tts/..%5c..%5csecret.txt', 400),
        ('/recordings/..%2f..%2fsecret.txt', 400),
        ('/chorlibrary/..', 400),
    ],
)
def test_a_path_out_of_the_roots_is_refused_and_counted(bridge, tmp_path, path, status):
    cache = tmp_path / 'cache'  # the speech cache in a folder of its own
    cache.mkdir()
    server = bridge(speech_folder=cache)
    (tmp_path / 'media' / 'link.mp3').symlink_to(tmp_path / 'secret.txt')
    status_given, _, body = rabbit_get(server.port, path)
    assert status_given == status and b'outside the media root' not in body
    assert (server.counters.refused_paths, server.counters.bad_requests) == (1, 1)


def test_speech_is_served_from_its_cache_folder_only(bridge, tmp_path):
    cache = tmp_path / 'cache'
    cache.mkdir()
    name = '0123456789abcdef0123456789abcdef-0.mp3'
    (cache / name).write_bytes(b'ID3 speech')
    server = bridge(speech_folder=cache)
    (tmp_path / 'media' / name).write_bytes(b'ID3 not the cache')
    assert rabbit_get(server.port, '/tts/' + name)[2] == b'ID3 speech'
    assert rabbit_get(server.port, '/tts/secret.txt')[0] == 404  # not a speech file's name
    assert server.counters.refused_paths == 0


def test_an_unknown_serial_is_refused_counted_and_never_registered(bridge):
    server = bridge(allowed=('0019db000001',))
    for route in ('p4', 'locate', 'rfid'):
        status, _, body = rabbit_get(server.port, f'/vl/{route}.jsp?sn=0019db000002&v=1&t=d0')
        assert status == 403 and b'allowed_serials' in body
    assert rabbit_get(server.port, '/vl/bc.jsp?m=0019db000002&v=1')[0] == 403
    assert server.counters.unknown_serials == 4 and server.registry.counts() == (0, 0)
    assert not server.records  # no event, no rabbit list


def test_the_xml_api_refusals_are_counted(bridge):
    closed, guarded = bridge(xml_token=''), bridge()
    for server, token in ((closed, ''), (guarded, 'not-the-token')):
        status, _ = xml_post(server, '/xml/jnabserverinfo.xml', '', token=token)
        assert status == 403 and server.counters.refused_xml == 1


def test_oversized_heads_are_counted(bridge):
    server = bridge()
    assert raw(server.port, b'GET / HTTP/1.0\r\nX-Pad: ' + b'a' * 40000 + b'\r\n\r\n')[0] == 431
    assert raw(server.port, b'GET /' + b'a' * 20000 + b' HTTP/1.0\r\n\r\n')[0] == 414
    assert server.counters.refused_heads == 2
