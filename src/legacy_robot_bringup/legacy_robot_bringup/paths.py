"""Where the shared config/ and launch/ files are: the install space, else the source tree."""
import pathlib

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

PACKAGE = 'legacy_robot_bringup'


def share_dir():
    try:
        return pathlib.Path(get_package_share_directory(PACKAGE))
    except PackageNotFoundError:
        return pathlib.Path(__file__).resolve().parents[3]  # repository root (source tree)


def config_file(name):
    """Path of config/<name>, or None when it does not exist."""
    path = share_dir() / 'config' / name
    return path if path.is_file() else None
