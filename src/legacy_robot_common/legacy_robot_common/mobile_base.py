"""What every mobile base offers the stacks around it (Nav2, robot_localization, ros2_control).

- odometry on `odom` with covariances (`pose_covariance_diagonal`, `twist_covariance_diagonal`:
  per-robot defaults, parameters to override), and the odom → base transform on /tf unless
  `publish_tf` is false (an EKF owns it then; the mounts stay on /tf_static);
- REP-105 frames: `base_footprint` below `base_link`; `odom_child_frame` says which of the two
  the odometry names;
- `cmd_vel` as geometry_msgs/Twist or TwistStamped, whichever the graph publishes
  (`cmd_vel_type` forces one); a stamped command older than cmd_vel_timeout is not executed.
"""

import math

from geometry_msgs.msg import Twist, TwistStamped
from nav_msgs.msg import Odometry
from rclpy.time import Time

from .diagnostics import OK, WARN
from .frames import mount_transform
from .messages import odometry_msg
from .params import ParameterError, declare
from .tf import TransformPublisher, planar_transform

UNOBSERVED = 1e3  # variance of what a planar base does not measure (z, roll, pitch)
TWIST_TYPES = {
    'twist': (Twist, 'geometry_msgs/msg/Twist'),
    'twist_stamped': (TwistStamped, 'geometry_msgs/msg/TwistStamped'),
}
GRAPH_CHECK_PERIOD = 0.5  # s between looks at the types published on cmd_vel (auto)


def planar_covariance(xy, yaw):
    """Diagonal [x, y, z, roll, pitch, yaw] of a planar estimate: the unobserved axes large."""
    return [xy, xy, UNOBSERVED, UNOBSERVED, UNOBSERVED, yaw]


def covariance_matrix(diagonal):
    """6 variances → the row-major 6×6 covariance of nav_msgs/Odometry."""
    matrix = [0.0] * 36
    for i, value in enumerate(diagonal):
        matrix[7 * i] = float(value)
    return matrix


class MobileBase:
    """Odometry, its frames and cmd_vel of a node; on_velocity(linear m/s, angular rad/s)."""

    def __init__(
        self,
        node,
        on_velocity,
        cmd_vel_timeout,
        pose_covariance,
        twist_covariance,
        *,
        base_frame='base_link',
        base_height=0.0,
        lateral=False,
    ):
        """cmd_vel_timeout() → s (0 = never stale); the covariances: default diagonals;
        base_frame, base_height: the defaults of those parameters; lateral: a base that also
        moves sideways gets on_velocity(linear x, angular z, linear y)."""
        self._node = node
        frames = node.frames
        self.odom_frame = frames.declare('odom', 'odom', 'odometry frame')
        self.base_frame = frames.declare(
            'base', base_frame, 'robot body frame (sensor mounts hang off it)'
        )
        self.footprint_frame = frames.declare(
            'footprint',
            'base_footprint',
            'REP-105 frame on the floor below the body frame ("" = none)',
        )
        self.odom_child = declare(
            node,
            'odom_child_frame',
            'base',
            'the frame odometry and '
            'odom → * move: base (base_frame_id) or footprint '
            '(footprint_frame_id)',
            choices=('base', 'footprint'),
            read_only=True,
        )
        if self.odom_child == 'footprint' and not self.footprint_frame:
            raise ParameterError(
                f'{node.get_name()}: odom_child_frame footprint needs a footprint_frame_id'
            )
        self.base_height = declare(
            node,
            'base_height',
            float(base_height),
            'm, height of the body frame above the floor (base_footprint → base_link)',
            minimum=0.0,
            maximum=10.0,
            read_only=True,
        )
        self.publish_tf = declare(
            node,
            'publish_tf',
            True,
            'broadcast odom → base on /tf '
            '(false: leave it to an EKF; sensor mounts stay on /tf_static)',
            read_only=True,
        )
        self.pose_covariance = covariance_matrix(
            self._diagonal('pose_covariance_diagonal', pose_covariance, 'm², rad²')
        )
        self.twist_covariance = covariance_matrix(
            self._diagonal('twist_covariance_diagonal', twist_covariance, '(m/s)², (rad/s)²')
        )
        self.child_frame = (
            self.footprint_frame if self.odom_child == 'footprint' else self.base_frame
        )
        self.odom_pub = node.publisher(Odometry, 'odom')
        self.tf = TransformPublisher(node) if self.publish_tf else None
        self._on_velocity = on_velocity
        self.commands = VelocityCommands(node, on_velocity, cmd_vel_timeout, lateral)
        node.diagnostics.add_task('cmd_vel', self.commands.status)
        frames.send_static(self._footprint_transforms())

    def _diagonal(self, name, default, units):
        values = declare(
            self._node,
            name,
            [float(v) for v in default],
            f'odometry variances x, y, z, roll, pitch, yaw ({units})',
            read_only=True,
        )
        if len(values) != 6 or any(not math.isfinite(v) or v < 0 for v in values):
            raise ParameterError(
                f'{self._node.get_name()}: parameter {name!r} needs 6 '
                f'variances >= 0, not {list(values)}'
            )
        return values

    def _footprint_transforms(self):
        """base_footprint below base_link, in the direction the odometry's child frame needs."""
        if not self.footprint_frame:
            return []
        stamp = self._node.get_clock().now().to_msg()
        if self.odom_child == 'footprint':
            return [
                mount_transform(
                    stamp, self.footprint_frame, self.base_frame, (0.0, 0.0, self.base_height)
                )
            ]
        return [
            mount_transform(
                stamp, self.base_frame, self.footprint_frame, (0.0, 0.0, -self.base_height)
            )
        ]

    def stop(self):
        """Zero velocity (lifecycle deactivate)."""
        self._on_velocity(0.0, 0.0)

    def publish(self, header, x, y, yaw, linear, angular, lateral=0.0, pose_variances=None):
        """Odometry (header: stamp; its frame is set here) and, with publish_tf, the transform.
        pose_variances: 6 variances of this estimate (default: the pose_covariance_diagonal)."""
        header.frame_id = self.odom_frame
        msg = odometry_msg(header, self.child_frame, x, y, yaw, linear, angular)
        msg.twist.twist.linear.y = float(lateral)
        msg.pose.covariance = (
            self.pose_covariance if pose_variances is None else covariance_matrix(pose_variances)
        )
        msg.twist.covariance = self.twist_covariance
        self.odom_pub.publish(msg)
        if self.tf is not None:
            self.tf.sendTransform(planar_transform(header, self.child_frame, x, y, yaw))


class VelocityCommands:
    """cmd_vel as Twist or TwistStamped on one name: `auto` subscribes with the type the graph's
    publishers use (Nav2 with enable_stamped_cmd_vel, ros2_control's diff_drive since Jazzy send
    TwistStamped; teleop tools mostly Twist); `twist` or `twist_stamped` forces one."""

    def __init__(self, node, on_velocity, timeout, lateral=False):
        self._node = node
        self._on_velocity = on_velocity
        self._timeout = timeout
        self._lateral = lateral
        self.mode = declare(
            node,
            'cmd_vel_type',
            'auto',
            "auto (the type cmd_vel's publishers use), twist or twist_stamped",
            choices=('auto', *TWIST_TYPES),
            read_only=True,
        )
        self.kind = None
        self.stale = 0  # stamped commands too old to execute
        self.last_stale_age = None
        self.mixed = False  # publishers of both types at the last look
        self._subscription = None
        self._subscribe('twist' if self.mode == 'auto' else self.mode)
        if self.mode == 'auto':
            node.create_timer(
                GRAPH_CHECK_PERIOD, self._follow_graph, callback_group=node.callback_group
            )

    def _subscribe(self, kind):
        if self._subscription is None:
            self._create_subscription(kind)
            return
        self._node.destroy_subscription(self._subscription)
        self._subscription = None
        self.kind = kind  # the graph check sees it settled meanwhile
        # the new type in a task of its own: the events executor lets the old subscription go
        # only after this callback, and DDS refuses a second type on one topic meanwhile
        self._node.executor.create_task(self._create_subscription, kind)

    def _create_subscription(self, kind):
        msg_type = TWIST_TYPES[kind][0]
        callback = self._on_stamped if kind == 'twist_stamped' else self._on_twist
        self._subscription = self._node.create_subscription(
            msg_type, 'cmd_vel', callback, 10, callback_group=self._node.callback_group
        )
        self.kind = kind

    def _follow_graph(self):
        topic = self._node.resolve_topic_name('cmd_vel')
        published = {info.topic_type for info in self._node.get_publishers_info_by_topic(topic)}
        kinds = [kind for kind, (_, name) in TWIST_TYPES.items() if name in published]
        self.mixed = len(kinds) > 1
        if self.mixed:
            self._node.log.warning(
                'cmd-vel-mixed',
                'cmd_vel has Twist and TwistStamped '
                f'publishers; listening to {self.kind} only (set cmd_vel_type)',
            )
        elif kinds and kinds[0] != self.kind:
            self._node.get_logger().info(f'cmd_vel: subscribing as {TWIST_TYPES[kinds[0]][1]}')
            self._subscribe(kinds[0])

    def _on_twist(self, msg):
        self._command(msg)

    def _on_stamped(self, msg):
        age = self._age(msg.header.stamp)
        timeout = self._timeout()
        if age is not None and timeout > 0 and age > timeout:
            self.stale += 1
            self.last_stale_age = age
            self._node.log.warning(
                'cmd-vel-stale',
                f'cmd_vel stamped {age:.2f} s ago (more than '
                f'cmd_vel_timeout {timeout} s): not executed '
                f'({self.stale} so far)',
            )
            return
        self._command(msg.twist)

    def _command(self, twist):
        if self._lateral:
            self._on_velocity(twist.linear.x, twist.angular.z, twist.linear.y)
        else:
            self._on_velocity(twist.linear.x, twist.angular.z)

    def _age(self, stamp):
        """Seconds since stamp on the node's clock (simulated time included); None: no stamp."""
        if stamp.sec == 0 and stamp.nanosec == 0:
            return None
        now = self._node.get_clock().now()
        return (now - Time.from_msg(stamp, clock_type=now.clock_type)).nanoseconds / 1e9

    def status(self):
        values = {
            'cmd_vel type': TWIST_TYPES[self.kind][1],
            'cmd_vel_type': self.mode,
            'stale commands': self.stale,
        }
        if self.mixed:
            return WARN, 'cmd_vel has Twist and TwistStamped publishers', values
        if self.last_stale_age is not None:
            age, self.last_stale_age = self.last_stale_age, None
            return WARN, f'stale stamped cmd_vel dropped (last {age:.2f} s old)', values
        return OK, f'cmd_vel as {self.kind}', values
