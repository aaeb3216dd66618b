"""LaunchDescriptions for the launch files in launch/ (needs `launch` and `launch_ros`,
i.e. a full ROS 2 install; the plan itself is in launch_plan.py)."""

from launch.actions import DeclareLaunchArgument, ExecuteProcess, GroupAction, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node, PushRosNamespace

from launch import LaunchDescription

from .launch_plan import (
    FRAME_MODES,
    FRAMES_HELP,
    LOG_LEVELS,
    STATE_PUBLISHER_CHOICES,
    STATE_PUBLISHER_HELP,
    LaunchOptions,
    executable_path,
    launch_plan,
    params_path,
)
from .registry import discover_plugins, select


def _actions(spec):
    if not spec.is_node:
        return ExecuteProcess(
            cmd=[executable_path(spec), *spec.arguments], name=spec.name, output='screen'
        )
    params = [params_path(package, path) for package, path in spec.params_files]
    params.append(dict(spec.parameters))
    params += list(spec.user_params_files)  # the user's file wins
    return Node(
        package=spec.package,
        executable=spec.executable,
        name=spec.name,
        parameters=params,
        remappings=list(spec.remappings),
        ros_arguments=list(spec.ros_arguments),
        output='screen',
    )


def _value(context, name):
    return LaunchConfiguration(name).perform(context)


def _true(context, name):
    return _value(context, name).lower() in ('1', 'true', 'yes')


def _robots(context, names):
    listed = [n.strip() for n in _value(context, 'robots').split(',') if n.strip()]
    per_robot = _value(context, 'namespace_per_robot')
    options = LaunchOptions(
        sim=_true(context, 'sim'),
        namespace=_value(context, 'namespace'),
        namespace_per_robot=None if per_robot == 'auto' else _true(context, 'namespace_per_robot'),
        frames=_value(context, 'frames'),
        use_sim_time=_true(context, 'use_sim_time'),
        autostart=_true(context, 'autostart'),
        params_file=_value(context, 'params_file'),
        log_level=_value(context, 'log_level'),
        robot_state_publisher=_value(context, 'robot_state_publisher'),
        foxglove=_value(context, 'foxglove'),
        foxglove_address=_value(context, 'foxglove_address'),
        foxglove_publish=_value(context, 'foxglove_publish'),
        foxglove_services=_value(context, 'foxglove_services'),
        enclave=_value(context, 'enclave'),
    )
    chosen = select(discover_plugins(), listed or names)
    groups = []
    for namespace, specs in launch_plan(chosen, options):
        actions = [_actions(spec) for spec in specs]
        groups += [GroupAction([PushRosNamespace(namespace), *actions])] if namespace else actions
    return groups


def robots_launch_description(*names):
    """Launch the named robots (all installed robots when none is named)."""
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                'sim',
                default_value='false',
                description='also start each robot emulator and connect to it',
            ),
            DeclareLaunchArgument(
                'robots',
                default_value='',
                description="comma-separated robots instead of this file's, "
                'KIND or KIND:NAME (two of a kind: p2os:r1,p2os:r2)',
            ),
            DeclareLaunchArgument(
                'namespace', default_value='', description='ROS namespace for every node'
            ),
            DeclareLaunchArgument(
                'namespace_per_robot',
                default_value='auto',
                choices=['auto', 'true', 'false'],
                description='put each robot under <namespace>/<robot name> (robots '
                'share topic names such as odom and cmd_vel); auto: for several',
            ),
            DeclareLaunchArgument(
                'frames',
                default_value='prefix',
                choices=list(FRAME_MODES),
                description=FRAMES_HELP,
            ),
            DeclareLaunchArgument(
                'use_sim_time',
                default_value='false',
                description='stamp with the simulated clock on /clock',
            ),
            DeclareLaunchArgument(
                'params_file',
                default_value='',
                description="your parameter file, applied after the package's "
                '(keys /**/<node>: for all, /<namespace>/<node>: for one robot)',
            ),
            DeclareLaunchArgument(
                'log_level',
                default_value='info',
                choices=list(LOG_LEVELS),
                description='log level of every driver',
            ),
            DeclareLaunchArgument(
                'autostart',
                default_value='true',
                description='configure and activate each driver at start (false: '
                'leave them to a lifecycle manager)',
            ),
            DeclareLaunchArgument(
                'robot_state_publisher',
                default_value='auto',
                choices=list(STATE_PUBLISHER_CHOICES),
                description=STATE_PUBLISHER_HELP,
            ),
            DeclareLaunchArgument(
                'foxglove',
                default_value='',
                description='a port (8765): also serve every topic, service and '
                'robot model to Foxglove / Lichtblick on ws://localhost:PORT',
            ),
            DeclareLaunchArgument(
                'foxglove_address',
                default_value='127.0.0.1',
                description='address the Foxglove server listens on (0.0.0.0: anyone on '
                'your network may watch; publish and call only as foxglove_publish and '
                'foxglove_services allow)',
            ),
            DeclareLaunchArgument(
                'enclave',
                default_value='',
                description='DDS security enclave of every process (/robot/p2os; needs a ROS 2 '
                'whose Fast DDS has security, ROS_SECURITY_KEYSTORE and ROS_SECURITY_ENABLE)',
            ),
            DeclareLaunchArgument(
                'foxglove_publish',
                default_value='',
                description='topics Foxglove clients may publish on: regular expressions, '
                "space- or comma-separated ('.*/cmd_vel'); default: any on loopback, none "
                'elsewhere',
            ),
            DeclareLaunchArgument(
                'foxglove_services',
                default_value='',
                description='services Foxglove clients may call: regular expressions, '
                'space- or comma-separated; default: any on loopback, none elsewhere',
            ),
            OpaqueFunction(function=_robots, args=[list(names)]),
        ]
    )
