"""ROS 2 node `aibo_driver`: a Sony AIBO ERS-2x0 running AiboPet's RCodePlus or LifePlus.

    ros2 run aibo_driver aibo_driver --ros-args -p host:=192.168.0.20

Topic, service and parameter tables: README.md ("AIBO driver").
"""

import math
import os
import sys
import threading

from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import (
    BatteryState,
    CameraInfo,
    CompressedImage,
    Image,
    JointState,
    Range,
)
from std_msgs.msg import Header, String
from std_srvs.srv import Trigger

from legacy_robot_common.diagnostics import ERROR, OK, WARN, LinkStatusTask, RateMeter
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
from legacy_robot_interfaces.srv import (
    PlayNamed,
    SetCameraMode,
    SetProperty,
    TextCommand,
    UploadFile,
)

from . import conversions as convert
from . import description, rcode
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
from .motion import MotionSettings, OdometryModel
from .parameters import BTYPES, GAIT, MOUNTS, ODOMETRY, OPCODES, PARAMETERS, PORTS, YUV10

LIFEPLUS_HAS_NO_RCODE = (
    'LifePlus has no RCodePlus pipe: the RCODE link is not used '
    '(rcode_command refuses, rcode/output stays silent)'
)
# spec §2.11: estimates of legged odometry (no stride figures are published); the driver
# replaces x, y and yaw with variances that grow with the distance walked
POSE_COVARIANCE = planar_covariance(1e-4, 1e-4)
TWIST_COVARIANCE = planar_covariance(0.02**2, 0.2**2)
STATUS_FALL = 1  # Status after the dog got up from a fall (§2.11.5)


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
            self.rcode = RcodeClient(
                settings,
                self.rcode_quiet_time,
                self.motion_settings,
                self._polls(),
                self.poll_timeout,
                self.cmd_vel_timeout,
                logger=self.get_logger(),
            )
            self._rcode_link_status = LinkStatusTask(self.rcode)
            self.attach_client(
                self.rcode, 'RCODE link', link_name='rcode', status_task=self._rcode_status
            )
        self.diagnostics.add_task('dog', self._dog_status)
        self.diagnostics.add_task('motion', self._motion_status)
        self.rates = {name: RateMeter() for name in ('camera', 'color', 'audio')}
        self.audio_chunks = 0
        self.head_target = {rcode.HEAD_PAN: 0.0, rcode.HEAD_TILT: 0.0}  # degrees
        self.counts = dict.fromkeys(
            ('bad cmd_vel', 'refused cmd_vel', 'head clamped', 'bad head_command', 'falls'), 0
        )
        self.joints = {}  # R-CODE variable → degrees, as last read
        self.dog_values = {}  # the other polled variables
        self.touches = {}  # touch variable → times seen set
        self._warned_no_motion = False
        self._create_publishers()
        self._create_services()
        self.create_timer(1.0, self._publish_audio_info, callback_group=self.callback_group)
        self.create_timer(
            1.0 / self.odom_rate, self._publish_odometry, callback_group=self.callback_group
        )
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
        self.model_name = v.model
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
        self.joint_pub = pub(JointState, 'joint_states')
        self.range_pub = pub(Range, 'ir_range')
        self.battery_pub = pub(BatteryState, 'battery')
        self.event_pub = pub(SensorEvent, 'sensor_events', 20)
        self.base = MobileBase(
            self,
            self._on_cmd_vel,
            lambda: self.cmd_vel_timeout,
            POSE_COVARIANCE,
            TWIST_COVARIANCE,
            base_frame=description.DEFAULT_FRAMES['base'],
            base_height=description.BASE_HEIGHT,
            lateral=True,
        )
        self.frame_ids['base'] = self.base.base_frame
        self.create_subscription(
            JointState,
            'head_command',
            self._on_head_command,
            10,
            callback_group=self.callback_group,
        )
        self.model = RobotStatePublisher(self)  # the dog's joints from joint_states
        self.model.describe(description.from_parameters(self.parameter_values()))

    def _create_services(self):
        group = self.callback_group
        for kind, name, handler in (
            (SetProperty, 'set_property', self._set_property),
            (SetCameraMode, 'set_camera_mode', self._set_camera_mode),
            (UploadFile, 'upload_file', self._upload),
            (TextCommand, 'rcode_command', self._rcode_command),
            (PlayNamed, 'play_action', self._play_action),
            (Trigger, 'stop', self._stop),
            (Trigger, 'emergency_stop', self._emergency_stop),
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

    # ---- motion (§2.11) -------------------------------------------------------------------------
    def _motion_refusal(self):
        """Why the dog cannot be moved now ('' when it can)."""
        if self.rcode_off:
            return f'no motion: {self.rcode_off}'
        if not self.rcode.connected:
            return 'no motion: the RCODE link is not connected'
        return ''

    def _on_cmd_vel(self, linear, angular, lateral=0.0):
        """cmd_vel → walk segments (the planner in the RCODE client); refusals logged."""
        if self.rcode_off:
            if not self._warned_no_motion:  # once: a teleop sends 10 a second
                self._warned_no_motion = True
                self.get_logger().warning(f'cmd_vel ignored: {self.rcode_off}')
            return
        try:
            notes = self.rcode.drive(linear, lateral, angular)
        except ValueError as exc:
            self.counts['bad cmd_vel'] += 1
            self.log.warning('cmd-vel-bad', f'{exc} ({self.counts["bad cmd_vel"]} so far)')
            return
        for key, text in notes:
            self.counts['refused cmd_vel'] += 1
            self.log.warning(f'cmd-vel-{key}', text)

    def stop_robot(self):
        if self.rcode is not None and not self.rcode_off:
            self.rcode.halt()

    def _on_head_command(self, msg):
        """JointState naming Head_Pan and/or Head_Tilt (rad, R-CODE signs: pan + left, tilt +
        up); out of range → clamped to the joint limits with a WARN."""
        if self.rcode_off:
            self.log.warning('head-no-rcode', f'head_command ignored: {self.rcode_off}')
            return
        target = dict(self.head_target)
        for name, position in zip(msg.name, msg.position, strict=False):
            if name not in target or not math.isfinite(position):
                self.counts['bad head_command'] += 1
                self.log.warning(
                    'head-bad',
                    f'head_command: {name!r} = {position} ignored (give finite radians for '
                    f'{rcode.HEAD_PAN} and/or {rcode.HEAD_TILT})',
                )
                continue
            joint = rcode.joint_of(self.model_name, name)
            degrees = math.degrees(position)
            clamped = min(max(degrees, joint.lower), joint.upper)
            if clamped != degrees:
                self.counts['head clamped'] += 1
                self.log.warning(
                    'head-clamp',
                    f'head_command: {name} {position:.3f} rad is outside '
                    f'{math.radians(joint.lower):.3f}..{math.radians(joint.upper):.3f}: '
                    f'clamped to {math.radians(clamped):.3f}',
                )
            target[name] = clamped
        if target != self.head_target:
            self.head_target = target
            self.rcode.look(target[rcode.HEAD_PAN], target[rcode.HEAD_TILT])

    async def _play_action(self, request, response):
        refusal = self._motion_refusal()
        try:
            line = rcode.action_line(request.name)
        except ValueError as exc:
            refusal = refusal or str(exc)
        if refusal:
            response.success, response.message = False, refusal
            return response
        reply, error = await self.await_reply(
            lambda resolve: self.rcode.play(line, resolve), self.poll_timeout + 2.0
        )
        if error is None and reply.error:
            error = f'the dog refused {line}: {reply.error}'
        response.success, response.message = error is None, error or f'sent {line}'
        return response

    def _stop(self, _request, response):
        refusal = self._motion_refusal()
        if not refusal:
            self.rcode.halt()
        response.success = not refusal
        response.message = refusal or 'STOP_WALK sent if the dog was walking or turning'
        return response

    async def _emergency_stop(self, _request, response):
        refusal = self._motion_refusal()
        if refusal:
            response.success, response.message = False, refusal
            return response
        reply, error = await self.await_reply(self.rcode.emergency_stop, self.poll_timeout + 2.0)
        response.success = error is None
        response.message = error or 'QUIT sent: the queue is empty, the posture undefined'
        return response

    def _publish_odometry(self):
        if self.rcode is None or self.rcode_off:
            return
        x, y, yaw, (vx, vy, wz), (xy, yaw_variance) = self.rcode.odometry()
        header = Header(stamp=self.get_clock().now().to_msg())
        self.base.publish(
            header,
            x,
            y,
            yaw,
            vx,
            wz,
            lateral=vy,
            pose_variances=planar_covariance(xy, yaw_variance),
        )

    def _on_poll(self, record):
        values = record.values
        stamp = record.received + self.clock_offset()
        joint_set = rcode.MODELS[self.model_name]
        read = [j.variable for j in joint_set if j.variable in values]
        if read:
            self.joints.update((name, values[name]) for name in read)
            if joint_set[-1].variable in values:  # the cycle's last poll: publish them all
                self._publish_joints(convert.header(stamp, ''))
        if 'Distance' in values:
            self.range_pub.publish(
                convert.range_msg(values['Distance'], convert.header(stamp, self.frame_ids['ir']))
            )
        if 'Batt_Rest' in values:
            self.battery_pub.publish(
                convert.battery_msg(
                    values['Batt_Rest'],
                    values.get('Batt_Temp'),
                    convert.header(stamp, self.frame_ids['base']),
                )
            )
        if values.get('Status') == STATUS_FALL:
            self.counts['falls'] += 1
            self.log.warning('fall', 'the dog got up after a fall (Status 1)')
            self._event(stamp, 'Status', 'fall', 1)
            self.rcode.play(rcode.line('SET', 'Status', 0), lambda _reply: None)
        for name in rcode.TOUCH_VARIABLES[self.model_name]:
            if values.get(name):
                self.touches[name] = self.touches.get(name, 0) + 1
                self._event(stamp, name, 'touched', values[name])
                # latched until cleared (§2.11.5): cleared, so the next poll sees a new touch
                self.rcode.play(rcode.line('SET', name, 0), lambda _reply: None)
        self.dog_values.update(values)

    def _event(self, stamp, sensor, event, value):
        self.event_pub.publish(
            SensorEvent(
                header=convert.header(stamp, self.frame_ids['base']),
                sensor=sensor,
                event=event,
                value=float(value),
            )
        )

    def _publish_joints(self, header):
        order = [j.variable for j in rcode.MODELS[self.model_name] if j.variable in self.joints]
        msg = JointState(
            header=header,
            name=order,
            position=[math.radians(self.joints[name]) for name in order],
        )
        self.joint_pub.publish(msg)
        self.model.move(msg)

    def _motion_status(self):
        if self.rcode is None or self.rcode_off:
            return OK, f'no motion: {self.rcode_off}', {}
        r = self.rcode
        planner = r.planner
        values = {
            'model': self.model_name,
            'walk or turn lines': planner.segments,
            'STOP_WALK lines': planner.stops,
            'motion lines refused by the dog': planner.errors,
            'last refusal': r.last_refusal,
            'Wait (queued actions)': planner.wait,
            'doing': 'nothing'
            if planner.current is None
            else (
                f'{planner.current.kind} {planner.current.gait} {planner.current.direction:+.0f}'
            ),
            'cmd_vel timeouts': r.motion.timeouts,
            'poll answers': r.poll_answers,
            'poll failures': r.poll_failures,
            'late answers': r.late_answers,
            'last poll failure': r.last_poll_failure,
            **{k: v for k, v in self.counts.items()},
            'touches': ', '.join(f'{k} {v}' for k, v in sorted(self.touches.items())) or 'none',
            'distance walked (m)': round(planner.odometry.distance, 3),
            'angle turned (rad)': round(planner.odometry.turned, 3),
        }
        if not r.connected:
            return ERROR, 'the RCODE link is down: the dog cannot be moved', values
        if r.poll_failures and not r.poll_answers:
            return WARN, f'the dog answers no PRINT poll ({r.last_poll_failure})', values
        if planner.errors:
            return WARN, f'the dog refused motion lines: {planner.last_error}', values
        if self.counts['falls']:
            return WARN, f'the dog fell {self.counts["falls"]} time(s) (Status 1)', values
        return OK, values['doing'], values

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
        elif isinstance(record, PollValues):
            self._on_poll(record)
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
