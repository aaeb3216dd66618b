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
