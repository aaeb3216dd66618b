"""A service client the server cannot answer: its reply reader sits in a DDS partition no
service writes to, so to the server it looks like a client still being discovered.

Run: python -m late_client SERVICE PROFILES_PATH (a rcl_interfaces GetParameters service; the
client's Fast DDS profiles file is written there). Calls the service every 3 s until it is
stopped, printing 'sent <CLOCK_MONOTONIC seconds>' each time: a request that went out before
the server's request reader matched is lost, and the next one stands in for it. An answer that
arrives all the same is printed as 'answered <seconds>': then the partition was not applied
and the client was reachable after all.
"""

import os
import sys
import time

import rclpy
from rcl_interfaces.srv import GetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node

from legacy_robot_common.distribution import fastdds_profiles_variable

CLIENT_PROFILES = """<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns="http://www.eprosima.com"><profiles>
  <data_reader profile_name="client"><propertiesPolicy><properties>
    <property><name>partitions</name><value>no_service_writes_here</value></property>
  </properties></propertiesPolicy></data_reader>
</profiles></dds>
"""
PERIOD = 3.0  # s: longer than any wait of the server, so each answer's request is plain


def main(service, profiles_path):
    with open(profiles_path, 'w') as stream:
        stream.write(CLIENT_PROFILES)
    os.environ[fastdds_profiles_variable()] = profiles_path  # the one this Fast DDS reads
    rclpy.init()
    node = Node('late_client')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    client = node.create_client(GetParameters, service)
    while not any(name == service for name, _ in node.get_service_names_and_types()):
        executor.spin_once(timeout_sec=0.1)
    while True:
        future = client.call_async(GetParameters.Request(names=['use_sim_time']))
        future.add_done_callback(lambda _: print(f'answered {time.monotonic():.3f}', flush=True))
        print(f'sent {time.monotonic():.3f}', flush=True)
        end = time.monotonic() + PERIOD
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.1)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
