"""Run any subset of the robot drivers in one process, each optionally with its emulator.

    ros2 run legacy_robot_bringup bringup p2os aibo --sim
    ros2 run legacy_robot_bringup bringup --replay p2os.mcap
    ros2 run legacy_robot_bringup bringup --list

Parameters come from config/<robot>.yaml (the files the launch files use) and
any --params-file given after it; --sim points each driver at its emulator, --replay
points a robot's driver at a replay of its recording (with the recorded parameters).
"""

import argparse
import contextlib
import os
import pathlib
import sys
import time

import rclpy
from rclpy.parameter import Parameter

from legacy_robot_common.driver_node import (
    RCLError,
    make_executor,
    prepare_process,
    spin_until_shutdown,
)
from legacy_robot_common.memory import MallocTrim
from legacy_robot_common.middleware import (
    PROFILE_VARIABLE,
    PROFILES,
    static_peers,
    use_static_peers,
    warn_unreachable_peers,
)
from legacy_robot_common.params import ParameterError
from legacy_robot_common.recording import RecordingError
from legacy_robot_common.replay import ReplayOptions
from legacy_robot_common.world_map import WorldError, WorldMapNode

from .foxglove import add_foxglove_arguments, foxglove_option, start_relay
from .launch_plan import (
    FRAME_MODES,
    FRAMES_HELP,
    LOG_LEVELS,
    enclave_arguments,
    file_parameters,
    frame_isolation,
    per_robot_by_default,
    robot_namespace,
)
from .paths import config_file
from .recordings import open_replay
from .registry import PluginError, discover_plugins, select


class Composition:
    """Emulators (with sim), nodes and one executor for a list of robot plugins.

    rclpy must be initialised with the parameter files first (see ros_args()).
    """

    def __init__(
        self,
        plugins,
        sim=False,
        namespace='',
        namespace_per_robot=False,
        replays=None,
        record_folder=None,
        frames='prefix',
        use_sim_time=False,
        user_params_files=(),
        foxglove=None,
        world=None,
        starts=None,
        demo=False,
    ):
        self.plugins = list(plugins)
        self.sim = sim
        self.demo = demo  # sim with each plugin's start_demo_emulator where it has one
        self.world = world  # --world FILE for the emulators that take one (plugin.world_option)
        self.starts = dict(starts or {})  # --start: robot name → 'x,y,th' in a shared world
        self.map_nodes = []  # a WorldMapNode per emulator with a world
        self.user_params_files = list(user_params_files)  # they win over the emulators' values
        self.record_folder = record_folder  # each driver records to <folder>/<robot>.mcap
        self.replays = dict(replays or {})  # robot name → replay (not started) in place
        #                                        of its emulator
        self.namespace = namespace
        self.namespace_per_robot = namespace_per_robot
        self.frames = frames  # launch_plan.FRAME_MODES
        self.use_sim_time = use_sim_time
        self.foxglove = foxglove  # RelaySettings of a Foxglove relay, or None
        self.relay = None
        self.emulators = {}
        self.nodes = {}
        self.executor = make_executor()
        self.malloc_trim = MallocTrim()  # ParameterError for a bad LEGACY_ROBOTS_MALLOC_TRIM

    def robot_namespace(self, plugin):
        return robot_namespace(plugin, self.namespace, self.namespace_per_robot)

    def _start_shared_worlds(self):
        """--sim with several robots of a kind that can share a world: one emulator world for
        them all (--world's, else the kind's default), in which they see each other; {robot
        name: True for the one whose node publishes the map}."""
        kinds = {}
        for plugin in self.plugins:
            if plugin.start_shared_emulators and plugin.name not in self.replays:
                kinds.setdefault(plugin.package, []).append(plugin)
        kinds = {package: plugins for package, plugins in kinds.items() if len(plugins) > 1}
        sharing = [plugin.name for plugins in kinds.values() for plugin in plugins]
        strangers = sorted(set(self.starts) - set(sharing))
        if strangers:
            raise WorldError(
                f'--start {", ".join(strangers)}: not a robot in a shared world '
                f'({", ".join(sharing) or "none here"}; two or more P2OS robots with --sim '
                'share one)'
            )
        publishes = {}
        for plugins in kinds.values():
            names = [plugin.name for plugin in plugins]
            starts = {name: self.starts[name] for name in names if name in self.starts}
            started = plugins[0].start_shared_emulators(names, world=self.world, starts=starts)
            self.emulators.update(started)
            publishes.update({name: name == names[0] for name in names})
        return publishes

    def start(self):
        shared = self._start_shared_worlds() if self.sim else {}
        if self.starts and not shared:
            raise WorldError('--start: only for robots in a shared world (--sim)')
        for plugin in self.plugins:
            overrides = []
            if plugin.name in shared:
                emulator = self.emulators[plugin.name]
                overrides = self._emulator_parameters(plugin, emulator.parameters)
            elif plugin.name in self.replays:
                emulator = self.replays[plugin.name].start()
                self.emulators[plugin.name] = emulator
                overrides = [Parameter(k, value=v) for k, v in emulator.parameters.items()]
            elif self.sim:
                if self.world and plugin.world_option:
                    emulator = plugin.start_emulator(world=self.world)
                elif self.demo and plugin.start_demo_emulator is not None:
                    emulator = plugin.start_demo_emulator()
                else:
                    emulator = plugin.start_emulator()
                self.emulators[plugin.name] = emulator
                overrides = self._emulator_parameters(plugin, emulator.parameters)
            if self.record_folder is not None:
                path = pathlib.Path(self.record_folder) / f'{plugin.name}.mcap'
                overrides.append(Parameter('record_path', value=str(path)))
            namespace = self.robot_namespace(plugin)
            parameters, remappings = frame_isolation(namespace, self.frames)
            overrides += [Parameter(k, value=v) for k, v in parameters.items()]
            if self.use_sim_time:
                overrides.append(Parameter('use_sim_time', value=True))
            remap_args = [arg for rule in remappings for arg in ('-r', ':='.join(rule))]
            cli_args = ['--ros-args', *remap_args] if remap_args else None
            node = plugin.create_node(
                namespace=namespace, parameter_overrides=overrides, cli_args=cli_args
            )
            self.nodes[plugin.name] = node
            self.executor.add_node(node)
            world_map = getattr(self.emulators.get(plugin.name), 'world_map', None)
            if world_map is not None:
                # a shared world's one map on /map, from the first robot's node
                topic = {True: '/map', False: None}.get(shared.get(plugin.name), 'map')
                map_node = WorldMapNode(world_map, _odom_frame(node), namespace, cli_args, topic)
                self.map_nodes.append(map_node)
                self.executor.add_node(map_node)
        if self.foxglove is not None:
            self.relay = start_relay(self.executor, self.foxglove)

    def _emulator_parameters(self, plugin, values):
        """The emulator's parameters but those the user's parameter files set (as in a
        launch, where the user's file is applied last); say which."""
        namespace = self.robot_namespace(plugin)
        mine = {}
        for path in self.user_params_files:
            mine.update(file_parameters(path, plugin.node_name, namespace))
        kept = sorted(set(values) & set(mine))
        if kept:
            print(
                f'{plugin.name}: --sim: your parameter file sets {", ".join(kept)}: '
                "used instead of the emulator's",
                flush=True,
            )
        return [Parameter(k, value=v) for k, v in values.items() if k not in mine]

    def spin(self, duration=None, on_tick=None, tick=0.1):
        """Spin until duration passes (None: until shutdown), calling on_tick() between waits."""
        end = None if duration is None else time.monotonic() + duration
        with spin_until_shutdown():
            while rclpy.ok() and (end is None or time.monotonic() < end):
                self.executor.spin_once(timeout_sec=tick)
                self.malloc_trim.tick()
                if on_tick is not None:
                    on_tick()

    def stop(self):
        """Nodes first (each link says goodbye to its robot), then the emulators."""
        others = [*self.map_nodes, *([self.relay] if self.relay else [])]
        for node in [*self.nodes.values(), *others]:
            try:
                self.executor.remove_node(node)  # before its entities go
                node.destroy_node()
            except Exception as exc:  # keep shutting the others down
                print(f'warning: {node.get_name()}: {exc!r}', file=sys.stderr)
        for name, emulator in self.emulators.items():
            emulator.stop()
            if name in self.replays:  # what the recording could not answer, if anything
                for line in emulator.report():
                    print(f'{name}: replay {line}', flush=True)
        try:
            self.executor.shutdown()
        except RuntimeError as exc:  # rclpy 9.1's events executor, once in a few runs
            print(f'warning: executor shutdown: {exc}', file=sys.stderr)


def _odom_frame(node):
    """The odometry frame a driver publishes (frame_prefix + odom_frame_id)."""
    values = []
    for name, default in (('frame_prefix', ''), ('odom_frame_id', 'odom')):
        has = node.has_parameter(name)
        values.append(node.get_parameter(name).value if has else default)
    prefix, odom = values
    return f'{prefix.rstrip("/")}/{odom}' if prefix else odom


@contextlib.contextmanager
def running(plugins, extra_params_files=(), extra_ros_args=(), **options):
    """rclpy initialised with the robots' parameter files (and extra_ros_args, what followed
    --ros-args) and their Composition started; everything stopped again on exit. Composition
    options: sim, namespace, namespace_per_robot, replays, record_folder, frames, use_sim_time,
    foxglove, world, demo.
    Raises ParameterError or OSError (emulator port) for user errors, RCLError for ROS
    arguments rclpy cannot parse."""
    args = ros_args(plugins, extra_params_files)
    if extra_ros_args:
        args = (args or ['--ros-args']) + list(extra_ros_args)
    prepare_process(plugins)
    rclpy.init(args=args)
    composition = Composition(plugins, user_params_files=extra_params_files, **options)
    try:
        composition.start()
        yield composition
    finally:
        composition.stop()
        rclpy.try_shutdown()


def ros_args(plugins, extra_params_files=()):
    """rclpy arguments loading config/<robot>.yaml of each robot, then the extra files."""
    files = [config_file(p.config_file) for p in plugins]
    files = [str(f) for f in files if f is not None] + list(extra_params_files)
    args = ['--ros-args']
    for path in files:
        args += ['--params-file', path]
    return args if files else []


def choose(plugins, names, recordings=(), loop=False):
    """(plugins to run, {robot name: replay}): the robots named, and every recorded one (only
    those when none is named). PluginError / RecordingError / ValueError for user errors."""
    replays = {}
    for path in recordings:
        plugin, replay = open_replay(path, ReplayOptions(loop=loop), plugins)
        replays[plugin.name] = replay
    names = list(names) or ([] if not replays else list(replays))
    chosen = select(plugins, names)
    chosen += [plugins[name] for name in replays if plugins[name] not in chosen]
    return chosen, replays


def build_parser():
    parser = argparse.ArgumentParser(
        prog='bringup', description='Run legacy robot drivers in one process.'
    )
    parser.add_argument(
        'robots',
        nargs='*',
        help='robots to run (default: every installed robot); '
        'KIND:NAME names one, so two of a kind can run: p2os:r1 p2os:r2',
    )
    parser.add_argument(
        '--sim',
        action='store_true',
        help='start each robot emulator in this process and connect to it',
    )
    parser.add_argument(
        '--world',
        metavar='FILE',
        help='with --sim: the world the emulators drive in (P2OS: an ARIA .map or a ROS '
        'map.yaml; default: the office floor shipped with p2os_driver); several P2OS robots '
        '(p2os:r1 p2os:r2) share it, each seeing the others, with one map on /map',
    )
    parser.add_argument(
        '--start',
        action='append',
        default=[],
        metavar='NAME=x,y,th',
        help='with --sim and several P2OS robots: where robot NAME starts (mm, mm, '
        "degrees; default: spread out from the map's home); may repeat",
    )
    parser.add_argument(
        '--replay',
        action='append',
        default=[],
        metavar='MCAP',
        help='run a robot against a replay of its recording (record_path) '
        'instead of the robot or its emulator; may repeat',
    )
    parser.add_argument(
        '--record',
        metavar='FOLDER',
        help='each driver records its links to FOLDER/<robot>.mcap (parameter record_path)',
    )
    parser.add_argument(
        '--params-file',
        action='append',
        default=[],
        metavar='YAML',
        help='extra ROS parameter file (keys /**/<node_name>:), may repeat',
    )
    parser.add_argument('--namespace', default='', help='ROS namespace for every node')
    parser.add_argument(
        '--namespace-per-robot',
        action=argparse.BooleanOptionalAction,
        default=None,
        help='put each robot under <namespace>/<robot name> '
        '(default: yes for several robots, as all_robots.launch.py does)',
    )
    parser.add_argument('--frames', choices=FRAME_MODES, default='prefix', help=FRAMES_HELP)
    parser.add_argument(
        '--peers',
        nargs='+',
        default=[],
        metavar='ADDR',
        help='other hosts to discover by unicast (IPv4 addresses or host names), for networks '
        'where multicast does not reach them (many Wi-Fi access points): sets ROS_STATIC_PEERS; '
        'the other hosts name this one in theirs',
    )
    parser.add_argument(
        '--dds-profile',
        choices=tuple(PROFILES),
        help='Fast DDS profiles to load: "lossy" for a lossy link to other hosts (Wi-Fi: DDS '
        'fragments under the MTU, fast resends); default: $LEGACY_ROBOTS_DDS_PROFILE or '
        '"default". A profiles file of yours (FASTDDS_DEFAULT_PROFILES_FILE, or Jazzy\'s '
        'FASTRTPS_DEFAULT_PROFILES_FILE) wins over both',
    )
    add_foxglove_arguments(parser)
    parser.add_argument(
        '--use-sim-time',
        action='store_true',
        help='stamp with the simulated clock on /clock (use_sim_time)',
    )
    parser.add_argument(
        '--enclave',
        default='',
        help='DDS security enclave of the process (as --ros-args --enclave; /robot/p2os): with '
        'ROS_SECURITY_KEYSTORE and ROS_SECURITY_ENABLE=true, on a ROS 2 whose Fast DDS has '
        'security (not the package-index wheels: docs/security.md)',
    )
    parser.add_argument(
        '--log-level',
        choices=LOG_LEVELS,
        help='ROS log level of every node (as --ros-args --log-level)',
    )
    parser.add_argument(
        '--duration', type=float, default=None, help='seconds to run (default: until Ctrl-C)'
    )
    parser.add_argument(
        '--plugin',
        action='append',
        default=[],
        metavar='MODULE:ATTR',
        help='load an extra robot plugin (for robots outside this repository)',
    )
    parser.add_argument('--list', action='store_true', help='list the installed robots and exit')
    return parser


def split_ros_args(argv):
    """(bringup's own arguments, ROS arguments): everything after --ros-args goes to rclpy
    (-p name:=value for every node, -r remappings, --params-file, --log-level, ...)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if '--ros-args' not in argv:
        return argv, []
    index = argv.index('--ros-args')
    return argv[:index], argv[index + 1 :]


def missing_files(paths):
    return [path for path in paths if not pathlib.Path(path).is_file()]


def main(argv=None):
    own, extra_ros_args = split_ros_args(argv)
    args = build_parser().parse_args(own)
    if args.log_level:
        extra_ros_args += ['--log-level', args.log_level]
    try:
        extra_ros_args += enclave_arguments(args.enclave)
    except ValueError as exc:
        print(f'error: --enclave: {exc}', file=sys.stderr)
        return 2
    missing = missing_files(args.params_file)
    if missing:
        print(f'error: --params-file: no such file: {", ".join(missing)}', file=sys.stderr)
        return 2
    try:
        plugins = discover_plugins(args.plugin)
        if args.list:
            for name, plugin in plugins.items():
                print(f'{name}\tnode {plugin.node_name}\tpackage {plugin.package}')
            if not plugins:
                print('no robot drivers installed')
            return 0
        chosen, replays = choose(plugins, args.robots, args.replay)
    except (PluginError, RecordingError, ValueError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    if not chosen:
        print('error: no robot drivers installed; nothing to run', file=sys.stderr)
        return 2
    if args.world and not args.sim:
        print("error: --world needs --sim (the world is the emulators')", file=sys.stderr)
        return 2
    if args.world and not any(p.world_option for p in chosen):
        print('error: --world: none of these robots has a simulated world', file=sys.stderr)
        return 2
    try:
        peers = static_peers(args.peers)
    except ParameterError as exc:
        print(f'error: --peers: {exc}', file=sys.stderr)
        return 2
    if peers:
        print(f'static peers: ROS_STATIC_PEERS={use_static_peers(peers)}', flush=True)
        warn_unreachable_peers(peers)
    if args.dds_profile:
        os.environ[PROFILE_VARIABLE] = args.dds_profile
    per_robot = args.namespace_per_robot
    if per_robot is None:
        per_robot = per_robot_by_default(chosen)
    try:
        with running(
            chosen,
            args.params_file,
            extra_ros_args,
            sim=args.sim,
            namespace=args.namespace,
            namespace_per_robot=per_robot,
            replays=replays,
            record_folder=args.record,
            frames=args.frames,
            use_sim_time=args.use_sim_time,
            foxglove=foxglove_option(args),
            world=args.world,
            starts=dict(start.partition('=')[::2] for start in args.start),
        ) as composition:
            for name, emulator in composition.emulators.items():
                print(f'{name}: emulator {emulator.description}', flush=True)
            for map_node in composition.map_nodes:
                print(f'world map: {map_node.describe()}', flush=True)
            if composition.relay is not None:
                print(composition.relay.announcement, flush=True)
            print(f'running: {", ".join(composition.nodes)}', flush=True)
            composition.spin(args.duration)
    except KeyboardInterrupt:  # Ctrl-C before the spin watched for it: stopped as in the spin
        return 0
    except (ParameterError, OSError, WorldError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    except RCLError as exc:
        if rclpy.ok():
            raise
        print(f'error: bad ROS arguments or parameter file: {exc}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
