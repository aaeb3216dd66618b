"""How a robot package describes itself to bringup, the demo and the launch files.

Each robot package exposes one RobotPlugin under the entry-point group
``legacy_robots.robots`` (setup.py), e.g. ``p2os = p2os_driver.plugin:PLUGIN``.
Nothing here imports rclpy; the callables do that when called.
"""

import dataclasses
import importlib
import time
from typing import Any, Callable, Optional, Tuple

ENTRY_POINT_GROUP = 'legacy_robots.robots'


def resolve(spec):
    """'package.module:ATTRIBUTE' (as setup.py names entry points) -> that attribute, its module
    imported now."""
    module, _, attribute = spec.partition(':')
    return getattr(importlib.import_module(module), attribute)


@dataclasses.dataclass(frozen=True)
class ByName:
    """A callable named 'package.module:ATTRIBUTE', imported when called.

    A robot's plugin names its node class this way: the node's main imports the plugin (for what
    the robot asks of its process), so the plugin must not import the node module, or each would
    import the other. The dependency runs one way: node -> plugin."""

    spec: str

    def __call__(self, *args, **kwargs):
        return resolve(self.spec)(*args, **kwargs)


@dataclasses.dataclass(frozen=True)
class DemoTopic:
    """A topic the demo watches: relative name, message class, one-line summary."""

    topic: str
    msg_type: Any
    summarize: Callable[[Any], str] = lambda msg: ''
    required: bool = True  # the demo fails when a required topic stays silent


@dataclasses.dataclass(frozen=True)
class SoakPart:
    """A part of `make soak` that is one robot's own (P2OS safety, AIBO audio, ...):
    'module:function' in the measurement package legacy_robot_bench (named here only as a
    string: no runtime package imports it), called with the value of its command-line option
    → rows."""

    name: str  # for --parts: "safety"
    function: str  # "legacy_robot_bench.p2os_driver.soak:safety_rows"
    option: str  # "--repeats"
    default: float
    help: str
    kind: type = int


@dataclasses.dataclass(frozen=True)
class FoxgloveView:
    """What a robot's Foxglove layout shows (foxglove_layout.py builds it): relative topic
    names, plot series as topic.field paths, services as (relative name, button text)."""

    image: Optional[str] = None  # "camera/image_raw"
    plots: Tuple[str, ...] = ()  # "battery.voltage"
    services: Tuple[Tuple[str, str], ...] = ()
    teleop: bool = False  # a mobile base: a Teleop panel on cmd_vel
    scans: Tuple[str, ...] = ()  # sensor_msgs/LaserScan topics shown in the 3D panel
    grids: Tuple[str, ...] = ()  # nav_msgs/OccupancyGrid topics shown in the 3D panel ("map")
    follow_frame: str = 'base_link'  # the 3D panel follows <robot>/<follow_frame>


@dataclasses.dataclass(frozen=True, kw_only=True)
class RobotPlugin:
    name: str  # short robot name used on command lines: "p2os"
    package: str  # ROS package: "p2os_driver"
    # the next four follow the naming convention unless stated (see __post_init__)
    node_name: str = ''  # node name: the package's ("p2os_driver")
    executable: str = ''  # console script that runs the node alone: the node's name
    emulator_executable: str = ''  # console script that runs the emulator alone: "p2os_emulator"
    config_file: str = ''  # parameter file name in config/: "p2os.yaml"
    # create_node(**node_kwargs) -> DriverNode (node_kwargs: namespace, parameter_overrides,
    # cli_args); a robot package names its node class, ByName('p2os_driver.node:P2osNode')
    create_node: Callable[..., Any]
    # start_emulator() -> a started emulator with .parameters (dict of node parameter
    # overrides that point the driver at it), .description (str) and .stop()
    start_emulator: Callable[[], Any]
    # what the demo starts in its place (same shape), for a scene richer than sim and the
    # record/replay tests want (more robots than a recording of the driver's link replays)
    start_demo_emulator: Optional[Callable[[], Any]] = None
    # for `ros2 launch ... sim:=true`: emulator command-line arguments and the node
    # parameters that point the driver at that emulator
    emulator_arguments: Tuple[str, ...] = ()
    sim_parameters: Optional[dict] = None
    demo_topics: Tuple[DemoTopic, ...] = ()
    # make_demo_script() -> object with optional act(node, elapsed_seconds),
    # on_message(topic, msg), write_artifacts(output_dir) -> list of paths and
    # summary_lines() -> lines for the demo's summary (what the robot did: "said ...")
    make_demo_script: Optional[Callable[[], Any]] = None
    # write_group_artifacts({robot name: demo script}, output_dir) -> (paths, summary lines):
    # the demo's output for two or more robots of this package run together (the Pioneers'
    # shared world: one picture of them all); called once per package, after each robot's own
    write_group_artifacts: Optional[Callable[[dict, Any], Tuple[list, list]]] = None
    # `make bench` and `make soak` (package legacy_robot_bench): the robot's bench module
    # (`legacy_robot_bench.<package>.bench`, main(argv)) and soak module
    # (`legacy_robot_bench.<package>.soak`: fuzz_targets(), restart_spec(folder)) by convention
    # recordings (record_path): how replay serves each recorded link (replay.ReplayLink), or
    # make_replay(recording, options) -> an emulator-like replay, not yet started (the
    # Nabaztag's, which plays the rabbits' requests to the bridge)
    replay_links: Tuple[Any, ...] = ()
    make_replay: Optional[Callable[..., Any]] = None
    label: str = ''  # in tables: "P2OS"
    foxglove: FoxgloveView = FoxgloveView()  # its Foxglove layout
    bench_quick_arguments: Tuple[str, ...] = ()  # for `make bench BENCH_ARGS=--quick`
    soak_parts: Tuple[SoakPart, ...] = ()
    # describe_robot(parameters) -> URDF text from the driver's parameter values ({name: value},
    # defaults for the rest): the robot model a launch hands robot_state_publisher
    describe_robot: Optional[Callable[[dict], str]] = None
    # start_emulator(world=FILE) loads a world (`bringup --sim --world FILE`); an emulator with a
    # world_map (legacy_robot_common.world_map.WorldMap) gets its map published by bringup
    world_option: bool = False
    # start_shared_emulators(names, world=FILE, starts={name: 'x,y,th'}) -> {name: emulator}:
    # several robots of this kind in one world, seeing each other (`bringup p2os:r1 p2os:r2
    # --sim --world FILE [--start r1=x,y,th]`); bringup
    # publishes the first one's world_map as the one map, and every robot's map → odom
    start_shared_emulators: Optional[Callable[..., dict]] = None
    # the GIL switch interval (s, sys.setswitchinterval) its node needs in its process; a
    # process hosting several robots takes the smallest (driver_node.prepare_process)
    switch_interval: Optional[float] = None

    def __post_init__(self):
        conventional = {
            'node_name': self.package,
            'executable': self.node_name or self.package,
            'emulator_executable': f'{self.name}_emulator',
            'config_file': f'{self.name}.yaml',
        }
        for field, value in conventional.items():
            if not getattr(self, field):
                object.__setattr__(self, field, value)

    @property
    def title(self):
        return self.label or self.name


class DemoScript:
    """Base for demo scripts: each named service call is made once, when its server is ready
    (call_until_success: again, at most once a second, until it answers success)."""

    RETRY_PERIOD = 1.0  # s

    def __init__(self):
        self.requested = set()
        self._pending = {}  # name → (future, time.monotonic() it was sent)

    def call_once(self, name, client, request):
        if name not in self.requested and client.service_is_ready():
            client.call_async(request)
            self.requested.add(name)

    def call_until_success(self, name, client, request):
        """For a call the robot may refuse while its link is still coming up (a service is
        ready as soon as the node is, the robot a moment later)."""
        if name in self.requested or not client.service_is_ready():
            return
        future, sent = self._pending.get(name, (None, 0.0))
        if future is not None and not future.done():
            return
        if future is not None and getattr(future.result(), 'success', True):
            self.requested.add(name)
            return
        if time.monotonic() - sent >= self.RETRY_PERIOD:
            self._pending[name] = (client.call_async(request), time.monotonic())


def make_replay(plugin, recording, options):
    """The plugin's replay of recording (recording.RecordingFile), not yet started."""
    if plugin.make_replay is not None:
        return plugin.make_replay(recording, options)
    if not plugin.replay_links:
        raise ValueError(f'{plugin.title} recordings cannot be replayed (no replay links)')
    from .replay import RecordingReplay

    return RecordingReplay(recording, plugin.replay_links, options)
