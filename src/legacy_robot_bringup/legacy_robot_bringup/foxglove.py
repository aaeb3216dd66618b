"""The Foxglove relay for bringup, the demo and launch files (legacy_robot_common's
FoxgloveRelay), and its own executable; the robots' Foxglove layouts:

    ros2 run legacy_robot_bringup foxglove_relay [--port 8765] [--address 127.0.0.1]
    ros2 run legacy_robot_bringup foxglove_relay --write-layouts config/foxglove
"""

import argparse
import dataclasses
import pathlib
import sys

from legacy_robot_common.driver_node import run_node
from legacy_robot_common.foxglove_layout import layout_json
from legacy_robot_common.foxglove_relay import (
    DEFAULT_PORT,
    PUBLISH_OPTION,
    SERVICES_OPTION,
    ClientAccess,
    FoxgloveRelay,
)
from legacy_robot_common.params import ParameterError

from .registry import discover_plugins

FOXGLOVE_HELP = (
    f'serve every topic, service and robot model to Foxglove / Lichtblick on '
    f'ws://localhost:PORT (default {DEFAULT_PORT}; 0: any free port)'
)
FOXGLOVE_ADDRESS_HELP = (
    'address the Foxglove server listens on (default 127.0.0.1, this machine only; on any '
    'other, e.g. 0.0.0.0, clients on your network may watch, and publish or call services only '
    f'as {PUBLISH_OPTION} and {SERVICES_OPTION} allow)'
)
PUBLISH_HELP = (
    'topics Foxglove clients may publish on, regular expressions matching the whole name, '
    "separated by spaces or commas (e.g. '.*/cmd_vel'); default: any on loopback, none on any "
    'other address'
)
SERVICES_HELP = (
    'services Foxglove clients may call, regular expressions matching the whole name, '
    "separated by spaces or commas (e.g. '/p2os/enable_motors'); default: any on loopback, none "
    'on any other address'
)


@dataclasses.dataclass(frozen=True)
class RelaySettings:
    """Where the relay listens and what its clients may do (None: ClientAccess's default)."""

    address: str = '127.0.0.1'
    port: int = DEFAULT_PORT
    publish: tuple | None = None
    services: tuple | None = None

    def access(self):
        """ClientAccess; ParameterError for a pattern that is not a regular expression."""
        return ClientAccess(self.address, self.publish, self.services)


def start_relay(executor, settings):
    """A FoxgloveRelay added to executor; OSError when it cannot listen there."""
    relay = FoxgloveRelay(host=settings.address, port=settings.port, access=settings.access())
    executor.add_node(relay)
    return relay


def add_access_arguments(parser, publish=PUBLISH_OPTION, services=SERVICES_OPTION):
    parser.add_argument(publish, nargs='+', metavar='REGEX', help=PUBLISH_HELP)
    parser.add_argument(services, nargs='+', metavar='REGEX', help=SERVICES_HELP)


def add_foxglove_arguments(parser):
    """bringup's and the demo's --foxglove [PORT], --foxglove-address, --foxglove-publish and
    --foxglove-services."""
    parser.add_argument(
        '--foxglove', nargs='?', type=int, const=DEFAULT_PORT, metavar='PORT', help=FOXGLOVE_HELP
    )
    parser.add_argument(
        '--foxglove-address', default='127.0.0.1', metavar='ADDRESS', help=FOXGLOVE_ADDRESS_HELP
    )
    add_access_arguments(parser)


def foxglove_option(args):
    """RelaySettings from the --foxglove options, or None (no relay). ParameterError for a
    --foxglove-publish or --foxglove-services pattern that is not a regular expression."""
    port = getattr(args, 'foxglove', None)  # callers may build args without the options
    if port is None:
        return None
    settings = RelaySettings(
        getattr(args, 'foxglove_address', '127.0.0.1'),
        port,
        _tuple(getattr(args, 'foxglove_publish', None)),
        _tuple(getattr(args, 'foxglove_services', None)),
    )
    settings.access()  # a bad pattern is a usage error before anything starts
    return settings


def _tuple(values):
    return None if values is None else tuple(values)


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
    add_access_arguments(parser, '--publish', '--services')
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

    settings = RelaySettings(args.address, args.port, args.publish, args.services)

    def create_relay():
        relay = FoxgloveRelay(host=args.address, port=args.port, access=settings.access())
        print(relay.announcement, flush=True)
        return relay

    return run_node(
        create_relay, ['foxglove_relay', *ros_args], user_errors=(ParameterError, OSError)
    )


if __name__ == '__main__':
    sys.exit(main())
