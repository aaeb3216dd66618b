"""TF broadcasting when tf2_ros is installed (the PyPI ROS wheels lack it: ros2-toolchain.md)."""
from geometry_msgs.msg import TransformStamped

from .messages import yaw_quaternion

try:
    from tf2_ros import StaticTransformBroadcaster, TransformBroadcaster
except ImportError:
    TransformBroadcaster = StaticTransformBroadcaster = None


def make_broadcasters(node, wanted):
    """(dynamic, static) broadcasters, or (None, None) when not wanted or not installed."""
    if wanted and TransformBroadcaster is not None:
        return TransformBroadcaster(node), StaticTransformBroadcaster(node)
    if wanted:
        node.get_logger().info('tf2_ros is not installed: no TF is broadcast '
                               '(the odom topic carries the same pose)')
    return None, None


def planar_transform(header, child_frame_id, x, y, yaw):
    """A planar pose (m, rad) of child_frame_id in header.frame_id → TransformStamped."""
    transform = TransformStamped(header=header, child_frame_id=child_frame_id)
    transform.transform.translation.x, transform.transform.translation.y = float(x), float(y)
    transform.transform.rotation = yaw_quaternion(yaw)
    return transform
