"""Full ROS 2 message definitions (the `ros2msg` text rosbag2 and Foxglove read), from the
installed interface files.

A tool that receives CDR bytes needs the message's definition, with the definition of every
type it uses appended: that is what rosbag2 stores in a bag and what a Foxglove client decodes
a channel with. The definitions come from the .msg / .srv files each interface package installs
(share/<package>/msg/<Name>.msg), so they are the ones our nodes were built with, our own
legacy_robot_interfaces included; rosbags (a maintained ROS bag library) parses them and writes
the concatenated form.
"""

import functools

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
from rosbags.typesys import Stores, get_typestore
from rosbags.typesys.base import Nodetype
from rosbags.typesys.msg import get_types_from_msg

SERVICE_SEPARATOR = '\n---\n'


class UnknownType(LookupError):
    """A type whose interface file is not installed (or not a msg/srv name)."""


def _split(type_name):
    """'pkg/msg/Name' → ('pkg', 'msg', 'Name'); UnknownType for anything else."""
    parts = type_name.split('/')
    if len(parts) != 3 or parts[1] not in ('msg', 'srv'):
        raise UnknownType(f'{type_name!r} is not a ROS 2 interface name (package/msg/Name)')
    return parts


def interface_text(type_name):
    """The installed .msg (.srv) file of type_name, as text."""
    package, kind, name = _split(type_name)
    try:
        share = get_package_share_directory(package)
    except PackageNotFoundError:
        raise UnknownType(f'{type_name}: package {package} is not installed') from None
    try:
        with open(f'{share}/{kind}/{name}.{kind}', encoding='utf-8') as stream:
            return stream.read()
    except OSError:
        raise UnknownType(f'{type_name}: no {kind}/{name}.{kind} in {share}') from None


def _used_types(node):
    """Type names a parsed field (rosbags' parse tree) refers to."""
    if isinstance(node, tuple):
        if len(node) == 2 and node[0] == Nodetype.NAME and isinstance(node[1], str):
            yield node[1]
        else:
            for part in node:
                yield from _used_types(part)
    elif isinstance(node, list):
        for part in node:
            yield from _used_types(part)


def service_parts(type_name):
    """'pkg/srv/Name' → {'pkg/msg/Name_Request': text, 'pkg/msg/Name_Response': text}: named
    as messages of the package, so the types they use by short name resolve to its messages."""
    package, _, name = _split(type_name)
    text = interface_text(type_name)
    request, _, response = ('\n' + text + '\n').partition(SERVICE_SEPARATOR)
    return {
        f'{package}/msg/{name}_Request': request.strip('\n') + '\n',
        f'{package}/msg/{name}_Response': response.strip('\n') + '\n',
    }


class MessageDefinitions:
    """A rosbags typestore filled on demand with the installed definitions."""

    def __init__(self):
        self.typestore = get_typestore(Stores.EMPTY)  # builtin_interfaces Time/Duration only

    def add(self, type_name, text=None):
        """Register type_name (and every type it uses) from its installed file (or text);
        the name it is registered under."""
        if type_name in self.typestore.fielddefs:
            return type_name
        if text is None:
            text = interface_text(type_name)
        parsed = get_types_from_msg(text, type_name)
        ((registered, (_, fields)),) = parsed.items()  # rosbags may respell a service part's name
        for used in sorted(set(_used_types(fields)) - {registered}):
            self.add(used)
        self.typestore.register(parsed)
        return registered

    def definition(self, type_name):
        """The concatenated ros2msg definition of a message type (pkg/msg/Name)."""
        self.add(type_name)
        return self.typestore.generate_msgdef(type_name, ros_version=2)[0]

    def service_definitions(self, type_name):
        """(request definition, response definition) of a service type (pkg/srv/Name)."""
        parts = [self.add(part, text) for part, text in service_parts(type_name).items()]
        return tuple(self.typestore.generate_msgdef(part, ros_version=2)[0] for part in parts)


@functools.lru_cache(maxsize=None)
def shared():
    """One MessageDefinitions per process (parsing a type twice gains nothing)."""
    return MessageDefinitions()
