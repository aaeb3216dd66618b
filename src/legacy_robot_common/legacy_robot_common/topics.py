"""Topics by name and type string, as tools that follow the graph need them (the Foxglove relay,
the bag export): the Python class of a type, and the QoS that hears every publisher."""

import importlib

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy


def import_type(type_name):
    """'pkg/msg/Name' (or srv) → the Python class rclpy uses; ImportError / AttributeError /
    ValueError when there is none."""
    package, kind, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


def matching_qos(publishers, depth=10):
    """The QoS that receives from every publisher of a topic: reliable / transient local only
    when all of them offer it (a latched robot_description reaches a late subscriber)."""
    reliable = bool(publishers) and all(
        p.qos_profile.reliability == ReliabilityPolicy.RELIABLE for p in publishers
    )
    latched = bool(publishers) and all(
        p.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for p in publishers
    )
    return QoSProfile(
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


IMAGE_QOS = ('reliable', 'best_effort')
IMAGE_QOS_DESCRIPTION = (
    'camera images: reliable (what rviz subscribes with by default; a clean link) or '
    'best_effort (depth 1: on Wi-Fi a lost image is not resent, the next one replaces it; '
    'subscribers must ask for best_effort too)'
)


def image_qos(choice, depth):
    """The QoS of an image publisher for parameter image_qos (IMAGE_QOS): reliable with depth,
    or best-effort keeping only the newest image."""
    if choice == 'best_effort':
        return QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)
