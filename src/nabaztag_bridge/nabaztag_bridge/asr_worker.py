"""The recogniser's worker: a process of its own that turns the rabbit's recordings into text.

    python -m nabaztag_bridge.asr_worker [--threads 1] [--priority idle|low|normal]
                                         [--preload whisper:tiny.en]

The bridge starts it and speaks to it over its standard input and output (tts.write_message /
read_message frames): a request holds the engine, model, language ('' to detect), the
length limit and one blob, the recording as uploaded (its WAV); the answer holds text,
language, confidence, the seconds heard, the recogniser's seconds and a reason (empty when
fine). Bad sound is an answer with empty text and a reason, never a failure of the worker.
This is the only process that imports a recogniser. It leaves its end to the bridge: an exit
request or its pipe closed ends it quietly, and a Ctrl-C or SIGTERM leaves no traceback.
"""

import argparse
import os
import signal
import sys
import time

import numpy as np

from legacy_robot_common.errors import MalformedFrame

from . import asr, recording, tts, tts_worker

SILENCE_RMS = 60.0  # int16 RMS under which a recording is taken as silence (the mic's hiss)
MIN_SECONDS = 0.1  # shorter than this, nothing can be said


class Worker(tts_worker.Worker):
    """The speech worker's engine keeping, with recognisers for engines."""

    def make_engine(self, name):
        return asr.make_engine(name, self.threads)

    def preload(self, name, model):
        engine = self.engine(name)
        engine.load(model)
        engine.transcribe(model, np.zeros(asr.WHISPER_RATE, np.float32), 'en')  # warm

    def handle(self, request, wav):
        started = time.monotonic()
        answer = {'text': '', 'language': request.get('language', ''), 'confidence': 0.0}
        answer['seconds'], answer['reason'] = 0.0, ''
        try:
            pcm, rate, cut = self._sound(wav, request.get('max_seconds', recording.MAX_SECONDS))
            answer['seconds'] = len(pcm) / rate if rate else 0.0
            problem = _unheard(pcm, rate)
            if problem:
                answer['reason'] = problem
            else:
                samples = recording.resample(pcm, rate, asr.WHISPER_RATE)
                heard = self.engine(request['engine']).transcribe(
                    request['model'], samples, request.get('language', '')
                )
                answer.update(text=heard.text, language=heard.language)
                answer['confidence'] = heard.confidence if heard.text else 0.0
                answer['reason'] = cut or ('' if heard.text else 'no words heard')
        except (MalformedFrame, ValueError) as exc:
            answer['reason'] = f'not a recording the rabbit makes: {exc}'
        except asr.RecogniserError as exc:
            answer['reason'] = str(exc)
        except Exception as exc:  # a failure inside the engine is this recording's answer
            answer['reason'] = f'the recogniser failed: {type(exc).__name__}: {exc}'[:400]
        answer['recogniser_seconds'] = time.monotonic() - started
        return answer

    @staticmethod
    def _sound(wav, max_seconds):
        """(int16 samples, rate, what was cut: '' or a sentence)."""
        pcm, rate = recording.decode_wav(wav)
        limit = int(max_seconds * rate)
        if len(pcm) > limit:
            said = f'cut to {max_seconds:g} s of {len(pcm) / rate:.1f} s'
            return pcm[:limit], rate, said
        return pcm, rate, ''


def _unheard(pcm, rate):
    """Why a recording holds nothing to hear ('' when it may)."""
    if not rate or len(pcm) < MIN_SECONDS * rate:
        return f'an empty recording ({len(pcm)} samples)'
    rms = float(np.sqrt(np.mean(pcm.astype(np.float64) ** 2)))
    if rms < SILENCE_RMS:
        return f'a silent recording (RMS {rms:.0f})'
    return ''


def serve(worker, requests, replies):
    tts.write_message(replies, {'ready': True, 'pid': os.getpid()})
    while True:
        try:
            message = tts.read_message(requests)
        except ValueError:
            return 0  # the bridge closed the pipe inside a message: it has gone
        if message is None:
            return 0
        request, blobs = message
        if request.get('exit'):
            return 0
        answer = worker.handle(request, blobs[0] if blobs else b'')
        tts.write_message(replies, {**answer, 'id': request.get('id')})


def _quiet_exit(signum, frame):
    raise SystemExit(0)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='nabaztag_bridge.asr_worker', description=__doc__)
    parser.add_argument('--threads', type=int, default=1, help='CTranslate2 threads')
    parser.add_argument('--preload', action='append', default=[], help='ENGINE:MODEL to load')
    parser.add_argument('--priority', choices=tts.WORKER_PRIORITIES, default='low')
    args = parser.parse_args(argv)
    # the bridge ends the worker (an exit request, its pipe closed); a Ctrl-C reaching the
    # whole process group is not ours to act on, and SIGTERM ends it without a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _quiet_exit)
    problem = tts_worker.set_priority(args.priority)
    if problem:
        print(f'asr_worker: {problem}', file=sys.stderr)
    replies = os.fdopen(os.dup(1), 'wb')  # the engines' own prints go to standard error
    os.dup2(2, 1)
    worker = Worker(args.threads)
    for item in args.preload:
        engine, _, model = item.partition(':')
        try:
            worker.preload(engine, model)
        except asr.RecogniserError as exc:
            print(f'asr_worker: preload {item}: {exc}', file=sys.stderr)
    try:
        return serve(worker, sys.stdin.buffer, replies)
    except (BrokenPipeError, KeyboardInterrupt):
        return 0


if __name__ == '__main__':
    sys.exit(main())
