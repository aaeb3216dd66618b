"""TF with plain publishers: what tf2_ros's broadcasters do, with no tf2_ros (no wheel exists).

A TransformBroadcaster is a publisher of tf2_msgs/TFMessage on /tf (reliable, depth 100); a
StaticTransformBroadcaster publishes on /tf_static (reliable, transient local, depth 1) one
message holding every static transform sent so far. These classes do exactly that, so rviz
and tf2 listeners see the drivers' frames on a pip install and on a full install alike.
"""

from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, QoSProfile
from tf2_msgs.msg import TFMessage

from .messages import yaw_quaternion

TF_QOS = QoSProfile(depth=100)
TF_STATIC_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
# A listener keeps 100, as tf2's static listener does: every robot's latched message arrives in
# one burst when it joins, and a depth of 1 would keep only the last robot's.
TF_STATIC_LISTENER_QOS = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class TransformPublisher:
    """Dynamic transforms on /tf (the topic is absolute: TF is global, whatever the namespace)."""

    def __init__(self, node):
        # on a managed node, silent unless it is active (as its odometry)
        create = getattr(node, 'create_lifecycle_publisher', node.create_publisher)
        self._publisher = create(TFMessage, '/tf', TF_QOS)

    def sendTransform(self, transforms):  # tf2_ros's name: a drop-in
        if isinstance(transforms, TransformStamped):
            transforms = [transforms]
        self._publisher.publish(TFMessage(transforms=list(transforms)))


class StaticTransformPublisher:
    """Static transforms on /tf_static: each message carries all of them, latest per child
    frame."""

    def __init__(self, node):
        self._publisher = node.create_publisher(TFMessage, '/tf_static', TF_STATIC_QOS)
        self._by_child = {}

    def sendTransform(self, transforms):
        if isinstance(transforms, TransformStamped):
            transforms = [transforms]
        for transform in transforms:
            self._by_child[transform.child_frame_id] = transform
        self._publisher.publish(TFMessage(transforms=list(self._by_child.values())))


def make_broadcasters(node, wanted):
    """(dynamic, static) publishers, or (None, None) when the node's publish_tf is false."""
    if not wanted:
        return None, None
    return TransformPublisher(node), StaticTransformPublisher(node)


def planar_transform(header, child_frame_id, x, y, yaw):
    """A planar pose (m, rad) of child_frame_id in header.frame_id → TransformStamped."""
    transform = TransformStamped(header=header, child_frame_id=child_frame_id)
    transform.transform.translation.x, transform.transform.translation.y = float(x), float(y)
    transform.transform.rotation = yaw_quaternion(yaw)
    return transform
