"""Speech-to-text benchmark of the Nabaztag bridge: one table, bench-output/nabaztag_hearing.json.

  nabaztag_hearing_bench [--seconds 10] [--models tiny.en,base]

* each model's word error rate on English sentences spoken by the neural voice (piper, joe)
  and recorded the rabbit's way (8 kHz, IMA ADPCM), and its real-time factor: CPU seconds per
  second of audio on one thread, in this process;
* through the bridge (a real process, its default model): from the end of a 3-second
  upload to record.jsp to its `heard` message, median of UPLOADS;
* ping p99 of 100 rabbits pinging every second: without uploads, while one rabbit uploads a
  recording every second that is recognised, and the same uploads with asr_engine off (what
  the upload itself costs the pings, apart from the recogniser).
"""

import argparse
import itertools
import pathlib
import statistics
import subprocess
import sys
import threading
import time

import rclpy

from legacy_robot_bench.common.bench import report, stop_process
from legacy_robot_interfaces.msg import RabbitHeard
from nabaztag_bridge import asr, recording, tts, tts_worker
from nabaztag_bridge.asr_worker import Worker
from nabaztag_bridge.emulator import rabbit_request

from . import loadgen
from .speech_bench import start_bridge

NAMESPACE = '/hearing_bench'
SERIAL = '0019db000000'  # the first of rabbit_load's rabbits
SENTENCES = (
    'What time is it?',
    'Please turn on the kitchen lights.',
    'The rabbit moves its ears when the weather changes.',
    'Tell me a story about the sea.',
    'Wake me up at seven tomorrow morning.',
    'How cold will it be this afternoon?',
    'Play some quiet music in the living room.',
    'My friend is coming to dinner on Friday evening.',
)
THREE_SECONDS = 'Could you tell me what the weather will be like tomorrow?'
UPLOADS = 5
ROUNDS = 2  # ping runs of each kind; the median is the figure
TARGETS = {'wer': 0.15, 'rtf': 0.5, 'latency': 2.0, 'ping_delta_ms': 2.0}


def spoken(text):
    """text in the neural voice, as the rabbit uploads it (a WAV of 8 kHz IMA ADPCM)."""
    voice = tts.VoiceCatalogue().resolve('piper', '', 'en')
    rate, pcm = tts_worker.PiperEngine().synthesize({'model': voice.model, 'rate': 1.0}, text)
    return recording.as_rabbit_records(pcm, rate)


def model_figures(model, uploads):
    """(word error rate over all sentences, real-time factor on one thread, [(sentence,
    heard)] of the sentences not heard exactly)."""
    worker = Worker(threads=1)
    worker.preload('whisper', model)
    language = 'en' if model.endswith('.en') else ''
    errors = words = audio = cpu = 0.0
    misheard = []
    for sentence, wav in zip(SENTENCES, uploads, strict=True):
        started = time.process_time()
        answer = worker.handle({'engine': 'whisper', 'model': model, 'language': language}, wav)
        cpu += time.process_time() - started
        audio += answer['seconds']
        count = len(asr.words(sentence))
        errors += asr.word_error_rate(sentence, answer['text']) * count
        if asr.words(sentence) != asr.words(answer['text']):
            misheard.append((sentence, answer['text']))
        words += count
    return errors / words, cpu / audio, misheard


class HeardListener:
    def __init__(self):
        rclpy.init()
        self.node = rclpy.create_node('hearing_bench')
        self.heard = []
        self.arrived = threading.Condition()
        self.node.create_subscription(RabbitHeard, f'{NAMESPACE}/heard', self._on_heard, 10)
        self._spinning = threading.Thread(target=rclpy.spin, args=(self.node,), daemon=True)
        self._spinning.start()

    def _on_heard(self, msg):
        with self.arrived:
            self.heard.append((time.monotonic(), msg))
            self.arrived.notify_all()

    def wait(self, count, timeout):
        with self.arrived:
            self.arrived.wait_for(lambda: len(self.heard) >= count, timeout)
            return self.heard[count - 1] if len(self.heard) >= count else None

    def close(self):
        rclpy.shutdown()
        self._spinning.join(5)


_uploads = itertools.count(1)


def upload(port, wav):
    """One upload to record.jsp, each a little different: the bridge takes an identical
    upload within 30 s for the rabbit's retry of the same recording, and drops it."""
    data = bytearray(wav)
    # one code's lowest bit, in a block's codes (after its 4-byte header): one sample's step
    block_codes = recording.BLOCK_ALIGN - 4
    data[recording.HEADER_SIZE + 4 + next(_uploads) % block_codes] ^= 1
    rabbit_request(
        f'http://127.0.0.1:{port}/vl/record.jsp?sn={SERIAL}&v=65808&h=4&m=0', bytes(data)
    )


def warm_up(listener, port, wav, attempts=5):
    """Uploads until a heard message comes back: the worker has loaded its model, and the
    subscription is matched (a message published before that is lost, not late)."""
    for _ in range(attempts):
        upload(port, wav)
        if listener.wait(len(listener.heard) + 1, 20) is not None:
            return
    raise RuntimeError(f'no heard message after {attempts} uploads')


def bridge_figures(program, seconds, wav, priority):
    bridge, port = start_bridge(program, NAMESPACE, {'asr_worker_priority': priority})
    listener = None
    try:
        listener = HeardListener()
        warm_up(listener, port, wav)
        latencies, texts = [], []
        for _ in range(UPLOADS):
            count = len(listener.heard) + 1
            upload(port, wav)
            uploaded = time.monotonic()
            got = listener.wait(count, 60)
            if got is None:
                raise RuntimeError('no heard message within 60 s of an upload')
            latencies.append(got[0] - uploaded)
            texts.append(got[1].text)
        quiet, busy = [], []
        for _ in range(ROUNDS):  # alternately: the machine's own noise hits both sides
            quiet.append(loadgen.open_loop(program, port, 100, 1, seconds))
            busy.append(pings_while_uploading(program, port, seconds, wav))
    finally:
        if listener is not None:
            listener.close()
        stop_process(bridge)
    bridge, port = start_bridge(program, NAMESPACE, {'asr_engine': 'off'})
    try:
        uploads_alone = [pings_while_uploading(program, port, seconds, wav) for _ in range(ROUNDS)]
    finally:
        stop_process(bridge)
    return {
        'latencies': latencies,
        'texts': texts,
        'quiet': quiet,
        'busy': busy,
        'uploads_alone': uploads_alone,
    }


def pings_while_uploading(program, port, seconds, wav):
    """rabbit_load's figures while one rabbit uploads a recording every second."""
    stop = threading.Event()

    def keep_uploading():
        while not stop.wait(1.0):
            upload(port, wav)

    uploading = threading.Thread(target=keep_uploading, daemon=True)
    uploading.start()
    try:
        return loadgen.open_loop(program, port, 100, 1, seconds)
    finally:
        stop.set()
        uploading.join()


def main(argv=None):
    parser = argparse.ArgumentParser(prog='nabaztag_hearing_bench', description=__doc__)
    parser.add_argument('--seconds', type=float, default=10.0, help='open-loop run length')
    parser.add_argument('--models', default='tiny.en,base', help='models to measure')
    parser.add_argument('--output', default='bench-output', help='folder for the JSON')
    parser.add_argument(
        '--priority',
        default='idle',
        choices=('low', 'idle', 'normal'),
        help="the recogniser worker's CPU priority (the bridge's asr_worker_priority)",
    )
    args = parser.parse_args(argv)
    models = [m for m in args.models.split(',') if m]
    missing = [m for m in models if m not in asr.WHISPER_MODELS]
    if args.seconds <= 0 or missing:
        print(f'error: --seconds must be positive; unknown models {missing}', file=sys.stderr)
        return 2
    try:
        uploads = [spoken(sentence) for sentence in SENTENCES]
        models_seen = {m: model_figures(m, uploads) for m in models}
        program = loadgen.build_rabbit_load(pathlib.Path(args.output) / 'bin')
        bridge = bridge_figures(program, args.seconds, spoken(THREE_SECONDS), args.priority)
    except (asr.RecogniserError, tts_worker.EngineError, tts.SpeechError) as exc:
        print(f'error: {exc} (requirements-speech.txt)', file=sys.stderr)
        return 2
    except (RuntimeError, subprocess.TimeoutExpired, loadgen.LoadError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 1
    rows = []
    for model, (wer, rtf, _) in models_seen.items():
        rows += [
            (f'whisper {model}: word error rate, 8 kHz ADPCM', wer, f'{wer:.3f}', None),
            (
                f'whisper {model}: real-time factor (CPU s per s, 1 thread)',
                rtf,
                f'{rtf:.2f}',
                None,
            ),
        ]
    rows[0] = (*rows[0][:3], ('<=', TARGETS['wer']))  # the default model carries the targets
    rows[1] = (*rows[1][:3], ('<=', TARGETS['rtf']))
    latency = statistics.median(bridge['latencies'])
    quiet, busy, alone = (
        statistics.median(run['p99_ms'] for run in bridge[kind])
        for kind in ('quiet', 'busy', 'uploads_alone')
    )
    runs = ('quiet', 'busy', 'uploads_alone')
    failed = sum(run['failed'] + run['overruns'] for kind in runs for run in bridge[kind])
    rows += [
        (
            f'3-s utterance: upload to heard (s), median of {UPLOADS}',
            latency,
            f'{latency:.2f} s',
            ('<=', TARGETS['latency']),
        ),
        (
            f'100 rabbits/s, no uploads: ping p99 (ms), median of {ROUNDS}',
            quiet,
            f'{quiet:.1f}',
            None,
        ),
        ('100 rabbits/s, an upload a second, asr off: ping p99 (ms)', alone, f'{alone:.1f}', None),
        ('100 rabbits/s, an upload a second, recognised: ping p99', busy, f'{busy:.1f}', None),
        (
            'ping p99 difference, recognising vs uploads alone (ms)',
            busy - alone,
            f'{busy - alone:+.2f}',
            ('<=', TARGETS['ping_delta_ms']),
        ),
        (
            'ping p99 difference, recognising vs no uploads (ms)',
            busy - quiet,
            f'{busy - quiet:+.2f}',
            ('<=', TARGETS['ping_delta_ms']),
        ),
        ('failed or late pings', failed, f'{failed}', ('<=', 0)),
    ]
    return report(
        f'Nabaztag speech-to-text benchmark (recogniser at priority {args.priority})',
        rows,
        args.output,
        'nabaztag_hearing',
        {'models': {m: list(f) for m, f in models_seen.items()}, 'bridge': bridge},
    )


if __name__ == '__main__':
    sys.exit(main())
