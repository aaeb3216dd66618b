"""What differs between the ROS 2 distributions these drivers support, in one place.

Jazzy (rclpy 7, the LTS) and Kilted (rclpy 9). The rclpy in use is read from its package.xml in
the ament index, which both a pip-installed set and an apt install have; the rest of the code
asks this module rather than comparing versions itself (docs/distributions.md lists every
difference and what we do about it).
"""

import functools
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from ament_index_python.packages import get_package_share_directory

# rclpy's major version → the distribution that ships it
DISTRIBUTIONS = {7: 'jazzy', 9: 'kilted'}


@functools.cache
def rclpy_version():
    """(major, minor, patch) of the rclpy in use."""
    manifest = Path(get_package_share_directory('rclpy')) / 'package.xml'
    text = ElementTree.parse(manifest).getroot().findtext('version', '0.0.0')
    return tuple(int(part) for part in text.split('.')[:3])


def rclpy_release():
    """The rclpy in use as text: '7.1.5'."""
    return '.'.join(map(str, rclpy_version()))


def kilted_or_later():
    """rclpy 9 on: an events executor that awaits async services, and Fast DDS 3."""
    return rclpy_version() >= (9, 0, 0)


def distribution():
    """'jazzy', 'kilted', or 'rclpy X.Y.Z' for one we have not tried."""
    return DISTRIBUTIONS.get(rclpy_version()[0], f'rclpy {rclpy_release()}')


def events_executor_gap():
    """Why rclpy's events executor cannot run these drivers here, or None where it can.

    Jazzy's (rclpy 7) sends whatever a service callback returns as the reply: for an async
    handler that is a coroutine, send_response raises TypeError and the process ends. Every
    service that waits for a robot's answer is async (DriverNode.reply_future). Kilted's
    (rclpy 9) awaits the coroutine.
    """
    if kilted_or_later():
        return None
    return (
        f'the events executor of rclpy {rclpy_release()} ({distribution()}) cannot answer async '
        'services (it sends the coroutine as the reply)'
    )


# What Fast DDS reads a profiles file by, per major version: Jazzy ships Fast DDS 2.14, Kilted 3.2.
# Fast DDS 3 renamed the variable (2.x reads only FASTRTPS_..., 3.x only FASTDDS_...) and the
# elements of a writer's and a reader's <times> (heartbeatPeriod → heartbeat_period, ...); an
# element a version does not know fails its profile, and then the whole file is not loaded.
PROFILES_VARIABLES = {3: 'FASTDDS_DEFAULT_PROFILES_FILE', 2: 'FASTRTPS_DEFAULT_PROFILES_FILE'}


def fastdds_major():
    """The major version of the Fast DDS under rmw_fastrtps here: 2 up to Jazzy (rclpy 7), 3
    from Kilted (rclpy 9) on. The wheels put no Fast DDS package in the ament index, so it
    follows the distribution."""
    return 3 if kilted_or_later() else 2


def fastdds_profiles_variable():
    """The environment variable through which this distribution's Fast DDS loads a profiles
    file (it reads no other)."""
    return PROFILES_VARIABLES[fastdds_major()]


if __name__ == '__main__':
    # `python -m legacy_robot_common.distribution`: the Makefile asks which executor the drivers
    # use by default here (driver_node.default_executor, without importing rclpy's executors)
    print('single' if events_executor_gap() else 'events')
