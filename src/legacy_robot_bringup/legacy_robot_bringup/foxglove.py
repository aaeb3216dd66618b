"""The Foxglove relay for bringup, the demo and launch files (legacy_robot_common's
FoxgloveRelay), and its own executable; the robots' Foxglove layouts:

    ros2 run legacy_robot_bringup foxglove_relay [--port 8765] [--address 127.0.0.1]
    ros2 run legacy_robot_bringup foxglove_relay --write-layouts config/foxglove
"""

import argparse
import pathlib
import sys

from legacy_robot_common.driver_node import run_node
from legacy_robot_common.foxglove_layout import layout_json
from legacy_robot_common.foxglove_relay import DEFAULT_PORT, FoxgloveRelay
from legacy_robot_common.params import ParameterError

from .registry import discover_plugins

FOXGLOVE_HELP = (
    f'serve every topic, service and robot model to Foxglove / Lichtblick on '
    f'ws://localhost:PORT (default {DEFAULT_PORT}; 0: any free port)'
)
FOXGLOVE_ADDRESS_HELP = (
    'address the Foxglove server listens on (default 127.0.0.1, this '
    'machine only; 0.0.0.0 lets anyone on your network watch and drive)'
)


def start_relay(executor, address='127.0.0.1', port=DEFAULT_PORT):
    """A FoxgloveRelay added to executor; OSError when it cannot listen there."""
    relay = FoxgloveRelay(host=address, port=port)
    executor.add_node(relay)
    return relay


def add_foxglove_arguments(parser):
    """bringup's and the demo's --foxglove [PORT] and --foxglove-address."""
    parser.add_argument(
        '--foxglove', nargs='?', type=int, const=DEFAULT_PORT, metavar='PORT', help=FOXGLOVE_HELP
    )
    parser.add_argument(
        '--foxglove-address', default='127.0.0.1', metavar='ADDRESS', help=FOXGLOVE_ADDRESS_HELP
    )


def foxglove_option(args):
    """(address, port) from --foxglove / --foxglove-address, or None."""
    port = getattr(args, 'foxglove', None)  # callers may build args without the options
    return None if port is None else (getattr(args, 'foxglove_address', '127.0.0.1'), port)


def write_layouts(folder, plugins=None):
    """<folder>/<robot>.json for every installed robot; the paths written."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for plugin in (plugins or discover_plugins()).values():
        path = folder / f'{plugin.name}.json'
        path.write_text(layout_json(plugin))
        paths.append(path)
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(prog='foxglove_relay', description=__doc__.split('\n\n')[0])
    parser.add_argument('--port', type=int, default=DEFAULT_PORT, help=FOXGLOVE_HELP)
    parser.add_argument('--address', default='127.0.0.1', help=FOXGLOVE_ADDRESS_HELP)
    parser.add_argument(
        '--write-layouts',
        metavar='FOLDER',
        help="write each robot's Foxglove layout to FOLDER/<robot>.json and exit",
    )
    args, ros_args = parser.parse_known_args(argv)
    if args.write_layouts:
        for path in write_layouts(args.write_layouts):
            print(path)
        return 0

    def create_relay():
        relay = FoxgloveRelay(host=args.address, port=args.port)
        print(relay.announcement, flush=True)
        return relay

    return run_node(
        create_relay, ['foxglove_relay', *ros_args], user_errors=(ParameterError, OSError)
    )


if __name__ == '__main__':
    sys.exit(main())
