"""ROS 2 node `aibo_driver`: a Sony AIBO ERS-2x0 running AiboPet's RCodePlus or LifePlus.

    ros2 run aibo_driver aibo_driver --ros-args -p host:=192.168.0.20

Topic, service and parameter tables: README.md ("AIBO driver").
"""

import os
import sys
import threading

from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import String

from legacy_robot_common.diagnostics import ERROR, OK, WARN, LinkStatusTask, RateMeter
from legacy_robot_common.driver_node import LATCHED, DriverNode, run_node
from legacy_robot_common.messages import audio_info_msg
from legacy_robot_common.params import ParameterError, declare_table
from legacy_robot_common.robot_model import RobotStatePublisher
from legacy_robot_common.topics import image_qos
from legacy_robot_interfaces.msg import (
    AiboSensorWords,
    AudioData,
    AudioDataStamped,
    AudioInfo,
    ColorDetection,
    SemanticEvent,
    VoiceMatches,
)
from legacy_robot_interfaces.srv import SetCameraMode, SetProperty, TextCommand, UploadFile

from . import conversions as convert
from . import description
from . import protocol as p
from .client import (
    AudioReply,
    CameraFrame,
    ColorFrame,
    Connected,
    RcodeClient,
    RcodeLine,
    SemanticRecords,
    Settings,
    TelemetryClient,
    VoiceRecord,
)
from .parameters import BTYPES, MOUNTS, OPCODES, PARAMETERS, PORTS, YUV10

LIFEPLUS_HAS_NO_RCODE = (
    'LifePlus has no RCodePlus pipe: the RCODE link is not used '
    '(rcode_command refuses, rcode/output stays silent)'
)


class AiboNode(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('aibo_driver', hardware_id='Sony AIBO', **kwargs)
        self._declare_parameters()
        self.name_hardware(f'{self.host}:{self.ports["telemetry_port"]}')
        settings = self._settings()
        self.telemetry = TelemetryClient(settings, logger=self.get_logger())
        self.attach_client(self.telemetry, 'telemetry link', link_name='telemetry')
        self.rcode = None
        self.rcode_off = '' if self.rcode_enabled else 'the RCODE pipe is off (rcode_enabled)'
        if self.rcode_enabled and self.product == p.Product.LIFEPLUS.value:
            self.rcode_off = LIFEPLUS_HAS_NO_RCODE
            self.get_logger().info(f'product lifeplus: {LIFEPLUS_HAS_NO_RCODE}')
        elif self.rcode_enabled:
            self.rcode = RcodeClient(settings, self.rcode_quiet_time, logger=self.get_logger())
            self._rcode_link_status = LinkStatusTask(self.rcode)
            self.attach_client(
                self.rcode, 'RCODE link', link_name='rcode', status_task=self._rcode_status
            )
        self.diagnostics.add_task('dog', self._dog_status)
        self.rates = {name: RateMeter() for name in ('camera', 'color', 'audio')}
        self.audio_chunks = 0
        self._create_publishers()
        self._create_services()
        self.create_timer(1.0, self._publish_audio_info, callback_group=self.callback_group)
        self.begin()

    # ---- parameters ----------------------------------------------------------------------------
    def _declare_parameters(self):
        v = declare_table(self, PARAMETERS)
        values = vars(v)
        self.host, self.rcode_enabled, self.product = v.host, v.rcode_enabled, v.product
        self.ports = {row.name: values[row.name] for row in PORTS}
        self.btypes = {product: values[row.name] for product, row in BTYPES.items()}
        self.version_prefix = v.version_size_prefix
        self.opcodes = {name: values[row.name] for name, row in OPCODES.items()}
        self.camera_mode, self.image_rate, self.color_rate = (
            v.camera_mode,
            v.image_rate,
            v.color_rate,
        )
        self.audio_enabled, self.audio_poll_rate = v.audio_enabled, v.audio_poll_rate
        self.voice_rate, self.semantic_rate = v.voice_rate, v.semantic_rate
        self.yuv10 = {name: values[row.name] for name, row in YUV10.items()}
        self.channel_order, self.signed_words = v.audio_channel_order, v.sensor_words_signed
        self.decode_jpeg, self.color_labels = v.decode_jpeg, v.color_labels
        self.image_qos = v.image_qos
        self.presets, self.rput_enabled = v.property_presets, v.rput_enabled
        self.rput_layout, self.rput_grace = v.rput_layout, v.rput_grace
        self.rput_reply, self.rput_max_bytes = v.rput_reply, v.rput_max_bytes
        self.reply_timeout, self.unavailable_after = v.reply_timeout, v.unavailable_after
        self.rcode_timeout, self.rcode_quiet_time = v.rcode_timeout, v.rcode_quiet_time
        self.mounts = {name: values[row.name] for name, row in MOUNTS.items()}
        self.field_of_view = v.camera_field_of_view
        # the frames go through RobotFrames (frame_prefix, the optical frame), not the table
        frames = description.DEFAULT_FRAMES
        camera, optical = self.frames.camera(
            'camera', frames['camera'], 'camera frame (x forward)'
        )
        self.frame_ids = {
            'camera': camera,
            'optical': optical,
            **{
                name: self.frames.declare(name, default, f'{name} frame')
                for name, default in (
                    ('head', frames['head']),
                    ('base', frames['base']),
                    ('audio', frames['head']),
                )
            },
        }

    def _settings(self):
        try:
            if len(self.color_labels) != 8 or len(self.field_of_view) != 2:
                raise ValueError('color_labels needs 8 labels and camera_field_of_view 2 angles')
            if any(len(mount) != 6 for mount in self.mounts.values()):
                raise ValueError(
                    'head_mount and camera_mount need 6 numbers [x, y, z, roll, pitch, yaw]'
                )
            self.preset_table = {
                name: (index, value)
                for name, index, value in (
                    p.parse_preset(text) for text in self.presets if text.strip()
                )
            }
            return Settings(
                host=self.host,
                telemetry_port=self.ports['telemetry_port'],
                rcode_port=self.ports['rcode_port'],
                product=self.product,
                type_values=self.btypes,
                version_size_prefix=self.version_prefix,
                opcodes=p.OpcodeMap(self.opcodes),
                camera_mode=self.camera_mode,
                image_rate=self.image_rate,
                color_rate=self.color_rate,
                audio=self.audio_enabled,
                audio_poll_rate=self.audio_poll_rate,
                voice_rate=self.voice_rate,
                semantic_rate=self.semantic_rate,
                yuv10=p.Yuv10Format(**self.yuv10),
                right_channel_first=self.channel_order == 'right_first',
                signed_sensor_words=self.signed_words,
                decode_jpeg=self.decode_jpeg,
                reply_timeout=self.reply_timeout,
                unavailable_after=self.unavailable_after,
                rput=(
                    p.RputLayout(self.rput_layout.split(','), self.rput_max_bytes)
                    if self.rput_enabled
                    else None
                ),
                rput_reply=self.rput_reply,
            )
        except (ValueError, TypeError) as exc:
            raise ParameterError(f'aibo_driver: {exc}') from None

    # ---- publishers and services ---------------------------------------------------------------
    def _create_publishers(self):
        pub = self.publisher
        self.image_pub = pub(Image, 'camera/image_raw', image_qos(self.image_qos, 2))
        self.compressed_pub = pub(
            CompressedImage, 'camera/image_raw/compressed', image_qos(self.image_qos, 2)
        )
        self.info_pub = pub(CameraInfo, 'camera/camera_info', 2)
        self.color_pub = pub(ColorDetection, 'color_detection', 2)
        self.audio_pub = pub(AudioData, 'audio/audio', 50)
        self.audio_stamped_pub = pub(AudioDataStamped, 'audio/audio_stamped', 50)
        self.audio_info_pub = pub(AudioInfo, 'audio/audio_info', LATCHED)
        self.words_pub = pub(AiboSensorWords, 'sensor_words', 50)
        self.voice_pub = pub(VoiceMatches, 'voice')
        self.semantic_pub = pub(SemanticEvent, 'semantic', 20)
        self.rcode_pub = pub(String, 'rcode/output', 50)
        self.model = RobotStatePublisher(self)  # base → head → camera, its fixed joints
        self.model.describe(description.from_parameters(self.parameter_values()))

    def _create_services(self):
        group = self.callback_group
        for kind, name, handler in (
            (SetProperty, 'set_property', self._set_property),
            (SetCameraMode, 'set_camera_mode', self._set_camera_mode),
            (UploadFile, 'upload_file', self._upload),
            (TextCommand, 'rcode_command', self._rcode_command),
        ):
            self.create_service(kind, name, handler, callback_group=group)

    # ---- service handlers ----------------------------------------------------------------------
    async def _set_property(self, request, response):
        index, value = request.index, request.value
        if request.preset:
            if request.preset not in self.preset_table:
                known = ', '.join(sorted(self.preset_table)) or 'none configured'
                response.success = False
                response.message = f'unknown preset {request.preset!r} (known: {known})'
                return response
            index, value = self.preset_table[request.preset]
        reply, error = await self.await_reply(
            lambda resolve: self.telemetry.set_property(index, value, resolve), self.reply_timeout
        )
        response.success, response.message = error is None, error or reply
        return response

    def _set_camera_mode(self, request, response):
        color_rate = request.color_rate if request.color_rate > 0 else -1.0
        try:
            self.telemetry.set_camera(request.mode, request.image_rate, color_rate)
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, f'camera: {request.mode}'
        return response

    async def _upload(self, request, response):
        try:
            with open(request.path, 'rb') as source:
                contents = source.read(self.rput_max_bytes + 1)
        except OSError as exc:
            response.success, response.message = False, f'cannot read {request.path}: {exc}'
            return response
        name = request.remote_name or os.path.basename(request.path)
        connects = self.telemetry.counters.connects
        reply, error = await self.await_reply(
            lambda resolve: self.telemetry.upload(name, contents, resolve),
            self.reply_timeout + len(contents) / 50_000,
        )  # Wi-Fi of the time: ~50 kB/s
        if error is None and self.rput_reply == 'none':
            reply, error = await self._unconfirmed_upload(reply, connects)
        response.success, response.message = error is None, error or reply
        response.bytes_sent = len(contents) if error is None else 0
        return response

    async def _unconfirmed_upload(self, sent, connects):
        """No reply to wait for: the upload counts only if the link outlives a grace period (a dog
        that cannot read the request drops the connection) and says it is unconfirmed."""
        grace, _ = self.reply_future(self.rput_grace)
        await grace  # completes after rput_grace seconds
        if not self.telemetry.connected or self.telemetry.counters.connects != connects:
            return None, (
                f'the dog closed the link within {self.rput_grace:.1f} s of the upload: '
                f'it did not take it; check rput_layout (now {self.rput_layout})'
            )
        return (
            f'{sent}; unconfirmed: the dog sends no reply (rput_reply none), the link was still '
            f'up {self.rput_grace:.1f} s later'
        ), None

    def _rcode_status(self):
        level, message, values = self._rcode_link_status()
        if self.rcode_off:  # a LifePlus dog: nothing is wrong
            return OK, f'off: {self.rcode_off}', values
        return level, message, values

    async def _rcode_command(self, request, response):
        if self.rcode_off:
            response.success, response.message = False, self.rcode_off
            return response
        timeout = request.timeout or self.rcode_timeout
        reply, error = await self.await_reply(
            lambda resolve: self.rcode.command(request.command, resolve, timeout), timeout + 2.0
        )
        refusal = p.rcode_error(reply or '')  # RCodePlus answers a bad command with ERROR:
        response.success = error is None and not refusal
        response.message = error or refusal or ('printed nothing' if not reply else 'ok')
        response.reply = reply or ''
        return response

    # ---- records from the dog ------------------------------------------------------------------
    # the telemetry link's records are published by its own thread: they touch only their
    # publishers and rate meters (saves an executor wake-up per round of requests)
    direct_records = (AudioReply, CameraFrame, ColorFrame)

    def handle_record(self, record):
        if isinstance(record, AudioReply):
            self._publish_audio(record)
        elif isinstance(record, CameraFrame):
            self._publish_camera(record)
        elif isinstance(record, ColorFrame):
            self.rates['color'].tick()
            self.color_pub.publish(
                convert.color_detection_msg(
                    record, self.frame_ids['optical'], self.color_labels, self.clock_offset()
                )
            )
        elif isinstance(record, VoiceRecord):
            self.voice_pub.publish(
                convert.voice_msg(record, self.frame_ids['base'], self.clock_offset())
            )
        elif isinstance(record, SemanticRecords):
            for msg in convert.semantic_msgs(record, self.frame_ids['base'], self.clock_offset()):
                self.semantic_pub.publish(msg)
        elif isinstance(record, RcodeLine):
            self.rcode_pub.publish(String(data=record.text))
        elif isinstance(record, Connected):
            self._publish_audio_info()
            if (
                record.product is p.Product.LIFEPLUS
                and self.rcode is not None
                and not self.rcode_off
            ):
                # said once, not a connect failure every few seconds for ever
                self.rcode_off = LIFEPLUS_HAS_NO_RCODE
                self.get_logger().info(f'the dog runs LifePlus: {LIFEPLUS_HAS_NO_RCODE}')
                threading.Thread(target=self.rcode.stop, name='rcode-stop', daemon=True).start()

    def _publish_camera(self, frame):
        self.rates['camera'].tick()
        image, compressed, info = convert.camera_msgs(
            frame, self.frame_ids['optical'], self.field_of_view, self.clock_offset()
        )
        if image is not None:
            self.image_pub.publish(image)
        if compressed is not None:
            self.compressed_pub.publish(compressed)
        self.info_pub.publish(info)

    def _publish_audio(self, reply):
        """Each chunk on the topics someone listens to: 31 chunks a second, three messages
        each, are not built for nobody."""
        self.audio_chunks += len(reply.chunks)
        for _ in reply.chunks:
            self.rates['audio'].tick()
        wanted = [
            pub
            for pub in (self.audio_pub, self.audio_stamped_pub, self.words_pub)
            if pub.get_subscription_count()
        ]
        if not wanted:
            return
        for stamped, words in convert.audio_msgs(
            reply, self.frame_ids['audio'], self.clock_offset()
        ):
            for pub, msg in (
                (self.audio_pub, stamped.audio),
                (self.audio_stamped_pub, stamped),
                (self.words_pub, words),
            ):
                if pub in wanted:
                    pub.publish(msg)

    def _publish_audio_info(self):
        self.audio_info_pub.publish(audio_info_msg(2, p.AUDIO_RATE))

    # ---- diagnostics ---------------------------------------------------------------------------
    def _dog_status(self):
        t = self.telemetry
        cause = self._link_cause(t)
        if cause:
            return (
                ERROR,
                cause,
                {
                    'host': self.host,
                    'bad replies': t.counters.bad_frames,
                    'last error': t.counters.last_error,
                },
            )
        if t.version is None:
            return ERROR, 'no version reply from the dog yet', {'host': self.host}
        sequence = t.audio_sequence
        values = {
            'AiboPet version': str(t.version),
            'product': t.product.value,
            'bType': t.version.type_byte,
            'camera mode': t.camera_mode,
            'camera frames per second': self.rates['camera'].rate,
            'colour frames per second': self.rates['color'].rate,
            'audio chunks per second': self.rates['audio'].rate,
            'audio chunks': self.audio_chunks,
            'audio chunks lost': sequence.lost,
            'audio chunks lost across reconnects': sequence.lost_across_reconnects,
            'audio gaps of unknown size': sequence.unknown_gaps,
            'audio sequence restarts': sequence.restarts,
            'bad replies': t.counters.bad_frames,
            'records dropped': self.records_dropped,
        }
        unavailable = [op.value for op, poller in t.pollers.items() if not poller.available]
        for op, poller in t.pollers.items():
            values[f'{op.value}'] = (
                f'{"available" if poller.available else "unavailable"}: '
                f'{poller.replies_with_data} of {poller.requests} replies '
                'with data'
            )
        if t.camera_note:
            values['camera note'] = t.camera_note
        if unavailable:
            return WARN, f'unavailable on this stick: {", ".join(unavailable)}', values
        if sequence.unknown_gaps:
            return (
                WARN,
                (
                    f'audio lost across {sequence.unknown_gaps} reconnect(s), amount unknown '
                    f"(the dog's sequence started again); {sequence.lost} more chunks known "
                    'lost'
                ),
                values,
            )
        if sequence.lost:
            return (
                WARN,
                (
                    f'{sequence.lost} audio chunks lost ({sequence.lost_across_reconnects} '
                    'across reconnects)'
                ),
                values,
            )
        return OK, f'AiboPet {t.version} {t.product.value}', values

    def _link_cause(self, t):
        """What to change when the link keeps failing in one of the two ways a wrong guess of
        spec §4 shows: the dog hangs up right after a request, or no version reply parses."""
        if t.connected:
            return None
        if t.closed_after:
            ops = ', '.join(
                f'{op.value} (0x{t.settings.opcodes.byte[op]:02X})' for op in t.closed_after
            )
            return (
                f'the dog closed the link right after {ops}: it does not take that request '
                f'byte; check the opcodes.{t.closed_after[-1].value} parameter'
            )
        if t.version is None and t.counters.bad_frames:
            return (
                f'no version reply parses ({t.counters.last_error}): check '
                f'version_size_prefix (now {str(self.version_prefix).lower()})'
            )
        return None


def main(args=None):
    from .plugin import PLUGIN  # the plugin names this node: imported at run time

    return run_node(AiboNode, args, plugins=(PLUGIN,))


if __name__ == '__main__':
    sys.exit(main())
