"""Every installed robot driver; sim:=true also starts their emulators.

    ros2 launch legacy_robot_bringup all_robots.launch.py sim:=true namespace:=lab
"""
from legacy_robot_bringup.launch_description import robots_launch_description


def generate_launch_description():
    return robots_launch_description()
