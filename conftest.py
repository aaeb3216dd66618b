"""Test-run isolation: a private ROS domain and localhost-only DDS discovery.

Set before anything imports rclpy; subprocesses started by tests inherit it.
"""

import os
import pathlib
import sys

os.environ.setdefault('ROS_DOMAIN_ID', str(1 + os.getpid() % 100))
os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
os.environ.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
sys.path.insert(0, str(pathlib.Path(__file__).parent / 'test' / 'support'))
