"""How the AIBO driver appears in bringup, the demo and the launch files.

The demo watches the emulated dog's camera (YUV10, then JPEG after a mode switch),
colour detection, microphones and RCODE console; it sets a device property and
asks RCODE for a reading; it walks the dog a short path (forward, a turn, sideways) from
cmd_vel and turns its head; it writes PNGs of a YUV10 frame, a JPEG frame, the colour
mask and the odometry path, the JPEG bytes as the dog sent them, and a WAV of the audio.
"""

import math

import numpy as np
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import CompressedImage, Image, JointState
from std_msgs.msg import String

from legacy_robot_common.artifacts import new_figure, save_figure, save_lines, save_png, save_wav
from legacy_robot_common.messages import image_to_array
from legacy_robot_common.plugin import (
    ByName,
    DemoScript,
    DemoTopic,
    FoxgloveView,
    RobotPlugin,
    SoakPart,
)
from legacy_robot_common.replay import ReplayLink
from legacy_robot_interfaces.msg import AiboSensorWords, AudioDataStamped, ColorDetection
from legacy_robot_interfaces.srv import SetCameraMode, SetProperty, TextCommand

from . import description
from . import protocol as p
from .emulator import AiboEmulator, EmulatorOptions

JPEG_AT = 8.0  # s into the demo: the camera switches from YUV10 to JPEG
# the demo walk at the emulated dog's real pace (its gaits are the driver's defaults):
# (from s, to s, (vx m/s, vy m/s, wz rad/s))
WALK_PLAN = (
    (2.0, 7.0, (0.06, 0.0, 0.0)),  # forward, 0.3 m
    (7.0, 10.4, (0.0, 0.0, 0.5)),  # turn left: two 45° chunks
    (10.8, 14.0, (0.0, 0.06, 0.0)),  # sideways, to the left
    (14.5, 18.0, (0.06, 0.0, 0.0)),  # forward again
)
# the demo's console line: R-CODE's own variable names (rcode.SENSOR_VARIABLES), which the dog
# answers with the values; a name it does not know is answered with an ERROR line
DEMO_RCODE = 'PRINT:"battery %d%% distance %d mm":Batt_Rest:Distance'
HEAD_PLAN = ((3.0, 0.8, 0.2), (8.0, -0.8, -0.4), (13.0, 0.0, 0.0))  # (at s, pan rad, tilt rad)
MASK_COLOURS = {0: (235, 110, 190), 4: (40, 70, 200), 3: (230, 180, 150), 5: (180, 200, 60)}


class DemoEmulator:
    """The emulator as bringup sees it: RCodePlus on free ports."""

    def __init__(self):
        self.emulator = AiboEmulator(EmulatorOptions(telemetry_port=0, rcode_port=0)).start()
        self.parameters = self.emulator.parameters
        self.description = self.emulator.description

    def stop(self):
        self.emulator.stop()


class AudioCounter:
    """Live-table summary of sensor_words: chunks seen and chunks missing by sequence number."""

    def __init__(self):
        self.tracker = p.SequenceTracker()
        self.chunks = 0

    def __call__(self, msg):
        self.chunks += 1
        self.tracker.update(msg.sequence)
        return f'chunks {self.chunks} lost {self.tracker.lost} words {msg.word0},{msg.word1}'


def colour_mask_picture(mask):
    """72×88 CDT bits → 144×176×3 picture: each matched channel in its colour."""
    picture = np.zeros(mask.shape + (3,), dtype=np.uint8)
    for bit, colour in MASK_COLOURS.items():
        picture[(mask >> bit) & 1 == 1] = colour
    return picture.repeat(2, axis=0).repeat(2, axis=1)


class DogWatcher(DemoScript):
    def __init__(self):
        super().__init__()
        self.yuv10_frame = self.jpeg_frame = self.jpeg_bytes = self.mask = None
        self.audio = []
        self.rcode_output = []
        self.switched = False
        self.path = []  # (x, y, yaw) from odom
        self.head_step = 0

    def setup(self, node, namespace):
        def client(kind, name):
            return node.create_client(kind, f'{namespace}/{name}')

        self.camera = client(SetCameraMode, 'set_camera_mode')
        self.property = client(SetProperty, 'set_property')
        self.console = client(TextCommand, 'rcode_command')
        self.cmd_pub = node.create_publisher(Twist, f'{namespace}/cmd_vel', 10)
        self.head_pub = node.create_publisher(JointState, f'{namespace}/head_command', 10)

    def walk(self, elapsed):
        """The demo walk: a velocity per leg of WALK_PLAN (the driver stops the dog after)."""
        for start, end, (vx, vy, wz) in WALK_PLAN:
            if start <= elapsed < end:
                twist = Twist()
                twist.linear.x, twist.linear.y, twist.angular.z = vx, vy, wz
                self.cmd_pub.publish(twist)
        if self.head_step < len(HEAD_PLAN) and elapsed >= HEAD_PLAN[self.head_step][0]:
            _, pan, tilt = HEAD_PLAN[self.head_step]
            self.head_pub.publish(JointState(name=['Head_Pan', 'Head_Tilt'], position=[pan, tilt]))
            self.head_step += 1

    def act(self, elapsed):
        self.walk(elapsed)
        if elapsed >= 1.0:
            self.call_once('property', self.property, SetProperty.Request(preset='gain_high'))
            self.call_once(
                'rcode',
                self.console,
                TextCommand.Request(command=DEMO_RCODE),
            )
        if elapsed >= JPEG_AT and self.yuv10_frame is not None:
            self.call_once('jpeg', self.camera, SetCameraMode.Request(mode='jpeg'))
            self.switched = 'jpeg' in self.requested

    def on_message(self, topic, msg):
        if topic == 'camera/image_raw' and not self.switched:
            self.yuv10_frame = image_to_array(msg).copy()
        elif topic == 'camera/image_raw/compressed':
            self.jpeg_bytes = bytes(msg.data)
        elif topic == 'color_detection':
            self.mask = image_to_array(msg.mask).copy()
        elif topic == 'audio/audio_stamped':
            self.audio.append(bytes(msg.audio.data))
        elif topic == 'rcode/output':
            self.rcode_output.append(msg.data)
        elif topic == 'odom':
            q = msg.pose.pose.orientation
            position = msg.pose.pose.position
            self.path.append((position.x, position.y, 2 * math.atan2(q.z, q.w)))

    def write_artifacts(self, folder):
        paths = []
        if self.yuv10_frame is not None:
            paths.append(save_png(folder / 'yuv10_frame.png', self.yuv10_frame))
        if self.jpeg_bytes is not None:
            jpeg = folder / 'jpeg_frame.jpg'
            jpeg.parent.mkdir(parents=True, exist_ok=True)
            jpeg.write_bytes(self.jpeg_bytes)
            paths += [jpeg, save_png(folder / 'jpeg_frame.png', p.decode_jpeg(self.jpeg_bytes))]
        if self.mask is not None:
            paths.append(save_png(folder / 'color_mask.png', colour_mask_picture(self.mask)))
        if self.audio:
            paths.append(save_wav(folder / 'audio.wav', b''.join(self.audio), p.AUDIO_RATE, 2))
        paths.append(save_lines(folder / 'rcode_output.txt', self.rcode_output))
        if self.path:
            paths.append(self.path_picture(folder / 'walk_path.png'))
        return paths

    def path_picture(self, path):
        """The odometry path of the demo walk, the heading every half metre or so."""
        figure = new_figure()
        axes = figure.add_subplot()
        x, y, yaw = zip(*self.path, strict=False)
        axes.plot(x, y, c='tab:blue', label='odometry (dead reckoning)')
        step = max(1, len(self.path) // 12)
        axes.quiver(
            x[::step],
            y[::step],
            np.cos(yaw[::step]),
            np.sin(yaw[::step]),
            color='tab:orange',
            width=0.004,
            label='heading',
        )
        axes.set_aspect('equal')
        axes.set_xlabel('x (m)')
        axes.set_ylabel('y (m)')
        axes.set_title('AIBO emulator: walk forward, turn, sideways, forward (R-CODE)')
        axes.legend(loc='best')
        return save_figure(figure, path)


def _odom(msg):
    p = msg.pose.pose.position
    return f'x={p.x:+.2f} y={p.y:+.2f} sd={math.sqrt(msg.pose.covariance[0]):.2f} m'


def _legs(msg):
    angles = dict(zip(msg.name, msg.position, strict=False))
    return ' '.join(
        f'{n}={math.degrees(angles[n]):+.0f}' for n in ('Head_Pan', 'LFLeg_1') if n in angles
    )


PLUGIN = RobotPlugin(
    name='aibo',
    package='aibo_driver',
    # by name, not imported: node.main imports this plugin
    create_node=ByName('aibo_driver.node:AiboNode'),
    describe_robot=lambda parameters: description.from_parameters(parameters).xml(),
    start_emulator=DemoEmulator,
    emulator_arguments=('--telemetry-port', '21001', '--rcode-port', '21002'),
    sim_parameters={'host': '127.0.0.1', 'telemetry_port': 21001, 'rcode_port': 21002},
    # both links answer requests: telemetry polls, RCODE command lines (after a greeting)
    replay_links=(
        ReplayLink('telemetry', 'telemetry_port', mode='reply'),
        ReplayLink('rcode', 'rcode_port', mode='reply'),
    ),
    demo_topics=(
        DemoTopic('camera/image_raw', Image, lambda m: f'{m.width}x{m.height} {m.encoding}'),
        DemoTopic(
            'camera/image_raw/compressed',
            CompressedImage,
            lambda m: f'{len(m.data)} bytes {m.format}',
        ),
        DemoTopic(
            'color_detection',
            ColorDetection,
            lambda m: f'{sum(1 for b in m.mask.data if b & 1)} pink-ball cells',
        ),
        DemoTopic('audio/audio_stamped', AudioDataStamped, lambda m: f'{len(m.audio.data)} bytes'),
        DemoTopic('sensor_words', AiboSensorWords, AudioCounter()),
        DemoTopic('rcode/output', String, lambda m: m.data),
        DemoTopic('odom', Odometry, _odom),
        DemoTopic('joint_states', JointState, _legs),
    ),
    make_demo_script=DogWatcher,
    label='AIBO',
    foxglove=FoxgloveView(
        image='camera/image_raw',
        plots=('odom.pose.pose.position.x', 'odom.pose.pose.position.y', 'ir_range.range'),
        services=(('rcode_command', 'RCODE command'), ('play_action', 'Play action')),
        teleop=True,
        follow_frame=description.DEFAULT_FRAMES['base'],
    ),
    bench_quick_arguments=('--seconds', '5', '--audio-minutes', '0.2'),
    soak_parts=(
        SoakPart(
            'audio',
            'legacy_robot_bench.aibo_driver.soak:audio_rows',
            '--audio-minutes',
            10.0,
            'AIBO real-time audio run with a core kept busy',
            float,
        ),
    ),
)
