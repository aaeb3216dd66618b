"""The emulated nabd as any service sees it: raw JSON lines over a loopback socket, and its
command line."""

import json
import socket
import subprocess
import sys

import pytest
from helpers import wait_for

from nabaztag_bridge.emulator_pynab import NabdEmulator, run_console_command
from nabaztag_bridge.kinds import nabd_protocol as n

WAIT = 10.0


class Service:
    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
        self.file = self.sock.makefile('rb')

    def send(self, data=None, **packet):
        self.sock.sendall(data if data is not None else n.encode(packet))

    def read(self):
        return json.loads(self.file.readline())

    def next(self, kind):
        while True:
            packet = self.read()
            if packet['type'] == kind:
                return packet

    def close(self):
        self.file.close()
        self.sock.close()


@pytest.fixture
def nabd():
    emulator = NabdEmulator(time_scale=0.2).start()
    yield emulator
    emulator.stop()


@pytest.fixture
def connect(nabd):
    services = []

    def make():
        service = Service(nabd.port)
        services.append(service)
        assert service.read() == {'type': 'state', 'state': nabd.state}
        return service

    yield make
    for service in services:
        service.close()


def test_listens_on_loopback_only_by_default(nabd):
    assert nabd.address[0] == '127.0.0.1'


def test_errors_as_nabd_answers_them(connect):
    service = connect()
    service.send(b'not json\r\n')
    assert service.read()['class'] == 'JSONDecodeError'
    service.send(type='dance', request_id='d')
    answer = service.read()
    assert (answer['status'], answer['class'], answer['request_id']) == (
        'error',
        'MalformedPacket',
        'd',
    )
    assert 'unknown type (dance)' in answer['message']
    service.send(type='cancel', request_id='nothing')
    assert service.read()['class'] == 'NotPlaying'
    # as nabd: the request_id of a packet without a type is not echoed
    service.send(request_id='typeless')
    answer = service.read()
    assert (answer['class'], 'request_id' in answer) == ('MalformedPacket', False), answer


def test_a_colour_nabd_cannot_read_is_refused_not_shown(nabd, connect):
    # nabd reads each colour as bare hex: '#ff0000' is answered ok and then stops nabd itself
    service = connect()
    animation = {'tempo': 100, 'colors': [{'left': '#ff0000', 'center': '00ff00'}]}
    service.send(type='info', info_id='x', animation=animation, request_id='i')
    answer = service.read()
    assert (answer['status'], answer['request_id']) == ('error', 'i'), answer
    assert '#ff0000' in answer['message'] and 'x' not in nabd.info
    animation['colors'] = [{'left': 'ff0000', 'center': '00ff00'}]
    service.send(type='info', info_id='x', animation=animation, request_id='j')
    assert service.read()['status'] == 'ok' and nabd.info['x'] == animation


def test_ears_move_in_idle_and_can_simulate_the_event(nabd, connect):
    service = connect()
    service.send(type='mode', mode='idle', events=['ears'], request_id='m')
    assert service.read()['status'] == 'ok'
    service.send(type='ears', left=7, right=2, event=True, request_id='e')
    assert service.next('ears_event')[('left')] == 7
    assert service.next('response') == {'type': 'response', 'status': 'ok', 'request_id': 'e'}
    assert nabd.status()['ears'] == (7, 2)


def test_interactive_mode_keeps_ears_for_idle_and_holds_sleep(nabd, connect):
    holder, other = connect(), connect()
    holder.send(type='mode', mode='interactive', request_id='i')
    assert holder.next('response')['status'] == 'ok'
    assert other.next('state')['state'] == 'interactive'
    other.send(type='mode', mode='interactive', request_id='j')
    assert other.next('response')['class'] == 'AlreadyInInteractiveMode'
    other.send(type='ears', left=4, right=4, request_id='e')
    assert other.next('response')['status'] == 'ok'
    assert nabd.status()['ears'] == (0, 0)  # kept for idle
    other.send(type='sleep', request_id='s')
    other.send(type='wakeup', request_id='w')  # answered at once
    assert other.next('response')['request_id'] == 'w'
    assert nabd.status()['queued'] == 1  # the sleep waits
    holder.send(type='mode', mode='idle', request_id='back')
    assert other.next('response') == {'type': 'response', 'status': 'ok', 'request_id': 's'}
    assert wait_for(lambda: nabd.status()['state'] == 'asleep', WAIT)
    assert nabd.status()['ears'] == (10, 10)


def test_leaving_by_disconnect_ends_interactive_mode(nabd, connect):
    holder = connect()
    holder.send(type='mode', mode='interactive', request_id='i')
    assert holder.next('response')['status'] == 'ok'
    holder.close()
    assert wait_for(lambda: nabd.status()['state'] == 'idle', WAIT)


def test_a_command_answers_once_played_and_expired_ones_say_so(nabd, connect):
    service = connect()
    service.send(type='command', sequence=[{'choreography': 'nabd/rouge.chor'}], request_id='c')
    assert service.next('state')['state'] == 'playing'
    assert service.next('response') == {'type': 'response', 'status': 'ok', 'request_id': 'c'}
    assert service.next('state')['state'] == 'idle'
    service.send(
        type='command',
        sequence=[{'audio': ['nabd/x.mp3']}],
        expiration='2000-01-01T00:00:00',
        request_id='old',
    )
    assert service.next('response')['status'] == 'expired'


def test_a_cancel_makes_the_command_answer_canceled(nabd, connect):
    nabd.time_scale = 50.0  # a choreography now plays for 25 s
    service = connect()
    service.send(type='command', sequence=[{'choreography': 'x'}], request_id='long')
    assert service.next('state')['state'] == 'playing'
    service.send(type='cancel', request_id='long')
    assert service.next('response') == {
        'type': 'response',
        'status': 'canceled',
        'request_id': 'long',
    }


def test_events_go_only_to_services_that_asked(nabd, connect):
    listener, deaf = connect(), connect()
    listener.send(type='mode', mode='idle', events=['button', 'rfid/*', 'asr/*'], request_id='m')
    assert listener.read()['status'] == 'ok'
    nabd.click()
    nabd.show_tag('d0021a03', app='nabclockd')
    nabd.hear_intent('nabclockd/clock')
    assert listener.next('button_event')['event'] == 'click'
    rfid = listener.next('rfid_event')
    assert (rfid['uid'], rfid['event'], rfid['app']) == ('d0:02:1a:03', 'detected', 'nabclockd')
    assert listener.next('asr_event')['nlu'] == {'intent': 'nabclockd/clock'}
    deaf.send(type='gestalt', request_id='g')
    before = []
    while (packet := deaf.read())['type'] != 'response':
        before.append(packet['type'])
    assert set(before) <= {'state'}  # the listening, but no event
    assert packet['connections'] == 2 and 'status' not in packet


def test_console_commands(nabd, connect):
    service = connect()
    service.send(type='mode', mode='idle', events=list(n.EVENT_KINDS), request_id='m')
    assert service.read()['status'] == 'ok'
    assert run_console_command(nabd, ['click']) == 'ok: click'
    assert service.next('button_event')['event'] == 'click'
    run_console_command(nabd, ['intent', 'nabweatherd/forecast', 'date=tomorrow'])
    assert service.next('asr_event')['nlu'] == {
        'intent': 'nabweatherd/forecast',
        'date': 'tomorrow',
    }
    run_console_command(nabd, ['rfid-removed', 'd002'])
    assert service.next('rfid_event')['event'] == 'removed'
    assert 'commands:' in run_console_command(nabd, ['help'])
    assert "'state': 'idle'" in run_console_command(nabd, ['status'])


def test_command_line_kind_pynab():
    process = subprocess.Popen(
        [sys.executable, '-m', 'nabaztag_bridge.emulator', '--kind', 'pynab', '--port', '0'],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()
        assert line.startswith('Nabaztag emulator: nabd on 127.0.0.1:'), line
        port = int(line.rsplit(':', 1)[1])
        service = Service(port)
        assert service.read() == {'type': 'state', 'state': 'idle'}
        service.close()
    finally:
        process.terminate()
        assert process.wait(WAIT) == 0


def test_command_line_refuses_an_address_it_cannot_listen_on():
    command = ['--kind', 'pynab', '--host', '192.0.2.77']  # no such address here
    result = subprocess.run(
        [sys.executable, '-m', 'nabaztag_bridge.emulator', *command],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 2
    assert 'cannot listen on 192.0.2.77' in result.stderr and 'Traceback' not in result.stderr


@pytest.mark.parametrize(
    'command, words',
    [
        (['--kind', 'pynab', '--port', '70000'], '--port 70000: a TCP port is 0-65535'),
        (['--kind', 'serverless', '--server', 'nohost:port'], '--server nohost:port: give'),
    ],
)
def test_command_line_refuses_a_bad_port_or_hook_server(command, words):
    result = subprocess.run(
        [sys.executable, '-m', 'nabaztag_bridge.emulator', *command],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 2
    assert words in result.stderr and 'Traceback' not in result.stderr
