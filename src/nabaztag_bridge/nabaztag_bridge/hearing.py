"""Speech to text in the node: every recording's words on `heard` (one RabbitHeard each).

The node hands each recording to hear(); the recogniser (asr_client.Recogniser, its worker a
process of its own) answers from its thread, and the answer is published on `heard`, then
given to the node's one hook, NabaztagBridge.on_heard(msg) (the rules engine's way in).
asr_engine off: nothing is recognised. A missing engine or model: said once at start, each
recording's heard message says it in its reason, and recordings are published all the same.
"""

import importlib.util

from legacy_robot_common.diagnostics import ERROR, OK, WARN
from legacy_robot_interfaces.msg import RabbitHeard

from . import asr
from .asr_client import Recogniser, empty_answer


class Hearing:
    def __init__(self, node, v):
        self.node = node
        self.engine, self.model = v.asr_engine, v.asr_model
        if self.engine == 'false':  # `-p asr_engine:=off` arrives as the boolean false
            self.engine = 'off'
        self.language = '' if v.asr_language == 'auto' else v.asr_language
        self.recogniser = None
        self.missing = ''
        self.publisher = None
        if self.engine == 'off':
            return
        self.publisher = node.publisher(RabbitHeard, 'heard', 10)
        self.missing = _missing(self.engine, self.model)
        if self.missing:
            node.get_logger().warning(f'heard: {self.missing}; recordings are still published')
            return
        self.recogniser = Recogniser(
            self.engine,
            self.model,
            self.language,
            v.asr_max_seconds,
            v.asr_queue,
            priority=v.asr_worker_priority,
        )

    def start(self):
        if self.recogniser is not None:
            self.recogniser.start()

    def stop(self):
        if self.recogniser is not None:
            self.recogniser.stop()

    def hear(self, record):
        if self.publisher is None:
            return
        if self.recogniser is None:
            self._publish(record, empty_answer(self.missing, self.language))
            return
        self.recogniser.submit(record.serial, record.wav, lambda a: self._publish(record, a))

    def _publish(self, record, answer):
        msg = RabbitHeard(serial=record.serial, text=answer['text'], reason=answer['reason'])
        msg.language = answer['language'] or self.language
        msg.confidence = float(answer['confidence'])
        msg.duration = float(answer['seconds'])
        msg.recogniser_seconds = float(answer['recogniser_seconds'])
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.header.frame_id = self.node.frame_id
        self.publisher.publish(msg)
        self.node.on_heard(msg)

    def status(self):
        values = {'engine': self.engine, 'model': self.model, 'language': self.language}
        if self.engine == 'off':
            return OK, 'speech to text is off (asr_engine off)', values
        if self.recogniser is None:
            return ERROR, self.missing, values
        values.update(self.recogniser.counters)
        values['waiting'] = self.recogniser.waiting
        values['worker pid'] = self.recogniser.worker.pid or 0
        values['last reason'] = self.recogniser.last_error
        if self.recogniser.worker.pid is None and self.recogniser.worker.starts:
            return WARN, f'recogniser worker down: {self.recogniser.last_error}', values
        return OK, 'recogniser ready', values


def _missing(engine, model):
    """'' when the engine and model are installed, else what to install (no engine imported:
    the bridge only looks for the packages)."""
    if engine not in asr.ENGINES:
        return f'unknown asr_engine {engine!r}'
    if importlib.util.find_spec('faster_whisper') is None:
        return f'engine whisper is not installed: {asr.install_hint(engine, model)}'
    for package in asr.WHISPER_MODELS.get(model, ()):
        name = package.split('==')[0]
        if importlib.util.find_spec(name.replace('-', '_')) is None:
            return f'model {model} is not installed: {asr.install_hint(engine, model)}'
    if model not in asr.WHISPER_MODELS:
        try:
            asr.model_files(model)
        except asr.RecogniserError as exc:
            return str(exc)
    return ''
