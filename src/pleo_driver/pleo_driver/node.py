"""ROS 2 node `pleo_driver`: a Ugobe Pleo on its USB serial monitor.

    ros2 run pleo_driver pleo_driver --ros-args -p port:=/dev/ttyACM0

Topic, service and parameter tables: docs/pleo.md.
"""

import math
import sys

from sensor_msgs.msg import BatteryState, JointState
from std_msgs.msg import Header
from std_srvs.srv import Trigger

from legacy_robot_common.diagnostics import ERROR, OK, WARN
from legacy_robot_common.driver_node import DriverNode, run_node
from legacy_robot_common.params import ParameterError, declare_table
from legacy_robot_common.robot_model import RobotStatePublisher
from legacy_robot_common.services import create_services
from legacy_robot_interfaces.msg import MonitorLog, NamedValues, NxpPacket, SensorEvent
from legacy_robot_interfaces.srv import JointCommand, PlayNamed, SetPercent, TextCommand

from . import conversions as convert
from . import description
from . import protocol as p
from .client import Battery, Connected, PleoClient, Settings
from .parameters import PARAMETERS


class PleoNode(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('pleo_driver', hardware_id='Ugobe Pleo', **kwargs)
        self._declare_parameters()
        self.name_hardware(self.port)
        try:
            settings = Settings(
                port=self.port,
                baud=self.baud,
                open_timeout=self.open_timeout,
                answer_timeout=self.answer_timeout,
                battery_interval=self.battery_interval,
                startup_commands=self._startup_commands(),
            )
        except ValueError as exc:
            raise ParameterError(f'pleo_driver: {exc}') from None
        self.client = PleoClient(settings, logger=self.get_logger())
        self.attach_client(self.client, 'monitor link', link_name='monitor')
        self.diagnostics.add_task('pleo', self._pleo_status)
        self._create_publishers()
        self._create_services()
        self.last_joints = self.last_sensors = None
        self.log_lines = 0
        self.begin()

    # ---- parameters ----------------------------------------------------------------------
    def _declare_parameters(self):
        v = declare_table(self, PARAMETERS)
        self.port, self.baud = v.port, v.baud
        self.open_timeout, self.answer_timeout = v.open_timeout, v.answer_timeout
        self.battery_interval = v.battery_interval
        self.unload_on_start, self.neutral_on_start = v.unload_app_on_start, v.neutral_on_start
        self.log_types, self.extra_startup = v.log_enable, v.startup_commands
        self.frame_id = self.frames.prefixed(v.frame_id)
        self.joint_prefix = v.joint_name_prefix

    def _startup_commands(self):
        commands = (['APP UNLOAD'] if self.unload_on_start else []) + (
            ['JOINT NEUTRAL'] if self.neutral_on_start else []
        )
        commands += [f'LOG ENABLE {t}' for t in self.log_types if t.strip()]
        return tuple(commands + [c for c in self.extra_startup if c.strip()])

    # ---- publishers and services -----------------------------------------------------------
    def _create_publishers(self):
        pub = self.publisher
        self.joint_pub = pub(JointState, 'joint_states', 20)
        self.sensors_pub = pub(NamedValues, 'sensors', 20)
        self.events_pub = pub(SensorEvent, 'sensor_events', 50)
        self.battery_pub = pub(BatteryState, 'battery')
        self.log_pub = pub(MonitorLog, 'monitor_log', 50)
        self.nxp_pub = pub(NxpPacket, 'nxp_packets', 20)
        self.model = RobotStatePublisher(self)
        self.model.describe(description.from_parameters(self.parameter_values()))

    def _create_services(self):
        handler = self._handler

        def named(verb, what):
            return handler(lambda r: f'{verb} {p.name_argument(r.name, what)}')

        def percent(verb):
            return handler(lambda r: p.percent_command(verb, r.percent))

        def request_timeout(request):
            return request.timeout

        def log_enable(request):
            return f'LOG ENABLE {p.name_argument(request.command, "log type")}'

        create_services(
            self,
            (
                (
                    JointCommand,
                    'joint_command',
                    handler(self._joint, timeout_of=self._joint_timeout),
                ),
                (Trigger, 'joint_neutral', handler(lambda r: 'JOINT NEUTRAL')),
                (Trigger, 'app_unload', handler(lambda r: 'APP UNLOAD')),
                (PlayNamed, 'motion_play', named('MOTION PLAY', 'motion')),
                (PlayNamed, 'sound_play', named('SOUND PLAY', 'sound')),
                (PlayNamed, 'app_load', handler(self._app_load)),
                (SetPercent, 'motion_speed', percent('MOTION SPEED')),
                (SetPercent, 'sound_speed', percent('SOUND SPEED')),
                (SetPercent, 'sound_volume', percent('SOUND VOLUME')),
                (TextCommand, 'pkt_send', handler(self._pkt_send, True, request_timeout)),
                (TextCommand, 'log_enable', handler(log_enable, True, request_timeout)),
                (TextCommand, 'monitor_command', handler(self._raw, True, request_timeout)),
            ),
        )

    # ---- service handlers ----------------------------------------------------------------
    async def _monitor(self, command, timeout=0.0):
        """Run one monitor command → (Answer, None) or (None, error text)."""
        timeout = timeout or self.answer_timeout
        answer, error = await self.await_reply(
            lambda resolve: self.client.command(command, resolve, timeout), timeout + 1.0
        )
        if error is None and answer.failed:
            return answer, f'{command!r}: {answer.text}'
        return answer, error

    def _handler(self, make_command, text_reply=False, timeout_of=lambda request: 0.0):
        """A service handler: make_command(request) → one monitor command (ValueError: the
        request is refused with its message), run, answered in the response."""

        async def handler(request, response):
            try:
                command = make_command(request)
            except ValueError as exc:
                response.success, response.message = False, str(exc)
                return response
            answer, error = await self._monitor(command, timeout_of(request))
            response.success = error is None
            if text_reply:
                response.message = error or 'ok'
                response.reply = answer.text if answer is not None else ''
            else:
                response.message = error or (answer.text or 'ok')
            return response

        return handler

    @staticmethod
    def _app_load(request):
        name = p.name_argument(request.name, 'application')
        # only from the SD card: writing to internal memory has bricked Pleos
        # (docs/protocols/pleo.md §3.3)
        return f'APP LOAD {name if name.lower().startswith("a:") else "a:" + name}'

    @staticmethod
    def _joint(request):
        joint = p.find_joint(request.joint)
        return p.joint_command(
            joint,
            math.degrees(request.position),
            request.wait,
            request.max_wait * 1000.0,
            request.target_time * 1000.0,
        )

    def _joint_timeout(self, request):
        return max(self.answer_timeout, request.max_wait + 1.0) if request.wait else 0.0

    def _pkt_send(self, request):
        packet = request.command.strip()
        if not packet:
            raise ValueError('an empty packet')
        command = f'PKT SEND {packet}'
        p.encode_command(command)
        self.nxp_pub.publish(convert.nxp_msg(packet, self._header(), NxpPacket.TO_ROBOT))
        return command

    @staticmethod
    def _raw(request):
        p.encode_command(request.command)
        return request.command

    # ---- records from the monitor -----------------------------------------------------------
    def _header(self):
        return Header(stamp=self.get_clock().now().to_msg(), frame_id=self.frame_id)

    # every record comes from the one serial link thread and touches only its publishers and
    # the last dumps (for sensor events), so that thread publishes them itself, in order
    direct_records = (p.JointDump, p.SensorDump, p.LogLine, Battery, Connected)

    def handle_record(self, record):
        header = self._header()
        if isinstance(record, p.JointDump):
            self.last_joints = record
            joints = convert.joint_state_msg(record, header, self.joint_prefix)
            self.joint_pub.publish(joints)
            self.model.move(joints)
        elif isinstance(record, p.SensorDump):
            for event in convert.sensor_events(self.last_sensors, record, header):
                self.events_pub.publish(event)
            self.last_sensors = record
            self.sensors_pub.publish(convert.sensors_msg(record, header))
        elif isinstance(record, p.LogLine):
            self.log_lines += 1
            self.log_pub.publish(convert.log_msg(record, header))
            if record.type.lower() == convert.NXP_LOG_TYPE:
                self.nxp_pub.publish(convert.nxp_msg(record.text, header, NxpPacket.FROM_ROBOT))
        elif isinstance(record, Battery):
            self.battery_pub.publish(convert.battery_msg(record.value, header))
        elif isinstance(record, Connected):
            self.last_joints = self.last_sensors = None

    def _pleo_status(self):
        c = self.client
        values = {
            'port': c.port_in_use or self.port,
            'battery': c.battery,
            'commands': c.commands_done,
            'commands refused': c.command_failures,
            'log lines': self.log_lines,
            'bad lines': c.counters.bad_frames,
            'resyncs': c.resyncs,
            'joint dumps': 'yes' if self.last_joints else 'none yet',
        }
        if not c.connected:
            return ERROR, 'no prompt from the Pleo monitor', values
        if c.battery is not None and c.battery < 23:
            return WARN, f'battery low ({c.battery})', values
        if c.counters.bad_frames or c.resyncs:
            return (
                WARN,
                (
                    f'{c.counters.bad_frames} malformed lines, {c.resyncs} lost prompts '
                    '(see the log)'
                ),
                values,
            )
        return OK, 'connected', values


def main(args=None):
    # here, not at the top: the plugin brings the emulator and the demo, which importing the
    # node does not need; the plugin names the node by name (ByName): no circle
    from .plugin import PLUGIN

    return run_node(PleoNode, args, plugins=(PLUGIN,))


if __name__ == '__main__':
    sys.exit(main())
