"""The Nabaztag bridge; sim:=true also starts an emulated rabbit calling it on 127.0.0.1:8080.

ros2 launch legacy_robot_bringup nabaztag.launch.py sim:=true
"""

from legacy_robot_bringup.launch_description import robots_launch_description


def generate_launch_description():
    return robots_launch_description('nabaztag')
