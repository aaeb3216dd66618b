"""Speech to text end to end: a known sentence, spoken by the neural voice, recorded the way
the rabbit records (8 kHz IMA ADPCM), uploaded by an emulated rabbit over real HTTP to the
bridge in its own process, comes back on `heard` within the word error rate target; bad
uploads come back with empty text and a reason; the recogniser's worker ends quietly."""

import os
import pathlib
import signal
import subprocess
import sys

import numpy as np
import pytest

from legacy_robot_interfaces.msg import RabbitHeard, RabbitRecording
from nabaztag_bridge import asr, recording, tts, tts_worker
from nabaztag_bridge.asr import word_error_rate
from nabaztag_bridge.asr_client import ASR_MODULE, Recogniser
from nabaztag_bridge.hearing import _missing

CATALOGUE = tts.VoiceCatalogue()
MODEL = 'tiny.en'
needs_asr = pytest.mark.skipif(
    bool(_missing('whisper', MODEL)) or not CATALOGUE.piper_voices,
    reason='faster-whisper, its model or the piper voice not installed (requirements-speech.txt)',
)
SENTENCE = 'Please turn on the kitchen lights.'


def rabbit_recording(text):
    voice = CATALOGUE.resolve('piper', '', 'en')
    rate, pcm = tts_worker.PiperEngine().synthesize({'model': voice.model, 'rate': 1.0}, text)
    return recording.as_rabbit_records(pcm, rate)


@needs_asr
def test_a_known_sentence_uploaded_by_the_rabbit_is_heard(setup):
    rabbit, process, ros = setup(asr_model=MODEL)
    heard = ros.listen(RabbitHeard, 'heard')
    recordings = ros.listen(RabbitRecording, 'recordings')
    rabbit.record_sound(rabbit_recording(SENTENCE))
    assert ros.spin_until(lambda: heard, 60), 'nothing heard'
    msg = heard[0]
    assert recordings and recordings[0].serial == msg.serial == rabbit.serial
    assert word_error_rate(SENTENCE, msg.text) <= 0.15, msg.text
    assert msg.language == 'en' and msg.reason == ''
    assert 0.0 < msg.confidence <= 1.0
    assert abs(msg.duration - len(recordings[0].pcm) / 8000) < 0.01
    assert 0.0 < msg.recogniser_seconds < 60.0
    # the recogniser runs at asr_worker_priority, idle by default: the pings come first
    assert os.sched_getscheduler(child_running(process.pid, ASR_MODULE)) == os.SCHED_IDLE


def child_running(pid, module):
    """The pid of a process under pid (child, grandchild, ...) that runs `python -m module`."""
    waiting = [pid]
    while waiting:
        parent = waiting.pop()
        for task in pathlib.Path(f'/proc/{parent}/task').iterdir():
            for child in map(int, (task / 'children').read_text().split()):
                command = pathlib.Path(f'/proc/{child}/cmdline').read_bytes().split(b'\0')
                if module.encode() in command:
                    return child
                waiting.append(child)
    raise AssertionError(f'no process under {pid} runs {module}')


@needs_asr
def test_silence_is_heard_as_nothing_with_the_reason(setup):
    rabbit, process, ros = setup(asr_model=MODEL)
    heard = ros.listen(RabbitHeard, 'heard')
    rabbit.record_sound(recording.encode_wav(np.zeros(8000, np.int16)))
    assert ros.spin_until(lambda: heard, 60), 'nothing heard'
    assert heard[0].text == '' and 'silent' in heard[0].reason


def test_a_missing_model_is_said_and_recordings_still_publish(setup):
    rabbit, process, ros = setup(asr_model='/nonexistent/model')
    heard = ros.listen(RabbitHeard, 'heard')
    recordings = ros.listen(RabbitRecording, 'recordings')
    rabbit.record(0.5)
    assert ros.spin_until(lambda: heard and recordings, 30)
    assert heard[0].text == '' and 'model.bin' in heard[0].reason


@pytest.mark.parametrize(
    'upload, reason',
    [
        (b'', 'not a recording'),
        (b'RIFF\x00\x00\x00\x00WAVEjunk', 'not a recording'),
        (recording.encode_wav(np.zeros(0, np.int16)), 'empty'),
        (recording.encode_wav(np.zeros(8000, np.int16)), 'silent'),
        (
            recording.encode_wav(recording.tone(1.0))[:62],
            'not a recording',
        ),  # cut inside a block header
    ],
)
def test_bad_sound_is_an_answer_with_a_reason(upload, reason):
    from nabaztag_bridge.asr_worker import Worker

    answer = Worker().handle({'engine': 'whisper', 'model': MODEL, 'language': ''}, upload)
    assert answer['text'] == '' and reason in answer['reason'], answer


@needs_asr
def test_a_recording_longer_than_the_limit_is_cut_and_the_cut_said():
    from nabaztag_bridge.asr_worker import Worker

    wav = rabbit_recording(f'{SENTENCE} {SENTENCE}')
    answer = Worker().handle(
        {'engine': 'whisper', 'model': MODEL, 'language': 'en', 'max_seconds': 1.0}, wav
    )
    assert answer['seconds'] == 1.0 and 'cut to 1 s' in answer['reason'], answer


def test_a_full_queue_drops_the_oldest_and_counts_it():
    recogniser = Recogniser('whisper', '/nonexistent/model', queue_size=2)  # not started
    answers = []
    for serial in 'abc':
        recogniser.submit(serial, b'', answers.append)
    assert recogniser.counters['dropped'] == 1 and recogniser.waiting == 2
    assert len(answers) == 1 and 'dropped' in answers[0]['reason']


@pytest.mark.parametrize('how', ['pipe closed', 'SIGTERM', 'SIGINT'])
def test_the_recogniser_worker_exits_quietly(how):
    worker = subprocess.Popen(
        [sys.executable, '-m', ASR_MODULE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tts.read_message(worker.stdout)[0]['ready']
    if how == 'pipe closed':
        worker.stdin.close()
    else:
        os.kill(worker.pid, getattr(signal, how))
        if how == 'SIGINT':  # left to the bridge: the worker goes on until its pipe closes
            worker.stdin.close()
    assert worker.wait(10) == 0
    assert b'Traceback' not in worker.stderr.read()


def test_unknown_engine_is_a_clear_message():
    with pytest.raises(asr.RecogniserError, match='unknown asr_engine'):
        asr.make_engine('nope')


def test_asr_engine_off_hears_nothing_and_recordings_still_publish(setup):
    rabbit, process, ros = setup(asr_engine='off')
    recordings = ros.listen(RabbitRecording, 'recordings')
    rabbit.record(0.5)
    assert ros.spin_until(lambda: recordings, 30)
    assert ros.node.count_publishers('/rabbit/heard') == 0
