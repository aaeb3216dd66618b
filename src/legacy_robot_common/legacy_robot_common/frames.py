"""Frame ids and sensor mounts, the same way for every robot.

Several robots share one TF world, so every frame id a driver stamps or broadcasts is
`frame_prefix` + its `<name>_frame_id` parameter (bringup and the launch files set the prefix
to the robot's namespace, "r1/"). Sensor mounts go to /tf_static whatever happens to the
odometry transform (`publish_static_tf` turns them off for a user whose robot_state_publisher
broadcasts them instead). Cameras get a REP-103 optical frame: z forward, x right, y down.
"""

import math

from geometry_msgs.msg import Quaternion, TransformStamped
from std_msgs.msg import Header

from .params import declare
from .tf import StaticTransformPublisher

# body frame (x forward, y left, z up) → optical frame (z forward, x right, y down):
# roll -90°, then yaw -90°
OPTICAL_ROTATION = Quaternion(x=-0.5, y=0.5, z=-0.5, w=0.5)


def normalized_prefix(prefix):
    """'/r1', 'r1' and 'r1/' → 'r1/'; '' stays ''. tf2 frame ids never start with '/'."""
    prefix = prefix.strip('/')
    return f'{prefix}/' if prefix else ''


def namespace_prefix(namespace):
    """The frame prefix bringup and the launch files give a robot in namespace: '/lab/r1' →
    'lab/r1/'."""
    return normalized_prefix(namespace or '')


def rpy_quaternion(roll, pitch, yaw):
    """Fixed-axis roll, pitch, yaw (rad) → geometry_msgs/Quaternion."""
    cr, sr = math.cos(roll / 2), math.sin(roll / 2)
    cp, sp = math.cos(pitch / 2), math.sin(pitch / 2)
    cy, sy = math.cos(yaw / 2), math.sin(yaw / 2)
    return Quaternion(
        x=sr * cp * cy - cr * sp * sy,
        y=cr * sp * cy + sr * cp * sy,
        z=cr * cp * sy - sr * sp * cy,
        w=cr * cp * cy + sr * sp * sy,
    )


def mount_transform(stamp, parent, child, xyz=(0.0, 0.0, 0.0), rpy=(0.0, 0.0, 0.0)):
    """child's pose in parent: translation (m) and fixed-axis roll, pitch, yaw (rad)."""
    transform = TransformStamped(header=Header(stamp=stamp, frame_id=parent), child_frame_id=child)
    t = transform.transform.translation
    t.x, t.y, t.z = (float(v) for v in xyz)
    transform.transform.rotation = rpy_quaternion(*rpy)
    return transform


def optical_transform(stamp, camera_frame, optical_frame):
    """The fixed rotation from a camera's body frame to its optical frame."""
    transform = TransformStamped(
        header=Header(stamp=stamp, frame_id=camera_frame), child_frame_id=optical_frame
    )
    transform.transform.rotation = OPTICAL_ROTATION
    return transform


class RobotFrames:
    """A driver's frame ids (with frame_prefix) and its static transforms on /tf_static."""

    def __init__(self, node):
        self._node = node
        self.prefix = normalized_prefix(
            declare(
                node,
                'frame_prefix',
                '',
                'prepended to every frame id this driver stamps or '
                'broadcasts, e.g. "r1/" (bringup and the launch files set it to the robot\'s '
                'namespace)',
                read_only=True,
            )
        )
        self.publish_static = declare(
            node,
            'publish_static_tf',
            True,
            'broadcast the sensor mounts (and optical, '
            'footprint frames) on /tf_static; false when robot_state_publisher does it',
            read_only=True,
        )
        self._static = None
        self._sent = {}  # child frame → its latest static transform

    def declare(self, name, default, description):
        """Declare `<name>_frame_id` (read-only) and return the prefixed frame id."""
        value = declare(self._node, f'{name}_frame_id', default, description, read_only=True)
        return self.prefixed(value)

    def prefixed(self, frame_id):
        return self.prefix + frame_id if frame_id else frame_id

    def unprefixed(self, frame_id):
        """A frame id as the robot model names its link (frame_prefix off)."""
        return (
            frame_id[len(self.prefix) :]
            if self.prefix and frame_id.startswith(self.prefix)
            else frame_id
        )

    def send_static(self, transforms):
        """Add transforms to the node's /tf_static message (latest per child frame)."""
        self._sent.update((t.child_frame_id, t) for t in transforms)
        if not self.publish_static or not transforms:
            return
        if self._static is None:
            self._static = StaticTransformPublisher(self._node)
        self._static.sendTransform(transforms)

    def static_transforms(self):
        """Every static transform this driver has sent (also when publish_static_tf is false):
        the robot model's fixed joints include them."""
        return list(self._sent.values())

    def camera(self, name, default, description):
        """Declare `<name>_frame_id` and `<name>_optical_frame_id` (default: the camera frame +
        '_optical_frame'); broadcast the optical rotation; → (camera frame, optical frame)."""
        camera = declare(self._node, f'{name}_frame_id', default, description, read_only=True)
        optical = declare(
            self._node,
            f'{name}_optical_frame_id',
            '',
            f'frame images of '
            f'{name} are stamped in (z forward, x right, y down; "" = '
            f'{name}_frame_id + "_optical_frame")',
            read_only=True,
        )
        optical = self.prefixed(optical or f'{camera}_optical_frame')
        camera = self.prefixed(camera)
        self.send_static(
            [optical_transform(self._node.get_clock().now().to_msg(), camera, optical)]
        )
        return camera, optical
