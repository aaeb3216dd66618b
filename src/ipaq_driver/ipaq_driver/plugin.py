"""How the iPaq driver appears in bringup, the demo and the launch files.

The demo starts colour tracking of the emulator's red ball (the camera follows
it with pan and tilt), steers the tricycle after it with cmd_vel (backing away
from a ball that comes too close), dumps a camera frame, and writes the frame
as PNG plus a plot of the tracked position; the summary says whether the
tracking kept the ball to the end or when it lost it.
"""

import math

from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import Image, Range
from std_srvs.srv import Trigger

from legacy_robot_common.artifacts import new_figure, save_figure, save_lines, save_png
from legacy_robot_common.messages import image_to_array
from legacy_robot_common.plugin import ByName, DemoScript, DemoTopic, FoxgloveView, RobotPlugin
from legacy_robot_common.replay import ReplayLink
from legacy_robot_interfaces.msg import TrackingResult, WheelPower
from legacy_robot_interfaces.srv import ColorTracking

from . import description
from .emulator import EmulatorOptions, IpaqEmulator
from .parameters import FIELD_OF_VIEW
from .units import Units

RED_BALL = dict(r_min=180, r_max=240, g_min=16, g_max=90, b_min=16, b_max=110)
CAMERA_FOV = math.radians(48.0)  # CMUcam1 lens, horizontal
IMAGE_COLUMNS = 80
CLOSE_ENOUGH = 55  # blob height in camera rows (about 0.6 m away): stop
TOO_CLOSE = 75  # blob height in camera rows (about 0.45 m away): back away
DUMP_AT = (4.0, 14.0)  # s into the demo
LOST_AFTER = 1.0  # s of results that see nothing up to the end: the ball is lost


# The sim's ball circles slowly around a point 1.2 m ahead, always in the camera's view from
# the start pose: tracking started at any moment finds it. (The ball used to circle around the
# robot: from about 10 s on it was behind the camera, and tracking started then saw nothing.)
DEMO_SCENE = dict(ball_centre=(1.2, 0.0), ball_orbit=0.4, ball_speed=0.12)


class DemoEmulator:
    """The emulator as bringup sees it: the three ports on free port numbers."""

    def __init__(self):
        self.emulator = IpaqEmulator(
            EmulatorOptions(control_port=0, frame_dump_port=0, tracking_port=0, **DEMO_SCENE)
        ).start()
        self.parameters = self.emulator.parameters
        self.description = self.emulator.description

    def stop(self):
        self.emulator.stop()


class BallFollower(DemoScript):
    """Track the red ball, steer towards it, stop when it is close; dump frames on the way."""

    def __init__(self):
        super().__init__()
        self.units = Units()
        self.track = []  # (seconds, x, y, pan angle) of each tracking result
        self.path = []  # (x, y) from odom
        self.frame = None
        self.elapsed = 0.0
        self.range = None  # the last IR reading: a beam in the model picture

    def model_overlays(self):
        """The camera's view along its neck, and the IR beam as long as its reading."""
        cones = [(description.DEFAULT_FRAMES['camera'], 0.5, FIELD_OF_VIEW[0], 'tab:blue')]
        if self.range is not None:
            cones.append(
                (self.range.header.frame_id, self.range.range, self.range.field_of_view, 'tab:red')
            )
        return cones

    def setup(self, node, namespace):
        self.cmd_pub = node.create_publisher(Twist, f'{namespace}/cmd_vel', 10)
        self.tracking = node.create_client(ColorTracking, f'{namespace}/start_color_tracking')
        self.dump = node.create_client(Trigger, f'{namespace}/dump_frame')

    def act(self, elapsed):
        self.elapsed = elapsed
        self.call_until_success('track', self.tracking, ColorTracking.Request(**RED_BALL))
        for at in DUMP_AT:
            if elapsed >= at:
                self.call_once(f'dump {at}', self.dump, Trigger.Request())
        if self.track:
            self.cmd_pub.publish(self._steer(*self.track[-1][1:]))

    def _steer(self, x, height, pan):
        """Twist towards the ball: its bearing is the pan angle plus its offset in the image."""
        twist = Twist()
        if x == 0:  # nothing tracked: stand still
            return twist
        bearing = pan + (IMAGE_COLUMNS / 2 - x) * CAMERA_FOV / IMAGE_COLUMNS
        twist.angular.z = max(-0.8, min(0.8, 1.5 * bearing))
        # a tricycle turns only while it rolls: it backs away from a ball that comes too close
        # (turning towards it as it goes), instead of standing while the ball rolls past
        if height < CLOSE_ENOUGH:
            twist.linear.x = 0.25
        elif height > TOO_CLOSE:
            twist.linear.x = -0.15
        return twist

    def on_message(self, topic, msg):
        if topic == 'tracking':
            self.track.append((self.elapsed, msg.x, msg.height, self.units.raw_to_servo(msg.pan)))
        elif topic == 'odom':
            self.path.append((msg.pose.pose.position.x, msg.pose.pose.position.y))
        elif topic == 'camera/image_raw':
            self.frame = image_to_array(msg).copy()
        elif topic == 'range':
            self.range = msg

    def summary_lines(self):
        """Whether the tracking kept the ball: from its first sighting to the end, or until
        when (the results that see nothing from then on, for LOST_AFTER or more)."""
        seen = [(t, pan) for t, x, _, pan in self.track if x]
        if not seen:
            return ['colour tracking never found the ball']
        end = self.track[-1][0]
        last, pan = seen[-1]
        if end - last >= LOST_AFTER:
            return [
                f'colour tracking lost the ball at {last:.1f} s (camera pan '
                f'{math.degrees(pan):.1f}°) and did not find it again before {end:.1f} s'
            ]
        return [
            f'colour tracking kept the ball in view from {seen[0][0]:.1f} s to the end '
            f'({end:.1f} s): {len(seen)} of {len(self.track)} results saw it'
        ]

    def write_artifacts(self, folder):
        paths = []
        if self.frame is not None:
            paths.append(save_png(folder / 'camera_frame.png', self.frame))
        figure = new_figure(8.0, 4.5)
        image_axes, path_axes = figure.add_subplot(1, 2, 1), figure.add_subplot(1, 2, 2)
        if self.track:
            seconds, xs, _, pans = zip(*self.track, strict=False)
            image_axes.plot(seconds, xs, label='ball x in the image (1..80)')
            image_axes.plot(seconds, [math.degrees(a) for a in pans], label='camera pan (°)')
            image_axes.axhline(IMAGE_COLUMNS / 2, color='grey', lw=0.5)
        image_axes.set_xlabel('time (s)')
        image_axes.set_title('colour tracking')
        image_axes.legend(loc='lower right', fontsize='small')
        if self.path:
            px, py = zip(*self.path, strict=False)
            path_axes.plot(px, py, label='robot (odom)')
        path_axes.set_aspect('equal')
        path_axes.set_xlabel('x (m)')
        path_axes.set_ylabel('y (m)')
        path_axes.set_title('following the ball')
        paths.append(save_figure(figure, folder / 'tracking.png'))
        paths.append(
            save_lines(
                folder / 'tracking.csv',
                ['seconds,x,height,pan_rad']
                + [f'{t:.3f},{x},{h},{pan:.4f}' for t, x, h, pan in self.track],
            )
        )
        return paths


PLUGIN = RobotPlugin(
    name='ipaq',
    package='ipaq_driver',
    # by name, not imported: node.main imports this plugin
    create_node=ByName('ipaq_driver.node:IpaqNode'),
    describe_robot=lambda parameters: description.from_parameters(parameters).xml(),
    start_emulator=DemoEmulator,
    emulator_arguments=(
        '--control-port',
        '5000',
        '--frame-dump-port',
        '5001',
        '--tracking-port',
        '5002',
    ),
    sim_parameters={
        'host': '127.0.0.1',
        'control_port': 5000,
        'frame_dump_port': 5001,
        'tracking_port': 5002,
    },
    # commands answered in recorded order; the two stream ports play on their timeline
    replay_links=(
        ReplayLink('control', 'control_port', mode='reply'),
        ReplayLink('frame_dump', 'frame_dump_port'),
        ReplayLink('tracking', 'tracking_port'),
    ),
    demo_topics=(
        DemoTopic(
            'tracking',
            TrackingResult,
            lambda m: f'x={m.x} y={m.y} {m.width}x{m.height} conf={m.confidence} pan={m.pan}',
        ),
        DemoTopic(
            'odom',
            Odometry,
            lambda m: (
                f'x={m.pose.pose.position.x:+.2f} '
                f'y={m.pose.pose.position.y:+.2f} v={m.twist.twist.linear.x:+.2f}'
            ),
        ),
        DemoTopic('range', Range, lambda m: f'{m.range:.2f} m'),
        DemoTopic('wheel_power', WheelPower, lambda m: f'{m.voltage:.2f} V {m.current:.2f} A'),
        DemoTopic('camera/image_raw', Image, lambda m: f'{m.width}x{m.height} {m.encoding}'),
    ),
    make_demo_script=BallFollower,
    label='iPaq',
    foxglove=FoxgloveView(
        image='camera/image_raw',
        plots=('tracking.pan', 'tracking.tilt', 'tracking.confidence'),
        services=(
            ('dump_frame', 'camera frame'),
            ('start_color_tracking', 'track colour'),
            ('stop_tracking', 'stop tracking'),
        ),
        teleop=True,
    ),
    bench_quick_arguments=('--seconds', '5'),
)
