"""LaunchDescriptions for the launch files in launch/ (needs `launch` and `launch_ros`,
i.e. a full ROS 2 install; the plan itself is in launch_plan.py)."""
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, GroupAction, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace

from .launch_plan import (FRAME_MODES, executable_path, frame_isolation, params_path,
                          per_robot_by_default, robot_namespace, robot_processes)
from .registry import discover_plugins


def _actions(spec, frame_parameters, remappings):
    if not spec.is_node:
        return ExecuteProcess(cmd=[executable_path(spec), *spec.arguments], name=spec.name,
                              output='screen')
    params = [params_path(package, path) for package, path in spec.params_files]
    if spec.parameters or frame_parameters:
        params.append({**spec.parameters, **frame_parameters})
    return Node(package=spec.package, executable=spec.executable, name=spec.name,
                parameters=params, remappings=remappings, output='screen')


def _true(context, name):
    return LaunchConfiguration(name).perform(context).lower() in ('1', 'true', 'yes')


def _robots(context, names):
    sim = _true(context, 'sim')
    namespace = LaunchConfiguration('namespace').perform(context)
    per_robot = _true(context, 'namespace_per_robot')
    frames = LaunchConfiguration('frames').perform(context)
    plugins = discover_plugins()
    chosen = [plugins[n] for n in names] if names else list(plugins.values())
    groups = []
    for plugin in chosen:
        robot_ns = robot_namespace(plugin, namespace, per_robot)
        isolation = frame_isolation(robot_ns, frames)
        actions = [_actions(spec, *isolation) for spec in robot_processes(plugin, sim)]
        groups += [GroupAction([PushRosNamespace(robot_ns), *actions])] if robot_ns else actions
    return groups


def robots_launch_description(*names):
    """Launch the named robots (all installed robots when none is named)."""
    per_robot = 'true' if per_robot_by_default(names) else 'false'
    return LaunchDescription([
        DeclareLaunchArgument('sim', default_value='false',
                              description='also start each robot emulator and connect to it'),
        DeclareLaunchArgument('namespace', default_value='',
                              description='ROS namespace for every node'),
        DeclareLaunchArgument('namespace_per_robot', default_value=per_robot,
                              description='put each robot under <namespace>/<robot name> (robots '
                              'share topic names such as odom and cmd_vel)'),
        DeclareLaunchArgument('frames', default_value='prefix', choices=list(FRAME_MODES),
                              description='robots in namespaces keep their TF frames apart by a '
                              'frame prefix (r1/base_link, one /tf) or by /tf and /tf_static in '
                              'their namespace (Nav2 multi-robot style)'),
        OpaqueFunction(function=_robots, args=[list(names)]),
    ])
