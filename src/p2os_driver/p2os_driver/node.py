"""ROS 2 node `p2os_driver`: a Pioneer 2 / PeopleBot / AmigoBot over serial or TCP.

    ros2 run p2os_driver p2os_driver --ros-args -p port:=tcp://localhost:8101

Motors start disabled (as on the robot): call the `enable_motors` service, or set
`enable_motors_on_start`. After a reconnect the driver restores what was last asked for
(motors, sonar, packet streams) unless `restore_state_on_reconnect` is false.
Topic, service and parameter tables: docs/p2os.md.
"""

import math
import sys
import time
from functools import partial

from nav_msgs.msg import Odometry as OdometryMsg
from rcl_interfaces.msg import SetParametersResult
from sensor_msgs.msg import BatteryState, JointState, LaserScan, PointCloud2, Range
from std_msgs.msg import Header

from legacy_robot_common.actions import ABORTED
from legacy_robot_common.diagnostics import RateMeter
from legacy_robot_common.driver_node import LATCHED, DriverNode, run_node
from legacy_robot_common.errors import ConnectionLost
from legacy_robot_common.messages import point_cloud_msg
from legacy_robot_common.mobile_base import MobileBase, planar_covariance
from legacy_robot_common.params import declare_table
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

from . import conversions as convert
from . import description
from . import protocol as p
from .client import STREAMS, AuxBytes, Connected, Encoders, LinkLost, P2osClient
from .odometry import Odometry
from .parameters import PARAMETERS, client_settings
from .position import PositionMoves
from .services import P2osServices, send
from .status import robot_status

# Odometry variances (parameters pose/twist_covariance_diagonal): estimates for a Pioneer's
# dead reckoning on a hard floor (encoder resolution is far finer; wheel slip dominates):
# pose σ 0.1 m and 0.1 rad after typical runs, speed σ 0.02 m/s and 0.05 rad/s.
POSE_COVARIANCE = planar_covariance(0.01, 0.01)
TWIST_COVARIANCE = planar_covariance(0.0004, 0.0025)


class P2osNode(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('p2os_driver', hardware_id='P2OS robot', **kwargs)
        settings = self._declare_parameters()
        self.name_hardware(self.port)
        self.client = P2osClient(settings, logger=self.get_logger())
        self.client.startup_state = self._startup_state
        self.attach_client(self.client, link_name='p2os')
        self.diagnostics.add_task('robot', partial(robot_status, self))
        self._create_publishers()
        P2osServices(self).create()
        self.position = PositionMoves(self, self.move_done_tolerance, self.heading_done_tolerance)
        self.position.create()
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
        self.port = v.port
        self.sonar_prefix = self.frames.prefixed(v.sonar_frame_prefix)
        self.max_linear, self.max_angular = v.max_linear_speed, v.max_angular_speed
        self.cmd_vel_timeout = v.cmd_vel_timeout
        self.move_done_tolerance = v.move_done_tolerance
        self.heading_done_tolerance = v.heading_done_tolerance
        self.ticks_per_revolution = v.wheel_ticks_per_revolution
        self.restore_state = v.restore_state_on_reconnect
        self.laser_scan = (v.laser_start, v.laser_end, v.laser_increment)
        self.laser_ideal = v.laser_spacing == 'ideal'
        self.laser_range_max, self.truth_frame = v.laser_range_max, v.ground_truth_frame_id
        self.laser_frame = self.frames.declare('laser', 'laser', 'frame of the laser scans')
        self.sonar_cone = convert.SonarCone(
            v.sonar_min_range, v.sonar_max_range, v.sonar_field_of_view
        )
        # what the parameters ask for at start, and what the user asked for last (services,
        # run-time parameters): each new session sends one of them (restore_state_on_reconnect)
        streams = {kind: vars(v)[f'{kind}_stream'] for kind in STREAMS}
        self.start_state = {'motors': v.enable_motors_on_start, 'sonar': v.use_sonar, **streams}
        self.wanted = dict(self.start_state)
        self.battery_warn, self.battery_error = v.battery_warn_voltage, v.battery_error_voltage
        self.state_period, self.request_timeout = v.state_period, v.request_timeout
        # MobileBase and RobotStatePublisher declare the cmd_vel, odometry and model parameters
        self.base = MobileBase(
            self, self._on_cmd_vel, lambda: self.cmd_vel_timeout, POSE_COVARIANCE, TWIST_COVARIANCE
        )
        self.base_frame = self.base.base_frame
        self.model = RobotStatePublisher(self)
        return client_settings(v)

    def _on_parameters(self, parameters):
        for parameter in parameters:
            if parameter.name == 'use_sonar':
                self.wanted['sonar'] = bool(parameter.value)
                send(partial(self.client.set_sonar, parameter.value))
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

    # ---- publishers (services: services.py) ----------------------------------------
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

    def stop_robot(self):
        self.position.goals.end(ABORTED, 'the driver was deactivated')
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
        self.position.on_cmd_vel()
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
            p.IoPacket: self._publish_io,
            AuxBytes: self._publish_aux,
            Connected: self._on_connected,
            p.ConfigPacket: self._publish_info,
            p.LaserPacket: self._publish_scan,
            p.SimStat: self._publish_truth,
            LinkLost: lambda lost: self.position.on_link_lost(lost.reason),
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

    def _publish_io(self, packet):
        self.io_pub.publish(convert.io_packet_msg(packet, self._header()))

    def _publish_aux(self, aux):
        self.aux_pub.publish(convert.aux_msg(aux, self._header()))

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
        self.position.on_sip(sip)
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


def main(args=None):
    # here, not at the top: the plugin brings the emulator and the demo, which importing the
    # node does not need; the plugin names the node by name (ByName): no circle
    from .plugin import PLUGIN

    return run_node(P2osNode, args, plugins=(PLUGIN,))


if __name__ == '__main__':
    sys.exit(main())
