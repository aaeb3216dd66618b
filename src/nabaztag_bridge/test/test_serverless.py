"""The serverless kind over real sockets: the link's commands against the emulated
ServerlessNabaztag rabbit, the rabbit's hooks and boot files against the bridge's HTTP server,
and the rabbits file."""

import http.client
import signal
import socket
import subprocess
import threading
import time

import pytest
from helpers import start_module, wait_for

from nabaztag_bridge import recording
from nabaztag_bridge.emulator_serverless import ServerlessRabbit
from nabaztag_bridge.kinds import KINDS
from nabaztag_bridge.kinds.base import KindCannot, RabbitUnreachable
from nabaztag_bridge.kinds.roster import Entry, RabbitsFileError, Roster, load_entries
from nabaztag_bridge.kinds.serverless import ServerlessLink
from nabaztag_bridge.kinds.serverless_hooks import HOOKS_FORTH, ServerlessHooks
from nabaztag_bridge.rabbits import RabbitRegistry, UnknownRabbit
from nabaztag_bridge.server import BridgeServer, Settings

TIMEOUT = 2.0


class Events:
    def __init__(self):
        self.items, self.arrived = [], threading.Condition()

    def __call__(self, event):
        with self.arrived:
            self.items.append(event)
            self.arrived.notify_all()

    def wait(self, count=1, timeout=5.0):
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.items) >= count, timeout), self.items
        return self.items[-1]


@pytest.fixture
def rig(tmp_path):
    """A bridge HTTP server with one declared serverless rabbit (the emulator on 127.0.0.1)."""
    made = []

    def make(password=None, entry_password='', vl_dir=None, status_period=30.0):
        events = Events()
        rabbit = ServerlessRabbit('127.0.0.1:1', password=password).start()
        entry = Entry(
            'kitchen', 'serverless', f'127.0.0.1:{rabbit.port}', '0013d3000001', entry_password
        )
        link = ServerlessLink(entry, events, timeout=TIMEOUT, status_period=status_period)
        roster = Roster(RabbitRegistry(), [link])
        hooks = ServerlessHooks(roster, vl_dir)
        bridge = BridgeServer(
            Settings(host='127.0.0.1', port=0, xml_api=False), roster.registry, serverless=hooks
        ).start()
        rabbit.server = f'127.0.0.1:{bridge.port}'
        roster.start()
        made.append((rabbit, roster, bridge))
        return rabbit, link, bridge, events

    yield make
    for rabbit, roster, bridge in made:
        roster.stop()
        bridge.stop()
        rabbit.stop()


def result(future):
    return future.result(timeout=3 * TIMEOUT)


# ---- commands -------------------------------------------------------------------------
def test_ears_move_to_their_targets(rig):
    rabbit, link, _, _ = rig()
    assert 'ears going to (5, 12)' in result(link.set_ears(5, 12))
    assert rabbit.wait_for(lambda r: r.ear_positions() == (5, 12), 5.0)


def test_play_fetches_the_url(rig, tmp_path):
    rabbit, link, bridge, _ = rig(vl_dir=None)
    url = f'http://127.0.0.1:{bridge.port}/hooks.forth'  # anything the bridge serves: 404 here
    result(link.play_url(url))
    assert rabbit.wait_for(lambda r: r.played, 5.0) and rabbit.played[0][0] == url
    with pytest.raises(ValueError, match='http://'):
        link.play_url('https://example.org/a.mp3')


def test_nose_sleep_wakeup_and_forth(rig):
    rabbit, link, _, _ = rig()
    result(link.set_nose(2))
    assert rabbit.nose == 2
    assert result(link.sleep()) == 'asleep' and rabbit.asleep and link.state().asleep
    with pytest.raises(ValueError, match='asleep'):
        link.set_ears(1, 1)  # the firmware would answer 204 and not move them
    assert result(link.wakeup()) == 'awake' and not rabbit.asleep
    assert result(link.raw('1 2 + .')) == 'ok 1 2 + .' and rabbit.forth == ['1 2 + .']
    with pytest.raises(ValueError):
        link.set_nose(9)
    with pytest.raises(KindCannot, match='serverless rabbit cannot take a Violet packet'):
        link.raw_packet(b'\x7f\xff')


def test_status_is_read_between_commands(rig):
    rabbit, link, _, _ = rig(status_period=1.0)
    rabbit._sleep(True)
    assert wait_for(lambda: link.state().asleep and link.state().connected, 10)
    state = link.state()
    assert state.asleep and state.connected and state.kind == 'serverless'


def test_the_emulators_status_says_its_ears_are_in_service_as_the_firmwares_does(rig):
    # the firmware's /status ears.mode: 0 only while the ears find their reference after a
    # boot (ear commands are lost then), 2 once they are in service
    rabbit, _, _, _ = rig()
    status = rabbit.status()
    assert status['ears']['mode'] == 2 and status['ears']['left']['last_position'] == 0


def test_password_is_sent_and_a_wrong_one_refused(rig):
    _, link, _, _ = rig(password='carrot', entry_password='carrot')
    result(link.set_nose(1))
    _, wrong, _, _ = rig(password='carrot', entry_password='lettuce')
    with pytest.raises(ValueError, match='refused the password') as error:
        result(wrong.set_nose(1))
    assert 'lettuce' not in str(error.value)


def test_an_unreachable_rabbit_fails_within_the_timeout():
    closed = socket.socket()
    closed.bind(('127.0.0.1', 0))
    port = closed.getsockname()[1]
    closed.close()
    link = ServerlessLink(Entry('gone', 'serverless', f'127.0.0.1:{port}'), timeout=0.5)
    link.start()
    try:
        started = time.monotonic()
        with pytest.raises(RabbitUnreachable, match='gone'):
            result(link.set_ears(1, 2))
        assert time.monotonic() - started < 3 * 0.5 + 1
        assert not link.state().connected and 'gone' in link.state().detail
    finally:
        link.stop()


def test_a_stopped_link_fails_at_once():
    link = ServerlessLink(Entry('idle', 'serverless', '127.0.0.1:9'))
    with pytest.raises(RabbitUnreachable, match='not started'):
        result(link.sleep())


# ---- hooks ----------------------------------------------------------------------------
def test_hooks_reach_the_link_with_their_fields(rig):
    rabbit, link, bridge, events = rig()
    assert rabbit.click() == 200
    assert events.wait(1).event == 'click'
    assert rabbit.double_click() == 200
    assert events.wait(2).event == 'double_click'
    assert rabbit.turn_ears(3, 14) == 200
    event = events.wait(3)
    assert (event.event, event.ears) == ('ears_moved', (3, 14)) and link.state().ears == (3, 14)
    assert rabbit.show_tag('d0021a0353ab1c2f') == 200
    event = events.wait(4)
    assert (event.event, event.rfid, event.serial, event.kind) == (
        'rfid',
        'd0021a0353ab1c2f',
        'kitchen',
        'serverless',
    )
    wav = recording.encode_wav(recording.tone(0.3))
    assert rabbit.record(wav) == 200
    event = events.wait(5)
    assert event.event == 'recording' and event.audio == wav
    assert bridge.counters.hooks == 5 and link.state().connected


def test_hooks_the_published_firmware_sends_are_refused_and_counted(rig):
    rabbit, _, bridge, events = rig()
    # the published hooks: an empty RFID body, the ears hook's words sent literally
    assert rabbit.post_hook('rfid', b'') == 400
    assert rabbit.post_hook('ears', b'left=left-ear-position&right=right-ear-position') == 400
    assert rabbit.post_hook('record', b'RIFF nonsense') == 400
    assert bridge.counters.bad_hooks == 3 and not events.items
    assert rabbit.click() == 200  # the server goes on


def test_a_hook_from_an_undeclared_address_gets_403(rig):
    _, _, bridge, events = rig()
    connection = http.client.HTTPConnection(
        '127.0.0.1', bridge.port, timeout=5, source_address=('127.0.0.2', 0)
    )
    connection.request('POST', '/hooks/click.php', b'time=1', {'Content-Length': '6'})
    assert connection.getresponse().status == 403
    connection.close()
    assert bridge.counters.refused_hooks == 1 and not events.items


# ---- boot -----------------------------------------------------------------------------
def get(port, path):
    connection = http.client.HTTPConnection('127.0.0.1', port, timeout=5)
    connection.request('GET', path)
    reply = connection.getresponse()
    body = reply.read()
    connection.close()
    return reply.status, body


def test_boot_files_come_from_the_folder_and_the_hooks_are_ours(rig, tmp_path):
    vl = tmp_path / 'vl'
    vl.mkdir()
    (vl / 'init.forth').write_text('"hooks.forth" load-srv\n')
    (vl / 'hooks.forth').write_text(': on-rfid >r nil "tag=" :: >r ;\n')
    (vl / 'bc.jsp').write_bytes(b'bytecode')
    (tmp_path / 'secret').write_text('not served')
    _, link, bridge, _ = rig(vl_dir=vl)
    assert get(bridge.port, '/init.forth') == (200, b'"hooks.forth" load-srv\n')
    assert get(bridge.port, '/hooks.forth') == (200, HOOKS_FORTH.encode())
    assert get(bridge.port, '/bc.jsp?v=1&m=0013d3000001&l=x&p=y&h=4') == (200, b'bytecode')
    assert get(bridge.port, '/../secret')[0] == 404
    assert get(bridge.port, '/%2e%2e/secret')[0] == 404
    assert link.accepts('127.0.0.1')


def test_our_hook_words_send_the_fields():
    assert 'ears >r >r' in HOOKS_FORTH and 'left-ear-position' not in HOOKS_FORTH
    assert '>r nil "tag=" :: r> ::' in HOOKS_FORTH
    assert 'translate' not in HOOKS_FORTH  # never the firmware's cloud TTS


# ---- the rabbits file -----------------------------------------------------------------
def test_rabbits_file_declares_each_kind():
    entries = load_entries(
        'rabbits:\n'
        '  - serial: 00:13:D3:A1:B2:C3\n'
        '  - {name: kitchen, kind: serverless, address: 192.168.1.20, password: pw}\n',
        KINDS,
    )
    assert [(e.id, e.kind) for e in entries] == [
        ('0013d3a1b2c3', 'violet'),
        ('kitchen', 'serverless'),
    ]
    assert 'pw' not in repr(entries[1])


@pytest.mark.parametrize(
    'text, problem',
    [
        ('rabbits: 3', 'list'),
        ('rabbits:\n  - {name: a, kind: toaster, address: x}', 'toaster'),
        ('rabbits:\n  - {name: a, kind: serverless}', 'address'),
        ('rabbits:\n  - {name: a}', 'violet rabbit is declared by its serial'),
        ('rabbits:\n  - {name: "a b", kind: serverless, address: x}', 'name'),
        ('rabbits:\n  - {serial: 12, kind: violet}', '12 hex'),
        ('rabbits:\n  - {name: a, kind: serverless, address: x, colour: red}', 'colour'),
        (
            'rabbits:\n  - {name: a, kind: serverless, address: x}\n'
            '  - {name: a, kind: serverless, address: y}',
            'twice',
        ),
        ('rabbits: [', 'not YAML'),
    ],
)
def test_bad_rabbits_files_are_refused_with_the_reason(text, problem):
    with pytest.raises(RabbitsFileError, match=problem):
        load_entries(text, KINDS)


def test_a_rabbit_booting_from_a_new_address_is_found_by_its_mac(rig, tmp_path):
    vl = tmp_path / 'vl'
    vl.mkdir()
    (vl / 'bc.jsp').write_bytes(b'bytecode')
    _, link, bridge, events = rig(vl_dir=vl)
    connection = http.client.HTTPConnection(
        '127.0.0.1', bridge.port, timeout=5, source_address=('127.0.0.2', 0)
    )
    connection.request('GET', '/bc.jsp?v=1&m=00:13:d3:00:00:01&h=4')
    assert connection.getresponse().read() == b'bytecode'
    connection.close()
    assert link.accepts('127.0.0.2') and not link.accepts('127.0.0.1')
    connection = http.client.HTTPConnection(
        '127.0.0.1', bridge.port, timeout=5, source_address=('127.0.0.2', 0)
    )
    connection.request('POST', '/hooks/click.php', b'time=1', {'Content-Length': '6'})
    assert connection.getresponse().status == 200
    assert events.wait(1).event == 'click'


def test_a_hook_without_a_length_is_refused_and_the_server_goes_on(rig):
    rabbit, _, bridge, events = rig()
    with socket.create_connection(('127.0.0.1', bridge.port), timeout=5) as connection:
        connection.sendall(b'POST /hooks/click.php HTTP/1.0\r\nHost: x\r\n\r\n')
        assert b' 411 ' in connection.recv(4096)
    assert rabbit.click() == 200 and events.wait(1).event == 'click'


def test_the_emulator_command_line_posts_hooks_from_its_console(rig):
    rabbit, link, bridge, events = rig()
    rabbit.stop()  # the command line's emulator takes its place at the same address
    process = start_module(
        'nabaztag_bridge.emulator',
        '--kind', 'serverless', '--port', str(rabbit.port),
        '--server', f'127.0.0.1:{bridge.port}', '--console',
        stdin=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert f':{rabbit.port}' in process.stdout.readline()
        process.stdin.write('click\nears 4 5\nrfid d0021a0353ab1c2f\n')
        process.stdin.flush()
        assert [process.stdout.readline().strip() for _ in range(3)] == [
            'click: 200',
            'ears: 200',
            'rfid: 200',
        ]
        assert events.wait(3).rfid == 'd0021a0353ab1c2f'
        assert result(link.set_nose(3)) == 'nose 3'
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=10)


class GarbledStatus(ServerlessRabbit):
    """A rabbit whose /status is not JSON (a firmware fault, a proxy's error page)."""

    def answer(self, method, path, args):
        if path == '/status':
            return 200, b'<html>oops</html>', 'text/html'
        return super().answer(method, path, args)


def test_a_status_that_is_not_json_is_counted_and_the_link_goes_on(rig):
    rabbit = GarbledStatus('127.0.0.1:1').start()
    link = ServerlessLink(
        Entry('odd', 'serverless', f'127.0.0.1:{rabbit.port}'), timeout=TIMEOUT, status_period=1.0
    )
    warnings = []
    link.log = lambda key, text: warnings.append((key, text))
    link.start()
    try:
        assert wait_for(lambda: link.counters['bad_status'] >= 2, 10)
        assert warnings[0][0] == 'odd-bad-status' and 'not the JSON' in warnings[0][1]
        assert result(link.set_nose(1)) == 'nose 1'
    finally:
        link.stop()
        rabbit.stop()


def test_the_roster_addresses_declared_and_calling_rabbits():
    registry = RabbitRegistry(allowed=['0013d3000002'])
    link = ServerlessLink(Entry('kitchen', 'serverless', '127.0.0.1:9'))
    roster = Roster(registry, [link], violet_serials=['0013d3000002'])
    states = roster.states()
    assert [(s.serial, s.kind, s.connected) for s in states] == [
        ('kitchen', 'serverless', False),
        ('0013d3000002', 'violet', False),
    ]
    assert 'not called' in states[1].detail
    with pytest.raises(UnknownRabbit, match='has called'):
        roster.select('0013d3000002')  # declared, but a violet rabbit is reached once it calls
    registry.seen('0013d3000002')
    assert [link.kind for link in roster.select('')] == ['serverless', 'violet']
    assert roster.select('00:13:D3:00:00:02')[0].serial == '0013d3000002'
    assert roster.select('kitchen') == [link]
    with pytest.raises(UnknownRabbit, match='no rabbit is declared as'):
        roster.select('pantry')
