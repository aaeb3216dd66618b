"""ROS 2 node `nabaztag_bridge`: the HTTP server Nabaztag/tag rabbits poll, exposed to ROS.

    ros2 run nabaztag_bridge nabaztag_bridge --ros-args -p port:=8080 \\
        -p bytecode_file:=/path/to/bootcode.bin -p media_root:=/srv/rabbit

Topic, service and parameter tables: README.md ("Nabaztag bridge").
"""

import dataclasses
import os
import pathlib
import sys
import time

from rclpy.action import ActionServer

from legacy_robot_common.diagnostics import ERROR, OK, WARN
from legacy_robot_common.driver_node import LATCHED, DriverNode, run_node
from legacy_robot_common.errors import MalformedFrame
from legacy_robot_common.params import ParameterError, declare_table
from legacy_robot_interfaces.action import RabbitSpeak
from legacy_robot_interfaces.msg import RabbitEvent, RabbitList, RabbitRecording
from legacy_robot_interfaces.srv import (
    RabbitAmbient,
    RabbitChoreography,
    RabbitEars,
    RabbitProgram,
    RabbitRawPacket,
    RabbitSay,
    RabbitSetting,
    RabbitSound,
)

from . import choreography as chor
from . import conversions as convert
from . import mp3, tts
from . import protocol as p
from .parameters import PARAMETERS
from .rabbits import PROGRAM_ENDS, RabbitRegistry, UnknownRabbit, is_online
from .server import BridgeServer, RabbitsChanged, Recording, Settings
from .server import RabbitEvent as EventRecord
from .tts_client import AudioCache, Speech

RABBIT_LIST_MIN_GAP = 0.2  # s between rabbit lists sent because a rabbit registered
SAY_WAIT_PAUSE = 0.005  # s the executor sleeps per turn while a say waits for its synthesis
SPEECH_PIN_SECONDS = 3600.0
SPEAK_END_SLACK = 120.0  # s the speak action waits for the rabbits beyond the audio's length
SPEAK_STAGES = {
    'say_synthesising': RabbitSpeak.Feedback.SYNTHESISING,
    'say_queued': RabbitSpeak.Feedback.QUEUED,
    'say_fetched': RabbitSpeak.Feedback.FETCHED,
    'say_done': RabbitSpeak.Feedback.DONE,
}  # a say program's files are kept this long at most if it never ends


class NabaztagBridge(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('nabaztag_bridge', hardware_id='Nabaztag/tag rabbits', **kwargs)
        settings, registry = self._declare_parameters()
        self.name_hardware(f'{settings.host}:{settings.port}')
        self.bridge = BridgeServer(settings, registry, logger=self.log)
        self.registry = registry
        self.attach_client(self.bridge, 'http server', self._server_status, link_name='http')
        self.diagnostics.add_group(self._rabbit_statuses)
        self.event_pub = self.publisher(RabbitEvent, 'events', 50)
        self.recording_pub = self.publisher(RabbitRecording, 'recordings', 5)
        self.rabbits_pub = self.publisher(RabbitList, 'rabbits', LATCHED)
        self._bad_before = 0  # bad requests at the last diagnostics report
        self._rabbits_published = -RABBIT_LIST_MIN_GAP  # time.monotonic() of the last list
        self._create_services()
        self.create_timer(
            self.rabbits_period, self._publish_rabbits, callback_group=self.callback_group
        )
        self.settings = settings
        self._say_programs = {}  # (serial, program id) → (cache key, time.monotonic() deadline)
        self._say_waiters = {}  # (serial, program id) → a speak action's stage callback
        self.diagnostics.add_task('speech', self._speech_status)
        self.create_timer(60.0, self._expire_say_programs, callback_group=self.callback_group)
        self.begin()

    def start_links(self):
        """configure: the HTTP server listens (a port in use is a user error)."""
        settings = self.settings
        try:
            super().start_links()
            if self.speech is not None:
                self.speech.start()
        except OSError as exc:
            raise ParameterError(
                f'nabaztag_bridge: cannot listen on {settings.host}:'
                f'{settings.port}: {exc.strerror or exc}'
            ) from None
        self.get_logger().info(
            f'rabbits call {self.bridge.base_url}{settings.path_prefix}/ '
            f"(set the rabbit's server to {self.bridge.locate_ping}"
            f'{settings.path_prefix}); locate answers ping '
            f'{self.bridge.locate_ping}, broad {self.bridge.locate_broad}'
        )

    def stop_links(self):
        super().stop_links()
        if getattr(self, 'speech', None) is not None:
            self.speech.stop()

    # ---- parameters -------------------------------------------------------------------
    def _declare_parameters(self):
        v = declare_table(self, PARAMETERS)
        self.max_rabbit_statuses = v.diagnostics_max_rabbits
        self.rabbits_period = v.rabbits_period
        self.frame_id = self.frames.prefixed(v.frame_id)
        for name in ('path_prefix', 'locate_ping', 'locate_broad'):
            value = getattr(v, name)
            if value.endswith((':', '/')):
                raise ParameterError(
                    f'nabaztag_bridge: parameter {name!r} is {value!r}; the '
                    'rabbit uses it verbatim, so it must not end in ":" or "/"'
                )
        if v.media_root and not pathlib.Path(v.media_root).is_dir():
            raise ParameterError(f'nabaztag_bridge: media_root {v.media_root!r} is not a folder')
        try:
            allowed_serials = [
                p.normalize_serial(s) for s in v.allowed_serials.split(',') if s.strip()
            ]
        except MalformedFrame as exc:
            raise ParameterError(f'nabaztag_bridge: allowed_serials: {exc}') from None
        speech_folder = self._speech_setup(v)
        settings = Settings(
            speech_folder=speech_folder,
            host=v.host,
            port=v.port,
            advertised_host=v.advertised_host,
            locate_ping=v.locate_ping,
            locate_broad=v.locate_broad,
            path_prefix=v.path_prefix,
            path_extension=v.path_extension,
            bytecode=self._bytecode(v.bytecode_file),
            media_root=pathlib.Path(v.media_root) if v.media_root else None,
            xml_api=v.xml_api,
            xml_token=v.xml_token,
            max_body_bytes=v.max_body_bytes,
            client_timeout=v.client_timeout,
            publish_pings=v.publish_pings,
        )
        registry = RabbitRegistry(
            ping_interval=v.ping_interval,
            plugin=v.plugin,
            allowed=allowed_serials,
            message_first_byte=v.message_first_byte,
            trailing_newline=v.trailing_newline,
            wake_after_boot=v.wake_after_boot,
        )
        return settings, registry

    def _speech_setup(self, v):
        """The speech worker and cache from the tts_* parameters (self.speech, None when no
        engine is installed). Returns the cache folder the HTTP server serves."""
        engine, voice, language = v.tts_engine, v.tts_voice, v.tts_language
        voice_dir, media_root = v.tts_voice_dir, v.media_root
        sample_rate, bit_rate = v.tts_sample_rate, v.tts_bit_rate
        self.tts_rate = v.tts_rate
        self.tts_max_file_bytes = v.tts_max_file_bytes
        self.tts_max_chars = v.tts_max_chars
        self.tts_timeout = v.tts_timeout
        cache_dir, cache_mb = v.tts_cache_dir, v.tts_cache_mb
        queue_size, threads = v.tts_queue, v.tts_threads
        if bit_rate not in mp3.bit_rates(sample_rate):
            raise ParameterError(
                f'nabaztag_bridge: tts_bit_rate {bit_rate} is not an MP3 bit rate at '
                f'{sample_rate} Hz ({", ".join(map(str, mp3.bit_rates(sample_rate)))})'
            )
        if voice_dir and not pathlib.Path(voice_dir).is_dir():
            raise ParameterError(f'nabaztag_bridge: tts_voice_dir {voice_dir!r} is not a folder')
        self.tts_defaults = (engine, voice, language)
        self.tts_encoding = (sample_rate, bit_rate)
        self.voices = tts.VoiceCatalogue(voice_dir)
        folder = pathlib.Path(
            cache_dir
            or (pathlib.Path(media_root) / 'tts' if media_root else '')
            or os.path.expanduser('~/.cache/nabaztag_bridge/tts')
        )
        self.speech = None
        self.speech_cache = AudioCache(folder, int(cache_mb * 1e6))
        if self.speech_cache.error:
            self.get_logger().warning(f'say will not work: {self.speech_cache.error}')
        preload = []
        try:
            default = self.voices.resolve(engine, voice, language)
            preload.append(f'{default.engine}:{default.model}')
        except tts.EngineMissing as exc:
            self.get_logger().warning(f'say: {exc}')
        except tts.SpeechError as exc:
            raise ParameterError(f'nabaztag_bridge: {exc}') from None
        if self.voices.piper_installed or self.voices.espeak_installed:
            self.speech = Speech(self.speech_cache, threads, queue_size, preload)
        return folder

    def _bytecode(self, path):
        if not path:
            self.get_logger().warning(
                'no bytecode_file: rabbits that reboot cannot start from this bridge (bc.jsp '
                'answers 404); running rabbits and emulators with --no-boot are served'
            )
            return None
        try:
            data = pathlib.Path(path).read_bytes()
            p.check_bytecode(data)
        except (OSError, MalformedFrame) as exc:
            raise ParameterError(
                f'nabaztag_bridge: bytecode_file {path!r}: {exc}. It must be '
                'a ping-era Nabaztag/tag bytecode (amber + 8 hex digits ... '
                'Mind); see README "Nabaztag bridge"'
            ) from None
        if p.PING_BYTECODE_MARK not in data:
            self.get_logger().warning(
                f'bytecode_file {path!r} does not mention /vl/p4.jsp: an '
                'XMPP-era bytecode will not talk to this bridge'
            )
        return data

    # ---- services ---------------------------------------------------------------------
    def _create_services(self):
        group = self.callback_group
        for kind, name, handler in (
            (RabbitProgram, 'send_program', self._send_program),
            (RabbitSound, 'play_sound', self._play_sound),
            (RabbitEars, 'set_ears', self._set_ears),
            (RabbitChoreography, 'play_choreography', self._play_choreography),
            (RabbitAmbient, 'set_ambient', self._set_ambient),
            (RabbitSetting, 'rabbit_setting', self._setting),
            (RabbitRawPacket, 'send_raw_packet', self._raw_packet),
        ):
            self.create_service(kind, name, _answering(handler), callback_group=group)
        self.create_service(RabbitSay, 'say', self._say, callback_group=group)
        self.speak_server = ActionServer(
            self, RabbitSpeak, 'speak', execute_callback=self._speak, callback_group=group
        )

    def _send_program(self, request):
        rabbits = self.registry.select(request.serial)
        program_id = self.registry.queue_program_text(rabbits, request.program)
        return f'program {program_id} queued for {len(rabbits)} rabbit(s)'

    def _play_sound(self, request):
        rabbits = self.registry.select(request.serial)
        if bool(request.url) == bool(request.media_file):
            raise ValueError('give either url or media_file')
        url = request.url or self.bridge.media_url(request.media_file)
        commands = [('ST', url)] if request.stream else [('MU', url), ('MW', '')]
        program_id = self.registry.queue_program(rabbits, commands)
        return f'program {program_id} plays {url}'

    async def _say(self, request, response, stage=None, queued=None):
        """Speak: synthesis in the worker process (this coroutine waits without holding the
        executor), then one program per rabbit playing the MP3 files one after another.
        stage(serial, kind, program id or None) hears each stage (the speak action's
        feedback); every stage is published as an event too. queued (a list) gets the
        (serial, program id) of each program queued."""

        def publish(serial, kind, program_id):
            self._publish_stage(serial, kind, program_id)
            if stage is not None:
                stage(serial, kind, program_id)

        try:
            rabbits = self.registry.select(request.serial)
            gesture = chor.speaking_gesture(
                (request.ear0, request.ear1), request.color, request.choreography
            )
            speech, dropped_note = self._speech_request(request)
        except (ValueError, UnknownRabbit, tts.SpeechError) as exc:
            response.success, response.message = False, str(exc)
            return response
        for rabbit in rabbits:
            publish(rabbit.serial, 'say_synthesising', None)
        spoken, error = await self.await_reply(
            lambda resolve: self.speech.submit(speech, resolve),
            self.tts_timeout,
            pause=SAY_WAIT_PAUSE,
        )
        if error is None and isinstance(spoken, Exception):
            error = str(spoken)
        if error is not None:
            response.success, response.message = False, f'nothing queued: {error}'
            return response
        gesture_url = self.bridge.add_choreography(gesture) if gesture else None
        ids, urls = [], []
        for rabbit in rabbits:
            program_id = self.registry.next_program_id()
            files = [self.bridge.speech_url(n, rabbit.serial, program_id) for n in spoken.names]
            commands = []
            for index, url in enumerate(files):
                commands.append(('MU', url))
                if index == 0 and gesture_url:
                    commands.append(('CH', gesture_url))
                commands.append(('MW', ''))
            self.registry.queue_program([rabbit], commands, program_id)
            self.speech_cache.pin(spoken.key)
            self._say_programs[(rabbit.serial, program_id)] = (
                spoken.key,
                time.monotonic() + SPEECH_PIN_SECONDS,
            )
            publish(rabbit.serial, 'say_queued', program_id)
            if queued is not None:
                queued.append((rabbit.serial, program_id))
            ids.append(format(program_id, 'x'))
            urls = files
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

    async def _speak(self, goal_handle):
        """The speak action: say, with a feedback at each stage, finished when every rabbit
        has reported the program's end (or aborted with the reason)."""
        result = RabbitSpeak.Result()
        if not self.active:
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
        said = await self._say(goal_handle.request, RabbitSay.Response(), feedback, queued)
        for name in ('success', 'message', 'program_id', 'audio_urls', 'audio_seconds'):
            setattr(result, name, getattr(said, name))
        if not said.success:
            goal_handle.abort()
            return result
        programs = set(queued)

        def wait_for_ends(resolve):
            def heard(serial, program_id, kind):
                feedback(serial, kind, program_id)
                if kind == 'say_done':
                    programs.discard((serial, program_id))
                    if not programs:
                        resolve(True)

            for key in programs:
                self._say_waiters[key] = heard

        timeout = said.audio_seconds + SPEAK_END_SLACK
        _, error = await self.await_reply(wait_for_ends, timeout, pause=SAY_WAIT_PAUSE)
        for key in list(programs):
            self._say_waiters.pop(key, None)
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
        if self.speech is None:
            raise tts.EngineMissing(
                f'no speech engine is installed: pip install {tts.PIPER_PACKAGES}, or '
                f'{tts.ESPEAK_PACKAGE}'
            )
        text, dropped = tts.clean_text(request.text, self.tts_max_chars)
        note = f'; dropped {tts.describe_dropped(dropped)}' if dropped else ''
        engine, voice, language = self.tts_defaults
        if request.engine or request.voice or request.language:
            voice = request.voice  # the default voice may not be one of theirs
        language = request.language or language
        voice = self.voices.resolve(request.engine or engine, voice, language)
        rate = tts.check_rate(request.rate or self.tts_rate)
        return tts.Request(voice, rate, text, *self.tts_encoding, self.tts_max_file_bytes), note

    def _publish_stage(self, serial, kind, program_id):
        record = EventRecord(serial, kind, program_id=program_id, time=time.time())
        msg = convert.event_msg(record, self.frame_id, self.clock_offset())
        self.event_pub.publish(msg)

    def _say_program_ended(self, serial, program_id, published):
        entry = self._say_programs.pop((serial, program_id), None)
        if entry is not None:
            self.speech_cache.unpin(entry[0])
            if published:
                self._publish_stage(serial, 'say_done', program_id)
                self._tell_waiter(serial, program_id, 'say_done')

    def _tell_waiter(self, serial, program_id, kind):
        waiter = self._say_waiters.get((serial, program_id))
        if waiter is not None:
            waiter(serial, program_id, kind)

    def _expire_say_programs(self):
        now = time.monotonic()
        for (serial, program_id), (_, deadline) in list(self._say_programs.items()):
            if now > deadline:
                self._say_program_ended(serial, program_id, False)

    def _speech_status(self):
        cache = self.speech_cache
        values = {
            'piper installed': self.voices.piper_installed,
            'espeak installed': self.voices.espeak_installed,
            'piper voices': ', '.join(self.voices.piper_voices),
            'cache folder': str(cache.folder),
            'cache MB': round(cache.bytes / 1e6, 3),
            'cache entries': len(cache.keys()),
            'cache hits': cache.hits,
            'cache evictions': cache.evictions,
        }
        if self.speech is None:
            return (
                WARN,
                'no speech engine installed (say answers which package to install)',
                values,
            )
        values.update(self.speech.counters)
        values['worker pid'] = self.speech.worker.pid or 0
        values['worker starts'] = self.speech.worker.starts
        values['last error'] = self.speech.last_error
        if cache.error:
            return ERROR, cache.error, values
        if self.speech.worker.pid is None and self.speech.worker.starts:
            return WARN, f'speech worker down: {self.speech.last_error}', values
        return OK, 'speech ready', values

    def _set_ears(self, request):
        ears = (request.ear0, request.ear1)
        p.check_ears(ears)
        rabbits = self.registry.select(request.serial)
        self.registry.set_ears(rabbits, ears)
        return f'ears {ears} on the next ping of {len(rabbits)} rabbit(s)'

    def _play_choreography(self, request):
        if request.tempo == 0:
            raise ValueError('tempo 0 would play every step at once (a tick is 10 ms x tempo)')
        rabbits = self.registry.select(request.serial)
        url = self.bridge.add_choreography(
            chor.build(convert.steps_from_msgs(request.tempo, request.steps))
        )
        program_id = self.registry.queue_program(rabbits, [('CH', url)])
        return f'program {program_id} plays {url}'

    def _set_ambient(self, request):
        ambient = convert.ambient_from_request(request)
        p.check_ears(ambient.ears)
        p.ambient_block(ambient)  # checks slots and blinks
        rabbits = self.registry.select(request.serial)
        self.registry.update(rabbits, ambient=ambient)
        return f'ambient set on {len(rabbits)} rabbit(s)'

    def _setting(self, request):
        rabbits = self.registry.select(request.serial)
        name = request.name
        if name == 'ping_interval':
            p.ping_interval_block(request.value)  # checks 1..255
            self.registry.update(rabbits, ping_interval=request.value)
        elif name == 'plugin':
            self.registry.update(rabbits, plugin=request.text)
        elif name in ('sleep', 'wake'):
            self.registry.queue_special(rabbits, p.SLEEP_ID if name == 'sleep' else p.IDLE_ID)
        elif name == 'reboot':
            self.registry.queue_blocks(rabbits, [p.reboot_block()])
        else:
            raise ValueError(
                f'unknown setting {name!r} (ping_interval, plugin, sleep, wake, reboot)'
            )
        return f'{name} for {len(rabbits)} rabbit(s)'

    def _raw_packet(self, request):
        rabbits = self.registry.select(request.serial)
        self.registry.queue_raw(rabbits, bytes(request.packet))
        return f'packet queued for {len(rabbits)} rabbit(s)'

    # ---- records from the HTTP server -------------------------------------------------
    def handle_record(self, record):
        if isinstance(record, EventRecord):
            msg = convert.event_msg(record, self.frame_id, self.clock_offset())
            if msg is not None:  # unknown sd values: counted and logged by the server
                self.event_pub.publish(msg)
            if record.kind == 'say_fetched':
                self._tell_waiter(record.serial, record.program_id, 'say_fetched')
            if record.kind in PROGRAM_ENDS and self._say_programs:
                self._say_program_ended(record.serial, record.program_id, True)
        elif isinstance(record, Recording):
            self.recording_pub.publish(
                convert.recording_msg(record, self.frame_id, self.clock_offset())
            )
        elif isinstance(record, RabbitsChanged):
            # a new rabbit is listed at once, unless a list just went out: then the timer's
            # next list has it (thousands of rabbits registering must not mean thousands of
            # lists of thousands)
            if time.monotonic() - self._rabbits_published >= RABBIT_LIST_MIN_GAP:
                self._publish_rabbits()

    def _publish_rabbits(self):
        self._rabbits_published = time.monotonic()
        self.rabbits_pub.publish(
            convert.rabbit_list_msg(self.registry.snapshot(), self.get_clock().now().to_msg())
        )

    def _server_status(self):
        counters = dataclasses.asdict(self.bridge.counters)
        known, online = self.registry.counts()
        values = dict(
            counters,
            **{'url': f'{self.bridge.base_url}', 'rabbits known': known, 'rabbits online': online},
        )
        if not self.bridge.connected:
            return ERROR, 'not listening', values
        bad_before, self._bad_before = self._bad_before, counters['bad_requests']
        if counters['bad_requests'] > bad_before:
            return WARN, f'listening; bad requests: {counters["last_error"]}', values
        return OK, f'listening; {online} of {known} rabbits online', values

    def _rabbit_statuses(self):
        """One status per rabbit (a diagnostic_aggregator groups them by name), the most
        recently seen first, at most diagnostics_max_rabbits."""
        now = time.time()
        rabbits = sorted(self.registry.snapshot(), key=lambda r: r.last_seen, reverse=True)
        return [_rabbit_status(rabbit, now) for rabbit in rabbits[: self.max_rabbit_statuses]]


def _rabbit_status(rabbit, now):
    """A RabbitView → (name, hardware_id, level, message, values) for the diagnostics."""
    ago = now - rabbit.last_seen
    values = {
        'serial': rabbit.serial,
        'state': rabbit.state,
        'last seen s ago': ago,
        'ping interval s': rabbit.ping_interval,
        'bytecode version': rabbit.bytecode_version,
        'plugin': rabbit.plugin,
        'ears': list(rabbit.ears),
        'queued packets': rabbit.queued_packets,
    }
    if is_online(rabbit.last_seen, rabbit.ping_interval, now):
        level, message = OK, f'online, {rabbit.state}'
    else:
        level, message = WARN, f'offline: last seen {ago:.0f} s ago'
    return f'rabbit {rabbit.serial}', f'Nabaztag/tag {rabbit.serial}', level, message, values


def _answering(handler):
    """A service callback: handler(request) → message; user errors → success False."""

    def callback(request, response):
        try:
            response.message = handler(request)
            response.success = True
        except (ValueError, UnknownRabbit) as exc:
            response.success, response.message = False, str(exc)
        return response

    return callback


def main(args=None):
    from .plugin import PLUGIN  # the plugin names this node: imported at run time

    return run_node(NabaztagBridge, args, plugins=(PLUGIN,))


if __name__ == '__main__':
    sys.exit(main())
