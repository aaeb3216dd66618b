"""The bridge's side of speech: the worker process, its bounded queue, and the MP3 cache.

Speech.submit(request, done) answers at once from the cache, or queues the request for the
worker process (tts_worker.py) and calls done(result) from this module's thread when the MP3
files are stored; done gets a SpeechError instead when the request fails. Nothing here runs
in the ROS executor or the HTTP event loop, and no speech engine is imported in this process.

- The worker is started once and kept warm (its default voice preloaded); if it dies, the
  request it was working on is answered with the reason and it is started again after a
  back-off (Backoff, reset by the next success).
- At most `queue_size` requests wait; one more is refused at once (Busy). Identical requests
  (the same cache key) waiting or in progress are synthesised once: each caller is answered.
- The cache holds the MP3s of each key (<key>-<n>.mp3 and <key>.json) in a folder the HTTP
  server serves; it survives restarts, is bounded to max_bytes with the least recently used
  keys removed first, and never removes a key that a queued program still references (pin).
"""

import collections
import dataclasses
import json
import os
import pathlib
import queue
import subprocess
import sys
import threading

from legacy_robot_common.backoff import Backoff

from . import tts
from .tts import Busy, SpeechError

STOP_TIMEOUT = 5.0  # s for the worker to exit before it is killed
DEFAULT_PRIORITY = 'low'  # the worker's CPU priority (tts_worker.PRIORITIES)


@dataclasses.dataclass(frozen=True)
class Spoken:
    """MP3 files ready to be served (names in the cache folder) and how long each plays."""

    key: str
    names: tuple
    seconds: tuple
    cached: bool = False
    info: dict = dataclasses.field(default_factory=dict)  # the worker's timings

    @property
    def audio_seconds(self):
        return sum(self.seconds)


# ---- the cache -------------------------------------------------------------------------
class AudioCache:
    def __init__(self, folder, max_bytes):
        self.folder = pathlib.Path(folder)
        self.max_bytes = max_bytes
        self.error = ''  # why the folder cannot be used ('' when it can)
        self._lock = threading.Lock()
        self._entries = collections.OrderedDict()  # key → (names, seconds, bytes); LRU first
        self._pins = collections.Counter()
        self.bytes = 0
        self.hits = self.misses = self.evictions = 0
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._load()
        except OSError as exc:
            self.error = f'cache folder {self.folder} is not usable: {exc.strerror or exc}'

    def _load(self):
        """The entries a previous run left, least recently used first (manifest mtimes)."""
        manifests = sorted(self.folder.glob('*.json'), key=lambda path: path.stat().st_mtime)
        for manifest in manifests:
            try:
                entry = json.loads(manifest.read_text())
                names = tuple(entry['names'])
                size = sum((self.folder / name).stat().st_size for name in names)
            except (OSError, ValueError, KeyError, TypeError):
                continue  # half-written or foreign: ignored (and never served)
            self._entries[manifest.stem] = (names, tuple(entry['seconds']), size)
            self.bytes += size

    def lookup(self, key):
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
        try:  # the recency survives a restart
            os.utime(self.folder / f'{key}.json')
        except OSError:
            pass
        return Spoken(key, entry[0], entry[1], cached=True)

    def store(self, key, files, seconds):
        """Write the MP3s, then the manifest that makes them an entry; evict to the bound."""
        if self.error:
            raise SpeechError(self.error)
        names = tuple(f'{key}-{i}.mp3' for i in range(len(files)))
        try:
            for name, data in zip(names, files, strict=True):
                _write_atomically(self.folder / name, data)
            _write_atomically(
                self.folder / f'{key}.json',
                json.dumps({'names': names, 'seconds': list(seconds)}).encode(),
            )
        except OSError as exc:
            raise SpeechError(
                f'cache folder {self.folder} is not writable: {exc.strerror or exc}'
            ) from None
        size = sum(len(data) for data in files)
        with self._lock:
            old = self._entries.pop(key, None)
            self.bytes += size - (old[2] if old else 0)
            self._entries[key] = (names, tuple(seconds), size)
            victims = self._victims()
        for victim in victims:
            self._remove(victim)
        return Spoken(key, names, tuple(seconds))

    def _victims(self):
        """Keys to remove (least recently used first, pinned ones kept), under the lock."""
        victims = []
        for key in list(self._entries):
            if self.bytes <= self.max_bytes:
                break
            if self._pins[key] or key == next(reversed(self._entries)):
                continue  # referenced by a queued program, or the entry just stored
            names, _, size = self._entries.pop(key)
            self.bytes -= size
            self.evictions += 1
            victims.append((key, names))
        return victims

    def _remove(self, victim):
        key, names = victim
        for name in (f'{key}.json', *names):  # the manifest first: no entry without files
            try:
                (self.folder / name).unlink()
            except OSError:
                pass

    def pin(self, key):
        with self._lock:
            self._pins[key] += 1

    def unpin(self, key):
        with self._lock:
            self._pins[key] -= 1
            if self._pins[key] <= 0:
                del self._pins[key]
            victims = self._victims()
        for victim in victims:
            self._remove(victim)

    def keys(self):
        with self._lock:
            return list(self._entries)


def _write_atomically(path, data):
    partial = path.with_name(path.name + '.part')
    partial.write_bytes(data)
    partial.replace(path)


# ---- the worker process ----------------------------------------------------------------
class WorkerDied(Exception):
    pass


class WorkerProcess:
    """python -m nabaztag_bridge.tts_worker (or another worker module that takes the same
    options: asr_worker), spoken to over its standard input and output."""

    def __init__(
        self, threads=1, preload=(), priority=DEFAULT_PRIORITY, module='nabaztag_bridge.tts_worker'
    ):
        self.module = module
        self.threads = threads
        self.preload = tuple(preload)
        self.priority = priority
        self.process = None
        self.starts = 0

    def start(self):
        command = [sys.executable, '-m', self.module, '--threads']
        command += [str(self.threads), '--priority', self.priority]
        for item in self.preload:
            command += ['--preload', item]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        self.starts += 1
        hello = self._read()
        if not hello[0].get('ready'):
            raise WorkerDied(f'the worker said {hello[0]!r} instead of ready')

    def call(self, header, blobs=()):
        """The worker's answer (header, blobs), or WorkerDied with the reason."""
        if self.process is None or self.process.poll() is not None:
            raise WorkerDied(self._reason())
        try:
            tts.write_message(self.process.stdin, header, blobs)
        except (OSError, ValueError):
            raise WorkerDied(self._reason()) from None
        return self._read()

    def _read(self):
        try:
            message = tts.read_message(self.process.stdout)
        except (OSError, ValueError) as exc:
            self.kill()
            raise WorkerDied(f'broken answer ({exc})') from None
        if message is None:
            raise WorkerDied(self._reason())
        return message

    def _reason(self):
        if self.process is None:
            return 'not started'
        try:
            code = self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            return 'its pipe closed'
        return f'killed by signal {-code}' if code < 0 else f'exit status {code}'

    @property
    def pid(self):
        return self.process.pid if self.process else None

    def kill(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self):
        if self.process is None:
            return
        try:
            tts.write_message(self.process.stdin, {'exit': True})
            self.process.stdin.close()
            self.process.wait(STOP_TIMEOUT)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.kill()
        self.process.stdout.close()
        self.process = None


# ---- requests, queue, restarts ---------------------------------------------------------
@dataclasses.dataclass
class _Job:
    request: tts.Request
    key: str
    callers: list  # done callbacks


class Speech:
    """What the node uses: submit() and the counters for its diagnostics."""

    def __init__(
        self, cache, threads=1, queue_size=4, preload=(), backoff=None, priority=DEFAULT_PRIORITY
    ):
        self.cache = cache
        self.worker = WorkerProcess(threads, preload, priority)
        self.backoff = backoff or Backoff(initial=0.5, maximum=10.0)
        self._queue = queue.Queue(maxsize=queue_size)
        self._jobs = {}  # key → _Job waiting or in progress
        self._lock = threading.Lock()
        self._thread = None
        self._stop = threading.Event()
        self.counters = collections.Counter()
        self.last_error = ''
        self.busy_key = None  # the key being synthesised now

    def start(self):
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name='tts-worker', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                pass
            self.worker.kill()  # a long synthesis is not waited for
            self._thread.join(STOP_TIMEOUT)
            self._thread = None
        self.worker.stop()

    def submit(self, request, done):
        """done(Spoken | SpeechError): now for a cache hit or a refusal (Busy), else later
        from the worker thread."""
        key = request.key()
        spoken = self.cache.lookup(key)
        if spoken is not None:
            self.counters['cached'] += 1
            done(spoken)
            return
        if self.cache.error:
            done(SpeechError(self.cache.error))
            return
        with self._lock:
            job = self._jobs.get(key)
            if job is not None:  # the same audio is being made: one synthesis for both
                job.callers.append(done)
                self.counters['joined'] += 1
                return
            job = _Job(request, key, [done])
            try:
                self._queue.put_nowait(job)
            except queue.Full:
                self.counters['busy'] += 1
                done(
                    Busy(
                        f'speech is busy: {self._queue.maxsize} texts wait already '
                        '(parameter tts_queue); try again later'
                    )
                )
                return
            self._jobs[key] = job

    def _run(self):
        try:  # at once, so that the first request finds the worker warm
            self._start_worker()
        except (WorkerDied, OSError) as exc:
            self.worker.process = None
            self.last_error = f'the speech worker could not start: {exc}'
        while not self._stop.is_set():
            job = self._queue.get()
            if job is None:
                return
            self.busy_key = job.key
            result = self._synthesize(job)
            self.busy_key = None
            with self._lock:
                self._jobs.pop(job.key, None)
            if isinstance(result, SpeechError):
                self.counters['failed'] += 1
                self.last_error = str(result)
            for done in job.callers:
                done(result)

    def _synthesize(self, job):
        engine = job.request.voice.engine
        try:
            if self.worker.process is None:
                self._start_worker()
            header, blobs = self.worker.call({'id': job.key, **job.request.to_wire()})
        except WorkerDied as exc:
            self.counters['worker_deaths'] += 1
            self.worker.process = None  # started again, after the back-off, by the next job
            return SpeechError(
                f'the speech worker (engine {engine}) died while synthesising: {exc}; '
                'it is started again'
            )
        except OSError as exc:
            self.worker.process = None
            return SpeechError(f'the speech worker could not start: {exc}')
        if not header.get('ok'):
            return SpeechError(header.get('error', 'the speech worker failed'))
        self.backoff.reset()
        self.counters['synthesised'] += 1
        files = header['files']
        try:
            spoken = self.cache.store(job.key, blobs, [f['seconds'] for f in files])
        except SpeechError as exc:
            return exc
        return dataclasses.replace(spoken, info=header)

    def _start_worker(self):
        if self.worker.starts:  # a restart: wait the back-off first
            self._stop.wait(self.backoff.next_delay())
        self.worker.start()
