"""The DDS settings our processes bring: what Fast DDS must read before rclpy starts it.

rmw_fastrtps (the default RMW) answers a service call only once the caller's reply reader has
been discovered, and waits for that at most the reply writer's max_blocking_time: 100 ms unless
a profile says otherwise. A client made just before its call (`ros2 service call`, rqt, a test)
on a busy machine can take longer to be discovered; the answer is then dropped ("failed to send
response (timeout)") and the caller waits forever. config/fastdds_profiles.xml raises the wait
to 1 s for every service of the process.
"""

import os
import pathlib

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

PACKAGE = 'legacy_robot_common'
PROFILES_FILE = 'fastdds_profiles.xml'
# Fast DDS 3 reads the first; the second is its deprecated name, still honoured
PROFILES_VARIABLES = ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE')


def profiles_path():
    """The installed config/fastdds_profiles.xml, or None (package or file not installed)."""
    try:
        path = pathlib.Path(get_package_share_directory(PACKAGE)) / 'config' / PROFILES_FILE
    except PackageNotFoundError:
        return None
    return path if path.is_file() else None


def use_our_dds_profiles():
    """Point Fast DDS at our profiles file; call before rclpy.init. A profiles file the user
    named in the environment is left alone (it replaces ours). Returns the path set, or None."""
    if any(os.environ.get(name) for name in PROFILES_VARIABLES):
        return None
    path = profiles_path()
    if path is not None:
        os.environ[PROFILES_VARIABLES[0]] = str(path)
    return path
