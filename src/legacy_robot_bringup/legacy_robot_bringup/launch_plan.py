"""What a robot launch starts, as plain data (no `launch` import), so it can be
checked on machines without `launch` and turned into launch actions where it exists."""

import dataclasses
import os
import re
from typing import Dict, List, Optional, Tuple

import yaml
from ament_index_python.packages import (
    PackageNotFoundError,
    get_package_prefix,
    get_package_share_directory,
)

from legacy_robot_common.foxglove_relay import compile_patterns
from legacy_robot_common.frames import namespace_prefix

from .paths import PACKAGE


@dataclasses.dataclass(frozen=True)
class ProcessSpec:
    package: str
    executable: str
    name: str
    # parameter files as (package, path inside its share directory)
    params_files: Tuple[Tuple[str, str], ...] = ()
    parameters: Dict[str, object] = dataclasses.field(default_factory=dict)
    arguments: Tuple[str, ...] = ()
    is_node: bool = True
    user_params_files: Tuple[str, ...] = ()  # absolute paths, applied last
    remappings: Tuple[Tuple[str, str], ...] = ()
    ros_arguments: Tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class LaunchOptions:
    """The launch arguments of every launch file (launch/*.launch.py)."""

    sim: bool = False
    namespace: str = ''
    namespace_per_robot: Optional[bool] = None  # None: yes for several robots
    frames: str = 'prefix'
    use_sim_time: bool = False
    autostart: bool = True
    params_file: str = ''
    log_level: str = 'info'
    robot_state_publisher: str = 'auto'  # auto: when the package is installed
    foxglove: str = ''  # a port: the Foxglove relay ('' = none)
    foxglove_address: str = '127.0.0.1'
    enclave: str = ''  # DDS security enclave of every process ('' = none)
    # regular expressions, space- or comma-separated ('' = the relay's default: any on
    # loopback only)
    foxglove_publish: str = ''
    foxglove_services: str = ''


def robot_namespace(plugin, namespace='', per_robot=False):
    """Where a robot's nodes go: <namespace>/<robot name> with per_robot, else namespace
    (None: the root). Robots share topic names (odom, battery, cmd_vel, ...), so more than one
    robot in one graph needs per_robot."""
    namespace = namespace.rstrip('/')
    if per_robot:
        return f'{namespace}/{plugin.name}'
    return namespace or None


# How robots in namespaces keep their frames apart in one TF world (bringup --frames, launch
# argument frames): "prefix" (default) stamps every frame with the namespace, "r1/base_link",
# in the one global /tf tree that rviz shows whole; "namespace" keeps the frame names and
# moves /tf and /tf_static into the namespace, as Nav2's multi-robot bringup does.
FRAME_MODES = ('prefix', 'namespace')
TF_REMAPPINGS = (('/tf', 'tf'), ('/tf_static', 'tf_static'))
FRAMES_HELP = (
    'robots in namespaces keep their TF frames apart by a frame prefix (r1/base_link, '
    'one /tf; default) or by /tf and /tf_static in their namespace (Nav2 multi-robot '
    'style)'
)
LOG_LEVELS = ('debug', 'info', 'warn', 'error', 'fatal')


def frame_isolation(namespace, mode='prefix'):
    """({parameter: value}, [(from, to) remappings]) that isolate a robot's frames in namespace
    (None: the root, where a robot needs nothing)."""
    if mode not in FRAME_MODES:
        raise ValueError(f'frames must be one of {", ".join(FRAME_MODES)}, not {mode!r}')
    if not namespace:
        return {}, []
    if mode == 'namespace':
        return {}, list(TF_REMAPPINGS)
    return {'frame_prefix': namespace_prefix(namespace)}, []


def per_robot_by_default(robot_names):
    """all_robots (no names) and any launch of several robots: one namespace per robot."""
    return len(robot_names) != 1


# robot_state_publisher instead of the drivers' own joint transforms (launch argument
# robot_state_publisher): auto = when a full ROS install has it
STATE_PUBLISHER_CHOICES = ('auto', 'true', 'false')
STATE_PUBLISHER_HELP = (
    "robot_state_publisher publishes each robot model's transforms "
    'instead of the drivers (auto: when it is installed)'
)


def use_state_publisher(choice):
    if choice not in STATE_PUBLISHER_CHOICES:
        raise ValueError(
            f'robot_state_publisher must be one of '
            f'{", ".join(STATE_PUBLISHER_CHOICES)}, not {choice!r}'
        )
    if choice != 'auto':
        return choice == 'true'
    try:
        get_package_prefix('robot_state_publisher')
    except PackageNotFoundError:
        return False
    return True


def launch_plan(chosen, options):
    """[(robot namespace or None, [ProcessSpec])] for the chosen plugins (KIND:NAME instances
    included) with options (LaunchOptions); ValueError for combinations that cannot work."""
    kinds = [plugin.package for plugin in chosen]
    if options.sim and len(set(kinds)) < len(kinds):
        raise ValueError(
            "sim:=true starts each kind's emulator on its fixed port, so one robot "
            'of a kind; several of a kind on emulators: bringup KIND:NAME ... --sim'
        )
    if options.params_file and not os.path.isfile(options.params_file):
        raise ValueError(f'params_file: no such file: {options.params_file}')
    enclave = enclave_arguments(options.enclave)
    per_robot = options.namespace_per_robot
    if per_robot is None:
        per_robot = per_robot_by_default(chosen)
    state_publisher = use_state_publisher(options.robot_state_publisher)
    plan = []
    for plugin in chosen:
        namespace = robot_namespace(plugin, options.namespace, per_robot)
        frame_parameters, remappings = frame_isolation(namespace, options.frames)
        common = {'use_sim_time': options.use_sim_time}
        with_model = state_publisher and plugin.describe_robot is not None
        processes = []
        for spec in robot_processes(plugin, options.sim):
            if spec.is_node:
                spec = dataclasses.replace(
                    spec,
                    parameters={
                        **spec.parameters,
                        **frame_parameters,
                        **common,
                        'autostart': options.autostart,
                        **(STATE_PUBLISHER_DRIVER_PARAMETERS if with_model else {}),
                    },
                    user_params_files=(options.params_file,) if options.params_file else (),
                    remappings=tuple(remappings),
                    ros_arguments=('--log-level', options.log_level, *enclave),
                )
            processes.append(spec)
        if with_model:
            driver = processes[-1]
            processes.append(
                ProcessSpec(
                    package='robot_state_publisher',
                    executable='robot_state_publisher',
                    name='robot_state_publisher',
                    parameters={
                        'robot_description': plugin.describe_robot(
                            node_parameter_values(driver, namespace)
                        ),
                        'frame_prefix': frame_parameters.get('frame_prefix', ''),
                        **common,
                    },
                    remappings=tuple(remappings),
                    ros_arguments=('--log-level', options.log_level, *enclave),
                )
            )
        plan.append((namespace, processes))
    if options.foxglove:
        plan.append((None, [foxglove_relay_process(options)]))
    return plan


ENCLAVE = re.compile(r'^(/[A-Za-z0-9_]+)+$')


def enclave_arguments(enclave):
    """ROS arguments that put a process in a DDS security enclave ('' = none): ('--enclave',
    enclave). ValueError for a name that is not absolute (rcl takes /robot/p2os, not p2os)."""
    if not enclave:
        return ()
    if not ENCLAVE.match(enclave):
        raise ValueError(
            f'enclave {enclave!r}: an absolute name of letters, digits and _ (e.g. /robot/p2os)'
        )
    return ('--enclave', enclave)


def foxglove_relay_process(options):
    """The Foxglove relay (its own process: it follows the whole graph)."""
    port = options.foxglove
    if not str(port).isdigit():
        raise ValueError(f'foxglove must be a port number, not {port!r}')
    arguments = ['--port', str(port), '--address', options.foxglove_address]
    for option, name in (('--publish', 'foxglove_publish'), ('--services', 'foxglove_services')):
        # a bad pattern fails the launch here, not the relay's process alone
        patterns = compile_patterns([getattr(options, name)], name)
        if patterns:
            arguments += [option, *(pattern.pattern for pattern in patterns)]
    if options.enclave:
        arguments += ['--ros-args', *enclave_arguments(options.enclave)]
    return ProcessSpec(
        package=PACKAGE,
        executable='foxglove_relay',
        name='foxglove_relay',
        arguments=tuple(arguments),
        is_node=False,
    )


# a driver beside robot_state_publisher leaves the model and its joints to it (its other
# static frames, optical and footprint, stay on /tf_static)
STATE_PUBLISHER_DRIVER_PARAMETERS = {'publish_joint_tf': False, 'publish_robot_description': False}


def node_parameter_values(spec, namespace):
    """{name: value} a node of spec gets from its parameter files and parameters, in the
    order launch applies them (package file, launch parameters, the user's file)."""
    values = {}
    for package, path in spec.params_files:
        values.update(file_parameters(params_path(package, path), spec.name, namespace))
    values.update(spec.parameters)
    for path in spec.user_params_files:
        values.update(file_parameters(path, spec.name, namespace))
    return values


def file_parameters(path, node_name, namespace):
    """{name: value} a ROS parameter file gives node_name in namespace (its wildcard sections
    and its own)."""
    with open(path, encoding='utf-8') as handle:
        sections = yaml.safe_load(handle) or {}
    own = '/'.join(part for part in ((namespace or '').strip('/'), node_name) if part)
    values = {}
    for key, section in sections.items():
        name = key.strip('/')
        wildcard = name in ('**', '*') or (
            name.startswith('**/') and name.rsplit('/', 1)[-1] == node_name
        )
        if (wildcard or name == own) and isinstance(section, dict):
            values.update(section.get('ros__parameters') or {})
    return values


def robot_processes(plugin, sim) -> List[ProcessSpec]:
    """The driver node (with its parameter file) and, with sim, its emulator."""
    processes = []
    if sim:
        processes.append(
            ProcessSpec(
                package=plugin.package,
                executable=plugin.emulator_executable,
                name=f'{plugin.name}_emulator',
                arguments=tuple(plugin.emulator_arguments),
                is_node=False,
            )
        )
    processes.append(
        ProcessSpec(
            package=plugin.package,
            executable=plugin.executable,
            name=plugin.node_name,
            params_files=((PACKAGE, f'config/{plugin.config_file}'),),
            parameters=dict(plugin.sim_parameters or {}) if sim else {},
        )
    )
    return processes


def executable_path(spec):
    """Where the install puts spec's executable (PackageNotFoundError when not installed)."""
    return os.path.join(get_package_prefix(spec.package), 'lib', spec.package, spec.executable)


def params_path(package, path):
    """Full path of a parameter file inside package's share directory."""
    return os.path.join(get_package_share_directory(package), path)


def missing_files(plugin):
    """What the robot's launch (with and without sim) names but the install lacks; [] when
    complete."""
    problems = []
    for sim in (False, True):
        for spec in robot_processes(plugin, sim):
            try:
                exe = executable_path(spec)
            except PackageNotFoundError:
                problems.append(f'{plugin.name}: package {spec.package} is not installed')
                continue
            if not os.access(exe, os.X_OK):
                problems.append(f'{plugin.name}: executable {exe} is missing')
            for package, path in spec.params_files:
                try:
                    full = params_path(package, path)
                except PackageNotFoundError:
                    problems.append(f'{plugin.name}: package {package} is not installed')
                    continue
                if not os.path.isfile(full):
                    problems.append(f'{plugin.name}: parameter file {full} is missing')
    return sorted(set(problems))
