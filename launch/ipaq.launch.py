"""The iPaq driver; sim:=true also starts the iPaq emulator on TCP ports 5000-5002.

ros2 launch legacy_robot_bringup ipaq.launch.py sim:=true
"""

from legacy_robot_bringup.launch_description import robots_launch_description


def generate_launch_description():
    return robots_launch_description('ipaq')
