"""The bridge's side of speech to text: the recogniser's worker process and its bounded queue.

Recogniser.submit(serial, wav, done) queues a recording and returns at once; a thread of this
module hands recordings one at a time to the worker (asr_worker.py, a process of its own, so
the bridge's GIL and its pings never wait for it) and calls done(answer) with the worker's
answer (text, language, confidence, seconds, recogniser_seconds, reason). At most queue_size
recordings wait: one more drops the oldest waiting one, counted, and that one is answered with
the reason. A worker that dies is started again after a back-off, its recording answered.
"""

import collections
import threading

from legacy_robot_common.backoff import Backoff

from .tts_client import STOP_TIMEOUT, WorkerDied, WorkerProcess

ASR_MODULE = 'nabaztag_bridge.asr_worker'


def empty_answer(reason, language=''):
    return {
        'text': '',
        'language': language,
        'confidence': 0.0,
        'seconds': 0.0,
        'recogniser_seconds': 0.0,
        'reason': reason,
    }


class Recogniser:
    def __init__(
        self, engine, model, language='', max_seconds=8.0, queue_size=4, threads=1, priority='low'
    ):
        self.request = {'engine': engine, 'model': model, 'language': language}
        self.request['max_seconds'] = max_seconds
        self.worker = WorkerProcess(threads, [f'{engine}:{model}'], priority, module=ASR_MODULE)
        self.backoff = Backoff(initial=0.5, maximum=10.0)
        self.queue_size = queue_size
        self._waiting = collections.deque()
        self._ready = threading.Condition()
        self._thread = None
        self._stopping = False
        self.counters = collections.Counter()
        self.last_error = ''

    def start(self):
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name='asr-worker', daemon=True)
        self._thread.start()
        return self

    def stop(self):
        with self._ready:
            self._stopping = True
            self._ready.notify()
        if self._thread is not None:
            self.worker.kill()  # a long recognition is not waited for
            self._thread.join(STOP_TIMEOUT)
            self._thread = None
        self.worker.stop()

    def submit(self, serial, wav, done):
        """done(answer) later, from this module's thread (or now, for a dropped recording)."""
        dropped = None
        with self._ready:
            if len(self._waiting) >= self.queue_size:
                dropped = self._waiting.popleft()
                self.counters['dropped'] += 1
            self._waiting.append((serial, wav, done))
            self.counters['queued'] += 1
            self._ready.notify()
        if dropped is not None:
            dropped[2](
                empty_answer(
                    f'dropped: {self.queue_size} newer recordings wait (parameter asr_queue)'
                )
            )

    @property
    def waiting(self):
        return len(self._waiting)

    def _run(self):
        try:  # at once, so that the first recording finds the model loaded
            self.worker.start()
        except (WorkerDied, OSError) as exc:
            self.worker.process = None
            self.last_error = f'the recogniser worker could not start: {exc}'
        while True:
            with self._ready:
                while not self._waiting and not self._stopping:
                    self._ready.wait()
                if self._stopping:
                    return
                serial, wav, done = self._waiting.popleft()
            answer = self._recognise(wav)
            if self._stopping:  # the worker was ended under it: the node is going away
                return
            if answer['reason'] and not answer['text']:
                self.counters['unheard'] += 1
            else:
                self.counters['heard'] += 1
            done(answer)

    def _recognise(self, wav):
        try:
            if self.worker.process is None:
                if self.worker.starts:
                    threading.Event().wait(self.backoff.next_delay())
                self.worker.start()
            header, _ = self.worker.call({**self.request, 'id': 0}, [wav])
        except (WorkerDied, OSError) as exc:
            self.counters['worker_deaths'] += 1
            self.worker.process = None
            self.last_error = f'the recogniser worker died: {exc}; it is started again'
            return empty_answer(self.last_error)
        self.backoff.reset()
        if header.get('reason') and not header.get('text'):
            self.last_error = header['reason']
        return header
