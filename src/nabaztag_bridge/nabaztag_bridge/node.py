"""ROS 2 node `nabaztag_bridge`: the HTTP server Nabaztag/tag rabbits poll, exposed to ROS.

    ros2 run nabaztag_bridge nabaztag_bridge --ros-args -p port:=8080 \\
        -p bytecode_file:=/path/to/bootcode.bin -p media_root:=/srv/rabbit

Topic, service and parameter tables: docs/nabaztag.md.
"""

import os
import pathlib
import sys
import time
from functools import partial

from legacy_robot_common.driver_node import LATCHED, DriverNode, run_node
from legacy_robot_common.errors import MalformedFrame
from legacy_robot_common.params import ParameterError, declare_table
from legacy_robot_interfaces.msg import RabbitEvent, RabbitHeard, RabbitList, RabbitRecording

from . import conversions as convert
from . import mp3, recording, tts
from . import protocol as p
from .hearing import Hearing
from .kinds import KINDS, LinkOptions, make_links, served_by_http
from .kinds.base import RabbitEvent as LinkEvent
from .kinds.roster import RabbitsFileError, Roster, load_entries
from .parameters import PARAMETERS
from .rabbits import PROGRAM_ENDS, RabbitRegistry
from .rule_actions import NodeRules
from .rules import RulesError
from .server import BridgeServer, RabbitsChanged, Recording, Settings
from .server import RabbitEvent as EventRecord
from .services import NabaztagServices
from .speaking import Speaking
from .status import rabbit_statuses, server_status, speech_status
from .tts_client import AudioCache, Speech

RABBIT_LIST_MIN_GAP = 0.2  # s between rabbit lists sent because a rabbit registered


class NabaztagBridge(DriverNode):
    def __init__(self, rule_clock=time.time, **kwargs):
        """rule_clock: the time of day of the time rules (a test moves it)."""
        super().__init__('nabaztag_bridge', hardware_id='Nabaztag/tag rabbits', **kwargs)
        settings, registry = self._declare_parameters()
        self.name_hardware(f'{settings.host}:{settings.port}')
        self.bridge = BridgeServer(settings, registry, logger=self.log, serverless=self.hooks)
        self.registry = registry
        self.attach_client(
            self.bridge, 'http server', partial(server_status, self), link_name='http'
        )
        self.diagnostics.add_group(partial(rabbit_statuses, self))
        self.event_pub = self.publisher(RabbitEvent, 'events', 50)
        self.recording_pub = self.publisher(RabbitRecording, 'recordings', 5)
        self.rabbits_pub = self.publisher(RabbitList, 'rabbits', LATCHED)
        self.bad_requests_reported = 0  # bad requests at the last diagnostics report
        self._rabbits_published = -RABBIT_LIST_MIN_GAP  # time.monotonic() of the last list
        self.speaking = Speaking(self)
        NabaztagServices(self).create()
        self.create_timer(
            self.rabbits_period, self._publish_rabbits, callback_group=self.callback_group
        )
        self.settings = settings
        self.diagnostics.add_task('speech', partial(speech_status, self))
        self.diagnostics.add_task('speech to text', self.hearing.status)
        self.rules = NodeRules(self, self.rules_file, clock=rule_clock)
        self.diagnostics.add_task('rules', self.rules.status)
        self.create_timer(60.0, self.speaking.expire, callback_group=self.callback_group)
        self.begin()

    def start_links(self):
        """configure: the HTTP server listens (a port in use is a user error), the links to
        the declared rabbits start."""
        settings = self.settings
        try:
            super().start_links()
            self.roster.start()
            if self.speech is not None:
                self.speech.start()
            self.hearing.start()
            self._load_rules()
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

    def _load_rules(self):
        """The rules file, checked when the server listens (a bad file: exit 2)."""
        try:
            self.rules.reload()
        except (RulesError, OSError, UnicodeDecodeError) as exc:
            raise ParameterError(
                f'nabaztag_bridge: rules_file {self.rules_file!r}: {exc}'
            ) from None

    def stop_links(self):
        super().stop_links()
        if getattr(self, 'roster', None) is not None:
            self.roster.stop()
        if getattr(self, 'speech', None) is not None:
            self.speech.stop()
        if getattr(self, 'hearing', None) is not None:
            self.hearing.stop()

    # ---- parameters -------------------------------------------------------------------
    def _declare_parameters(self):
        v = declare_table(self, PARAMETERS)
        self.max_rabbit_statuses = v.diagnostics_max_rabbits
        self.rabbits_period = v.rabbits_period
        self.rules_file = v.rules_file
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
        violet = self._declare_rabbits(v)
        allowed_serials += violet  # once the file lists violet rabbits, only those
        speech_folder = self._speech_setup(v)
        self.hearing = Hearing(self, v)
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
            max_recording_bytes=v.max_recording_bytes,
            client_timeout=v.client_timeout,
            max_header_bytes=v.max_header_bytes,
            max_connections_per_address=v.max_connections_per_address,
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
        self.roster = Roster(registry, self._links, violet)
        self.hooks = served_by_http(self.roster, self._vl_dir)
        return settings, registry

    def _declare_rabbits(self, v):
        """The rabbits file → the links of its rabbits of other kinds (self._links, for the
        roster). Returns the serials of its violet rabbits."""
        self.rabbit_timeout = v.rabbit_timeout
        entries = []
        if v.rabbits_file:
            try:
                text = pathlib.Path(v.rabbits_file).read_text(encoding='utf-8')
                entries = load_entries(text, KINDS)
            except (OSError, UnicodeDecodeError, RabbitsFileError) as exc:
                raise ParameterError(
                    f'nabaztag_bridge: rabbits_file {v.rabbits_file!r}: {exc}'
                ) from None
        if v.serverless_vl_dir and not pathlib.Path(v.serverless_vl_dir).is_dir():
            raise ParameterError(
                f'nabaztag_bridge: serverless_vl_dir {v.serverless_vl_dir!r} is not a folder'
            )
        options = LinkOptions(v.rabbit_timeout, v.rabbit_status_period, self.log.warning)
        self._links = make_links(entries, self._enqueue, options)
        self._vl_dir = v.serverless_vl_dir
        return [e.id for e in entries if e.kind == 'violet']

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
        queue_size, threads, priority = v.tts_queue, v.tts_threads, v.tts_worker_priority
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
            self.speech = Speech(
                self.speech_cache, threads, queue_size, preload, priority=priority
            )
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
                'Mind); see docs/nabaztag.md "The bytecode"'
            ) from None
        if p.PING_BYTECODE_MARK not in data:
            self.get_logger().warning(
                f'bytecode_file {path!r} does not mention /vl/p4.jsp: an '
                'XMPP-era bytecode will not talk to this bridge'
            )
        return data

    # ---- services: services.py; say and speak: speaking.py; diagnostics: status.py ------

    # ---- records from the HTTP server -------------------------------------------------
    def handle_record(self, record):
        if isinstance(record, LinkEvent):
            self._link_event(record)
        elif isinstance(record, EventRecord):
            msg = convert.event_msg(record, self.frame_id, self.clock_offset())
            if msg is not None:  # unknown sd values: counted and logged by the server
                self.event_pub.publish(msg)
            if record.kind == 'say_fetched':
                self.speaking.tell_waiter(record.serial, record.program_id, 'say_fetched')
            if record.kind in PROGRAM_ENDS and self.speaking.programs:
                self.speaking.program_ended(record.serial, record.program_id, True)
            self.rules.on_event(record)
        elif isinstance(record, Recording):
            self.recording_pub.publish(
                convert.recording_msg(record, self.frame_id, self.clock_offset())
            )
            self.hearing.hear(record)
        elif isinstance(record, RabbitHeard):
            self.rules.on_heard(record.serial, record.text)
        elif isinstance(record, RabbitsChanged):
            # a new rabbit is listed at once, unless a list just went out: then the timer's
            # next list has it (thousands of rabbits registering must not mean thousands of
            # lists of thousands)
            if time.monotonic() - self._rabbits_published >= RABBIT_LIST_MIN_GAP:
                self._publish_rabbits()

    def _link_event(self, event):
        """An event of a rabbit the bridge calls (serverless, pynab): the same topic, message
        and rules as the violet rabbits' events."""
        msg = convert.link_event_msg(event, self.frame_id, self.clock_offset())
        if msg is not None:
            self.event_pub.publish(msg)
        if event.audio:
            try:
                pcm, rate = recording.decode_wav(event.audio)
            except MalformedFrame as exc:
                self.log.warning(f'{event.serial}-recording', f'{event.serial}: {exc}')
                return
            record = Recording(
                event.serial, event.audio, pcm, rate, event.double_click, event.time
            )
            self.recording_pub.publish(
                convert.recording_msg(record, self.frame_id, self.clock_offset())
            )
            self.hearing.hear(record)
        self.rules.on_link_event(event)

    def on_heard(self, msg):
        """Called with each RabbitHeard just after it is published on `heard` (from the
        recogniser's thread): the words go to the rules in the executor, as events do."""
        if msg.text:
            self._enqueue(msg)

    def _publish_rabbits(self):
        self._rabbits_published = time.monotonic()
        self.rabbits_pub.publish(
            convert.rabbit_list_msg(
                self.registry.snapshot(),
                self.get_clock().now().to_msg(),
                [link.state() for link in self.roster.links.values()],
            )
        )


def main(args=None):
    # here, not at the top: the plugin brings the emulator and the demo, which importing the
    # node does not need; the plugin names the node by name (ByName): no circle
    from .plugin import PLUGIN

    return run_node(NabaztagBridge, args, plugins=(PLUGIN,))


if __name__ == '__main__':
    sys.exit(main())
