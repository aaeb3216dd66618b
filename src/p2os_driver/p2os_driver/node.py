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

from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import BatteryState, JointState, PointCloud2, Range
from std_msgs.msg import Header
from std_srvs.srv import SetBool, Trigger

from legacy_robot_common.diagnostics import ERROR, OK, WARN, RateMeter
from legacy_robot_common.driver_node import LATCHED, DriverNode, run_node
from legacy_robot_common.errors import ConnectionLost
from legacy_robot_common.messages import point_cloud_msg, uint8_array
from legacy_robot_common.mobile_base import MobileBase, planar_covariance
from legacy_robot_common.params import ParameterError, declare
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
    SetValue,
)

from . import conversions as convert
from . import description
from . import protocol as p
from .client import (
    DEFAULT_BAUD_CYCLE,
    AuxBytes,
    Connected,
    Encoders,
    P2osClient,
    Settings,
    unknown_model_text,
)
from .description import DEFAULT_TICKS_PER_REVOLUTION
from .models import FACTOR_NAMES, MODELS, model_key
from .odometry import Odometry

C = p.Command
# the packet streams: their parameter / wanted-state name, command and reply packet type
# BUMP_STALL #44's argument: which bumpers stall the motors (§2.5)
BUMP_STALL_VALUES = {0: 'off', 1: 'front', 2: 'rear', 3: 'either'}
STREAMS = {
    'encoder': (C.ENCODER, p.PacketType.ENCODER),
    'gripper': (C.GRIPREQUEST, p.PacketType.GRIPPER),
    'io': (C.IOREQUEST, p.PacketType.IO),
}
CMD_VEL_DISABLED_WINDOW = (
    2.0  # s: a cmd_vel this recent to a motors-off SIP makes diagnostics WARN
)
RUNTIME_PARAMETERS = ('use_sonar', 'cmd_vel_timeout', 'max_linear_speed', 'max_angular_speed')
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
        self.client.startup_commands = self._startup_commands
        self.client.motion_timeout = self.cmd_vel_timeout
        self.client.repeat_period = self.repeat_period
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
        self._last_state = {}  # topic → (value, time) last published
        self.begin()

    # ---- parameters ---------------------------------------------------------------
    def _declare_parameters(self):
        d = lambda *a, **k: declare(self, *a, **k)  # noqa: E731 (short alias for the long list)
        self.port = d(
            'port',
            '/dev/ttyS0',
            'serial device, pyserial URL, or tcp://host:port '
            '(MobileSim-style simulators: tcp://localhost:8101)',
            read_only=True,
        )
        self.baud = d(
            'baud',
            9600,
            'serial baud rate (ignored on TCP)',
            read_only=True,
            choices=DEFAULT_BAUD_CYCLE,
        )
        self.cycle_baud = d(
            'cycle_baud',
            False,
            'on a silent serial port try 9600, 38400, 19200, '
            '115200, 57600 in turn, starting with baud',
            read_only=True,
        )
        self.read_timeout = d(
            'read_timeout',
            2.0,
            'seconds without a SIP before reconnecting',
            minimum=0.3,
            maximum=60.0,
            read_only=True,
        )
        self.pulse_interval = d(
            'pulse_interval',
            0.5,
            'PULSE after this many idle seconds (the robot stops after 2 s of silence)',
            minimum=0.05,
            maximum=1.9,
            read_only=True,
        )
        self.sync_attempts = d(
            'sync_attempts',
            4,
            'SYNC sequences per connection attempt',
            minimum=1,
            maximum=20,
            read_only=True,
        )
        self.model_name = d(
            'model',
            '',
            'force a robot model instead of the SYNC2 subclass '
            '(any case; laser suffixes such as -lms1xx are ignored)',
            read_only=True,
        )
        if self.model_name and model_key(self.model_name) not in MODELS:
            raise ParameterError(
                f"p2os_driver: parameter 'model' is {self.model_name!r}; "
                f'expected one of {", ".join(m.subclass for m in MODELS.values())}'
            )
        self.factors = {
            name: d(
                f'{name}_factor',
                0.0,
                f"override the model's {name} factor (0 = use the model table)",
                minimum=0.0,
                read_only=True,
            )
            for name in FACTOR_NAMES
        }
        self.gripper_high = d(
            'sip_gripper_in_high_byte',
            True,
            'P2OS SIP layout (gripper state in the high byte); false for ARCOS / AMRISim',
            read_only=True,
        )
        self.sonar_prefix = self.frames.prefixed(
            d('sonar_frame_prefix', 'sonar_', 'sonar frames: prefix + disc number', read_only=True)
        )
        self.max_linear = d(
            'max_linear_speed', 1.0, 'cmd_vel clamp, m/s', minimum=0.0, maximum=2.2
        )
        self.max_angular = d(
            'max_angular_speed', 1.75, 'cmd_vel clamp, rad/s', minimum=0.0, maximum=6.3
        )
        self.wheel_mode = d(
            'wheel_mode',
            False,
            'send cmd_vel as VEL2 wheel speeds instead of VEL + RVEL',
            read_only=True,
        )
        self.cmd_vel_timeout = d(
            'cmd_vel_timeout',
            0.5,
            'stop when cmd_vel stops for this long, '
            'and ignore stamped commands older than this, s (0 = never)',
            minimum=0.0,
            maximum=60.0,
        )
        self.base = MobileBase(
            self, self._on_cmd_vel, lambda: self.cmd_vel_timeout, POSE_COVARIANCE, TWIST_COVARIANCE
        )
        self.base_frame = self.base.base_frame
        self.model = RobotStatePublisher(self)
        self.wheel_radius = d(
            'wheel_radius',
            0.0,
            "m, for the robot model and the wheel joints (0 = the model's estimate, README)",
            minimum=0.0,
            read_only=True,
        )
        self.ticks_per_revolution = d(
            'wheel_ticks_per_revolution',
            float(DEFAULT_TICKS_PER_REVOLUTION),
            'encoder counts per wheel turn (wheel joints from '
            "the encoder stream; a guess: a P3-DX's)",
            minimum=1.0,
            read_only=True,
        )
        self.repeat_period = d(
            'command_repeat_period',
            0.5,
            'resend the motion command this often, s',
            minimum=0.05,
            maximum=1.9,
            read_only=True,
        )
        self.enable_on_start = d(
            'enable_motors_on_start',
            False,
            'enable the motors after connecting (the robot starts with them off)',
            read_only=True,
        )
        self.restore_state = d(
            'restore_state_on_reconnect',
            True,
            'after a reconnect, restore the '
            'motors, sonar and packet streams last asked for (false: the start '
            'values of enable_motors_on_start, use_sonar, *_stream)',
            read_only=True,
        )
        self.simulator = d(
            'simulator',
            'auto',
            'auto: a robot named AMRISim or MobileSim is a simulator; true; false',
            choices=('auto', 'true', 'false'),
            read_only=True,
        )
        self.simulator_laser_compat = d(
            'simulator_laser_compat',
            True,
            'the simulator reads '
            '#35-#37 as laser commands (AMRISim without '
            '--no-srisim-laser-compat): never send them',
            read_only=True,
        )
        use_sonar = d('use_sonar', True, 'sonar on or off (can be changed at run time)')
        self.sonar_min = d('sonar_min_range', 0.1, 'm', minimum=0.0, read_only=True)
        self.sonar_max = d('sonar_max_range', 5.0, 'm', minimum=0.1, read_only=True)
        self.sonar_fov = d(
            'sonar_field_of_view',
            0.5236,
            'full cone angle, rad',
            minimum=0.01,
            maximum=3.14,
            read_only=True,
        )
        self.bump_stall = d(
            'bump_stall',
            -1,
            "BUMP_STALL at start: -1 keep the robot's, 0 off, 1 front, 2 rear, 3 either",
            minimum=-1,
            maximum=3,
            read_only=True,
        )
        self.streams = {
            kind: d(
                f'{kind}_stream',
                False,
                f'request the {kind} packet stream at start',
                read_only=True,
            )
            for kind in STREAMS
        }
        # what the parameters ask for at start, and what the user asked for last (services,
        # run-time parameters): each new session sends one of them (restore_state_on_reconnect)
        self.start_state = {'motors': self.enable_on_start, 'sonar': use_sonar, **self.streams}
        self.wanted = dict(self.start_state)
        self.accelerations = {
            name: d(name, 0.0, f"{unit}; 0 keeps the robot's setting", minimum=0.0, read_only=True)
            for name, unit in (
                ('linear_acceleration', 'm/s²'),
                ('linear_deceleration', 'm/s²'),
                ('angular_acceleration', 'rad/s²'),
                ('angular_deceleration', 'rad/s²'),
            )
        }
        self.battery_warn = d('battery_warn_voltage', 11.75, 'V', minimum=0.0, read_only=True)
        self.battery_error = d('battery_error_voltage', 11.0, 'V', minimum=0.0, read_only=True)
        self.state_period = d(
            'state_period',
            1.0,
            'battery, motor_state, bumpers, io and the '
            'SIP gripper state: published on change and at least this often, s',
            minimum=0.0,
            maximum=60.0,
            read_only=True,
        )
        self.request_timeout = d(
            'request_timeout',
            2.0,
            'service wait for a robot reply, s',
            minimum=0.1,
            maximum=60.0,
            read_only=True,
        )

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
            )
        except ValueError as exc:
            raise ParameterError(f'p2os_driver: {exc}') from None

    def _on_parameters(self, parameters):
        for parameter in parameters:
            if parameter.name == 'use_sonar':
                self.wanted['sonar'] = bool(parameter.value)
                self._try_command(C.SONAR, int(parameter.value))
            elif parameter.name == 'cmd_vel_timeout':
                self.cmd_vel_timeout = self.client.motion_timeout = parameter.value
            elif parameter.name == 'max_linear_speed':
                self.max_linear = parameter.value
            elif parameter.name == 'max_angular_speed':
                self.max_angular = parameter.value
        return SetParametersResult(successful=True)

    def _startup_commands(self):
        """Packets sent after OPEN + PULSE + CONFIG (the ROS p2os order, §3.3); runs in the link
        thread once per session. A new session restores the wanted state (or the start values)."""
        self.sessions += 1
        state = self.wanted if self.restore_state or self.sessions == 1 else self.start_state
        packets = [p.encode_command(C.SONAR, int(state['sonar']))]
        scale = {'linear': 1000.0, 'angular': 180.0 / math.pi}
        for name, value in self.accelerations.items():
            if value > 0:  # deceleration is a negative argument (§2.5, checklist 17)
                number = C.SETA if name.startswith('linear') else C.SETRA
                sign = -1 if name.endswith('deceleration') else 1
                packets.append(
                    p.encode_command(number, sign * int(round(value * scale[name.split('_')[0]])))
                )
        if self.bump_stall >= 0:
            packets.append(p.encode_command(C.BUMP_STALL, self.bump_stall))
        for kind, (number, _) in STREAMS.items():
            if state[kind] and not self._refusal(number, self.client.identity):
                packets.append(p.encode_command(number, 2))
        packets.append(p.encode_command(C.ENABLE, int(state['motors'])))
        return packets

    # ---- simulators (spec §5.2) ----------------------------------------------------
    def _is_simulator(self, identity):
        if self.simulator == 'auto':
            return identity is not None and identity.name in p.SIMULATOR_NAMES
        return self.simulator == 'true'

    def _refusal(self, number, identity):
        """Why a command must not be sent to this robot, or None."""
        if (
            number in p.SIMULATOR_LASER_COMMANDS
            and self.simulator_laser_compat
            and self._is_simulator(identity)
        ):
            return (
                f'{C(number).name} (#{int(number)}) not sent: the simulator reads #35-#37 as '
                'laser commands; start AMRISim with --no-srisim-laser-compat and set '
                'simulator_laser_compat:=false'
            )
        return None

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

    def _create_services(self):
        group = self.callback_group
        for name, handler in (
            ('enable_motors', self._motors_handler(True)),
            ('disable_motors', self._motors_handler(False)),
            ('stop', self._stop_handler(C.STOP)),
            ('e_stop', self._stop_handler(C.E_STOP)),
            ('reset_odometry', self._reset_odometry),
        ):
            self.create_service(Trigger, name, handler, callback_group=group)
        for kind in STREAMS:
            self.create_service(
                SetBool, f'set_{kind}_stream', self._stream_handler(kind), callback_group=group
            )
        self.create_service(SetBool, 'set_sonar', self._sonar_handler, callback_group=group)
        for name, number, valid in (
            ('play_sound', C.SOUND, None),
            ('bump_stall', C.BUMP_STALL, BUMP_STALL_VALUES),
            ('select_analog_port', C.ADSEL, None),
        ):
            self.create_service(
                SetValue, name, self._value_handler(name, number, valid), callback_group=group
            )
        self.create_service(GripperCommand, 'gripper', self._gripper, callback_group=group)
        self.create_service(
            DigitalOutput, 'digital_output', self._digital_output, callback_group=group
        )
        self.create_service(SayTones, 'say', self._say, callback_group=group)
        self.create_service(Playlist, 'playlist', self._playlist, callback_group=group)
        self.create_service(BytesCommand, 'aux_serial', self._aux_serial, callback_group=group)
        self.create_service(Trigger, 'io_request', self._io_request, callback_group=group)

    # ---- service handlers -----------------------------------------------------------
    def _send(self, make_packet, label, response=None):
        """Encode and send one command; fill response.success/message; True when it went out."""
        try:
            self.client.send(make_packet())
        except (ConnectionLost, ValueError, TypeError) as exc:
            if response is not None:
                response.success, response.message = False, str(exc)
            return False
        if response is not None:
            response.success, response.message = True, f'{label} sent'
        return True

    def _try_command(self, number, argument=None, response=None):
        refusal = self._refusal(number, self.identity)
        if refusal:
            if response is not None:
                response.success, response.message = False, refusal
            return False
        return self._send(lambda: p.encode_command(number, argument), C(number).name, response)

    def _motors_handler(self, enable):
        def handle(_request, response):
            if self._try_command(C.ENABLE, int(enable), response):
                self.wanted['motors'] = enable
            return response

        return handle

    def _stop_handler(self, number):
        def handle(_request, response):
            self.client.clear_motion()  # a stop must not be undone by the next resend
            self._try_command(number, None, response)
            return response

        return handle

    def _reset_odometry(self, _request, response):
        if self._try_command(C.SETO, None, response) and self.odometry is not None:
            self.odometry.zero()
        return response

    def _sonar_handler(self, request, response):
        if self._try_command(C.SONAR, int(request.data), response):
            self.wanted['sonar'] = request.data
        return response

    def _stream_handler(self, kind):
        """On: success only once the first packet arrives (a robot or simulator may ignore the
        request); off: the stop request sent."""
        number, reply_type = STREAMS[kind]

        async def handle(request, response):
            if not request.data:
                if self._try_command(number, 0, response):
                    self.wanted[kind] = False
                return response
            refusal = self._refusal(number, self.identity)
            reply, error = (
                (None, refusal)
                if refusal
                else await self._ask(p.encode_command(number, 2), reply_type)
            )
            response.success = error is None
            response.message = error or f'{kind} stream running'
            self.wanted[kind] = response.success
            return response

        return handle

    def _value_handler(self, name, number, valid=None):
        """A one-argument command; valid: {value: meaning}, others refused (not sent)."""

        def handle(request, response):
            if valid is not None and request.value not in valid:
                meanings = ', '.join(f'{v} {text}' for v, text in valid.items())
                response.success = False
                response.message = f'{name} takes {meanings}; not {request.value}'
                return response
            self._try_command(number, request.value, response)
            return response

        return handle

    def _gripper(self, request, response):
        if request.command not in (1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 17):
            response.success, response.message = (
                False,
                f'unknown gripper command {request.command}',
            )
            return response
        if self._try_command(C.GRIPPER, request.command, response) and request.command in (16, 17):
            self._try_command(C.GRIPPERVAL, request.value, response)  # must follow at once (§2.11)
        return response

    def _digital_output(self, request, response):
        self._send(
            lambda: p.encode_two_bytes(C.DIGOUT, request.mask, request.values), 'DIGOUT', response
        )
        return response

    def _say(self, request, response):
        if len(request.durations) != len(request.tones) or len(request.tones) > 20:
            response.success, response.message = (
                False,
                'need equal numbers of durations and tones, at most 20',
            )
            return response
        tune = bytes(
            b for pair in zip(request.durations, request.tones, strict=False) for b in pair
        )
        self._try_command(C.SAY, tune, response)
        return response

    async def _ask(self, packet, reply_type):
        """Send packet, await the reply record; (record, None) or (None, error message).

        No reply within request_timeout means the robot ignored the command: firmware without
        it, or a simulator that does not support it."""
        future, resolve = self.reply_future(self.request_timeout)
        try:
            self.client.request(packet, reply_type, resolve)
        except ConnectionLost as exc:
            return None, str(exc)
        reply = await future
        if isinstance(reply, TimeoutError):
            return None, (
                f'not supported by this robot / firmware: no {reply_type.name} packet '
                f'within {self.request_timeout:.1f} s'
            )
        if isinstance(reply, Exception):
            return None, str(reply)
        return reply, None

    async def _playlist(self, _request, response):
        entries, error = await self._ask(p.encode_command(C.PLAYLIST, 0), p.PacketType.PLAYLIST)
        response.success, response.message = error is None, error or f'{len(entries or [])} sounds'
        for name, position, length in entries or []:
            response.names.append(name)
            response.positions.append(position)
            response.lengths.append(length)
        return response

    async def _aux_serial(self, request, response):
        """Write data out of AUX (TTY2), then read reply_size bytes (GETAUX); no data and 0 =
        flush."""
        data = bytes(request.data)
        if len(data) > 196 or request.reply_size > 200:
            response.success, response.message = False, 'at most 196 bytes out and 200 back'
            return response
        if data and not self._try_command(C.TTY2, data, response):
            return response
        if request.reply_size == 0:
            if not data:
                self._try_command(C.GETAUX, 0, response)
            return response
        reply, error = await self._ask(
            p.encode_command(C.GETAUX, request.reply_size), p.PacketType.SERAUX
        )
        response.success, response.message = error is None, error or f'{len(reply.data)} bytes'
        if reply is not None:
            response.reply = uint8_array(reply.data)
        return response

    async def _io_request(self, _request, response):
        reply, error = await self._ask(p.encode_command(C.IOREQUEST, 1), p.PacketType.IO)
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
        """cmd_vel → VEL + RVEL (or VEL2); the client resends it and stops after
        cmd_vel_timeout."""
        linear = max(-self.max_linear, min(self.max_linear, linear))
        angular = max(-self.max_angular, min(self.max_angular, angular))
        if self.last_sip is not None and not self.last_sip.motors_enabled and (linear or angular):
            self.cmd_vel_while_disabled = time.monotonic()
            self.log.warning(
                'cmd-vel-disabled',
                'cmd_vel has no effect: the motors are disabled (call the enable_motors service)',
            )
        try:
            self.client.set_motion(
                self._motion_packet(linear * 1000.0, angular), self._motion_packet(0.0, 0.0)
            )
        except ConnectionLost:
            self.log.warning('cmd-vel-offline', 'cmd_vel ignored: not connected to the robot')

    def _motion_packet(self, mm_s, rad_s):
        if self.wheel_mode:
            return self._vel2_packet(mm_s, rad_s)
        return p.encode_command(C.VEL, int(round(mm_s))) + p.encode_command(
            C.RVEL, int(round(math.degrees(rad_s)))
        )

    def _vel2_packet(self, mm_s, rad_s):
        model = self.identity.model if self.identity else MODELS['p2dx']
        return p.encode_two_bytes(C.VEL2, *convert.wheel_units(model, mm_s, rad_s))

    # ---- records from the robot --------------------------------------------------------
    def handle_record(self, record):
        if isinstance(record, p.StandardSip):
            self._publish_sip(record)
        elif isinstance(record, Encoders):
            header = self._header()
            self.encoder_pub.publish(
                EncoderCounts(header=header, left=record.left, right=record.right)
            )
            self._publish_wheels(header, record)
        elif isinstance(record, p.GripperPacket):
            self.has_gripper = record.gripper_type != 0
            if not self.has_gripper:
                return
            self.gripper_pub.publish(
                convert.gripper_msg(
                    p.read_gripper_packet_byte(record.state),
                    record.state,
                    self._header(),
                    GripperState.SOURCE_GRIPPER_PACKET,
                    record.gripper_type,
                    record.grasp_time,
                )
            )
        elif isinstance(record, p.IoPacket):
            self.io_pub.publish(convert.io_packet_msg(record, self._header()))
        elif isinstance(record, AuxBytes):
            self.aux_pub.publish(
                SerialBytes(header=self._header(), port=1, data=uint8_array(record.data))
            )
        elif isinstance(record, Connected):
            self._on_connected(record)
        elif isinstance(record, p.ConfigPacket):
            self._publish_info(record)

    def _header(self, frame_id=''):
        return Header(stamp=self.get_clock().now().to_msg(), frame_id=frame_id or self.base_frame)

    def _on_connected(self, record):
        self.identity = record.identity
        self.has_gripper = convert.config_has_gripper(record.config)
        if self._is_simulator(self.identity) and self.cmd_vel_timeout == 0:
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
            description.from_parameters(self.parameter_values(), model, bool(self.has_gripper))
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
            self.gripper_pub.publish(
                convert.gripper_msg(
                    p.read_sip_gripper_byte(sip.gripper_state),
                    sip.gripper_state,
                    header,
                    GripperState.SOURCE_SIP,
                )
            )
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
        updated = [False] * len(self.sonar_ranges)
        # the per-reading and point-cloud forms cost CPU at every SIP: built only when used
        ranges_wanted = self.range_pub.get_subscription_count() > 0
        for disc, raw in sip.sonar:
            if disc >= len(self.sonar_ranges):
                self.log.warning('sonar-index', f'sonar disc {disc} is not on a {model.subclass}')
                continue
            metres = raw * model.range_conv / 1000.0
            self.sonar_ranges[disc] = metres
            updated[disc] = True
            if not ranges_wanted:
                continue
            self.range_pub.publish(
                Range(
                    header=Header(stamp=header.stamp, frame_id=self.sonar_frames[disc]),
                    radiation_type=Range.ULTRASOUND,
                    field_of_view=self.sonar_fov,
                    min_range=self.sonar_min,
                    max_range=self.sonar_max,
                    range=metres,
                )
            )
        if not sip.sonar:
            return
        self.sonar_pub.publish(
            SonarArray(
                header=header,
                frame_ids=self.sonar_frames,
                ranges=self.sonar_ranges,
                updated=updated,
                min_range=self.sonar_min,
                max_range=self.sonar_max,
                field_of_view=self.sonar_fov,
            )
        )
        if self.sonar_cloud_pub.get_subscription_count() > 0:
            points = convert.sonar_points(
                model,
                self.sonar_ranges,
                updated,
                self.sonar_min,
                self.sonar_max,
                description.sonar_height(model, self.base.base_height),
            )
            self.sonar_cloud_pub.publish(point_cloud_msg(points, header))

    def _publish_wheels(self, header, encoders):
        if self.identity is None:
            return
        angles = description.wheel_positions(
            self.identity.model, encoders.left, encoders.right, self.ticks_per_revolution
        )
        joints = JointState(header=header, name=list(angles), position=list(angles.values()))
        self.joint_pub.publish(joints)
        self.model.move(joints)

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
                'simulator': self._is_simulator(self.identity),
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
        if self._is_simulator(self.identity) and self.cmd_vel_timeout == 0:
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
    return run_node(P2osNode, args)


if __name__ == '__main__':
    sys.exit(main())
