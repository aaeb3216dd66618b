"""ROS 2 node `p2os_driver`: a Pioneer 2 / PeopleBot / AmigoBot over serial or TCP.

    ros2 run p2os_driver p2os_driver --ros-args -p port:=tcp://localhost:8101

Motors start disabled (as on the robot): call the `enable_motors` service, or set
`enable_motors_on_start`. After a reconnect the driver restores what was last asked for
(motors, sonar, packet streams) unless `restore_state_on_reconnect` is false.
Topic, service and parameter tables: README.md.
"""

import math
import sys
import time

from nav_msgs.msg import Odometry as OdometryMsg
from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import BatteryState, JointState, LaserScan, PointCloud2, Range
from std_msgs.msg import Header
from std_srvs.srv import SetBool, Trigger

from legacy_robot_common.diagnostics import ERROR, OK, WARN, RateMeter
from legacy_robot_common.driver_node import LATCHED, DriverNode, run_node
from legacy_robot_common.errors import ConnectionLost
from legacy_robot_common.messages import point_cloud_msg, uint8_array
from legacy_robot_common.mobile_base import MobileBase, planar_covariance
from legacy_robot_common.params import ParameterError, declare_table
from legacy_robot_common.robot_model import RobotStatePublisher
from legacy_robot_interfaces.msg import (
    BumperState,
    DigitalAnalogIO,
    EncoderCounts,
    GripperState,
    MotorState,
    RobotInfo,
    SerialBytes,
    SonarArray,
)
from legacy_robot_interfaces.srv import (
    BytesCommand,
    DigitalOutput,
    GripperCommand,
    Playlist,
    SayTones,
    SetPose,
    SetValue,
)

from . import conversions as convert
from . import description
from . import protocol as p
from .client import (
    AUX_IN_MAX,
    AUX_OUT_MAX,
    DEFAULT_BAUD_CYCLE,
    STREAMS,
    AuxBytes,
    CommandRefused,
    Connected,
    Encoders,
    P2osClient,
    Settings,
    unknown_model_text,
)
from .models import FACTOR_NAMES, MODELS, model_key
from .odometry import Odometry
from .parameters import ACCELERATIONS, PARAMETERS

# s: a cmd_vel this recent to a motors-off SIP makes diagnostics WARN
CMD_VEL_DISABLED_WINDOW = 2.0
# Odometry variances (parameters pose/twist_covariance_diagonal): estimates for a Pioneer's
# dead reckoning on a hard floor (encoder resolution is far finer; wheel slip dominates):
# pose σ 0.1 m and 0.1 rad after typical runs, speed σ 0.02 m/s and 0.05 rad/s.
POSE_COVARIANCE = planar_covariance(0.01, 0.01)
TWIST_COVARIANCE = planar_covariance(0.0004, 0.0025)


class P2osNode(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('p2os_driver', hardware_id='P2OS robot', **kwargs)
        self._declare_parameters()
        self.name_hardware(self.port)
        self.client = P2osClient(self._settings(), logger=self.get_logger())
        self.client.startup_state = self._startup_state
        self.attach_client(self.client, link_name='p2os')
        self.diagnostics.add_task('robot', self._robot_status)
        self._create_publishers()
        self._create_services()
        self.add_on_set_parameters_callback(self._on_parameters)
        self.identity = None
        self.last_config = None
        self.has_gripper = None  # None until CONFIGpac or GRIPPERpac says
        self.sessions = 0
        self.cmd_vel_while_disabled = None  # monotonic time of the last one
        self.odometry = None
        self.sonar_ranges = []
        self.last_sip = None
        self.sip_rate = RateMeter()
        self.truth = None  # the last SIMSTAT (a simulator's true pose)
        self.laser_scans = 0
        self._last_state = {}  # topic → (value, time) last published
        self.begin()

    # ---- parameters ---------------------------------------------------------------
    def _declare_parameters(self):
        v = declare_table(self, PARAMETERS)
        values = vars(v)
        self.port, self.baud, self.cycle_baud = v.port, v.baud, v.cycle_baud
        self.read_timeout, self.pulse_interval = v.read_timeout, v.pulse_interval
        self.sync_attempts, self.model_name = v.sync_attempts, v.model
        if self.model_name and model_key(self.model_name) not in MODELS:
            raise ParameterError(
                f"p2os_driver: parameter 'model' is {self.model_name!r}; "
                f'expected one of {", ".join(m.subclass for m in MODELS.values())}'
            )
        self.factors = {name: values[f'{name}_factor'] for name in FACTOR_NAMES}
        self.gripper_high = v.sip_gripper_in_high_byte
        self.sonar_prefix = self.frames.prefixed(v.sonar_frame_prefix)
        self.max_linear, self.max_angular = v.max_linear_speed, v.max_angular_speed
        self.wheel_mode, self.cmd_vel_timeout = v.wheel_mode, v.cmd_vel_timeout
        self.wheel_radius = v.wheel_radius
        self.ticks_per_revolution = v.wheel_ticks_per_revolution
        self.repeat_period = v.command_repeat_period
        self.enable_on_start = v.enable_motors_on_start
        self.restore_state = v.restore_state_on_reconnect
        self.simulator = v.simulator
        self.simulator_laser_compat = v.simulator_laser_compat
        self.laser = v.laser
        if v.laser_mount is not None and len(v.laser_mount) != 3:
            raise ParameterError(f'laser_mount takes [x, y, yaw], not {list(v.laser_mount)}')
        self.laser_scan = (v.laser_start, v.laser_end, v.laser_increment)
        self.laser_ideal = v.laser_spacing == 'ideal'
        self.laser_range_max, self.truth_frame = v.laser_range_max, v.ground_truth_frame_id
        self.laser_frame = self.frames.declare('laser', 'laser', 'frame of the laser scans')
        self.sonar_cone = convert.SonarCone(
            v.sonar_min_range, v.sonar_max_range, v.sonar_field_of_view
        )
        self.bump_stall = v.bump_stall
        self.streams = {kind: values[f'{kind}_stream'] for kind in STREAMS}
        # what the parameters ask for at start, and what the user asked for last (services,
        # run-time parameters): each new session sends one of them (restore_state_on_reconnect)
        self.start_state = {'motors': self.enable_on_start, 'sonar': v.use_sonar, **self.streams}
        self.wanted = dict(self.start_state)
        self.accelerations = {row.name: values[row.name] for row in ACCELERATIONS}
        self.battery_warn, self.battery_error = v.battery_warn_voltage, v.battery_error_voltage
        self.state_period, self.request_timeout = v.state_period, v.request_timeout
        # MobileBase and RobotStatePublisher declare the cmd_vel, odometry and model parameters
        self.base = MobileBase(
            self, self._on_cmd_vel, lambda: self.cmd_vel_timeout, POSE_COVARIANCE, TWIST_COVARIANCE
        )
        self.base_frame = self.base.base_frame
        self.model = RobotStatePublisher(self)

    def _settings(self):
        try:
            return Settings(
                port=self.port,
                baud=self.baud,
                baud_cycle=_baud_cycle(self.baud) if self.cycle_baud else (),
                read_timeout=self.read_timeout,
                pulse_interval=self.pulse_interval,
                sync_attempts=self.sync_attempts,
                model=self.model_name,
                gripper_in_high_byte=self.gripper_high,
                factor_overrides=self.factors,
                wheel_mode=self.wheel_mode,
                simulator=self.simulator,
                simulator_laser_compat=self.simulator_laser_compat,
                accelerations={  # the robot's units: mm/s², rad/s²
                    name: value * 1000.0 if name.startswith('linear') else value
                    for name, value in self.accelerations.items()
                },
                bump_stall=self.bump_stall,
                motion_timeout=self.cmd_vel_timeout,
                repeat_period=self.repeat_period,
                laser=self.laser,
                laser_scan=self.laser_scan,
            )
        except ValueError as exc:
            raise ParameterError(f'p2os_driver: {exc}') from None

    def _on_parameters(self, parameters):
        for parameter in parameters:
            if parameter.name == 'use_sonar':
                self.wanted['sonar'] = bool(parameter.value)
                self._send(lambda v=parameter.value: self.client.set_sonar(v))
            elif parameter.name == 'cmd_vel_timeout':
                self.cmd_vel_timeout = self.client.motion.timeout = parameter.value
            elif parameter.name == 'max_linear_speed':
                self.max_linear = parameter.value
            elif parameter.name == 'max_angular_speed':
                self.max_angular = parameter.value
        return SetParametersResult(successful=True)

    def _startup_state(self):
        """What a new session asks for (link thread, once per session): the wanted state, or
        the start values when restore_state_on_reconnect is false."""
        self.sessions += 1
        return self.wanted if self.restore_state or self.sessions == 1 else self.start_state

    # ---- publishers and services --------------------------------------------------
    def _create_publishers(self):
        pub = self.publisher
        self.battery_pub = pub(BatteryState, 'battery')
        self.motor_pub = pub(MotorState, 'motor_state')
        self.bumper_pub = pub(BumperState, 'bumpers')
        self.sonar_pub = pub(SonarArray, 'sonar')
        self.range_pub = pub(Range, 'sonar/ranges')  # one message per new reading, frame sonar_<n>
        self.sonar_cloud_pub = pub(PointCloud2, 'sonar/points')
        self.encoder_pub = pub(EncoderCounts, 'encoders')
        self.joint_pub = pub(JointState, 'joint_states')  # wheels, from the encoder stream
        self.gripper_pub = pub(GripperState, 'gripper_state')
        self.io_pub = pub(DigitalAnalogIO, 'io')
        self.aux_pub = pub(SerialBytes, 'aux_serial')
        self.info_pub = pub(RobotInfo, 'robot_info', LATCHED)
        self.scan_pub = pub(LaserScan, 'scan', 5)
        self.truth_pub = pub(OdometryMsg, 'ground_truth')

    def _create_services(self):
        group = self.callback_group
        c = self.client
        for name, handler in (
            ('enable_motors', self._motors_handler(True)),
            ('disable_motors', self._motors_handler(False)),
            ('stop', self._command_handler(lambda _: c.stop_motion())),
            ('e_stop', self._command_handler(lambda _: c.stop_motion(emergency=True))),
            ('reset_odometry', self._reset_odometry),
            ('io_request', self._io_request),
        ):
            self.create_service(Trigger, name, handler, callback_group=group)
        for kind in STREAMS:
            self.create_service(
                SetBool, f'set_{kind}_stream', self._stream_handler(kind), callback_group=group
            )
        self.create_service(SetBool, 'set_sonar', self._sonar_handler, callback_group=group)
        for name, command in (
            ('play_sound', c.play_sound),
            ('bump_stall', c.set_bump_stall),
            ('select_analog_port', c.select_analog_port),
        ):
            self.create_service(
                SetValue,
                name,
                self._command_handler(lambda r, f=command: f(r.value)),
                callback_group=group,
            )
        for kind, name, command in (
            (GripperCommand, 'gripper', lambda r: c.gripper(r.command, r.value)),
            (DigitalOutput, 'digital_output', lambda r: c.digital_output(r.mask, r.values)),
            (SayTones, 'say', lambda r: c.say(r.durations, r.tones)),
        ):
            self.create_service(kind, name, self._command_handler(command), callback_group=group)
        self.create_service(Playlist, 'playlist', self._playlist, callback_group=group)
        self.create_service(SetPose, 'set_pose', self._set_pose, callback_group=group)
        self.create_service(BytesCommand, 'aux_serial', self._aux_serial, callback_group=group)

    # ---- service handlers -----------------------------------------------------------
    def _send(self, command, response=None):
        """Run one client command; fill response.success/message; True when it went out."""
        try:
            name = command()
        except (ConnectionLost, ValueError, TypeError) as exc:
            if response is not None:
                response.success, response.message = False, str(exc)
            return False
        if response is not None:
            response.success, response.message = True, f'{name} sent'
        return True

    def _command_handler(self, command):
        """A service that runs command(request) on the client and answers what happened."""

        def handle(request, response):
            self._send(lambda: command(request), response)
            return response

        return handle

    def _motors_handler(self, enable):
        def handle(_request, response):
            if self._send(lambda: self.client.enable_motors(enable), response):
                self.wanted['motors'] = enable
            return response

        return handle

    def _set_pose(self, request, response):
        """A simulator's true pose (ground_truth frame; fields not set keep the current)."""
        if not self.client.is_simulator:
            response.success, response.message = False, 'set_pose needs a simulator'
            return response
        wanted = (request.set_x, request.set_y, request.set_theta)
        if not all(wanted) and self.truth is None:
            response.success = False
            response.message = 'no ground truth yet: give x, y and theta'
            return response
        t = self.truth
        x = request.x * 1000.0 if request.set_x else t.true_x
        y = request.y * 1000.0 if request.set_y else t.true_y
        th = math.degrees(request.theta) if request.set_theta else t.true_th
        self._send(lambda: self.client.set_true_pose(x, y, th), response)
        return response

    def _reset_odometry(self, _request, response):
        if self._send(self.client.reset_odometry, response) and self.odometry is not None:
            self.odometry.zero()
        return response

    def _sonar_handler(self, request, response):
        if self._send(lambda: self.client.set_sonar(request.data), response):
            self.wanted['sonar'] = request.data
        return response

    def _stream_handler(self, kind):
        """On: success only once the first packet arrives (a robot or simulator may ignore the
        request); off: the stop request sent."""

        async def handle(request, response):
            if not request.data:
                if self._send(lambda: self.client.stop_stream(kind), response):
                    self.wanted[kind] = False
                return response
            reply, error = await self._ask(
                lambda resolve: self.client.request_stream(kind, resolve)
            )
            response.success = error is None
            response.message = error or f'{kind} stream running'
            self.wanted[kind] = response.success
            return response

        return handle

    async def _ask(self, start):
        """start(resolve) asks the client for a reply (returning the awaited packet's name);
        (record, None) or (None, error message).

        No reply within request_timeout means the robot ignored the command: firmware without
        it, or a simulator that does not support it."""
        future, resolve = self.reply_future(self.request_timeout)
        try:
            awaited = start(resolve)
        except (ConnectionLost, CommandRefused) as exc:
            resolve(exc)  # ends the wait's timer
            return None, str(exc)
        reply = await future
        if isinstance(reply, TimeoutError):
            return None, (
                f'not supported by this robot / firmware: no {awaited} packet '
                f'within {self.request_timeout:.1f} s'
            )
        if isinstance(reply, Exception):
            return None, str(reply)
        return reply, None

    async def _playlist(self, _request, response):
        entries, error = await self._ask(self.client.request_playlist)
        response.success, response.message = error is None, error or f'{len(entries or [])} sounds'
        for name, position, length in entries or []:
            response.names.append(name)
            response.positions.append(position)
            response.lengths.append(length)
        return response

    async def _aux_serial(self, request, response):
        """Write data out of AUX, then read reply_size bytes from it; no data and 0 = flush."""
        data = bytes(request.data)
        if len(data) > AUX_OUT_MAX or request.reply_size > AUX_IN_MAX:
            response.success = False
            response.message = f'at most {AUX_OUT_MAX} bytes out and {AUX_IN_MAX} back'
            return response
        if data and not self._send(lambda: self.client.aux_write(data), response):
            return response
        if request.reply_size == 0:
            if not data:
                self._send(self.client.aux_flush, response)
            return response
        reply, error = await self._ask(
            lambda resolve: self.client.request_aux(request.reply_size, resolve)
        )
        response.success, response.message = error is None, error or f'{len(reply.data)} bytes'
        if reply is not None:
            response.reply = uint8_array(reply.data)
        return response

    async def _io_request(self, _request, response):
        reply, error = await self._ask(self.client.request_io)
        response.success = error is None
        response.message = error or (
            f'digital in {reply.digital_inputs.hex()}, out '
            f'{reply.digital_outputs.hex()}, analog {reply.analog}'
        )
        return response

    def stop_robot(self):
        self.base.stop()

    # ---- cmd_vel ------------------------------------------------------------------------
    def _on_cmd_vel(self, linear, angular):
        """cmd_vel → the client's drive(); it resends it and stops after cmd_vel_timeout."""
        linear = max(-self.max_linear, min(self.max_linear, linear))
        angular = max(-self.max_angular, min(self.max_angular, angular))
        if self.last_sip is not None and not self.last_sip.motors_enabled and (linear or angular):
            self.cmd_vel_while_disabled = time.monotonic()
            self.log.warning(
                'cmd-vel-disabled',
                'cmd_vel has no effect: the motors are disabled (call the enable_motors service)',
            )
        try:
            self.client.drive(linear * 1000.0, angular)
        except ConnectionLost:
            self.log.warning('cmd-vel-offline', 'cmd_vel ignored: not connected to the robot')

    # ---- records from the robot --------------------------------------------------------
    def handle_record(self, record):
        handler = {
            p.StandardSip: self._publish_sip,
            Encoders: self._publish_encoders,
            p.GripperPacket: self._publish_gripper_packet,
            p.IoPacket: lambda r: self.io_pub.publish(convert.io_packet_msg(r, self._header())),
            AuxBytes: lambda r: self.aux_pub.publish(convert.aux_msg(r, self._header())),
            Connected: self._on_connected,
            p.ConfigPacket: self._publish_info,
            p.LaserPacket: self._publish_scan,
            p.SimStat: self._publish_truth,
        }.get(type(record))
        if handler is not None:
            handler(record)

    def _publish_encoders(self, encoders):
        header = self._header()
        self.encoder_pub.publish(convert.encoders_msg(encoders, header))
        if self.identity is not None:
            joints = convert.wheel_joints_msg(
                self.identity.model, encoders, self.ticks_per_revolution, header
            )
            self.joint_pub.publish(joints)
            self.model.move(joints)

    def _publish_gripper_packet(self, packet):
        self.has_gripper = packet.gripper_type != 0
        if self.has_gripper:
            self.gripper_pub.publish(convert.gripper_state_msg(packet, self._header()))

    def _publish_scan(self, scan):
        self.laser_scans += 1
        settings = (*self.laser_scan, self.laser_ideal)
        msg = convert.laser_scan_msg(
            scan, settings, self._header(self.laser_frame), self.laser_range_max
        )
        self.scan_pub.publish(msg)

    def _publish_truth(self, stat):
        self.truth = stat
        header = Header(stamp=self.get_clock().now().to_msg(), frame_id=self.truth_frame)
        self.truth_pub.publish(convert.ground_truth_msg(stat, header, self.base_frame))

    def _header(self, frame_id=''):
        return Header(stamp=self.get_clock().now().to_msg(), frame_id=frame_id or self.base_frame)

    def _on_connected(self, record):
        self.identity = record.identity
        self.has_gripper = convert.config_has_gripper(record.config)
        if self.client.is_simulator and self.cmd_vel_timeout == 0:
            self.get_logger().warning(
                "p2os: a simulator's watchdog does not stop the robot: "
                'with cmd_vel_timeout 0 it drives on forever'
            )
        model = record.identity.model
        if self.odometry is None or self.odometry.model != model:
            self.odometry = Odometry(model)
        else:
            self.odometry.resume()
        self.sonar_ranges = [math.nan] * len(model.sonar)
        self.sonar_frames = [f'{self.sonar_prefix}{i}' for i in range(len(model.sonar))]
        self.model.describe(
            description.from_parameters(
                self.parameter_values(), model, bool(self.has_gripper), self.client.laser_wanted
            )
        )
        self._publish_info(record.config)

    def on_activate(self, state):
        result = super().on_activate(state)
        self._publish_info(self.last_config)  # latched: what came in while inactive
        return result

    def _publish_info(self, config):
        self.last_config = config
        if self.identity is not None and config is not None:
            self.info_pub.publish(convert.robot_info_msg(self.identity, config, self._header()))

    def _publish_sip(self, sip):
        now = time.monotonic()
        self.last_sip = sip
        self.sip_rate.tick()
        header = self._header()
        self._publish_odometry(sip, header)
        self._publish_sonar(sip, header)
        # Slow-changing state: on change, else once per state_period (saves CPU at 10-20 Hz).
        if self._due('battery', sip.battery_decivolts, now):
            self.battery_pub.publish(convert.battery_msg(sip, header))
        if self._due('motors', (sip.motors_enabled, sip.left_stall, sip.right_stall), now):
            self.motor_pub.publish(convert.motor_state_msg(sip, header))
        if self._due('bumpers', sip.bumpers(), now):
            self.bumper_pub.publish(convert.bumper_msg(sip, self.identity.model, header))
        if self.has_gripper and self._due('gripper', sip.gripper_state, now):
            self.gripper_pub.publish(convert.gripper_state_msg(sip, header))
        io = (sip.digital_inputs, sip.digital_outputs, sip.analog, sip.analog_port)
        if self._due('io', io, now):
            self.io_pub.publish(convert.sip_io_msg(sip, header))

    def _due(self, topic, value, now):
        """True when value changed since topic was last published, or state_period has passed."""
        last = self._last_state.get(topic)
        if last is not None and last[0] == value and now - last[1] < self.state_period:
            return False
        self._last_state[topic] = (value, now)
        return True

    def _publish_odometry(self, sip, header):
        o = self.odometry
        o.update(sip)
        self.base.publish(Header(stamp=header.stamp), o.x, o.y, o.yaw, o.linear, o.angular)

    def _publish_sonar(self, sip, header):
        model = self.identity.model
        readings, updated, strangers = convert.update_sonar(sip, model, self.sonar_ranges)
        for disc in strangers:
            self.log.warning('sonar-index', f'sonar disc {disc} is not on a {model.subclass}')
        # the per-reading and point-cloud forms cost CPU at every SIP: built only when used
        if self.range_pub.get_subscription_count() > 0:
            for disc, metres in readings:
                self.range_pub.publish(
                    convert.sonar_range_msg(
                        header.stamp, self.sonar_frames[disc], metres, self.sonar_cone
                    )
                )
        if not sip.sonar:
            return
        self.sonar_pub.publish(
            convert.sonar_array_msg(
                header, self.sonar_frames, self.sonar_ranges, updated, self.sonar_cone
            )
        )
        if self.sonar_cloud_pub.get_subscription_count() > 0:
            cone = self.sonar_cone
            height = description.sonar_height(model, self.base.base_height)
            points = convert.sonar_points(
                model, self.sonar_ranges, updated, cone.min_range, cone.max_range, height
            )
            self.sonar_cloud_pub.publish(point_cloud_msg(points, header))

    # ---- diagnostics ------------------------------------------------------------------
    def _robot_status(self):
        if self.identity is None or self.last_sip is None:
            return ERROR, 'no robot yet', {'port': self.port}
        sip, model = self.last_sip, self.identity.model
        volts = convert.sip_voltage(sip)
        values = {
            'name': self.identity.name,
            'model': f'{model.subclass} ({model.description})',
            'SIP rate Hz': self.sip_rate.rate,
            'battery V': volts,
            'motors enabled': sip.motors_enabled,
            'left stall': sip.left_stall,
            'right stall': sip.right_stall,
            'sonar on': sip.sonar_enabled,
            'ignored packet types': self.client.ignored_packets,
            'odometry distance m': self.odometry.distance,
        }
        values.update(
            {
                'simulator': self.client.is_simulator,
                'laser': 'on' if self.client.laser_wanted else 'off',
                'laser scans': self.laser_scans,
                'laser partial scans dropped': self.client.laser_assembler.dropped,
                'has gripper': 'unknown' if self.has_gripper is None else self.has_gripper,
                'wanted': ', '.join(k for k, on in self.wanted.items() if on) or 'nothing',
                'restore state on reconnect': self.restore_state,
                'sessions': self.sessions,
            }
        )
        if not self.identity.known_model:
            return ERROR, unknown_model_text(self.identity.subclass, model), values
        if volts < self.battery_error:
            return ERROR, f'battery low: {volts:.1f} V', values
        if sip.left_stall or sip.right_stall:
            return WARN, 'wheel stalled', values
        if volts < self.battery_warn:
            return WARN, f'battery getting low: {volts:.1f} V', values
        motors_warning = self._motors_warning(sip)
        if motors_warning:
            return WARN, motors_warning, values
        if self.client.is_simulator and self.cmd_vel_timeout == 0:
            return (
                WARN,
                'simulator with cmd_vel_timeout 0: its watchdog never stops the robot',
                values,
            )
        return OK, 'motors enabled' if sip.motors_enabled else 'motors disabled', values

    def _motors_warning(self, sip):
        if sip.motors_enabled:
            return None
        recent = (
            self.cmd_vel_while_disabled is not None
            and time.monotonic() - self.cmd_vel_while_disabled < CMD_VEL_DISABLED_WINDOW
        )
        if recent:
            return 'cmd_vel arrives but the motors are disabled: call enable_motors'
        if self.wanted['motors']:
            reason = (
                'not restored after a reconnect (restore_state_on_reconnect is false)'
                if not self.restore_state and self.sessions > 1
                else 'turned off by the robot'
            )
            return f'motors disabled although enable_motors was asked for: {reason}'
        return None


def _baud_cycle(first):
    return (first,) + tuple(b for b in DEFAULT_BAUD_CYCLE if b != first)


def main(args=None):
    from .plugin import PLUGIN  # the plugin names this node: imported at run time

    return run_node(P2osNode, args, plugins=(PLUGIN,))


if __name__ == '__main__':
    sys.exit(main())
