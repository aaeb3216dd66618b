"""The Nabaztag bridge's speech: the say service and the speak action, and the say programs
they queue, followed until every rabbit reports its end (then the cached audio is unpinned).

Synthesis runs in the speech worker process (tts_client.Speech); this module only waits for
it, queues one program per rabbit and publishes each stage as a RabbitEvent.
"""

import time

from legacy_robot_interfaces.action import RabbitSpeak
from legacy_robot_interfaces.srv import RabbitSay

from . import choreography as chor
from . import conversions as convert
from . import tts
from .rabbits import UnknownRabbit
from .server import RabbitEvent as EventRecord
from .services import await_future

SAY_WAIT_PAUSE = 0.005  # s the executor sleeps per turn while a say waits for its synthesis
SPEECH_PIN_SECONDS = 3600.0  # a say program's files are kept this long at most if it never ends
SPEAK_END_SLACK = 120.0  # s the speak action waits for the rabbits beyond the audio's length
SPEAK_STAGES = {
    'say_synthesising': RabbitSpeak.Feedback.SYNTHESISING,
    'say_queued': RabbitSpeak.Feedback.QUEUED,
    'say_fetched': RabbitSpeak.Feedback.FETCHED,
    'say_done': RabbitSpeak.Feedback.DONE,
}


class Speaking:
    """node: the bridge (its registry, HTTP server, speech worker and cache, tts_* settings)."""

    def __init__(self, node):
        self.node = node
        self.programs = {}  # (serial, program id) → (cache key, time.monotonic() deadline)
        self.waiters = {}  # (serial, program id) → a speak action's stage callback

    async def say(self, request, response, stage=None, queued=None):
        """Speak: synthesis in the worker process (this coroutine waits without holding the
        executor), then one program per rabbit playing the MP3 files one after another.
        stage(serial, kind, program id or None) hears each stage (the speak action's
        feedback); every stage is published as an event too. queued (a list) gets the
        (serial, program id) of each program queued."""

        def publish(serial, kind, program_id):
            self.publish_stage(serial, kind, program_id)
            if stage is not None:
                stage(serial, kind, program_id)

        try:
            rabbits = self.node.roster.select(request.serial)
            gesture = chor.speaking_gesture(
                (request.ear0, request.ear1), request.color, request.choreography
            )
            speech, dropped_note = self._speech_request(request)
        except (ValueError, UnknownRabbit, tts.SpeechError) as exc:
            response.success, response.message = False, str(exc)
            return response
        for rabbit in rabbits:
            publish(rabbit.serial, 'say_synthesising', None)
        spoken, error = await self.node.await_reply(
            lambda resolve: self.node.speech.submit(speech, resolve),
            self.node.tts_timeout,
            pause=SAY_WAIT_PAUSE,
        )
        if error is None and isinstance(spoken, Exception):
            error = str(spoken)
        if error is not None:
            response.success, response.message = False, f'nothing queued: {error}'
            return response
        gesture_url = self.node.bridge.add_choreography(gesture) if gesture else None
        ids, urls, failures = [], [], []
        for link in rabbits:
            program_id = link.reserve_program_id()  # None: the kind reports no end
            files = [self.node.bridge.speech_url(n, link.serial, program_id) for n in spoken.names]
            # pinned before the rabbit can fetch it; a kind that reports no end keeps it pinned
            # for as long as it takes to play, then the expiry timer lets it go
            key = (link.serial, program_id if program_id is not None else object())
            keep = SPEECH_PIN_SECONDS if program_id is not None else spoken.audio_seconds
            self.node.speech_cache.pin(spoken.key)
            self.programs[key] = (spoken.key, time.monotonic() + keep + SPEAK_END_SLACK)
            try:
                _, error = await await_future(
                    self.node, link.play_urls(files, gesture_url, program_id)
                )
            except ValueError as exc:
                error = str(exc)
            if error is not None:
                self.program_ended(*key, False)
                failures.append(f'{link.serial}: {error}')
                continue
            publish(link.serial, 'say_queued', program_id)
            if program_id is not None:
                ids.append(format(program_id, 'x'))
                if queued is not None:
                    queued.append(key)
            urls = files
        if failures:
            response.success, response.message = False, '; '.join(failures)
            return response
        response.success = True
        response.program_id = ','.join(ids)
        response.audio_urls = urls
        response.audio_seconds = spoken.audio_seconds
        response.message = (
            f'{spoken.audio_seconds:.1f} s of speech in {len(spoken.names)} file(s)'
            f'{" (cached)" if spoken.cached else ""} for {len(rabbits)} rabbit(s), '
            f'{speech.voice.engine} voice {speech.voice.name}{dropped_note}'
        )
        return response

    async def speak(self, goal_handle):
        """The speak action: say, with a feedback at each stage, finished when every rabbit
        has reported the program's end (or aborted with the reason)."""
        result = RabbitSpeak.Result()
        if not self.node.active:
            result.message = 'the driver is not active (lifecycle state)'
            goal_handle.abort()
            return result

        def feedback(serial, kind, program_id):
            goal_handle.publish_feedback(
                RabbitSpeak.Feedback(
                    stage=SPEAK_STAGES[kind],
                    serial=serial,
                    program_id='' if program_id is None else format(program_id, 'x'),
                )
            )

        queued = []
        said = await self.say(goal_handle.request, RabbitSay.Response(), feedback, queued)
        for name in ('success', 'message', 'program_id', 'audio_urls', 'audio_seconds'):
            setattr(result, name, getattr(said, name))
        if not said.success:
            goal_handle.abort()
            return result
        programs = set(queued)
        if not programs:  # kinds that report no end: done once every rabbit has it
            goal_handle.succeed()
            return result

        def wait_for_ends(resolve):
            def heard(serial, program_id, kind):
                feedback(serial, kind, program_id)
                if kind == 'say_done':
                    programs.discard((serial, program_id))
                    if not programs:
                        resolve(True)

            for key in programs:
                self.waiters[key] = heard

        timeout = said.audio_seconds + SPEAK_END_SLACK
        _, error = await self.node.await_reply(wait_for_ends, timeout, pause=SAY_WAIT_PAUSE)
        for key in list(programs):
            self.waiters.pop(key, None)
        if error is not None:
            result.success = False
            result.message += f'; not every rabbit played it: {error}'
            goal_handle.abort()
            return result
        goal_handle.succeed()
        return result

    def _speech_request(self, request):
        """RabbitSay request → (tts.Request, note on dropped characters); SpeechError for
        what cannot be spoken."""
        if self.node.speech is None:
            raise tts.EngineMissing(
                f'no speech engine is installed: pip install {tts.PIPER_PACKAGES}, or '
                f'{tts.ESPEAK_PACKAGE}'
            )
        text, dropped = tts.clean_text(request.text, self.node.tts_max_chars)
        note = f'; dropped {tts.describe_dropped(dropped)}' if dropped else ''
        engine, voice, language = self.node.tts_defaults
        if request.engine or request.voice or request.language:
            voice = request.voice  # the default voice may not be one of theirs
        language = request.language or language
        voice = self.node.voices.resolve(request.engine or engine, voice, language)
        rate = tts.check_rate(request.rate or self.node.tts_rate)
        return tts.Request(
            voice, rate, text, *self.node.tts_encoding, self.node.tts_max_file_bytes
        ), note

    def publish_stage(self, serial, kind, program_id):
        record = EventRecord(serial, kind, program_id=program_id, time=time.time())
        msg = convert.event_msg(record, self.node.frame_id, self.node.clock_offset())
        self.node.event_pub.publish(msg)

    def program_ended(self, serial, program_id, published):
        entry = self.programs.pop((serial, program_id), None)
        if entry is not None:
            self.node.speech_cache.unpin(entry[0])
            if published:
                self.publish_stage(serial, 'say_done', program_id)
                self.tell_waiter(serial, program_id, 'say_done')

    def tell_waiter(self, serial, program_id, kind):
        waiter = self.waiters.get((serial, program_id))
        if waiter is not None:
            waiter(serial, program_id, kind)

    def expire(self):
        now = time.monotonic()
        for (serial, program_id), (_, deadline) in list(self.programs.items()):
            if now > deadline:
                self.program_ended(serial, program_id, False)
