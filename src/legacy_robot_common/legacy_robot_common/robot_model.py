"""Robot models: a URDF per robot, published as robot_description, its joints on TF.

Each driver describes its robot with `Urdf` (links drawn as boxes, cylinders and spheres;
joints named as its joint_states names them; link names are its frame ids without the
frame_prefix). `RobotStatePublisher` then does what robot_state_publisher does, for every
driver the same way: robot_description (std_msgs/String, transient local) in the driver's
namespace, the fixed joints on /tf_static and the moving joints on /tf whenever the driver
reports joint positions. The URDF is read back with urdf_parser_py (ROS's urdfdom_py), so
what rviz and Foxglove draw is what the transforms come from. A user who runs
robot_state_publisher instead sets publish_joint_tf (and publish_static_tf) false.
"""

import math
import threading
import time
import xml.etree.ElementTree as ElementTree

from builtin_interfaces.msg import Time
from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, QoSProfile
from std_msgs.msg import Header, String

from .frames import rpy_quaternion
from .params import ParameterError, declare
from .tf import TransformPublisher

DESCRIPTION_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
COLOURS = {
    'body': (0.25, 0.25, 0.28, 1.0),
    'dark': (0.08, 0.08, 0.08, 1.0),
    'light': (0.85, 0.85, 0.82, 1.0),
    'sensor': (0.9, 0.75, 0.1, 1.0),
    'accent': (0.75, 0.15, 0.1, 1.0),
    'green': (0.35, 0.6, 0.3, 1.0),
}
MOVING = ('revolute', 'continuous', 'prismatic')
REPUBLISH_PERIOD = 1.0  # s


def _numbers(values):
    return ' '.join(f'{float(v):.12g}' for v in values)


def _origin(parent, xyz, rpy):
    if any(xyz) or any(rpy):
        ElementTree.SubElement(parent, 'origin', xyz=_numbers(xyz), rpy=_numbers(rpy))


def _visual(geometry_tag, attributes, xyz, rpy, colour):
    visual = ElementTree.Element('visual')
    _origin(visual, xyz, rpy)
    geometry = ElementTree.SubElement(visual, 'geometry')
    ElementTree.SubElement(geometry, geometry_tag, attributes)
    ElementTree.SubElement(visual, 'material', name=colour)
    return visual


def box(size, xyz=(0, 0, 0), rpy=(0, 0, 0), colour='body'):
    """A box visual: size (x, y, z) m, centred at xyz in its link."""
    return _visual('box', {'size': _numbers(size)}, xyz, rpy, colour)


def cylinder(radius, length, xyz=(0, 0, 0), rpy=(0, 0, 0), colour='body'):
    """A cylinder visual, its axis along z of (its link turned by rpy)."""
    return _visual(
        'cylinder', {'radius': _numbers([radius]), 'length': _numbers([length])}, xyz, rpy, colour
    )


def sphere(radius, xyz=(0, 0, 0), colour='body'):
    return _visual('sphere', {'radius': _numbers([radius])}, xyz, (0, 0, 0), colour)


class Urdf:
    """A URDF written element by element (no xacro): links with visuals, joints."""

    def __init__(self, name):
        self.root = ElementTree.Element('robot', name=name)
        for colour, rgba in COLOURS.items():
            material = ElementTree.SubElement(self.root, 'material', name=colour)
            ElementTree.SubElement(material, 'color', rgba=_numbers(rgba))
        self.links = {}
        self.joints = {}

    def link(self, name, *visuals):
        """A link (a frame), drawn by the visuals; adding to a known link adds visuals."""
        if name not in self.links:
            self.links[name] = ElementTree.SubElement(self.root, 'link', name=name)
        self.links[name].extend(visuals)
        return name

    def joint(
        self,
        name,
        parent,
        child,
        xyz=(0, 0, 0),
        rpy=(0, 0, 0),
        kind='fixed',
        axis=(0, 0, 1),
        limits=None,
    ):
        """child's pose in parent at joint position 0; limits (lower, upper) in rad or m."""
        self.link(parent)
        self.link(child)
        joint = ElementTree.SubElement(self.root, 'joint', name=name, type=kind)
        ElementTree.SubElement(joint, 'parent', link=parent)
        ElementTree.SubElement(joint, 'child', link=child)
        _origin(joint, xyz, rpy)
        if kind in MOVING:
            ElementTree.SubElement(joint, 'axis', xyz=_numbers(axis))
        if kind in ('revolute', 'prismatic'):
            lower, upper = limits or (-math.pi, math.pi)
            ElementTree.SubElement(
                joint,
                'limit',
                lower=_numbers([lower]),
                upper=_numbers([upper]),
                effort='1',
                velocity='1',
            )
        self.joints[name] = (parent, child)
        return name

    def fixed(self, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0)):
        """A sensor mount: the joint is named after its child, as robot_state_publisher's users
        expect (<child>_joint)."""
        return self.joint(f'{child}_joint', parent, child, xyz, rpy)

    def xml(self):
        ElementTree.indent(self.root)
        return '<?xml version="1.0"?>\n' + ElementTree.tostring(self.root, encoding='unicode')


# ---- reading a URDF (urdf_parser_py) --------------------------------------------------------
def parse(text):
    """URDF text → urdf_parser_py's URDF; ParameterError when the official parser refuses it
    or its links do not form one tree."""
    from urdf_parser_py.urdf import URDF  # imported here: only drivers with a model need it

    try:
        robot = URDF.from_xml_string(text)
        robot.get_root()  # raises when there is more than one root
    except Exception as exc:  # the parser raises bare Exceptions and AssertionErrors
        raise ParameterError(f'robot model: the URDF does not parse: {exc}') from None
    return robot


def quaternion_rpy(q):
    """geometry_msgs/Quaternion → fixed-axis (roll, pitch, yaw), the inverse of rpy_quaternion."""
    roll = math.atan2(2 * (q.w * q.x + q.y * q.z), 1 - 2 * (q.x * q.x + q.y * q.y))
    pitch = math.asin(max(-1.0, min(1.0, 2 * (q.w * q.y - q.z * q.x))))
    yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
    return roll, pitch, yaw


def _multiply(a, b):
    """Quaternion product of (x, y, z, w) tuples."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return (
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
        aw * bw - ax * bx - ay * by - az * bz,
    )


def _rotate(q, v):
    """Vector v turned by unit quaternion q (x, y, z, w)."""
    x, y, z, _ = _multiply(_multiply(q, (*v, 0.0)), (-q[0], -q[1], -q[2], q[3]))
    return x, y, z


class JointMotion:
    """A urdf_parser_py joint, ready to move: its origin and unit axis as plain floats, so a
    joint_states message costs a few multiplications per joint."""

    def __init__(self, joint):
        origin = joint.origin
        self.parent, self.child, self.type = joint.parent, joint.child, joint.type
        self.xyz = tuple(float(v) for v in (origin.xyz if origin and origin.xyz else (0, 0, 0)))
        q = rpy_quaternion(*(origin.rpy if origin and origin.rpy else (0, 0, 0)))
        self.rotation = (q.x, q.y, q.z, q.w)
        axis = joint.axis or (1.0, 0.0, 0.0)
        norm = math.sqrt(sum(a * a for a in axis)) or 1.0
        self.axis = tuple(a / norm for a in axis)

    def pose(self, position):
        """(translation, rotation (x, y, z, w)) of the child in the parent at position."""
        if self.type == 'prismatic':
            shift = _rotate(self.rotation, [a * position for a in self.axis])
            return tuple(o + d for o, d in zip(self.xyz, shift, strict=False)), self.rotation
        if self.type not in MOVING:
            return self.xyz, self.rotation
        s = math.sin(position / 2)
        turn = (self.axis[0] * s, self.axis[1] * s, self.axis[2] * s, math.cos(position / 2))
        return self.xyz, _multiply(self.rotation, turn)

    def message(self, prefix=''):
        return TransformStamped(
            header=Header(frame_id=prefix + self.parent), child_frame_id=prefix + self.child
        )

    def fill(self, transform, position, stamp):
        """Set transform (a message of this joint) to position, stamped."""
        (x, y, z), (qx, qy, qz, qw) = self.pose(position)
        transform.header.stamp = stamp
        t, r = transform.transform.translation, transform.transform.rotation
        t.x, t.y, t.z = x, y, z
        r.x, r.y, r.z, r.w = qx, qy, qz, qw
        return transform


def joint_transform(joint, position, stamp, prefix=''):
    """A urdf_parser_py joint at position (rad or m) → parent → child TransformStamped."""
    motion = JointMotion(joint)
    return motion.fill(motion.message(prefix), position, stamp or Time())


def rest_position(joint):
    """0 (the URDF's zero pose), moved inside the joint's limits when 0 is outside them."""
    limit = joint.limit
    if joint.type == 'continuous' or limit is None:
        return 0.0
    return min(max(0.0, limit.lower), limit.upper)


# ---- the shared component -------------------------------------------------------------------
class RobotStatePublisher:
    """robot_description and the robot's joints on TF, for one driver (robot_state_publisher's
    job, with its topic names and QoS)."""

    def __init__(self, node):
        self._node = node
        self._frames = node.frames
        self.publish_joint_tf = declare(
            node,
            'publish_joint_tf',
            True,
            'broadcast the moving joints of the robot model '
            '(from joint_states) on /tf; false when robot_state_publisher does it',
            read_only=True,
        )
        publish_description = declare(
            node,
            'publish_robot_description',
            True,
            'publish the robot model on '
            'robot_description (false when robot_state_publisher does it)',
            read_only=True,
        )
        self._description_pub = (
            node.create_publisher(String, 'robot_description', DESCRIPTION_QOS)
            if publish_description
            else None
        )
        self._tf = TransformPublisher(node) if self.publish_joint_tf else None
        self.description = ''
        self.robot = None
        self.moving = {}  # joint name → urdf_parser_py joint
        self._motions = {}  # joint name → (JointMotion, its TransformStamped)
        self.positions = {}  # joint name → last position reported (or the rest pose)
        self._reported = {}  # joint name → time.monotonic() of its last report
        self._lock = threading.Lock()
        self.joint_updates = 0
        if self._tf is not None:
            # as joint_state_publisher does: joints nobody reports (a robot that never sends
            # them, a listener that joined late) still reach /tf, at their last position
            node.create_timer(
                REPUBLISH_PERIOD, self._republish_quiet_joints, callback_group=node.callback_group
            )

    def describe(self, urdf):
        """Publish the model: the frames the driver already broadcasts (optical frames,
        base_footprint) become fixed joints too, its fixed joints go to /tf_static."""
        prefix = self._frames.prefix
        already_sent = {
            self._frames.unprefixed(t.child_frame_id) for t in self._frames.static_transforms()
        }
        for transform in self._frames.static_transforms():
            parent, child = (
                self._frames.unprefixed(transform.header.frame_id),
                self._frames.unprefixed(transform.child_frame_id),
            )
            if not any(c == child for _, c in urdf.joints.values()):
                t = transform.transform.translation
                urdf.fixed(
                    parent, child, (t.x, t.y, t.z), quaternion_rpy(transform.transform.rotation)
                )
        text = urdf.xml()
        robot = parse(text)
        stamp = self._node.get_clock().now().to_msg()
        self._frames.send_static(
            [
                joint_transform(joint, 0.0, stamp, prefix)
                for joint in robot.joints
                if joint.type == 'fixed' and joint.child not in already_sent
            ]
        )
        self.description, self.robot = text, robot
        self.moving = {joint.name: joint for joint in robot.joints if joint.type in MOVING}
        # one message per joint, filled again for each report (building one costs more)
        self._motions = {
            name: (JointMotion(joint), JointMotion(joint).message(prefix))
            for name, joint in self.moving.items()
        }
        self.positions = {
            name: self.positions.get(name, rest_position(joint))
            for name, joint in self.moving.items()
        }
        if self._description_pub is not None:
            self._description_pub.publish(String(data=text))
        self.publish_joints()

    def move(self, joint_state):
        """sensor_msgs/JointState from the robot → transforms of the joints it names."""
        known = {
            name: position
            for name, position in zip(joint_state.name, joint_state.position, strict=False)
            if name in self.moving and math.isfinite(position)
        }
        self.positions.update(known)
        now = time.monotonic()
        self._reported.update((name, now) for name in known)
        self.joint_updates += 1
        self.publish_joints(known, joint_state.header.stamp)

    def _republish_quiet_joints(self):
        quiet_since = time.monotonic() - REPUBLISH_PERIOD / 2
        self.publish_joints(
            {
                name: position
                for name, position in list(self.positions.items())
                if self._reported.get(name, 0.0) < quiet_since
            }
        )

    def publish_joints(self, positions=None, stamp=None):
        """The moving joints (default: all, at their last positions) on /tf; nothing while
        the driver is inactive (its /tf publisher is a lifecycle publisher)."""
        positions = self.positions if positions is None else positions
        if self._tf is None or not positions or not getattr(self._node, 'active', True):
            return
        stamp = stamp or self._node.get_clock().now().to_msg()
        motions = self._motions
        with self._lock:  # the reused messages: a link thread and the executor may both report
            self._tf.sendTransform(
                [
                    motions[name][0].fill(motions[name][1], value, stamp)
                    for name, value in positions.items()
                ]
            )
