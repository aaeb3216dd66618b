"""Topics by name and type string, as tools that follow the graph need them (the Foxglove relay,
the bag export): the Python class of a type, and the QoS that hears every publisher."""

import importlib

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

INTERFACE_KINDS = ('msg', 'srv', 'action')
# the types an action is made of, by the suffix after '<Action>_', where rosidl keeps them
# (rosidl_runtime_py's rule: a feedback message is <Action>.Impl.FeedbackMessage)
ACTION_PARTS = {
    'Goal': ('Goal',),
    'Result': ('Result',),
    'Feedback': ('Feedback',),
    'FeedbackMessage': ('Impl', 'FeedbackMessage'),
    'SendGoal': ('Impl', 'SendGoalService'),
    'GetResult': ('Impl', 'GetResultService'),
}
SERVICE_PARTS = {'Request': ('Request',), 'Response': ('Response',), 'Event': ('Event',)}


def import_type(type_name):
    """The Python class rclpy uses for an interface type name as the graph reports it,
    resolved as ROS 2's own tools do: 'pkg/msg/Name', 'pkg/srv/Name' (and Name_Request,
    _Response, _Event), 'pkg/action/Name' and the types an action's topics and services carry
    ('pkg/action/Name_FeedbackMessage', _SendGoal, _GetResult, _Goal, _Result, _Feedback, and
    _SendGoal_Request etc.). ValueError for a name of another form; ImportError when the
    package is not installed; AttributeError when it has no such type."""
    parts = type_name.split('/')
    if len(parts) != 3 or parts[1] not in INTERFACE_KINDS or not all(parts):
        raise ValueError(f'{type_name!r} is not an interface name (package/msg|srv|action/Name)')
    package, kind, name = parts
    module = importlib.import_module(f'{package}.{kind}')
    found = getattr(module, name, None)
    if found is None:
        found = _nested_type(module, kind, name)
    if found is None:
        raise AttributeError(f'{type_name}: {package}.{kind} has no such type')
    return found


def _nested_type(module, kind, name):
    """'Move_FeedbackMessage' in an action module → Move.Impl.FeedbackMessage (None if not
    there); a service's parts likewise."""
    base, _, part = name.partition('_')
    found = getattr(module, base, None)
    parts = (ACTION_PARTS if kind == 'action' else SERVICE_PARTS).get(part)
    if found is None or parts is None:
        return None
    for attribute in parts:
        found = getattr(found, attribute, None)
    return found


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
