"""How the Pleo driver appears in bringup, the demo and the launch files.

The demo builds the repository's sample project with urf_builder (build log and
`inspect` listing go to demo-output/pleo/), loads the URF into the emulated
Pleo, plays the "walk" motion (it cues two sounds), a sound and the "wag"
motion, and plots the joint angles it saw on joint_states.
"""

import math
import os
import shutil
import tempfile

from sensor_msgs.msg import BatteryState, JointState

from legacy_robot_common.artifacts import new_figure, save_figure, save_lines
from legacy_robot_common.plugin import ByName, DemoScript, DemoTopic, FoxgloveView, RobotPlugin
from legacy_robot_common.replay import ReplayLink
from legacy_robot_interfaces.msg import MonitorLog, NamedValues
from legacy_robot_interfaces.srv import PlayNamed

from . import description, urf_inspect
from .emulator import EmulatorOptions, PleoEmulator
from .pdk import urf
from .sample import build_sample_project

SCRIPT = ((1.0, 'motion_play', 'walk'), (5.0, 'sound_play', 'chirp'), (6.0, 'motion_play', 'wag'))
PLOTTED = (
    'right_shoulder',
    'left_shoulder',
    'right_knee',
    'left_knee',
    'tail_horizontal',
    'neck_horizontal',
)


class DemoEmulator:
    """The emulated Pleo with the sample project's URF loaded."""

    def __init__(self):
        self._folder = tempfile.mkdtemp(prefix='pleo-demo-')
        self.emulator = PleoEmulator(
            EmulatorOptions(urf_path=build_sample_project(self._folder).urf_path, dump_rate=20.0)
        ).start()
        self.parameters = self.emulator.parameters
        self.description = self.emulator.description

    def stop(self):
        self.emulator.stop()
        shutil.rmtree(self._folder, ignore_errors=True)


class MotionShow(DemoScript):
    def __init__(self):
        super().__init__()
        self.elapsed = 0.0
        self.samples = []  # (seconds, {joint: degrees})
        self.log = []

    def setup(self, node, namespace):
        self.clients = {
            name: node.create_client(PlayNamed, f'{namespace}/{name}')
            for name in ('motion_play', 'sound_play')
        }

    def act(self, elapsed):
        self.elapsed = elapsed
        for at, service, name in SCRIPT:
            if elapsed >= at:
                self.call_once(
                    f'{service} {name}', self.clients[service], PlayNamed.Request(name=name)
                )

    def on_message(self, topic, msg):
        if topic == 'joint_states':
            self.samples.append(
                (
                    self.elapsed,
                    {n: math.degrees(a) for n, a in zip(msg.name, msg.position, strict=False)},
                )
            )
        elif topic == 'monitor_log':
            self.log.append(f'{self.elapsed:6.2f} {msg.level}: {msg.type}: {msg.text}')

    def write_artifacts(self, folder):
        paths = self._build_sample(folder)
        figure = new_figure(8.0, 4.5)
        axes = figure.add_subplot(1, 1, 1)
        for joint in PLOTTED:
            points = [(t, s[joint]) for t, s in self.samples if joint in s]
            if points:
                axes.plot(*zip(*points, strict=False), label=joint)
        for at, service, name in SCRIPT:
            axes.axvline(at, color='grey', lw=0.5)
            axes.annotate(
                f'{service.split("_")[0]} {name}',
                (at, 0),
                fontsize='small',
                rotation=90,
                va='bottom',
            )
        axes.set_xlabel('time (s)')
        axes.set_ylabel('joint angle (°)')
        axes.set_title('emulated Pleo: joint_states while playing the sample motions')
        axes.legend(loc='upper right', fontsize='small')
        paths.append(save_figure(figure, folder / 'joint_angles.png'))
        paths.append(save_lines(folder / 'monitor_log.txt', self.log))
        return paths

    @staticmethod
    def _build_sample(folder):
        """Build the sample project with urf_builder; keep its log and the inspect listing."""
        log = []
        result = build_sample_project(str(folder), log.append)
        with open(result.urf_path, 'rb') as handle:
            listing = urf_inspect.listing(
                os.path.relpath(result.urf_path, folder), urf.parse(handle.read())
            )
        return [
            save_lines(folder / 'urf_build.log', log),
            save_lines(folder / 'urf_inspect.txt', listing),
            result.urf_path,
        ]


PLUGIN = RobotPlugin(
    name='pleo',
    package='pleo_driver',
    # by name, not imported: node.main imports this plugin
    create_node=ByName('pleo_driver.node:PleoNode'),
    describe_robot=lambda parameters: description.from_parameters(parameters).xml(),
    start_emulator=DemoEmulator,
    emulator_arguments=('--sample', '--link', '/tmp/pleo_emulator'),
    sim_parameters={'port': '/tmp/pleo_emulator'},
    # the monitor's output on its timeline; it holds at each command line until the driver
    # sends it (the prompt, the start-up commands, recorded service calls)
    replay_links=(ReplayLink('monitor', 'port', serial=True, address='{device}'),),
    demo_topics=(
        DemoTopic(
            'joint_states',
            JointState,
            lambda m: ' '.join(f'{math.degrees(a):.0f}' for a in m.position),
        ),
        DemoTopic('sensors', NamedValues, lambda m: f'{len(m.values)} values'),
        DemoTopic('battery', BatteryState, lambda m: f'{100 * m.percentage:.0f} %'),
        DemoTopic('monitor_log', MonitorLog, lambda m: f'{m.level}: {m.type}: {m.text}'),
    ),
    make_demo_script=MotionShow,
    label='Pleo',
    foxglove=FoxgloveView(
        plots=('joint_states.position[0]', 'joint_states.position[1]', 'battery.percentage'),
        services=(('joint_neutral', 'neutral pose'), ('motion_play', 'play motion')),
    ),
    bench_quick_arguments=('--seconds', '5', '--runs', '3'),
)
