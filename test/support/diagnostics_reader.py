"""Prints the values of one diagnostics status as a JSON line, from the first /diagnostics
message that holds it, then exits (1 after TIMEOUT s without one).

    python diagnostics_reader.py 'nabaztag_bridge: http server'
"""

import json
import sys
import time

import rclpy
from diagnostic_msgs.msg import DiagnosticArray

TIMEOUT = 60.0  # s: discovery and the 1 Hz publisher, on a loaded machine


def main():
    name = sys.argv[1]
    rclpy.init()
    node = rclpy.create_node('diagnostics_reader')
    found = []

    def received(msg):
        found.extend({v.key: v.value for v in s.values} for s in msg.status if s.name == name)

    node.create_subscription(DiagnosticArray, '/diagnostics', received, 10)
    deadline = time.monotonic() + TIMEOUT
    while not found and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.5)
    node.destroy_node()
    rclpy.shutdown()
    if not found:
        return 1
    print(json.dumps(found[0]), flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
