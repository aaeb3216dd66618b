"""The Pleo driver; sim:=true also starts the Pleo emulator (with the sample project's URF)
on a pseudo-terminal reachable as /tmp/pleo_emulator.

    ros2 launch legacy_robot_bringup pleo.launch.py sim:=true
"""

from legacy_robot_bringup.launch_description import robots_launch_description


def generate_launch_description():
    return robots_launch_description('pleo')
