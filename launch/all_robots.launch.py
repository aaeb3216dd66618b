"""Every installed robot driver; sim:=true also starts their emulators.

    ros2 launch legacy_robot_bringup all_robots.launch.py sim:=true

Each robot gets its own namespace, /<robot>/... (namespace:=lab gives /lab/<robot>/...;
namespace_per_robot:=false puts them all in one, where their topics collide).
"""

from legacy_robot_bringup.launch_description import robots_launch_description


def generate_launch_description():
    return robots_launch_description()
