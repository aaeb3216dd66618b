"""The AIBO driver; sim:=true also starts the AIBO emulator on TCP 21001 and 21002.

ros2 launch legacy_robot_bringup aibo.launch.py sim:=true
"""

from legacy_robot_bringup.launch_description import robots_launch_description


def generate_launch_description():
    return robots_launch_description('aibo')
