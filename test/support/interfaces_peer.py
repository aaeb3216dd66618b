"""A second process for the interface test: publishes RabbitEvent, serves TextCommand."""

import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from legacy_robot_interfaces.msg import RabbitEvent
from legacy_robot_interfaces.srv import TextCommand


def main():
    rclpy.init()
    node = Node('interfaces_peer')
    pub = node.create_publisher(RabbitEvent, 'rabbit_events', 10)

    def publish():
        pub.publish(
            RabbitEvent(serial='0019db9dbb96', kind=RabbitEvent.EARS_MOVED, ear0=10, ear1=5)
        )

    def answer(request, response):
        response.success = True
        response.reply = request.command.upper()
        return response

    node.create_timer(0.1, publish)
    node.create_service(TextCommand, 'shout', answer)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
