"""The P2OS driver; sim:=true also starts the P2OS emulator on TCP port 8101.

ros2 launch legacy_robot_bringup p2os.launch.py sim:=true
"""

from legacy_robot_bringup.launch_description import robots_launch_description


def generate_launch_description():
    return robots_launch_description('p2os')
