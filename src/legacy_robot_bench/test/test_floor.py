"""The benchmark floor (floor.py): a driver's shape captured from the ROS graph, and a process
that publishes the same messages at the same rates in bursts, as real processes over DDS."""

import json
import subprocess
import sys
import threading
import time

import pytest
import rclpy
from helpers import spin_until
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String
from std_srvs.srv import Trigger

from legacy_robot_bench.common.floor import Feed, bursts, capture_shape, moved
from legacy_robot_common.driver_node import DriverNode


def test_bursts_group_times_closer_than_the_gap():
    assert bursts([]) == 0
    assert bursts([0.0, 0.001, 0.002, 0.1, 0.1005, 0.3], gap=0.003) == 3


def test_feed_sends_each_entry_its_share_of_the_bursts_and_latched_ones_once():
    sent = []
    feed = Feed([('fast', 'a', 40.0), ('slow', 'b', 10.0), ('latched', 'c', 0.0)], 20.0)

    def send(publisher, message):
        sent.append(publisher)
        if len(sent) >= 1 + 50:
            feed.stop.set()

    feed.run(send)
    assert sent[0] == 'latched' and sent.count('latched') == 1
    assert sent[1:].count('fast') == pytest.approx(4 * sent[1:].count('slow'), abs=4)


def test_names_move_to_the_floor_namespace_but_absolute_ones_stay():
    shape = {'namespace': '/bench'}
    assert moved('/bench/odom', shape, '/floor') == '/floor/odom'
    assert moved('/tf', shape, '/floor') == '/tf'


class ShapedDriver(DriverNode):
    def __init__(self, context):
        super().__init__('shaped_driver', hardware_id='test', namespace='/shaped', context=context)
        self.chatter = self.publisher(String, 'chatter')
        self.create_service(
            Trigger,
            'reset',
            lambda request, response: response,
            callback_group=self.callback_group,
        )
        self.create_timer(
            0.05,
            lambda: self.chatter.publish(String(data='x' * 100)),
            callback_group=self.callback_group,
        )
        self.begin()


def test_a_captured_shape_runs_as_a_floor_process_at_the_same_rate(tmp_path):
    context = rclpy.Context()
    rclpy.init(context=context)
    driver = ShapedDriver(context)
    watcher = rclpy.create_node('floor_watcher', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(driver)
    executor.add_node(watcher)
    process = None
    try:
        spin_until(executor, lambda: watcher.count_publishers('/shaped/chatter') == 1, 5)
        shape = {}

        def capture():
            shape.update(capture_shape(watcher, 'shaped_driver', '/shaped', 1.0))

        capturer = threading.Thread(target=capture)
        capturer.start()
        spin_until(executor, lambda: not capturer.is_alive(), 10)
        chatter = next(p for p in shape['publishers'] if p['topic'] == '/shaped/chatter')
        assert chatter['type'] == 'std_msgs/msg/String' and 15 <= chatter['rate'] <= 25
        assert {'name': '/shaped/reset', 'type': 'std_srvs/srv/Trigger'} in shape['services']
        assert 15 <= shape['burst_rate'] <= 30
        (tmp_path / 'shape.json').write_text(json.dumps(shape))
        executor.remove_node(driver)
        driver.destroy_node()
        process = subprocess.Popen(
            [
                sys.executable,
                '-m',
                'legacy_robot_bench.common.floor',
                str(tmp_path / 'shape.json'),
                '--namespace',
                '/floor',
            ]
        )
        received = []
        watcher.create_subscription(String, '/floor/chatter', received.append, 100)
        spin_until(executor, lambda: len(received) >= 2, 15)
        started, before = time.monotonic(), len(received)
        spin_until(executor, lambda: time.monotonic() - started > 2.0, 5)
        assert 15 <= (len(received) - before) / (time.monotonic() - started) <= 25
        assert received[-1].data == 'x' * 100  # the captured message itself
        client = watcher.create_client(Trigger, '/floor/reset')
        spin_until(executor, client.service_is_ready, 5)
        assert client.service_is_ready()  # the driver's services are there
    finally:
        if process is not None:
            process.terminate()
            process.wait(10)
        executor.shutdown()
        watcher.destroy_node()
        rclpy.shutdown(context=context)
