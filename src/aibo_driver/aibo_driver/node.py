"""ROS 2 node `aibo_driver`: a Sony AIBO ERS-2x0 running AiboPet's RCodePlus or LifePlus.

    ros2 run aibo_driver aibo_driver --ros-args -p host:=192.168.0.20

Topic, service and parameter tables: docs/aibo.md.
"""

import math
import sys
import threading
from functools import partial

from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import (
    BatteryState,
    CameraInfo,
    CompressedImage,
    Image,
    JointState,
    Range,
)
from std_msgs.msg import String

from legacy_robot_common.diagnostics import LinkStatusTask, RateMeter
from legacy_robot_common.driver_node import LATCHED, DriverNode, run_node
from legacy_robot_common.messages import audio_info_msg
from legacy_robot_common.mobile_base import MobileBase, planar_covariance
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
    SensorEvent,
    VoiceMatches,
)

from . import conversions as convert
from . import description, models, rcode
from . import protocol as p
from .client import (
    AudioReply,
    CameraFrame,
    ColorFrame,
    Connected,
    PollValues,
    RcodeClient,
    RcodeLine,
    SemanticRecords,
    Settings,
    TelemetryClient,
    VoiceRecord,
)
from .client_urbi import (
    Battery,
    JointValues,
    SensorValues,
    Touch,
    UrbiClient,
    UrbiError,
    UrbiSettings,
)
from .motion import MotionSettings, OdometryModel
from .parameters import BTYPES, GAIT, MOUNTS, ODOMETRY, OPCODES, PARAMETERS, PORTS, YUV10
from .services import AiboServices
from .status import dog_status, motion_status, rcode_status, urbi_status
from .urbi_body import UrbiBody
from .walking import Walking

SERVED_PROTOCOLS = ('rcodeplus', 'urbi')  # the sticks this node speaks to (all: models.PROTOCOLS)
URBI_HAS_NO_RCODE = 'the dog speaks URBI: there is no RCODE pipe (rcode_command refuses)'
URBI_RECORDS = (JointValues, SensorValues, Touch, Battery, UrbiError)
LIFEPLUS_HAS_NO_RCODE = (
    'LifePlus has no RCodePlus pipe: the RCODE link is not used '
    '(rcode_command refuses, rcode/output stays silent)'
)
# aibo.md §6.2: estimates of legged odometry (no stride figures are published); the driver
# replaces x, y and yaw with variances that grow with the distance walked
POSE_COVARIANCE = planar_covariance(1e-4, 1e-4)
TWIST_COVARIANCE = planar_covariance(0.02**2, 0.2**2)


class AiboNode(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('aibo_driver', hardware_id='Sony AIBO', **kwargs)
        self._declare_parameters()
        port = self.ports['urbi_port' if self.protocol == 'urbi' else 'telemetry_port']
        self.name_hardware(f'{self.host}:{port}')
        settings = self._settings()
        self.telemetry = TelemetryClient(settings, logger=self.get_logger())
        self.urbi = None
        self.rcode = None
        self.rcode_off = '' if self.rcode_enabled else 'the RCODE pipe is off (rcode_enabled)'
        if self.protocol == 'urbi':
            self.urbi = UrbiClient(self._urbi_settings(), logger=self.get_logger())
            self.attach_client(self.urbi, 'URBI link', link_name='urbi')
            self.rcode_off = URBI_HAS_NO_RCODE
            if list(self.field_of_view) == list(convert.FIELD_OF_VIEW):  # the 2xx default
                self.field_of_view = [math.radians(a) for a in self.dog_model.field_of_view]
        else:
            self.attach_client(self.telemetry, 'telemetry link', link_name='telemetry')
            self._attach_rcode(settings)
        self.diagnostics.add_task('dog', partial(urbi_status if self.urbi else dog_status, self))
        self.diagnostics.add_task('motion', partial(motion_status, self))
        self.rates = {name: RateMeter() for name in ('camera', 'color', 'audio')}
        self.audio_chunks = 0
        self.head_target = {rcode.HEAD_PAN: 0.0, rcode.HEAD_TILT: 0.0}  # degrees
        self.counts = dict.fromkeys(
            ('bad cmd_vel', 'refused cmd_vel', 'head clamped', 'bad head_command', 'falls'), 0
        )
        self.joints = {}  # R-CODE variable → degrees, as last read
        self.dog_values = {}  # the other polled variables
        self.touches = {}  # touch variable → times seen set
        self.walking = UrbiBody(self) if self.urbi else Walking(self)
        self._create_publishers()
        AiboServices(self).create()
        self.create_timer(1.0, self._publish_audio_info, callback_group=self.callback_group)
        self.create_timer(
            1.0 / self.odom_rate, self.walking.publish_odometry, callback_group=self.callback_group
        )
        self.begin()

    def _attach_rcode(self, settings):
        """The RCODE pipe beside the telemetry (RCodePlus; LifePlus has none)."""
        if self.rcode_enabled and self.product == p.Product.LIFEPLUS.value:
            self.rcode_off = LIFEPLUS_HAS_NO_RCODE
            self.get_logger().info(f'product lifeplus: {LIFEPLUS_HAS_NO_RCODE}')
        elif self.rcode_enabled:
            self.rcode = RcodeClient(
                settings,
                self.rcode_quiet_time,
                self.motion_settings,
                self._polls(),
                self.poll_timeout,
                self.cmd_vel_timeout,
                logger=self.get_logger(),
            )
            self.rcode_link_status = LinkStatusTask(self.rcode)
            self.attach_client(
                self.rcode,
                'RCODE link',
                link_name='rcode',
                status_task=partial(rcode_status, self),
            )

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
        self._motion_parameters(v)
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
                    ('audio', frames['head']),
                    ('ir', description.ir_frame(frames['head'])),
                )
            },
        }

    def _motion_parameters(self, v):
        try:
            self.dog_model = models.check_combination(v.model, v.protocol, SERVED_PROTOCOLS)
        except ValueError as exc:
            raise ParameterError(f'aibo_driver: {exc}') from None
        self.model_name, self.protocol = v.model, v.protocol
        self.urbi_sensor_rate = v.urbi_sensor_rate
        self.joint_state_rate, self.motion_poll_rate = v.joint_state_rate, v.motion_poll_rate
        self.sensor_rate, self.poll_timeout = v.sensor_rate, v.poll_timeout
        self.odom_rate, self.cmd_vel_timeout = v.odom_rate, v.cmd_vel_timeout
        self.add_on_set_parameters_callback(self._on_parameters)  # cmd_vel_timeout: run time
        values = vars(v)
        self.odometry_model = OdometryModel(
            **{name: values[row.name] for name, row in ODOMETRY.items()}
        )
        try:
            self.motion_settings = MotionSettings(**{row.name: values[row.name] for row in GAIT})
        except ValueError as exc:
            raise ParameterError(f'aibo_driver: {exc}') from None

    def _on_parameters(self, parameters):
        for parameter in parameters:
            if parameter.name == 'cmd_vel_timeout':
                self.cmd_vel_timeout = parameter.value
                if getattr(self, 'rcode', None) is not None:  # declared before the client
                    self.rcode.motion.timeout = parameter.value
        return SetParametersResult(successful=True)

    def _polls(self):
        """The PRINT polls and their periods: Wait first (the walk planner needs it)."""
        polls = [(rcode.Poll('M0', ('Wait', 'Status', 'Distance')), 1.0 / self.motion_poll_rate)]
        if self.sensor_rate:
            polls += [
                (rcode.Poll('B0', ('Batt_Rest', 'Batt_Temp')), 1.0 / self.sensor_rate),
                (rcode.Poll('T0', rcode.TOUCH_VARIABLES[self.model_name]), 1.0 / self.sensor_rate),
            ]
        if self.joint_state_rate:
            polls += [
                (poll, 1.0 / self.joint_state_rate) for poll in rcode.joint_polls(self.model_name)
            ]
        return polls

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

    # ---- publishers (services: services.py; motion and polls: walking.py) --------------------
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
        self.joint_pub = pub(JointState, 'joint_states')
        self.range_pub = pub(Range, 'ir_range')
        self.battery_pub = pub(BatteryState, 'battery')
        self.event_pub = pub(SensorEvent, 'sensor_events', 20)
        self.base = MobileBase(
            self,
            self.walking.on_cmd_vel,
            lambda: self.cmd_vel_timeout,
            POSE_COVARIANCE,
            TWIST_COVARIANCE,
            base_frame=description.DEFAULT_FRAMES['base'],
            base_height=description.BASE_HEIGHT,
            lateral=True,
        )
        self.frame_ids['base'] = self.base.base_frame
        self.frame_ids['chest_ir'] = description.chest_ir_frame(self.base.base_frame)
        if self.urbi is not None:
            self.walking.create_publishers()
        self.create_subscription(
            JointState,
            'head_command',
            self.walking.on_head_command,
            10,
            callback_group=self.callback_group,
        )
        self.model = RobotStatePublisher(self)  # the dog's joints from joint_states
        self.model.describe(description.from_parameters(self.parameter_values()))

    def on_activate(self, state):
        if self.urbi is not None:
            self._urbi_streaming(True)
        return super().on_activate(state)

    def on_deactivate(self, state):
        result = super().on_deactivate(state)  # stops the robot first
        if self.urbi is not None:
            self._urbi_streaming(False)
        return result

    def _urbi_streaming(self, on):
        try:
            self.urbi.set_streaming(on)
        except ConnectionError as exc:  # not connected: the next session follows the flag
            self.get_logger().info(f'URBI jobs {"on" if on else "off"} when connected: {exc}')

    def stop_robot(self):
        if self.urbi is not None:
            try:
                self.urbi.halt()
            except ConnectionError as exc:  # not connected: nothing walks
                self.get_logger().info(f'stop: {exc}')
        if self.rcode is not None and not self.rcode_off:
            self.rcode.halt()

    def _urbi_settings(self):
        try:
            return UrbiSettings(
                host=self.host,
                port=self.ports['urbi_port'],
                model=self.model_name,
                camera=self.camera_mode != 'off',
                audio=self.audio_enabled,
                decode_jpeg=self.decode_jpeg,
                joint_rate=self.joint_state_rate,
                sensor_rate=self.urbi_sensor_rate,
                battery_period=1.0 / self.sensor_rate if self.sensor_rate else 0.0,
                ping_timeout=self.reply_timeout + 1.0,
                cmd_vel_timeout=self.cmd_vel_timeout,
            )
        except ValueError as exc:
            raise ParameterError(f'aibo_driver: {exc}') from None

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
        elif isinstance(record, URBI_RECORDS):
            self.walking.handle(record)
        elif isinstance(record, PollValues):
            self.walking.on_poll(record)
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


def main(args=None):
    # here, not at the top: the plugin brings the emulator and the demo, which importing the
    # node does not need; the plugin names the node by name (ByName): no circle
    from .plugin import PLUGIN

    return run_node(AiboNode, args, plugins=(PLUGIN,))


if __name__ == '__main__':
    sys.exit(main())
