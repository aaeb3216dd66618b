"""How the P2OS driver appears in bringup, the demo and the launch files.

The demo enables the motors through the service, drives a 1 m square with
cmd_vel (closed loop on odometry), stores the gripper, and writes a PNG of the
odometry path with the sonar echoes.
"""

import collections
import math

import numpy as np
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from sensor_msgs.msg import BatteryState, PointCloud2
from std_srvs.srv import Trigger

from legacy_robot_common.artifacts import new_figure, save_figure, save_lines
from legacy_robot_common.plugin import DemoScript, DemoTopic, FoxgloveView, RobotPlugin, SoakPart
from legacy_robot_common.replay import ReplayLink
from legacy_robot_common.world_map import WorldMap
from legacy_robot_interfaces.msg import EncoderCounts, GripperState, MotorState, SonarArray
from legacy_robot_interfaces.srv import GripperCommand

from . import description
from .emulator import EmulatorOptions, P2osEmulator, world_summary
from .node import P2osNode
from .protocol import is_handshake_request
from .world import default_world_path

MAP_RESOLUTION = 0.05  # m per cell of the map bringup publishes

SIDE = 1.0  # m
SPEED = 0.6  # m/s
TURN_RATE = 1.2  # rad/s
# The demo's robot accelerates faster than the FLASH default so the square fits in 20 s.
DEMO_PARAMETERS = {
    'encoder_stream': True,
    'gripper_stream': True,
    'linear_acceleration': 1.0,
    'linear_deceleration': 1.0,
    'angular_acceleration': 3.0,
    'angular_deceleration': 3.0,
}


class DemoEmulator:
    """The emulator as bringup sees it: a p2dx on a free TCP port in a world (the office floor
    shipped with the package, or world=FILE), plus the demo's streams."""

    def __init__(self, world=None):
        options = EmulatorOptions(model='p2dx', name='demo', world=world or default_world_path())
        self.emulator = P2osEmulator(options).start()
        self.parameters = {**self.emulator.parameters, **DEMO_PARAMETERS}
        self.description = f'{self.emulator.description}, {world_summary(self.emulator.world)}'
        self.world_map = world_map(self.emulator)

    def stop(self):
        self.emulator.stop()


class SquareDriver(DemoScript):
    """Forward SIDE metres, turn 90° left, four times, then stop; steered by odometry."""

    def __init__(self):
        super().__init__()
        self.path = []  # (x, y) from odom
        self.hits = []  # sonar echoes in the odom frame
        self.pose = None
        self.pose_at = collections.OrderedDict()  # header stamp → odom pose
        self.leg = 0  # 0..7: even = straight, odd = turn; 8 = done
        self.leg_start = None
        self.motors_enabled = False
        self.sonar = None  # the last SonarArray: beams in the model picture

    def sides_driven(self):
        """Sides whose straight leg is done (legs: even = straight, odd = turn): the fourth
        counts once it is driven, before the last turn."""
        return min(4, (self.leg + 1) // 2)

    def model_overlays(self):
        """Each sonar beam of the last reading, as long as its echo (model.png)."""
        if self.sonar is None:
            return []
        return [
            (frame, metres, self.sonar.field_of_view, 'tab:orange')
            for frame, metres in zip(self.sonar.frame_ids, self.sonar.ranges, strict=False)
        ]

    def setup(self, node, namespace):
        self.node = node
        self.cmd_pub = node.create_publisher(Twist, f'{namespace}/cmd_vel', 10)
        self.enable = node.create_client(Trigger, f'{namespace}/enable_motors')
        self.gripper = node.create_client(GripperCommand, f'{namespace}/gripper')

    def act(self, elapsed):
        if self.pose is None:
            return
        self.call_once('enable', self.enable, Trigger.Request())
        self.call_once(
            'gripper', self.gripper, GripperCommand.Request(command=GripperCommand.Request.STORE)
        )
        if not self.motors_enabled or self.leg >= 8:
            if self.leg >= 8:
                self.cmd_pub.publish(Twist())
            return
        x, y, yaw = self.pose
        if self.leg_start is None:
            self.leg_start = self.pose
        sx, sy, syaw = self.leg_start
        twist = Twist()
        if self.leg % 2 == 0:
            remaining = SIDE - math.hypot(x - sx, y - sy)
            twist.linear.x = min(SPEED, 1.5 * remaining + 0.05)  # slow down near the corner
        else:
            turned = abs(math.atan2(math.sin(yaw - syaw), math.cos(yaw - syaw)))
            remaining = math.pi / 2 - turned
            twist.angular.z = min(TURN_RATE, 2.0 * remaining + 0.05)
        done = remaining <= 0.01
        if done:
            self.leg += 1
            self.leg_start = None
            twist = Twist()
        self.cmd_pub.publish(twist)

    def on_message(self, topic, msg):
        if topic == 'odom':
            q = msg.pose.pose.orientation
            yaw = 2 * math.atan2(q.z, q.w)
            self.pose = (msg.pose.pose.position.x, msg.pose.pose.position.y, yaw)
            self.path.append(self.pose[:2])
            self.pose_at[_stamp(msg)] = self.pose
            while len(self.pose_at) > 100:
                self.pose_at.popitem(last=False)
        elif topic == 'motor_state':
            self.motors_enabled = msg.motors_enabled
        elif topic == 'sonar':
            self.sonar = msg
        elif topic == 'sonar/points' and _stamp(msg) in self.pose_at:
            # odom and the echoes of one SIP share a stamp; topics may arrive in batches
            points = np.frombuffer(bytes(msg.data), dtype=np.float32).reshape(-1, 3)
            x, y, yaw = self.pose_at[_stamp(msg)]
            c, s = math.cos(yaw), math.sin(yaw)
            self.hits += [(x + c * px - s * py, y + s * px + c * py) for px, py, _ in points]

    def write_artifacts(self, folder):
        figure = new_figure()
        axes = figure.add_subplot()
        if self.hits:
            hx, hy = zip(*self.hits[-4000:], strict=False)
            axes.scatter(hx, hy, s=2, c='tab:orange', label='sonar echoes')
        if self.path:
            px, py = zip(*self.path, strict=False)
            axes.plot(px, py, c='tab:blue', label='odometry path')
        axes.set_aspect('equal')
        axes.set_xlabel('x (m)')
        axes.set_ylabel('y (m)')
        axes.set_title(f'P2OS emulator: square drive, {self.sides_driven()} of 4 sides driven')
        axes.legend(loc='upper right')
        paths = [save_figure(figure, folder / 'odometry_square.png')]
        paths.append(
            save_lines(
                folder / 'odometry.csv', ['x_m,y_m'] + [f'{x:.4f},{y:.4f}' for x, y in self.path]
            )
        )
        return paths


def world_map(emulator, resolution=MAP_RESOLUTION):
    """The emulator's world as a WorldMap (grid, start pose in metres) for bringup."""
    world = emulator.world
    if not hasattr(world, 'occupancy'):
        world = world.world()  # a --room: its four walls
    grid, origin = world.occupancy(resolution)
    x, y, th = emulator.robot.initial_pose
    return WorldMap(grid, resolution, origin, (x / 1000.0, y / 1000.0, th))


def _stamp(msg):
    return (msg.header.stamp.sec, msg.header.stamp.nanosec)


def _odom(msg):
    p = msg.pose.pose.position
    return f'x={p.x:+.2f} y={p.y:+.2f} v={msg.twist.twist.linear.x:+.2f}'


def _gripper(msg):
    paddles = {1: 'open', 2: 'closed', 3: 'between'}.get(msg.paddles, '?')
    lift = {1: 'up', 2: 'down', 3: 'between'}.get(msg.lift, 'at a limit' if msg.source else '?')
    source = 'SIP' if msg.source == GripperState.SOURCE_SIP else 'GRIPPERpac'
    return f'{source}: paddles {paddles}, lift {lift}'


def _sonar(msg):
    fresh = [r for r, u in zip(msg.ranges, msg.updated, strict=False) if u]
    return f'{sum(msg.updated)} new, nearest {min(fresh):.2f} m' if fresh else 'no new readings'


PLUGIN = RobotPlugin(
    name='p2os',
    package='p2os_driver',
    node_name='p2os_driver',
    executable='p2os_driver',
    emulator_executable='p2os_emulator',
    config_file='p2os.yaml',
    create_node=P2osNode,
    describe_robot=lambda parameters: description.from_parameters(parameters).xml(),
    start_emulator=DemoEmulator,
    emulator_arguments=('--port', '8101', '--world', 'default'),
    world_option=True,
    sim_parameters={'port': 'tcp://127.0.0.1:8101', **DEMO_PARAMETERS},
    replay_links=(
        ReplayLink('p2os', 'port', address='tcp://{host}:{port}', gate=is_handshake_request),
    ),
    demo_topics=(
        DemoTopic('odom', Odometry, _odom),
        DemoTopic('sonar', SonarArray, _sonar),
        DemoTopic('sonar/points', PointCloud2, lambda m: f'{m.width} echo points', required=False),
        DemoTopic('encoders', EncoderCounts, lambda m: f'left={m.left} right={m.right}'),
        DemoTopic('gripper_state', GripperState, _gripper),
        DemoTopic('battery', BatteryState, lambda m: f'{m.voltage:.2f} V'),
        DemoTopic(
            'motor_state', MotorState, lambda m: 'enabled' if m.motors_enabled else 'disabled'
        ),
    ),
    make_demo_script=SquareDriver,
    label='P2OS',
    foxglove=FoxgloveView(
        plots=('odom.twist.twist.linear.x', 'odom.twist.twist.angular.z', 'battery.voltage'),
        services=(
            ('enable_motors', 'enable motors'),
            ('disable_motors', 'disable motors'),
            ('reset_odometry', 'reset odometry'),
        ),
        teleop=True,
    ),
    bench_quick_arguments=('--seconds', '5', '--samples', '100'),
    soak_parts=(
        SoakPart(
            'safety',
            'legacy_robot_bench.p2os_driver.soak:safety_rows',
            '--repeats',
            10,
            'P2OS safety: cmd_vel stops and kills per signal',
        ),
    ),
)
