"""Where the shared config/, launch/ and recordings/ files are: the install space, else the
source tree."""

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


def recording_file(robot):
    """Path of recordings/<robot>.mcap (made by the demo on the emulators), or None."""
    path = share_dir() / 'recordings' / f'{robot}.mcap'
    return path if path.is_file() else None
