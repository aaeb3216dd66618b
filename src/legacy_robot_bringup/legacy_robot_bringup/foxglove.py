"""The Foxglove relay for bringup, the demo and launch files (legacy_robot_common's
FoxgloveRelay), and its own executable:

    ros2 run legacy_robot_bringup foxglove_relay [--port 8765] [--address 127.0.0.1]
"""
import argparse
import sys

import rclpy

from legacy_robot_common.driver_node import make_executor, spin_until_shutdown
from legacy_robot_common.foxglove_relay import DEFAULT_PORT, FoxgloveRelay

FOXGLOVE_HELP = (f'serve every topic, service and robot model to Foxglove / Lichtblick on '
                 f'ws://localhost:PORT (default {DEFAULT_PORT}; 0: any free port)')
FOXGLOVE_ADDRESS_HELP = ('address the Foxglove server listens on (default 127.0.0.1, this '
                         'machine only; 0.0.0.0 lets anyone on your network watch and drive)')


def start_relay(executor, address='127.0.0.1', port=DEFAULT_PORT, context=None):
    """A FoxgloveRelay added to executor; OSError when it cannot listen there."""
    relay = FoxgloveRelay(executor, host=address, port=port, context=context)
    executor.add_node(relay)
    return relay


def main(argv=None):
    parser = argparse.ArgumentParser(prog='foxglove_relay', description=__doc__.split('\n\n')[0])
    parser.add_argument('--port', type=int, default=DEFAULT_PORT, help=FOXGLOVE_HELP)
    parser.add_argument('--address', default='127.0.0.1', help=FOXGLOVE_ADDRESS_HELP)
    args, ros_args = parser.parse_known_args(argv)
    rclpy.init(args=['foxglove_relay', *ros_args])
    executor = make_executor()
    relay = None
    try:
        relay = start_relay(executor, args.address, args.port)
        print(relay.announcement, flush=True)
        with spin_until_shutdown():
            executor.spin()
    except OSError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    finally:
        if relay is not None:
            relay.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
