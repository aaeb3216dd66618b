"""The rabbit emulator against the bridge's HTTP server (real sockets, no ROS), and
against a server that misbehaves the ways docs/protocols/nabaztag.md §4.1 says the rabbit
copes with."""

import http.server
import io
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from helpers import run_module, start_module, wait_for

from legacy_robot_common.emulator import free_port
from nabaztag_bridge import choreography as chor
from nabaztag_bridge import protocol as p
from nabaztag_bridge import recording, tts
from nabaztag_bridge.emulator import (
    PLAYED_KEPT,
    RabbitEmulator,
    RabbitOptions,
    VirtualRabbit,
    console,
    rabbit_request,
    split_url,
)
from nabaztag_bridge.rabbits import RabbitRegistry
from nabaztag_bridge.rules import RuleEngine
from nabaztag_bridge.rules import load as load_rules
from nabaztag_bridge.server import BridgeServer, RabbitEvent, Recording, Settings

BYTECODE = p.wrap_bytecode(b'test bytecode /vl/p4.jsp?sn=')


@pytest.fixture
def world(tmp_path):
    """A bridge (ping interval 1 s) and a factory of rabbits calling it."""
    media = tmp_path / 'media'
    media.mkdir()
    (media / 'tone.wav').write_bytes(recording.encode_wav(recording.tone(0.3)))
    server = BridgeServer(
        Settings(host='127.0.0.1', port=0, bytecode=BYTECODE, media_root=media),
        RabbitRegistry(ping_interval=1),
    ).start()
    server.records = []
    server.on_record = server.records.append
    rabbits = []

    def rabbit(**options):
        options.setdefault('server', f'127.0.0.1:{server.port}/vl')
        rabbits.append(VirtualRabbit(RabbitOptions(**options)).start())
        return rabbits[-1]

    yield server, rabbit
    for started in rabbits:
        started.stop()
    server.stop()


def kinds(server):
    return [r.kind for r in server.records if isinstance(r, RabbitEvent)]


def test_boot_locate_and_wake_up(world):
    server, make = world
    rabbit = make()
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    assert kinds(server)[:2] == ['boot', 'locate']
    status = rabbit.status()
    assert status['boots'] == 1 and status['ping_delay'] == 1 and status['bad_packets'] == 0
    assert server.registry.select(rabbit.serial)[0].bytecode_version == 65808


def test_a_bridge_without_bytecode_keeps_a_booting_rabbit_trying(world):
    server, make = world
    bare = BridgeServer(Settings(host='127.0.0.1', port=0), RabbitRegistry()).start()
    try:
        rabbit = make(server=f'127.0.0.1:{bare.port}/vl')
        assert wait_for(lambda: rabbit.status()['errors'] >= 2, 5)
        assert rabbit.status()['phase'] == 'boot'
        skipping = make(server=f'127.0.0.1:{bare.port}/vl', serial='0019db000002', boot=False)
        assert wait_for(lambda: skipping.status()['pings'] >= 1, 5)
    finally:
        bare.stop()


def test_clicks_ears_and_end_of_message_reach_the_bridge(world):
    server, make = world
    rabbit = make(boot=False)
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    rabbit.click()
    assert wait_for(lambda: 'click' in kinds(server), 5)
    rabbit.move_ears(3, 21)
    assert wait_for(lambda: 'ears_moved' in kinds(server), 5)
    moved = [r for r in server.records if getattr(r, 'kind', '') == 'ears_moved'][0]
    assert moved.ears == (3, 4)  # 21 mod 17
    rabbit.double_click()
    assert wait_for(lambda: 'double_click' in kinds(server), 5)
    # the bridge records the event while it answers; the rabbit clears sd once the answer is in
    assert wait_for(lambda: rabbit.sd == 0, 5)  # acknowledged


def test_a_click_pings_at_once_and_its_rule_fires_within_a_second(tmp_path):
    """The firmware pings at once on a click or double click (not at its next ping): with
    pings a minute apart, a click rule fires at once (3 s allowed for a loaded machine)."""
    firings = []
    engine = RuleEngine(firings.append)
    engine.load(
        load_rules(
            'rules:\n'
            '  - {name: one, when: click, do: [{nose: 1}]}\n'
            '  - {name: two, when: double_click, do: [{nose: 2}]}\n',
            lambda name: name,
        )
    )
    server = BridgeServer(
        Settings(host='127.0.0.1', port=0, bytecode=BYTECODE), RabbitRegistry(ping_interval=60)
    ).start()
    heard = threading.Event()

    def on_record(record):
        if isinstance(record, RabbitEvent) and engine.listens(record.kind):
            engine.on_event(record.serial, record.kind, record.rfid)
            heard.set()

    server.on_record = on_record
    rabbit = VirtualRabbit(RabbitOptions(server=f'127.0.0.1:{server.port}/vl')).start()
    try:
        assert wait_for(lambda: rabbit.status()['ping_delay'] == 60, 10), rabbit.status()
        for action, rule in ((rabbit.click, 'one'), (rabbit.double_click, 'two')):
            heard.clear()
            action()
            assert heard.wait(3.0), f'{rule}: no ping before the next scheduled one'
            assert firings[-1].rule.name == rule and firings[-1].serial == rabbit.serial
    finally:
        rabbit.stop()
        server.stop()


def test_program_with_sound_and_choreography_plays_then_reports_its_end(world):
    server, make = world
    rabbit = make(boot=False)
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    url = server.add_choreography(
        chor.build(
            [
                chor.Step(0, 0x01, (10,)),
                chor.Step(0, 0x07, (4, 255, 0, 0, 0, 0)),
                chor.Step(3, 0x08, (1, 9, 0)),
                chor.Step(3, 0x09, (0, 0, 255)),
            ]
        )
    )
    program_id = server.registry.queue_program(
        server.registry.select(''), [('MU', server.media_url('tone.wav')), ('MW', ''), ('CH', url)]
    )
    assert wait_for(lambda: rabbit.status()['playing'] == program_id, 5)
    assert wait_for(lambda: 'end_of_message' in kinds(server), 5)
    end = next(e for e in server.records if getattr(e, 'kind', '') == 'end_of_message')
    assert end.program_id == program_id  # tc held the program's ID at its end
    assert rabbit.status()['leds'] == ((0, 0, 255),) * 5
    assert [(key, size > 0) for key, _, size in rabbit.played] == [('MU', True), ('CH', True)]
    # then the bridge sends the idle program, and only then is the rabbit idle
    assert wait_for(lambda: server.registry.select(rabbit.serial)[0].state == 'idle', 5)
    assert rabbit.status()['tc'] == format(p.IDLE_ID, 'x')


def test_a_rabbit_remembers_only_its_last_resources(world):
    """A fleet of emulated rabbits runs for days (the mixed soak: 500 of them): what each one
    played is kept for the tests, but only the last PLAYED_KEPT entries."""
    server, make = world
    rabbit = make()
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    commands = [('PL', str(n % 8)) for n in range(PLAYED_KEPT + 20)]
    program_id = server.registry.queue_program(server.registry.select(rabbit.serial), commands)
    assert wait_for(lambda: 'end_of_message' in kinds(server), 5)
    end = next(e for e in server.records if getattr(e, 'kind', '') == 'end_of_message')
    assert end.program_id == program_id
    assert len(rabbit.played) == PLAYED_KEPT
    assert rabbit.played[-1] == ('PL', str((PLAYED_KEPT + 19) % 8), 0)  # the newest stay


def test_a_rabbit_remembers_only_its_last_programs_audio(world, tmp_path):
    """played_audio (what audio_dir received, a WAV per program) is bounded like played: only
    the last PLAYED_KEPT programs' are kept, numbered over the rabbit's life, so that what came
    after a moment (the demo's answer) is still found after older ones were dropped."""
    server, make = world
    rabbit = make(time_scale=0.01, audio_dir=str(tmp_path))
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    programs = PLAYED_KEPT + 5
    sound = [('MU', server.media_url('tone.wav')), ('MW', '')]
    for _ in range(programs):
        server.registry.queue_program(server.registry.select(rabbit.serial), sound)
    assert wait_for(lambda: rabbit.audio_programs == programs, 120), rabbit.last_audio_error
    assert len(rabbit.played_audio) == PLAYED_KEPT
    assert [a.number for a in rabbit.played_audio] == list(range(6, programs + 1))
    assert [a.number for a in rabbit.audio_since(programs - 2)] == [programs - 1, programs]
    assert all(a.path.is_file() for a in rabbit.audio_since(programs - 2))


def test_ears_set_after_a_program_reach_the_rabbit(world):
    """The firmware applies ambient ears only while idle (tc = the idle ID): after a program the
    bridge must send the idle program, or every later set_ears is ignored."""
    server, make = world
    rabbit = make(boot=False)
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    rabbits = server.registry.select('')
    server.registry.queue_program(rabbits, [('MU', server.media_url('tone.wav')), ('MW', '')])
    assert wait_for(lambda: 'end_of_message' in kinds(server), 5)
    server.registry.set_ears(rabbits, (3, 14))
    assert wait_for(lambda: rabbit.status()['ears'] == (3, 14), 5), rabbit.status()
    assert rabbit.status()['state'] == 'idle'


def test_mp3s_play_for_their_frames_and_bad_or_oversized_audio_is_counted(world, tmp_path):
    """The rabbit keeps the first 300,000 bytes of an MU file: a longer MP3 is cut (counted,
    and its cut last frame makes it no whole MP3); a file that is no MP3 is counted too."""
    from nabaztag_bridge import mp3
    from nabaztag_bridge.emulator import decode_audio
    from nabaztag_bridge.plugin import SILENT_MP3

    server, make = world
    media = server.settings.media_root
    (media / 'one.mp3').write_bytes(SILENT_MP3)  # 38 frames: 0.99 s
    (media / 'long.mp3').write_bytes(SILENT_MP3 * 20)  # 316,920 bytes: over the cap
    (media / 'noise.mp3').write_bytes(b'not audio at all' * 100)
    rabbit = make(time_scale=0.05, audio_dir=str(tmp_path))
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    program_id = server.registry.queue_program(
        server.registry.select(''), [('MU', server.media_url('one.mp3')), ('MW', '')]
    )
    wav = tmp_path / f'{rabbit.serial}-{program_id:x}.wav'  # written when it has played
    assert wait_for(wav.exists, 10), rabbit.last_audio_error
    assert rabbit.audio_seconds == pytest.approx(mp3.scan(SILENT_MP3).seconds)
    assert len(decode_audio([SILENT_MP3])[0]) == 2 * 38 * 1152
    # the cut MP3 ends inside a frame: truncated, and no whole MP3 either; then the noise
    for name, truncated, bad in (('long.mp3', 1, 1), ('noise.mp3', 1, 2)):
        server.registry.queue_program(
            server.registry.select(''), [('MU', server.media_url(name)), ('MW', '')]
        )
        assert wait_for(
            lambda truncated=truncated, bad=bad: (
                (rabbit.status()['truncated_audio'], rabbit.status()['bad_audio'])
                == (truncated, bad)
            ),
            10,
        ), (name, rabbit.status())


def test_click_while_playing_stops_the_program(world):
    server, make = world
    rabbit = make(boot=False, time_scale=20.0)  # a 0.3 s sound lasts 6 s
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    program_id = server.registry.queue_program(
        server.registry.select(''), [('MU', server.media_url('tone.wav')), ('MW', '')]
    )
    assert wait_for(lambda: rabbit.status()['playing'] == program_id, 5)
    rabbit.click()
    assert wait_for(lambda: 'click_while_playing' in kinds(server), 5)
    assert rabbit.status()['playing'] is None and 'end_of_message' not in kinds(server)


def test_sleep_wake_and_reboot(world):
    server, make = world
    rabbit = make()
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    rabbits = server.registry.select('')
    server.registry.queue_special(rabbits, p.SLEEP_ID)
    assert wait_for(lambda: rabbit.status()['state'] == 'asleep', 5)
    assert rabbit.status()['ears'] == (8, 8)
    assert wait_for(lambda: server.registry.select(rabbit.serial)[0].state == 'asleep', 5)
    server.registry.queue_special(rabbits, p.IDLE_ID)
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    server.registry.queue_blocks(rabbits, [p.reboot_block()])
    assert wait_for(lambda: rabbit.status()['boots'] == 2, 5)


def test_ambient_moves_the_ears_of_an_idle_rabbit(world):
    server, make = world
    rabbit = make(boot=False)
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    server.registry.update(server.registry.select(''), ambient=p.Ambient(((1, 2),), (12, 4), 2))
    assert wait_for(lambda: rabbit.status()['ears'] == (12, 4), 5)
    assert rabbit.status()['services'] == ((1, 2),) and rabbit.status()['nose_blinks'] == 2


def test_record_uploads_a_real_adpcm_wav_and_rfid_is_reported(world):
    server, make = world
    rabbit = make(boot=False, time_scale=0.1)
    assert wait_for(lambda: rabbit.status()['pings'] >= 1, 5)
    rabbit.record(1.0, double=True)
    rabbit.show_tag('d0:02:1a:03:52:d6:4c:ec')
    assert wait_for(lambda: 'rfid' in kinds(server) and 'recording' in kinds(server), 5)
    [upload] = [r for r in server.records if isinstance(r, Recording)]
    assert upload.double_click and abs(len(upload.pcm) / upload.sample_rate - 1.0) < 0.07
    assert [r.rfid for r in server.records if getattr(r, 'kind', '') == 'rfid'] == [
        'd0021a0352d64cec'
    ]


class FlakyRecordServer(http.server.BaseHTTPRequestHandler):
    """Stays silent on the first two uploads (longer than the rabbit waits), takes the
    third; answers every ping with a packet the rabbit must refuse (a type-11 block)."""

    uploads = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers['Content-length']))
        self.uploads.append(body)
        if len(self.uploads) < 3:
            time.sleep(1.0)  # the rabbit gives up after net_timeout, retries
        self._reply(b'')

    def do_GET(self):
        self._reply(p.encode_packet([p.Block(3, b'\x01')])[:-1] + b'\x0b\x00\x00\x00\xff')

    def _reply(self, body):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_upload_retries_and_invalid_packets_keep_the_event():
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), FlakyRecordServer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    port = httpd.server_address[1]
    rabbit = VirtualRabbit(
        RabbitOptions(server=f'127.0.0.1:{port}/vl', time_scale=0.0, net_timeout=0.3)
    )
    rabbit.phase, rabbit.ping_base = 'ping', f'127.0.0.1:{port}'  # as if located
    rabbit.start()
    try:
        rabbit.click()
        rabbit.record(0.5)
        assert wait_for(lambda: rabbit.status()['uploads'] == 1, 5)
        assert rabbit.status()['upload_attempts'] == 3
        assert len(FlakyRecordServer.uploads) == 3 and len(set(FlakyRecordServer.uploads)) == 1
        assert wait_for(lambda: rabbit.status()['bad_packets'] >= 2, 15)
        assert rabbit.sd == p.SD_VALUES['click']  # never acknowledged: sent again
    finally:
        rabbit.stop()
        httpd.shutdown()
        httpd.server_close()


def test_many_rabbits_in_one_process(world):
    server, _ = world
    fleet = RabbitEmulator(
        RabbitOptions(server=f'127.0.0.1:{server.port}/vl', boot=False), count=50
    ).start()
    try:
        assert wait_for(lambda: server.registry.counts() == (50, 50), 10)
        assert len({r.serial for r in fleet.rabbits}) == 50
        assert fleet.rabbits[-1].serial == '0019db000032'
    finally:
        fleet.stop()


def test_requests_are_byte_for_byte_the_rabbits():
    seen = []
    listener = __import__('socket').create_server(('127.0.0.1', 0))

    def serve():
        connection, _ = listener.accept()
        seen.append(connection.recv(4096))
        connection.sendall(b'HTTP/1.0 500 Whatever\r\nX: y\r\n\r\nbody \r\n\r\n kept')
        connection.close()

    threading.Thread(target=serve, daemon=True).start()
    port = listener.getsockname()[1]
    assert (
        rabbit_request(f'http://127.0.0.1:{port}/vl/record.jsp?sn=1', b'AB')
        == b'body \r\n\r\n kept'
    )  # status ignored; first blank line splits
    listener.close()
    assert seen[0] == (
        b'POST /vl/record.jsp?sn=1 HTTP/1.0\r\nUser-Agent: MTL\r\n'
        b'Pragma: no-cache\r\nIcy-MetaData:1\r\nHost: 127.0.0.1\r\n'
        b'Content-length: 2\r\n\r\nAB'
    )
    assert split_url('rabbits.lan/vl/x') == ('rabbits.lan', 80, '/vl/x')


def test_console_commands(world):
    server, _ = world
    emulator = RabbitEmulator(
        RabbitOptions(server=f'127.0.0.1:{server.port}/vl', boot=False), count=2
    ).start()
    try:
        out = io.StringIO()
        console(
            emulator,
            ['click 1\n', 'ears 4 5\n', 'rfid nothex\n', 'fly\n', 'status 1\n', 'record 0.1\n'],
            out,
        )
        lines = out.getvalue().splitlines()
        assert lines[0] == 'ok: click on 0019db000002' and lines[1].startswith('ok: ears')
        assert lines[2].startswith('error:') and lines[3].startswith('commands:')
        assert "'serial': '0019db000002'" in lines[4]
        assert wait_for(lambda: 'click' in kinds(server), 5)
    finally:
        emulator.stop()


def test_command_line():
    bad = run_module('nabaztag_bridge.emulator', '--serial', 'xyz')
    assert bad.returncode == 2 and 'serial' in bad.stderr
    assert run_module('nabaztag_bridge.emulator', '--rabbits', '0').returncode == 2
    process = start_module(
        'nabaztag_bridge.emulator', '--server', '127.0.0.1:9/vl', '--rabbits', '3'
    )
    try:
        assert process.stdout.readline().startswith(
            'Nabaztag emulator: 3 rabbit(s) from 0019db000001'
        )
    finally:
        process.terminate()
        assert process.wait(10) == 0


def test_the_emulator_says_when_it_cannot_reach_its_server():
    command = [sys.executable, '-m', 'nabaztag_bridge.emulator', '--no-boot', '--server']
    nothing_there = f'http://127.0.0.1:{free_port()}/vl'  # an http:// in front is fine
    process = subprocess.Popen(command + [nothing_there], stdout=subprocess.PIPE, text=True)
    try:
        lines = [process.stdout.readline() for _ in range(2)]
        assert 'cannot reach the server 127.0.0.1' in lines[1], lines
        assert 'locate.jsp' in lines[1] and 'retrying' in lines[1]
    finally:
        process.terminate()
        process.wait(10)
    for setting in ('http://127.0.0.1:8080', '127.0.0.1:8080/', 'https://example.org/vl'):
        refused = subprocess.run(command + [setting], capture_output=True, text=True, timeout=30)
        assert refused.returncode == 2 and refused.stderr.startswith('error: --server'), refused


def test_without_the_mp3_decoder_audio_dir_says_what_to_install(monkeypatch, capsys):
    """miniaudio is optional (requirements-speech.txt): only the WAVs of --audio-dir need it."""
    from nabaztag_bridge import emulator
    from nabaztag_bridge.plugin import SILENT_MP3

    monkeypatch.setitem(sys.modules, 'miniaudio', None)  # import miniaudio raises ImportError
    with pytest.raises(ImportError, match='pip install miniaudio'):
        emulator.decode_audio([SILENT_MP3])
    monkeypatch.setattr(emulator.importlib.util, 'find_spec', lambda name: None)
    assert emulator.main(['--audio-dir', '/tmp']) == 2
    assert 'pip install miniaudio' in capsys.readouterr().err


def test_console_records_a_wav_file_and_a_spoken_text_as_the_rabbit_does(world, tmp_path):
    server, _ = world
    # a 16-bit PCM WAV at 22,050 Hz: arrives as the rabbit's 8 kHz IMA ADPCM, the same length
    rate, seconds = 22050, 0.6
    pcm = (8000 * np.sin(2 * np.pi * 300 * np.arange(int(rate * seconds)) / rate)).astype('<i2')
    wav = b'RIFF' + struct.pack('<I', 36 + 2 * len(pcm)) + b'WAVE'
    wav += b'fmt ' + struct.pack('<IHHIIHH', 16, 1, 1, rate, 2 * rate, 2, 16)
    wav += b'data' + struct.pack('<I', 2 * len(pcm)) + pcm.tobytes()
    (tmp_path / 'tone.wav').write_bytes(wav)
    emulator = RabbitEmulator(
        RabbitOptions(server=f'127.0.0.1:{server.port}/vl', boot=False, time_scale=0.1)
    ).start()
    try:
        out = io.StringIO()
        lines = [f'record-wav {tmp_path / "tone.wav"}\n', 'record-wav /no/such.wav\n']
        if tts.VoiceCatalogue().espeak_installed:
            lines.append('record-say What time is it?\n')
        console(emulator, lines, out)
        answers = out.getvalue().splitlines()
        assert answers[0] == 'ok: record-wav on 0019db000001', answers
        assert answers[1].startswith('error: cannot read /no/such.wav')

        def uploads():
            return [r for r in server.records if isinstance(r, Recording)]

        assert wait_for(lambda: len(uploads()) == len(lines) - 1, 20), answers
        first = uploads()[0]
        assert first.wav[20:22] == struct.pack('<H', recording.IMA_ADPCM)
        assert first.sample_rate == 8000 and abs(len(first.pcm) / 8000 - seconds) < 0.07
        for upload in uploads()[1:]:  # the spoken text: speech, not silence
            assert np.sqrt(np.mean(upload.pcm.astype(float) ** 2)) > 100
    finally:
        emulator.stop()
