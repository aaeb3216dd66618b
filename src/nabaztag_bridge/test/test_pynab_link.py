"""The pynab kind against the emulated nabd over real loopback sockets: commands answered by
request_id, events decoded, reconnect after nabd restarts, bad lines counted, and calls that
fail within rabbit_timeout with the reason."""

import dataclasses
import http.server
import json
import queue
import socket
import threading
import time

import pytest
from helpers import wait_for

from legacy_robot_common.emulator import free_port
from nabaztag_bridge import recording
from nabaztag_bridge.emulator_pynab import NabdEmulator
from nabaztag_bridge.kinds import nabd_protocol as n
from nabaztag_bridge.kinds.base import KindCannot, RabbitUnreachable
from nabaztag_bridge.kinds.pynab import PynabLink, nabd_color
from nabaztag_bridge.kinds.roster import split_address

TIMEOUT = 2.0  # the links' rabbit_timeout
WAIT = 10.0  # s a test waits for what should come much sooner


@dataclasses.dataclass(frozen=True)
class Entry:
    id: str
    address: str


@pytest.fixture
def media():
    """An HTTP server of WAV files: /short.wav (0.2 s), /long.wav (5 s), /x.chor."""
    files = {
        '/short.wav': recording.encode_wav(recording.tone(0.2)),
        '/long.wav': recording.encode_wav(recording.tone(5.0)),
        '/x.chor': b'\x00\x00\x00\x04\x00\x07\x01\x00',
    }

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = files.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header('Content-Length', str(len(body or b'')))
            self.end_headers()
            self.wfile.write(body or b'')

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f'http://127.0.0.1:{server.server_address[1]}'
    server.shutdown()
    server.server_close()


@pytest.fixture
def rig():
    """(nabd emulator, link, events queue); both stopped afterwards."""
    started = []

    def make(port=0, timeout=TIMEOUT, **options):
        nabd = NabdEmulator(port=port, **options).start()
        events = queue.Queue()
        link = PynabLink(Entry('kitchen', f'127.0.0.1:{nabd.port}'), events.put, timeout)
        link.start()
        started.extend([link, nabd])
        assert wait_for(lambda: link.connected and nabd.status()['services'] == 1, WAIT)
        assert wait_for(lambda: nabd.received and nabd.received[0]['type'] == 'mode', WAIT)
        return nabd, link, events

    yield make
    for thing in started:
        thing.stop()


def result(future):
    return future.result(WAIT)


def test_address_forms():
    assert split_address('127.0.0.1', n.PORT) == ('127.0.0.1', 10543)
    assert split_address('rabbit:1234', n.PORT) == ('rabbit', 1234)
    assert split_address('[::1]:99', n.PORT) == ('::1', 99)
    with pytest.raises(ValueError):
        split_address('host:port', n.PORT)


def test_the_link_is_an_idle_service_that_asks_for_every_event(rig):
    nabd, link, _ = rig()
    assert nabd.received[0]['mode'] == 'idle'
    assert set(nabd.received[0]['events']) == set(n.EVENT_KINDS)
    state = link.state()
    assert (state.kind, state.connected, state.asleep, state.detail) == (
        'pynab',
        True,
        False,
        'idle',
    )
    assert state.address == f'127.0.0.1:{nabd.port}' and state.last_seen > 0


def test_ears_answered_by_request_id(rig):
    nabd, link, _ = rig()
    assert result(link.set_ears(3, 12)) == 'ears at 3, 12'
    assert nabd.status()['ears'] == (3, 12) and link.state().ears == (3, 12)
    with pytest.raises(ValueError):
        link.set_ears(3, 17)


def test_play_answers_when_the_audio_has_played(rig, media):
    nabd, link, _ = rig()
    start = time.monotonic()
    assert result(link.play_urls([f'{media}/short.wav', f'{media}/short.wav'])) == (
        'played 2 file(s)'
    )
    assert time.monotonic() - start >= 0.4  # two files of 0.2 s
    assert nabd.played[-1][1] == [f'{media}/short.wav'] * 2


def test_a_click_cancels_a_command_and_the_call_says_so(rig, media):
    nabd, link, events = rig()
    playing = link.play_url(f'{media}/long.wav')
    assert wait_for(lambda: nabd.status()['state'] == 'playing', WAIT)
    nabd.click()
    with pytest.raises(ValueError, match='canceled'):
        result(playing)
    assert events.empty()  # nabd sends no click event for a click that cancels


def test_sleep_and_wakeup(rig):
    nabd, link, _ = rig()
    assert result(link.sleep()) == 'asleep'
    assert wait_for(lambda: link.state().asleep, WAIT)
    assert nabd.status()['ears'] == (10, 10)
    assert result(link.wakeup()) == 'awake'
    assert wait_for(lambda: not link.state().asleep, WAIT)


def test_events_reach_the_callback(rig):
    nabd, link, events = rig()
    nabd.click()
    nabd.double_click()
    nabd.button('down')  # not an event of the bridge
    nabd.move_ears(4, 9)
    nabd.show_tag('d0021a0352d64cec')
    nabd.remove_tag('d0021a0352d64cec')
    nabd.hear_intent('nabweatherd/forecast', date='tomorrow')
    got = [events.get(timeout=WAIT) for _ in range(6)]  # the ears settle 0.5 s later
    by_event = {e.event: e for e in got}
    assert sorted(by_event) == sorted(
        ['click', 'double_click', 'ears_moved', 'rfid', 'rfid_removed', 'intent']
    )
    assert [e.event for e in got if e.event != 'ears_moved'][:2] == ['click', 'double_click']
    assert all(e.serial == 'kitchen' and e.kind == 'pynab' for e in got)
    assert by_event['ears_moved'].ears == (4, 9) and link.state().ears == (4, 9)
    assert by_event['rfid'].rfid == by_event['rfid_removed'].rfid == 'd0021a0352d64cec'
    assert by_event['intent'].intent == 'nabweatherd/forecast'
    assert by_event['intent'].slots == (('date', 'tomorrow'),)
    assert events.empty()


class Service:
    """Another service of nabd (a raw JSON-lines client)."""

    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
        self.file = self.sock.makefile('rb')

    def send(self, **packet):
        self.sock.sendall(n.encode(packet))

    def next(self, kind):
        while True:
            packet = json.loads(self.file.readline())
            if packet['type'] == kind:
                return packet

    def close(self):
        self.file.close()
        self.sock.close()


def test_while_another_service_is_interactive(rig):
    nabd, link, events = rig()
    other = Service(nabd.port)
    try:
        other.send(type='mode', mode='interactive', events=['button'], request_id='i')
        assert other.next('response') == {'type': 'response', 'status': 'ok', 'request_id': 'i'}
        assert wait_for(lambda: link.state().detail == 'interactive', WAIT)
        # ears are kept for idle, sleep waits for idle
        assert 'kept for idle' in result(link.set_ears(5, 5))
        start = time.monotonic()
        with pytest.raises(RabbitUnreachable, match='interactive') as refused:
            result(link.sleep())
        assert time.monotonic() - start < TIMEOUT + 1.0
        assert 'within 2.0 s' in refused.value.reason
        nabd.click()  # the interactive service takes the button
        assert other.next('button_event')['event'] == 'click'
        assert events.empty()
    finally:
        other.close()
    assert wait_for(lambda: nabd.status()['state'] == 'asleep', WAIT)  # the sleep, once idle


def test_reconnects_after_nabd_restarts(rig):
    nabd, link, _ = rig()
    port = nabd.port
    nabd.stop()
    assert wait_for(lambda: not link.connected, WAIT)
    with pytest.raises(RabbitUnreachable, match='not connected'):
        result(link.set_ears(1, 1))
    restarted = NabdEmulator(port=port).start()
    try:
        assert wait_for(lambda: link.connected, WAIT)
        assert result(link.set_ears(2, 2)) == 'ears at 2, 2'
        assert link.diagnostics()['reconnects'] == 1
    finally:
        restarted.stop()


def test_a_command_in_flight_fails_when_the_link_drops(rig, media):
    nabd, link, _ = rig()
    playing = link.play_url(f'{media}/long.wav')
    assert wait_for(lambda: nabd.status()['state'] == 'playing', WAIT)
    nabd.drop_clients()
    with pytest.raises(RabbitUnreachable, match='lost'):
        playing.result(TIMEOUT + 1.0)


def test_malformed_lines_and_unknown_types_are_counted_not_fatal(rig):
    nabd, link, _ = rig()
    nabd.send_raw(b'this is not json\r\n')
    nabd.send_raw(b'{"type":"weather"}\r\n')
    nabd.send_raw(b'{"type":"ears_event","left":"x"}\r\n')
    nabd.send_raw(b'{' + b' ' * n.MAX_LINE + b'}\r\n')
    assert wait_for(
        lambda: link.counters.malformed_lines >= 3 and link.counters.unknown_types == 1, WAIT
    )
    assert link.connected and result(link.set_ears(6, 6)) == 'ears at 6, 6'
    assert link.diagnostics()['reconnects'] == 0


def test_a_call_to_a_dead_nabd_fails_at_once_with_the_reason():
    link = PynabLink(Entry('dead', f'127.0.0.1:{free_port()}'), timeout=TIMEOUT)
    link.start()
    try:
        assert wait_for(lambda: link.diagnostics()['connect_failures'] >= 1, WAIT)
        start = time.monotonic()
        with pytest.raises(RabbitUnreachable) as refused:
            result(link.set_ears(1, 1))
        assert time.monotonic() - start < TIMEOUT
        assert 'not connected' in refused.value.reason and 'refused' in refused.value.reason
        assert not link.state().connected and 'refused' in link.state().detail
    finally:
        link.stop()


def test_a_nabd_that_stops_answering_fails_the_call_within_the_timeout():
    """A peer that greets and then says nothing (a hung nabd behind an SSH tunnel)."""
    listener = socket.create_server(('127.0.0.1', 0))
    held = []

    def accept():
        conn, _ = listener.accept()
        conn.sendall(n.state_packet('idle'))
        held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    link = PynabLink(Entry('hung', f'127.0.0.1:{listener.getsockname()[1]}'), timeout=TIMEOUT)
    link.start()
    try:
        assert wait_for(lambda: link.connected, WAIT)
        start = time.monotonic()
        with pytest.raises(RabbitUnreachable, match='did not answer within 2.0 s'):
            result(link.wakeup())
        assert TIMEOUT - 0.1 <= time.monotonic() - start < TIMEOUT + 1.0
        assert link.counters.timeouts == 1
    finally:
        link.stop()
        for conn in held:
            conn.close()
        listener.close()


def test_a_silent_nabd_is_probed_and_the_link_restarts():
    listener = socket.create_server(('127.0.0.1', 0))
    accepted = []

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.sendall(n.state_packet('idle'))
            accepted.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    address = f'127.0.0.1:{listener.getsockname()[1]}'
    link = PynabLink(Entry('quiet', address), timeout=0.5, keepalive=0.5)
    link.start()
    try:
        assert wait_for(lambda: link.diagnostics()['reconnects'] >= 1, WAIT), 'no reconnect'
        assert 'did not answer a gestalt within 0.5 s' in link.diagnostics()['link_error']
        assert len(accepted) >= 2
    finally:
        link.stop()
        listener.close()
        for conn in accepted:
            conn.close()


def test_raw_packets(rig):
    nabd, link, _ = rig()
    answer = result(link.raw('{"type": "gestalt"}'))
    assert answer.startswith('nabd answered ok') and '"connections": 1' in answer
    with pytest.raises(ValueError, match='MalformedPacket'):
        result(link.raw('{"type": "dance"}'))
    for bad in ('not json', '[1]', '{"kind": "ears"}'):
        with pytest.raises(ValueError):
            link.raw(bad)
    assert result(link.raw('{"type": "cancel", "request_id": "x"}')).startswith('cancel sent')


def test_leds_and_choreography(rig, media):
    nabd, link, _ = rig()
    assert result(link.set_leds({'left': '#ff0000', 'middle': '#00ff00'})) == (
        'LEDs shown while idle'
    )
    assert nabd.info['nabaztag_bridge']['colors'] == [{'left': 'ff0000', 'center': '00ff00'}]
    with pytest.raises(KindCannot, match='pynab rabbit cannot set the nose LED'):
        link.set_leds({'nose': '#ffffff'})
    with pytest.raises(KindCannot):
        link.set_nose(1)
    assert result(link.choreography(f'{media}/x.chor')) == 'choreography played'
    sent = nabd.received[-1]['sequence'][0]['choreography']
    assert sent.startswith('data:application/x-nabaztag-mtl-choreography;base64,')
    with pytest.raises(ValueError, match='cannot fetch'):
        result(link.choreography(f'{media}/missing.chor'))
    # speech with its gesture: one item, the audio and the choreography together
    assert result(link.play_urls([f'{media}/short.wav'], gesture_url=f'{media}/x.chor')) == (
        'played 1 file(s)'
    )
    (item,) = nabd.received[-1]['sequence']
    assert item['audio'] == [f'{media}/short.wav'] and item['choreography'].startswith('data:')


def test_colours_go_to_nabd_as_it_reads_them():
    assert nabd_color('#FF8000') == 'ff8000'
    assert nabd_color('00ff00') == '00ff00'
    for bad in ('#fff', 'red', '#gg0000'):
        with pytest.raises(ValueError):
            nabd_color(bad)
