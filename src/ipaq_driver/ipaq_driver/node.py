"""ROS 2 node `ipaq_driver`: the iPaq + CMUcam + BrainStem robot (CMU Trikebot) over TCP.

    ros2 run ipaq_driver ipaq_driver --ros-args -p host:=192.168.0.5

Topic, service and parameter tables: docs/ipaq.md.
"""

import sys
import time
from functools import partial

from sensor_msgs.msg import CameraInfo, Image, JointState, Range
from std_msgs.msg import Header

from legacy_robot_common.diagnostics import RateMeter
from legacy_robot_common.driver_node import DriverNode, run_node
from legacy_robot_common.messages import camera_info_msg
from legacy_robot_common.mobile_base import MobileBase, planar_covariance
from legacy_robot_common.params import ParameterError, declare_table
from legacy_robot_common.robot_model import RobotStatePublisher
from legacy_robot_common.topics import image_qos
from legacy_robot_interfaces.msg import TrackingResult, WheelPower

from . import conversions as convert
from . import description
from . import protocol as p
from .client import Connected, ControlClient, Settings, StreamClient
from .parameters import MOUNTS, PARAMETERS, PORTS, UNITS
from .services import IpaqServices
from .status import robot_status
from .units import Units

# Odometry variances (pose/twist_covariance_diagonal): the integrated pose's scales are
# themselves guesses (docs/protocols/ipaq.md §4.2), so larger than a Pioneer's: pose σ 0.2 m and
# 0.2 rad, speed σ 0.1 m/s and 0.2 rad/s.
POSE_COVARIANCE = planar_covariance(0.04, 0.04)
TWIST_COVARIANCE = planar_covariance(0.01, 0.04)


class IpaqNode(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('ipaq_driver', hardware_id='iPaq robot', **kwargs)
        self._declare_parameters()
        self.name_hardware(f'{self.host}:{self.ports["control_port"]}')
        settings = self._settings()
        self.control = ControlClient(settings, logger=self.get_logger())
        self.streams = [
            StreamClient(settings, port, logger=self.get_logger())
            for port in settings.stream_ports
        ]
        self.attach_client(self.control, 'control link', link_name='control')
        # recorded by the parameter that names the port, which replay points at its own;
        # status names without port numbers (stable for a diagnostic_aggregator)
        for stream, link_name in zip(self.streams, ('frame_dump', 'tracking'), strict=False):
            self.attach_client(stream, f'{link_name} port link', link_name=link_name)
        self.diagnostics.add_task('robot', partial(robot_status, self))
        self._create_publishers()
        IpaqServices(self).create()
        self.create_subscription(
            JointState,
            'camera/pan_tilt',
            self._on_pan_tilt,
            10,
            callback_group=self.callback_group,
        )
        self.pose = convert.PoseTracker(self.units)
        self.last_telemetry = None
        self.tracking_rate = RateMeter()
        self.frames_dumped = 0
        self.begin()

    # ---- parameters -------------------------------------------------------------------
    def _declare_parameters(self):
        v = declare_table(self, PARAMETERS)
        values = vars(v)
        self.host = v.host
        self.ports = {row.name: values[row.name] for row in PORTS}
        self.poll_rate, self.response_timeout = v.poll_rate, v.response_timeout
        self.missed_responses, self.framed_responses = v.missed_responses, v.framed_responses
        self.over_stuffed, self.mask_bits = v.checksum_over_stuffed, v.p_mask_bits
        self.camera_generation, self.frame_size = v.cmucam_generation, v.frame_size
        self.double_width, self.flip_vertical = v.frame_double_width, v.frame_flip_vertical
        try:
            self.units = Units(**{row.name: values[row.name] for row in UNITS})
        except ValueError as exc:
            raise ParameterError(f'ipaq_driver: {exc}') from None
        self.vel_timeout, self.cmd_vel_timeout = v.vel_timeout, v.cmd_vel_timeout
        self.max_linear, self.safety_distance = v.max_linear_speed, v.safety_distance
        self.range_fov, self.request_timeout = v.range_field_of_view, v.request_timeout
        self.field_of_view, self.image_qos = v.camera_field_of_view, v.image_qos
        self.mounts = {name: values[row.name] for name, row in MOUNTS.items()}
        # MobileBase and RobotFrames declare the cmd_vel, odometry and frame parameters
        self.base = MobileBase(
            self, self._on_cmd_vel, lambda: self.cmd_vel_timeout, POSE_COVARIANCE, TWIST_COVARIANCE
        )
        camera, optical = self.frames.camera(
            'camera',
            description.DEFAULT_FRAMES['camera'],
            'camera frame (x forward, on the pan/tilt neck at rest)',
        )
        self.frame_ids = {
            'base': self.base.base_frame,
            'camera': camera,
            'optical': optical,
            'range': self.frames.declare(
                'range', description.DEFAULT_FRAMES['range'], 'IR ranger frame'
            ),
        }
        for name, mount in self.mounts.items():
            if len(mount) != 4:
                raise ParameterError(
                    f"ipaq_driver: parameter '{name}_mount' needs 4 numbers "
                    f'[x, y, z, yaw], not {list(mount)}'
                )
        if len(self.field_of_view) != 2 or not all(0 < a < 3.14 for a in self.field_of_view):
            raise ParameterError(
                "ipaq_driver: parameter 'camera_field_of_view' needs 2 "
                f'angles in 0..3.14 rad, not {list(self.field_of_view)}'
            )

    def _settings(self):
        try:
            if len(self.mask_bits) != 7 or len(self.frame_size) != 2:
                raise ValueError('p_mask_bits needs 7 bit numbers and frame_size 2 numbers')
            columns, rows = self.frame_size
            camera = p.CameraFormat(generation=self.camera_generation, columns=columns, rows=rows)
            return Settings(
                host=self.host,
                control_port=self.ports['control_port'],
                stream_ports=(self.ports['frame_dump_port'], self.ports['tracking_port']),
                poll_period=1.0 / self.poll_rate,
                response_timeout=self.response_timeout,
                missed_responses=self.missed_responses,
                framed_responses=self.framed_responses,
                checksum_over_stuffed=self.over_stuffed,
                mask_bits=p.MaskBits(*self.mask_bits),
                camera=camera,
                vel_timeout=self.vel_timeout,
                stop_velocity=self.units.velocity_to_raw(0.0),
                motion_timeout=self.cmd_vel_timeout,
            )
        except (ValueError, TypeError) as exc:
            raise ParameterError(f'ipaq_driver: {exc}') from None

    # ---- publishers (services: services.py) ----------------------------------------
    def _create_publishers(self):
        pub = self.publisher
        self.range_pub = pub(Range, 'range')
        self.wheel_pub = pub(WheelPower, 'wheel_power')
        self.tracking_pub = pub(TrackingResult, 'tracking')
        self.bitmap_pub = pub(Image, 'tracking/bitmap', 5)
        self.bitmap_info_pub = pub(CameraInfo, 'tracking/camera_info', 5)
        self.image_pub = pub(Image, 'camera/image_raw', image_qos(self.image_qos, 2))
        self.image_info_pub = pub(CameraInfo, 'camera/camera_info', 2)
        self.joint_pub = pub(JointState, 'joint_states')  # the neck: pan and tilt, rad
        self.model = RobotStatePublisher(self)
        self.model.describe(description.from_parameters(self.parameter_values()))

    def _publish_neck(self, pan=None, tilt=None):
        """joint_states of the neck from raw servo settings (a tracking packet's, or the ones
        just commanded: the robot reports its servos only while tracking)."""
        joints = convert.neck_joints_msg(pan, tilt, self.units, self._header('base'))
        self.joint_pub.publish(joints)
        self.model.move(joints)

    def stop_robot(self):
        self.base.stop()

    # ---- subscriptions ------------------------------------------------------------------------
    def _on_cmd_vel(self, linear, angular):
        linear = max(-self.max_linear, min(self.max_linear, linear))
        self.control.set_drive(*self.units.twist_to_drive(linear, angular))

    def _on_pan_tilt(self, msg):
        """JointState with 'pan' and/or 'tilt' positions in radians (0 = straight ahead)."""
        raw = convert.pan_tilt_raw(msg, self.units)
        if raw is None:
            self.log.warning(
                'pan-tilt-names',
                f'camera/pan_tilt: joint names must be "pan" and/or "tilt", got {list(msg.name)}',
            )
            return
        self.control.set_camera(*raw)
        self._publish_neck(*raw)

    # ---- records from the robot -----------------------------------------------------------------
    # the camera stream's records are published by the stream's link thread itself: they need
    # nothing the executor owns (telemetry updates the pose, which services reset: executor)
    direct_records = (p.TrackingPacket, p.Bitmap, p.FrameDump)

    def handle_record(self, record):
        if isinstance(record, Connected):
            self._on_connected()
        elif isinstance(record, p.FullResponse):
            self._publish_telemetry(record)
        elif isinstance(record, p.TrackingPacket):
            self.tracking_rate.tick()
            self.tracking_pub.publish(convert.tracking_msg(record, self._header('optical')))
            self._publish_neck(record.pan, record.tilt)
        elif isinstance(record, p.Bitmap):
            self._publish_image(
                convert.bitmap_msg(record, self._header('optical')),
                self.bitmap_pub,
                self.bitmap_info_pub,
            )
        elif isinstance(record, p.FrameDump):
            self.frames_dumped += 1
            self._publish_image(
                convert.frame_msg(
                    record, self._header('optical'), self.double_width, self.flip_vertical
                ),
                self.image_pub,
                self.image_info_pub,
            )

    def _publish_image(self, image, image_pub, info_pub):
        """An image and its camera_info (ideal pinhole from the field of view), one stamp."""
        image_pub.publish(image)
        info_pub.publish(
            camera_info_msg(image.width, image.height, *self.field_of_view, image.header)
        )

    def _header(self, frame):
        return Header(stamp=self.get_clock().now().to_msg(), frame_id=self.frame_ids[frame])

    def _publish_telemetry(self, response):
        self.last_telemetry = response
        header = self._header('base')
        self.range_pub.publish(
            convert.range_msg(
                response.range,
                self.units,
                Header(stamp=header.stamp, frame_id=self.frame_ids['range']),
                self.range_fov,
            )
        )
        self.wheel_pub.publish(convert.wheel_power_msg(response, self.units, header))
        x, y, yaw = self.pose.update(response, time.monotonic())
        self.base.publish(
            Header(stamp=header.stamp), x, y, yaw, self.pose.linear, self.pose.angular
        )

    def _on_connected(self):
        """A new session (the iPaq may have restarted): settings it lost are sent again."""
        if self.safety_distance <= 0:
            return
        raw = self.units.range_to_raw(self.safety_distance)
        self.control.set_safety_distance(raw, lambda reply: None, 'safety distance at start')


def main(args=None):
    # here, not at the top: the plugin brings the emulator and the demo, which importing the
    # node does not need; the plugin names the node by name (ByName): no circle
    from .plugin import PLUGIN

    return run_node(IpaqNode, args, plugins=(PLUGIN,))


if __name__ == '__main__':
    sys.exit(main())
