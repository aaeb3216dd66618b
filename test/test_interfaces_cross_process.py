"""The generated interfaces import and travel between two processes over DDS."""

import rclpy
from helpers import spin_until, start_module
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from legacy_robot_interfaces.msg import RabbitEvent
from legacy_robot_interfaces.srv import TextCommand


def test_message_and_service_between_processes():
    peer = start_module('interfaces_peer')
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node('interfaces_test', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    received = []
    node.create_subscription(RabbitEvent, 'rabbit_events', received.append, 10)
    client = node.create_client(TextCommand, 'shout')
    try:
        assert spin_until(executor, lambda: received, 30), 'no RabbitEvent from the other process'
        event = received[0]
        assert (event.serial, event.kind, event.ear0, event.ear1) == ('0019db9dbb96', 6, 10, 5)
        assert client.wait_for_service(timeout_sec=10)
        future = client.call_async(TextCommand.Request(command='play action'))
        assert spin_until(executor, future.done, 10)
        assert future.result().success and future.result().reply == 'PLAY ACTION'
    finally:
        peer.terminate()
        peer.wait(10)
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
