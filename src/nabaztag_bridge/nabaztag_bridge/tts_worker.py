"""The speech worker: a process of its own that turns text into MP3 files for the rabbit.

    python -m nabaztag_bridge.tts_worker [--threads 1] [--priority idle|low|normal]
                                         [--preload piper:/path/voice.onnx]

The bridge starts it and speaks to it over its standard input and output (tts.write_message /
read_message frames): a request holds the text, the voice (engine piper or espeak), rate and
MP3 settings; the answer holds the MP3 files, each at most max_file_bytes, split between
sentences, or an error. This is the only process that imports a speech engine: piper-tts
(ONNX voices) and espeak-ng (through espeakng-loader's library) are GPL-3.0-or-later. Voices
stay loaded between requests (the process is kept warm); one request is synthesised at a time.
"""

import argparse
import ctypes
import functools
import os
import pathlib
import signal
import sys
import threading
import time

import numpy as np

from . import tts

SENTENCE_GAP = 0.2  # s of silence between two sentences in one file
QUIET_WINDOW = 0.02  # s: a long sentence is cut at its quietest window of this length
FILE_MARGIN = 0.95  # of max_file_bytes planned from the bit rate (the encoder adds frames)
ESPEAK_WORDS_PER_MINUTE = 175  # espeak-ng's normal rate
WARM_UP_TEXT = 'The rabbit is ready to speak to you now.'  # a say-sized first inference
LOW_NICENESS = 10  # priority low: added to the worker's niceness


class EngineError(Exception):
    """A request the engine cannot serve (missing package, unknown voice, a failure)."""


class PiperEngine:
    name = 'piper'

    def __init__(self, threads=1):
        try:
            import onnxruntime
            from piper import PiperVoice
            from piper.config import PiperConfig, SynthesisConfig
        except ImportError as exc:
            raise EngineError(
                f'engine piper is not installed ({exc}): pip install {tts.PIPER_PACKAGES}'
            ) from None
        self._onnxruntime, self._voice_class = onnxruntime, PiperVoice
        self._config_class, self._synthesis = PiperConfig, SynthesisConfig
        self.threads = threads
        self._voices = {}  # model path → PiperVoice, loaded once
        self.loads = 0  # voices loaded (a voice is loaded once, then kept)

    def load(self, model):
        voice = self._voices.get(model)
        if voice is None:
            import json

            try:
                config = json.loads(pathlib.Path(f'{model}.json').read_text(encoding='utf-8'))
                options = self._onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                # threads > 1: onnxruntime's pool spins between operators by default, a core
                # kept busy for nothing that the bridge's pings then wait for
                options.add_session_config_entry('session.intra_op.allow_spinning', '0')
                session = self._onnxruntime.InferenceSession(
                    str(model), sess_options=options, providers=['CPUExecutionProvider']
                )
                voice = self._voice_class(
                    session=session, config=self._config_class.from_dict(config)
                )
            except Exception as exc:  # onnxruntime raises its own types for a bad model
                raise EngineError(
                    f'engine piper could not load voice {model}: {_short(exc)}'
                ) from None
            self._voices[model] = voice
            self.loads += 1
        return voice

    def warm_up(self, model):
        """One inference of a say-sized sentence: onnxruntime's first run of a voice sizes its
        buffers (some 40 ms more than the next), paid here rather than by the first say."""
        try:
            self.synthesize({'model': model, 'rate': 1.0}, WARM_UP_TEXT)
        except EngineError:
            raise
        except Exception as exc:  # the voice loaded but cannot speak: said, not fatal
            raise EngineError(f'engine piper failed: {_short(exc)}') from None

    def synthesize(self, request, text):
        """(sample rate, int16 PCM) of one sentence."""
        voice = self.load(request['model'])
        config = self._synthesis(length_scale=1.0 / request['rate'])
        chunks = [chunk.audio_int16_array for chunk in voice.synthesize(text, config)]
        pcm = np.concatenate(chunks) if chunks else np.zeros(0, np.int16)
        return voice.config.sample_rate, pcm


# espeak-ng's state belongs to the process, not to an engine: one synthesis callback, one voice,
# and espeak_Initialize starts it all afresh. An engine made, used and dropped (the emulator's
# record-say makes one per text) used to free its callback or reset the voice under an older
# engine, and the library then crashed the process. So the library is set up once, its callback
# is never freed, and one text at a time is spoken (the lock), whichever engine asks.
_ESPEAK = {'chunks': [], 'voice': None}
_ESPEAK_LOCK = threading.Lock()


def _collect_espeak_samples(samples, count, events):
    if count > 0 and samples:
        _ESPEAK['chunks'].append(ctypes.string_at(samples, count * 2))
    return 0


_ESPEAK_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)(_collect_espeak_samples)


@functools.lru_cache(maxsize=1)
def _espeak_library():
    """espeak-ng's C library (as espeakng-loader ships it, with its data), started once."""
    try:
        import espeakng_loader

        library = ctypes.CDLL(espeakng_loader.get_library_path())
        data = pathlib.Path(espeakng_loader.get_data_path()).parent
    except (ImportError, OSError, RuntimeError) as exc:
        raise EngineError(
            f'engine espeak is not installed ({exc}): pip install {tts.ESPEAK_PACKAGE}'
        ) from None
    library.espeak_Initialize.restype = ctypes.c_int
    sample_rate = library.espeak_Initialize(EspeakEngine.SYNCHRONOUS, 0, str(data).encode(), 0)
    if sample_rate <= 0:
        raise EngineError(f'engine espeak could not start (data in {data})')
    library.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    library.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    library.espeak_SetSynthCallback(_ESPEAK_CALLBACK)
    return library, sample_rate


class EspeakEngine:
    """espeak-ng through ctypes; every engine of a process shares the one library."""

    name = 'espeak'
    SYNCHRONOUS = 2  # AUDIO_OUTPUT_SYNCHRONOUS: samples go to the callback
    CHARS_UTF8 = 1
    POSITION_CHARACTER = 1
    RATE = 1  # espeakRATE, words per minute

    def __init__(self):
        self._library, self.sample_rate = _espeak_library()

    def synthesize(self, request, text):
        with _ESPEAK_LOCK:
            self._set_voice(request['voice'])
            rate = int(ESPEAK_WORDS_PER_MINUTE * request['rate'])
            self._library.espeak_SetParameter(self.RATE, rate, 0)
            chunks = _ESPEAK['chunks'] = []
            data = text.encode()
            status = self._library.espeak_Synth(
                data, len(data) + 1, 0, self.POSITION_CHARACTER, 0, self.CHARS_UTF8, None, None
            )
            self._library.espeak_Synchronize()
        if status != 0:
            raise EngineError(f'engine espeak failed (espeak_Synth error {status})')
        return self.sample_rate, np.frombuffer(b''.join(chunks), np.int16)

    def _set_voice(self, voice):
        if voice == _ESPEAK['voice']:
            return
        if self._library.espeak_SetVoiceByName(voice.encode()) != 0:
            raise EngineError(
                f'unknown espeak voice or language {voice!r} (espeak-ng names '
                'languages like en, en-us, de, fr, es, it, pt, nl, pl, ru, cmn)'
            )
        _ESPEAK['voice'] = voice


def plan_files(segments, sample_rate, seconds_per_file):
    """Group sentences (text, int16 PCM) into files of at most seconds_per_file of audio:
    whole sentences where they fit, a sentence longer than a file cut at its quietest moments.
    Returns [(texts, PCM)]; no sample is left out."""
    limit = int(seconds_per_file * sample_rate)
    gap = np.zeros(int(SENTENCE_GAP * sample_rate), np.int16)
    files, texts, pieces, length = [], [], [], 0
    for text, pcm in segments:
        for piece in _cut(pcm, limit, sample_rate):
            extra = len(piece) + (len(gap) if pieces else 0)
            if pieces and length + extra > limit:
                files.append((texts, np.concatenate(pieces)))
                texts, pieces, length = [], [], 0
                extra = len(piece)
            if pieces:
                pieces.append(gap)
            pieces.append(piece)
            length += extra
            if not texts or texts[-1] != text:
                texts.append(text)
    if pieces:
        files.append((texts, np.concatenate(pieces)))
    return files


def _cut(pcm, limit, sample_rate):
    """pcm in pieces of at most limit samples, each cut at the quietest window of the last
    40 % of its span (a pause between words), so a long sentence is split, never shortened."""
    window = max(1, int(QUIET_WINDOW * sample_rate))
    while len(pcm) > limit:
        start = int(limit * 0.6) // window
        frames = pcm[: (limit // window) * window].astype(np.float32).reshape(-1, window)
        energy = (frames[start:] ** 2).mean(axis=1)
        at = (start + int(np.argmin(energy))) * window + window // 2
        yield pcm[:at]
        pcm = pcm[at:]
    yield pcm


def encode(pcm, in_rate, request):
    try:
        import lameenc
    except ImportError as exc:
        raise EngineError(
            f'the MP3 encoder is not installed ({exc}): pip install {tts.MP3_ENCODER_PACKAGE}'
        ) from None

    encoder = lameenc.Encoder()
    encoder.set_channels(1)
    encoder.set_in_sample_rate(in_rate)
    encoder.set_out_sample_rate(request['sample_rate'])
    encoder.set_bit_rate(request['bit_rate'])
    encoder.set_quality(5)
    return bytes(encoder.encode(pcm.astype('<i2').tobytes()) + encoder.flush())


def mp3_files(segments, in_rate, request):
    """[(MP3 bytes, seconds, texts)], each file at most request['max_file_bytes']."""
    from . import mp3

    bytes_per_second = request['bit_rate'] * 1000 / 8
    seconds = request['max_file_bytes'] * FILE_MARGIN / bytes_per_second - SENTENCE_GAP
    for _ in range(8):
        if seconds <= 0.5:
            break
        out = []
        for texts, pcm in plan_files(segments, in_rate, seconds):
            data = encode(pcm, in_rate, request)
            if len(data) > request['max_file_bytes']:
                break
            out.append((data, mp3.scan(data).seconds, texts))
        else:
            return out
        seconds *= 0.9  # the encoder made more than planned: plan smaller files
    raise EngineError(
        f'max_file_bytes {request["max_file_bytes"]} is too small for '
        f'{request["bit_rate"]} kbit/s MP3'
    )


# ---- the worker ------------------------------------------------------------------------
class Worker:
    def __init__(self, threads=1):
        self.threads = threads
        self._engines = {}

    def engine(self, name):
        """The engine of that name, made once and kept (asr_worker's Worker makes others)."""
        engine = self._engines.get(name)
        if engine is None:
            engine = self._engines[name] = self.make_engine(name)
        return engine

    def make_engine(self, name):
        if name == 'piper':
            return PiperEngine(self.threads)
        if name == 'espeak':
            return EspeakEngine()
        raise EngineError(f'unknown engine {name!r} (piper or espeak)')

    def preload(self, engine, model):
        engine = self.engine(engine)
        if model:
            engine.load(model)
            engine.warm_up(model)

    def voice_loads(self):
        return sum(getattr(engine, 'loads', 0) for engine in self._engines.values())

    def handle(self, request):
        """(header, blobs) answering one request."""
        started, cpu = time.monotonic(), time.process_time()
        try:
            engine = self.engine(request['engine'])
            segments, rate = [], None
            for sentence in tts.sentences(request['text']):
                rate, pcm = self._synthesize(engine, request, sentence)
                if len(pcm):
                    segments.append((sentence, pcm))
            if not segments:
                raise EngineError(f'engine {engine.name} made no audio for the text')
            synthesised = time.monotonic()
            files = mp3_files(segments, rate, request)
        except EngineError as exc:
            return {'ok': False, 'error': str(exc)}, []
        audio = sum(len(pcm) for _, pcm in segments) / rate
        header = {
            'ok': True,
            'files': [{'seconds': seconds, 'texts': texts} for _, seconds, texts in files],
            'audio_seconds': audio,
            'synthesis_seconds': synthesised - started,
            'encode_seconds': time.monotonic() - synthesised,
            'cpu_seconds': time.process_time() - cpu,
            'voice_loads': self.voice_loads(),
            'pid': os.getpid(),
        }
        return header, [data for data, _, _ in files]

    def _synthesize(self, engine, request, sentence):
        try:
            return engine.synthesize(request, sentence)
        except EngineError:
            raise
        except Exception as exc:  # a failure inside the engine is the request's answer
            raise EngineError(f'engine {engine.name} failed: {_short(exc)}') from None


def _short(exc):
    text = str(exc).strip().splitlines()
    return f'{type(exc).__name__}: {text[0][:300] if text else ""}'


def set_priority(priority):
    """The worker's CPU priority against the bridge (its threads inherit it): idle =
    SCHED_IDLE (it runs when nothing else wants the CPU, and a waking bridge thread takes its
    core at once), low = niceness +10, normal = the bridge's own. '' when set, else why not."""
    if priority == 'idle':
        try:
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        except (AttributeError, OSError) as exc:  # SCHED_IDLE is Linux's
            os.nice(LOW_NICENESS)
            return f'priority idle is not available here ({exc}); niceness +{LOW_NICENESS}'
    elif priority == 'low':
        os.nice(LOW_NICENESS)
    return ''


def serve(worker, requests, replies):
    tts.write_message(replies, {'ready': True, 'pid': os.getpid()})
    while True:
        message = tts.read_message(requests)
        if message is None:
            return 0  # the bridge has gone
        request, _ = message
        if request.get('exit'):
            return 0
        header, blobs = worker.handle(request)
        tts.write_message(replies, {**header, 'id': request.get('id')}, blobs)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='nabaztag_bridge.tts_worker', description=__doc__)
    parser.add_argument('--threads', type=int, default=1, help='ONNX threads (piper)')
    parser.add_argument(
        '--preload',
        action='append',
        default=[],
        help='ENGINE[:MODEL] to load before the first request (kept warm)',
    )
    parser.add_argument(
        '--priority',
        choices=tts.WORKER_PRIORITIES,
        default='low',
        help='CPU priority: idle (SCHED_IDLE: runs only when nothing else of its session '
        f'wants the CPU), low (niceness +{LOW_NICENESS}, the default) or normal',
    )
    args = parser.parse_args(argv)
    # Ctrl-C in a terminal reaches the whole process group; the bridge ends the worker itself
    # (an exit request, or its pipe closed), so a Ctrl-C here is not ours to act on
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    problem = set_priority(args.priority)
    if problem:
        print(f'tts_worker: {problem}', file=sys.stderr)
    # the pipe is the process's standard output as it started; the engines' own prints (C
    # libraries, warnings) go to standard error instead, never into the frames
    replies = os.fdopen(os.dup(1), 'wb')
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    worker = Worker(args.threads)
    for item in args.preload:
        engine, _, model = item.partition(':')
        try:
            worker.preload(engine, model)
        except EngineError as exc:
            print(f'tts_worker: preload {item}: {exc}', file=sys.stderr)
    return serve(worker, requests, replies)


if __name__ == '__main__':
    sys.exit(main())
