"""The demo: every installed robot against its emulator, a live table, output files.

    make demo            (or: ros2 run legacy_robot_bringup demo --duration 20)
    make demo DEMO_ARGS="--replay recordings/p2os.mcap"     (a robot from its recording)

Exit code 0 only if every robot connected and every required topic carried data.
"""

import argparse
import collections
import functools
import pathlib
import sys
import time

from rclpy.node import Node
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from legacy_robot_common.artifacts import new_figure, save_figure, save_lines
from legacy_robot_common.frames import namespace_prefix
from legacy_robot_common.model_picture import draw_model
from legacy_robot_common.params import ParameterError
from legacy_robot_common.recording import RecordingError
from legacy_robot_common.robot_model import DESCRIPTION_QOS
from legacy_robot_common.tf import TF_QOS, TF_STATIC_LISTENER_QOS

from .compose import choose, running
from .foxglove import add_foxglove_arguments, foxglove_option
from .registry import PluginError, discover_plugins

RATE_WINDOW = 2.0  # seconds over which the table's rate is measured
# s between the demo scripts' turns: a control loop's rate. on_tick runs after every
# callback, hundreds of times a second, and a script publishing cmd_vel on each tick sent
# the P2OS 690 motion commands a second (seen in a recording; a 9600-baud line carries 80)
ACT_PERIOD = 0.1


class TopicStats:
    def __init__(self, robot, topic, required):
        self.robot = robot
        self.topic = topic
        self.required = required
        self.count = 0
        self.summary = ''
        self._times = collections.deque()

    def record(self, now, summary):
        self.count += 1
        self.summary = summary
        self._times.append(now)

    def rate(self, now):
        while self._times and now - self._times[0] > RATE_WINDOW:
            self._times.popleft()
        return len(self._times) / RATE_WINDOW


class DemoMonitor(Node):
    """Subscribes to every robot's demo topics and runs the robots' demo scripts."""

    def __init__(self, composition):
        super().__init__('demo_monitor')
        self.stats = []
        self.scripts = {}
        self.models = RobotModels(self)
        for plugin in composition.plugins:
            namespace = composition.robot_namespace(plugin) or ''
            if plugin.describe_robot is not None:
                self.models.watch(plugin.name, namespace)
            script = plugin.make_demo_script() if plugin.make_demo_script else None
            if script is not None and hasattr(script, 'setup'):
                script.setup(self, namespace)
            self.scripts[plugin.name] = script
            for demo_topic in plugin.demo_topics:
                topic = f'{namespace}/{demo_topic.topic}' if namespace else demo_topic.topic
                stats = TopicStats(plugin.name, topic, demo_topic.required)
                self.stats.append(stats)
                self.create_subscription(
                    demo_topic.msg_type, topic, self._callback(stats, demo_topic, script), 10
                )

    def _callback(self, stats, demo_topic, script):
        def on_message(msg):
            try:
                summary = demo_topic.summarize(msg)
            except Exception as exc:  # a summary is decoration; never lose the count
                summary = f'(summary failed: {exc!r})'
            stats.record(time.monotonic(), summary)
            if script is not None and hasattr(script, 'on_message'):
                script.on_message(demo_topic.topic, msg)

        return on_message

    def act(self, elapsed):
        for script in self.scripts.values():
            if script is not None and hasattr(script, 'act'):
                script.act(elapsed)


class RobotModels:
    """Each robot's robot_description and the live TF, for the model pictures (model.png): the
    robot drawn from its URDF in the pose its transforms give, with its script's overlays."""

    def __init__(self, node):
        self._node = node
        self.descriptions = {}  # robot name → (URDF text, frame prefix)
        self.transforms = {}  # child frame → latest TransformStamped
        self._listening = False

    def watch(self, name, namespace):
        def keep(msg):
            self.descriptions[name] = (msg.data, namespace_prefix(namespace))

        self._node.create_subscription(
            String, f'{namespace}/robot_description', keep, DESCRIPTION_QOS
        )
        if not self._listening:
            self._listening = True
            for topic, qos in (('/tf', TF_QOS), ('/tf_static', TF_STATIC_LISTENER_QOS)):
                self._node.create_subscription(TFMessage, topic, self._keep_transforms, qos)

    def _keep_transforms(self, msg):
        for transform in msg.transforms:
            self.transforms[transform.child_frame_id] = transform

    def write(self, name, folder, script):
        """model.png of robot name, or [] when its description never came."""
        if name not in self.descriptions:
            return []
        text, prefix = self.descriptions[name]
        overlays = script.model_overlays() if hasattr(script, 'model_overlays') else ()
        figure = new_figure(10.0, 4.5)
        robot = draw_model(figure, text, self.transforms, prefix, overlays)
        figure.suptitle(
            f'{name}: the {robot.name} model in its last pose (robot_description and TF)'
        )
        return [save_figure(figure, folder / 'model.png')]


def render_table(composition, stats, elapsed, duration):
    now = time.monotonic()
    lines = [f'legacy robots demo  {elapsed:5.1f} / {duration:.0f} s', '']
    lines.append(
        f'{"robot":<10} {"link":<22} {"topic":<32} {"msgs":>7} {"rate Hz":>8}  last message'
    )
    for row in stats:
        node = composition.nodes[row.robot]
        link = ', '.join(c.state.value for c in node.links) or '-'
        lines.append(
            f'{row.robot:<10} {link:<22} {row.topic:<32} {row.count:>7} '
            f'{row.rate(now):>8.1f}  {row.summary[:60]}'
        )
    return '\n'.join(lines)


def verdict(composition, stats):
    """(ok, list of problems): every robot connected and every required topic had data."""
    problems = []
    for name, node in composition.nodes.items():
        for client in node.links:
            if client.counters.connects == 0:
                problems.append(
                    f'{name}: {client.name} never connected '
                    f'({client.counters.last_error or "no error recorded"})'
                )
    for row in stats:
        if row.required and row.count == 0:
            problems.append(f'{row.robot}: no message on {row.topic}')
    return not problems, problems


def build_parser():
    parser = argparse.ArgumentParser(prog='demo', description=__doc__.split('\n\n')[0])
    parser.add_argument(
        'robots', nargs='*', help='robots to show (default: every installed robot)'
    )
    parser.add_argument('--duration', type=float, default=20.0, help='seconds to run (default 20)')
    parser.add_argument('--output', default='demo-output', help='folder for the output files')
    parser.add_argument(
        '--plugin',
        action='append',
        default=[],
        metavar='MODULE:ATTR',
        help='load an extra robot plugin',
    )
    parser.add_argument(
        '--replay',
        action='append',
        default=[],
        metavar='MCAP',
        help='show a robot from its recording (replayed in a loop) instead of '
        'its emulator; may repeat; without robot names only these robots run',
    )
    parser.add_argument(
        '--record',
        metavar='FOLDER',
        help='each driver records its links to FOLDER/<robot>.mcap (how recordings/ was made)',
    )
    add_foxglove_arguments(parser)
    parser.add_argument(
        '--plain',
        action='store_true',
        help='print the table every few seconds instead of redrawing it',
    )
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.duration <= 0:
        print('error: --duration must be positive', file=sys.stderr)
        return 2
    try:
        chosen, replays = choose(
            discover_plugins(args.plugin), args.robots, args.replay, loop=True
        )
    except (PluginError, RecordingError, ValueError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    return run_demo(chosen, args, replays)


def run_demo(chosen, args, replays=None):
    """Run the demo for the chosen plugins with parsed arguments; returns the exit code."""
    output = pathlib.Path(args.output)
    if not chosen:
        path = save_lines(output / 'summary.txt', ['no robot drivers are installed yet'])
        print('No robot drivers are installed yet: nothing to demonstrate.')
        print(f'artifacts:\n  {path}')
        return 0

    try:
        with running(
            chosen,
            sim=True,
            # a recording (--record) holds what its replay can play: the plain emulators
            demo=getattr(args, 'record', None) is None,
            namespace_per_robot=True,
            replays=replays,
            record_folder=getattr(args, 'record', None),
            foxglove=foxglove_option(args),
        ) as composition:
            monitor = DemoMonitor(composition)
            composition.executor.add_node(monitor)
            try:
                return _run(args, output, composition, monitor)
            finally:
                monitor.destroy_node()
    except (ParameterError, OSError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2


def _run(args, output, composition, monitor):
    live = sys.stdout.isatty() and not args.plain
    start = time.monotonic()
    last_draw = [0.0]

    last_act = [-ACT_PERIOD]

    def on_tick():
        elapsed = time.monotonic() - start
        if elapsed - last_act[0] >= ACT_PERIOD:
            last_act[0] = elapsed
            monitor.act(elapsed)
        if elapsed - last_draw[0] >= (0.5 if live else 5.0):
            last_draw[0] = elapsed
            table = render_table(composition, monitor.stats, elapsed, args.duration)
            if composition.relay is not None:  # the URL stays on the redrawn screen
                table += '\n' + composition.relay.announcement
            print(('\x1b[H\x1b[2J' if live else '\n') + table, flush=True)

    composition.spin(args.duration, on_tick=on_tick)
    table = render_table(composition, monitor.stats, time.monotonic() - start, args.duration)
    ok, problems = verdict(composition, monitor.stats)
    paths = []
    for name, script in monitor.scripts.items():
        # the emulator can keep what only the robot saw (the rabbit's played audio)
        emulator = composition.emulators.get(name)
        try:
            for source in (script, emulator):
                if hasattr(source, 'write_artifacts'):
                    paths += source.write_artifacts(output / name)
            paths += monitor.models.write(name, output / name, script)
        except Exception as exc:  # one robot's broken output must not hide the others'
            ok = False
            problems.append(f'{name}: writing its output files failed: {exc!r}')
    done = what_the_robots_did(monitor.scripts, composition.emulators)
    for package, write in group_writers(composition.plugins, monitor.scripts, composition.replays):
        try:
            group_paths, lines = write(output)
        except Exception as exc:  # as for one robot: the others' output still counts
            ok = False
            problems.append(f'{package}: writing the group output failed: {exc!r}')
            continue
        paths += group_paths
        done += lines
    paths.insert(
        0,
        save_lines(
            output / 'summary.txt',
            [table, '', *done, 'result: ' + ('ok' if ok else 'FAILED'), *problems],
        ),
    )
    print('\n' + table + '\n')
    for line in done:
        print(line)
    for problem in problems:
        print(f'problem: {problem}')
    print('artifacts:')
    for path in paths:
        print(f'  {path}')
    return 0 if ok else 1


def group_writers(plugins, scripts, replays=()):
    """[(package, write(folder) -> (paths, lines))]: each package with two or more robots run
    from emulators (not replays: those share no world) and a write_group_artifacts, given
    those robots' demo scripts by robot name."""
    groups = collections.defaultdict(dict)
    for plugin in plugins:
        script = scripts.get(plugin.name)
        if plugin.write_group_artifacts and script is not None and plugin.name not in replays:
            groups[(plugin.package, plugin.write_group_artifacts)][plugin.name] = script
    return [
        (package, functools.partial(write, members))
        for (package, write), members in groups.items()
        if len(members) >= 2
    ]


def what_the_robots_did(scripts, emulators=None):
    """Each demo script's and emulator's summary lines ("nabaztag: said ..."), prefixed by
    its robot."""
    lines = []
    for name, script in scripts.items():
        for source in (script, (emulators or {}).get(name)):
            if hasattr(source, 'summary_lines'):
                lines += [f'{name}: {line}' for line in source.summary_lines()]
    return lines


if __name__ == '__main__':
    sys.exit(main())
