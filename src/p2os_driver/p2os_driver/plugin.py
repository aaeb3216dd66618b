"""How the P2OS driver appears in bringup, the demo and the launch files.

The demo enables the motors through the service, stores the gripper and follows the left
wall through the office world on the laser scan (cmd_vel), then draws the map, the true
path, the odometry path and the last scan.
"""

import collections
import math

import numpy as np
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.action import ActionClient
from sensor_msgs.msg import BatteryState, LaserScan, PointCloud2
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from legacy_robot_common.artifacts import new_figure, save_figure, save_lines
from legacy_robot_common.plugin import (
    ByName,
    DemoScript,
    DemoTopic,
    FoxgloveView,
    RobotPlugin,
    SoakPart,
)
from legacy_robot_common.replay import ReplayLink
from legacy_robot_common.tf import TF_STATIC_LISTENER_QOS
from legacy_robot_common.world_map import WorldMap
from legacy_robot_interfaces.action import Move, Turn
from legacy_robot_interfaces.msg import EncoderCounts, GripperState, MotorState, SonarArray
from legacy_robot_interfaces.srv import GripperCommand

from . import description
from .emulator import EmulatorOptions, Fleet, P2osEmulator, world_summary
from .fleet_picture import draw_walls, write_fleet_picture
from .models import MODELS
from .odometry import normalize_angle
from .protocol import is_handshake_request
from .world import default_world_path, load_world, parse_pose

MAP_RESOLUTION = 0.05  # m per cell of the map bringup publishes
DEMO_MODEL = 'p2dx'  # the emulated robot of the demo and of bringup --sim
TRUTH_HISTORY = 100  # ground_truth poses kept (10 s at 10 Hz): another robot's at a scan's time

WALL_DISTANCE = 0.7  # m kept to the wall on the left
CRUISE = 0.45  # m/s
TURN = 0.9  # rad/s
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
        options = EmulatorOptions(
            model=DEMO_MODEL, name='demo', world=world or default_world_path()
        )
        self.emulator = P2osEmulator(options).start()
        self.parameters = {**self.emulator.parameters, **DEMO_PARAMETERS}
        self.description = f'{self.emulator.description}, {world_summary(self.emulator.world)}'
        self.world_map = world_map(self.emulator)

    def stop(self):
        self.emulator.stop()


class SharedEmulator:
    """One robot of a Fleet as bringup sees it (parameters, description, world_map, stop)."""

    def __init__(self, fleet, name):
        self.fleet = fleet
        self.emulator = fleet.emulators[name]
        self.parameters = {**self.emulator.parameters, **DEMO_PARAMETERS}
        x, y, th = self.emulator.robot.initial_pose
        self.description = (
            f'{self.emulator.description} in a world shared by {len(fleet.emulators)} robots, '
            f'{world_summary(fleet.shared.world)}, start ({x:.0f} mm, {y:.0f} mm, '
            f'{math.degrees(th):.0f}°)'
        )
        self.world_map = world_map(self.emulator)

    def stop(self):
        self.fleet.stop()


def shared_emulators(names, world=None, starts=None):
    """{name: SharedEmulator}: p2dx robots in one world (the office floor, or world=FILE), on
    free TCP ports, each at its start ({name: 'x,y,th'}, mm, mm, degrees) or at a free place
    spread out from the map's home."""
    starts = starts or {}
    options = EmulatorOptions(model=DEMO_MODEL, world=world or default_world_path())
    poses = [(name, parse_pose(starts[name]) if name in starts else None) for name in names]
    fleet = Fleet(options, poses)
    fleet.start_tcp(port=0)
    return {name: SharedEmulator(fleet, name) for name in names}


def follow_wall(ranges, angle_min, increment, range_max):
    """(linear m/s, angular rad/s) of a left-hand wall follower from one laser scan: turn right
    at an obstacle ahead, steer to keep WALL_DISTANCE to the left, turn left into openings."""
    r = np.asarray(ranges, np.float64)
    r = np.where(np.isfinite(r) & (r > 0), r, range_max)
    angles = angle_min + increment * np.arange(len(r))

    def nearest(low, high):
        band = r[(angles >= math.radians(low)) & (angles <= math.radians(high))]
        return float(band.min()) if len(band) else range_max

    ahead, front_left, left = nearest(-25, 25), nearest(25, 65), nearest(65, 115)
    if ahead < WALL_DISTANCE + 0.25 or front_left < WALL_DISTANCE * 0.8:
        return 0.05, -TURN  # blocked: turn right on the spot
    if left > 2.5 * WALL_DISTANCE:
        return 0.6 * CRUISE, 0.6 * TURN  # an opening on the left (a door): go round
    steer = max(-TURN, min(TURN, 1.5 * (left - WALL_DISTANCE)))
    return min(CRUISE, 0.5 * ahead), steer


# the demo's first moves, by the move and turn actions (1 m forward, a turn of 90 degrees, and
# back to the start): (what, action type, goal)
DEMO_MOVES = (
    ('move 1 m forward', Move, Move.Goal(distance_m=1.0)),
    ('turn 90 deg left', Turn, Turn.Goal(mode=Turn.Goal.RELATIVE, angle_rad=math.pi / 2)),
    ('turn back to heading 0', Turn, Turn.Goal(mode=Turn.Goal.ABSOLUTE, heading_rad=0.0)),
    ('move 1 m back', Move, Move.Goal(distance_m=-1.0)),  # the way it came: free of walls
)


class ActionMoves:
    """The DEMO_MOVES one after another; each line of .lines says what the robot reported and
    what the emulator's true pose (ground_truth) measured."""

    def __init__(self, node, namespace):
        self.clients = {
            kind: ActionClient(node, kind, f'{namespace}/{name}')
            for kind, name in ((Move, 'move'), (Turn, 'turn'))
        }
        self.step = 0
        self.pending = None  # (future of the goal handle or of its result, true pose at send)
        self.lines = []

    @property
    def done(self):
        return self.step >= len(DEMO_MOVES)

    def act(self, true_pose):
        what, kind, goal = DEMO_MOVES[self.step]
        if self.pending is None:
            if true_pose is not None and self.clients[kind].server_is_ready():
                self.pending = (self.clients[kind].send_goal_async(goal), true_pose)
            return
        future, start = self.pending
        if not future.done():
            return
        answer = future.result()
        if hasattr(answer, 'get_result_async'):  # the goal handle: now wait for its result
            self.pending = (answer.get_result_async(), start) if answer.accepted else None
            return
        result = answer.result
        distance = math.hypot(true_pose[0] - start[0], true_pose[1] - start[1])
        turned = math.degrees(normalize_angle(true_pose[2] - start[2]))
        self.lines.append(
            f'{what}: {"done" if result.success else "failed"} ({result.message}); '
            f'true travel {distance:.3f} m, true turn {turned:.1f} deg'
        )
        self.pending, self.step = None, self.step + 1


class OfficeTour(DemoScript):
    """First 1 m forward, a 90 degree turn and 1 m back by the move and turn actions; then
    follows the left wall through the office world on the laser scan (a reactive demo, not
    part of the driver); records the true path (ground_truth), the odometry path and the last
    scan for the picture."""

    def __init__(self):
        super().__init__()
        self.moves = None  # ActionMoves, from setup
        self.path = []  # (x, y) from odom
        self.truth = []  # (x, y) from ground_truth, in the map frame
        self.scan = None
        self.truth_pose = None
        self.motors_enabled = False
        self.sonar = None  # the last SonarArray: beams in the model picture
        self.scan_pose = None  # the true pose when the last scan arrived
        self.scan_stamp = None  # s, the last scan's header stamp
        self.truth_poses = collections.deque(maxlen=TRUTH_HISTORY)  # (stamp s, (x, y, th))
        self.model = MODELS[DEMO_MODEL]  # its body, for the other robots' scans
        self.odom_frame = None  # the odometry's frame (prefixed in a shared world)
        self.odom_origins = {}  # odom frame → (x m, y m, yaw rad) in the map (/tf_static)

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
        self.moves = ActionMoves(node, namespace)
        # where this robot's odometry begins: bringup's map → odom at the robot's start pose
        node.create_subscription(
            TFMessage, '/tf_static', self.on_static_transforms, TF_STATIC_LISTENER_QOS
        )

    def on_static_transforms(self, msg):
        for t in msg.transforms:
            q = t.transform.rotation
            yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
            origin = (t.transform.translation.x, t.transform.translation.y, yaw)
            self.odom_origins[t.child_frame_id] = origin

    def summary_lines(self):
        return list(self.moves.lines) if self.moves is not None else []

    def act(self, elapsed):
        if self.scan is None:
            return  # the robot is connected once it scans
        self.call_until_success('enable', self.enable, Trigger.Request())
        self.call_until_success(
            'gripper', self.gripper, GripperCommand.Request(command=GripperCommand.Request.STORE)
        )
        if not self.motors_enabled:
            return
        if not self.moves.done:
            self.moves.act(self.truth_pose)
            return
        s = self.scan
        linear, angular = follow_wall(s.ranges, s.angle_min, s.angle_increment, s.range_max)
        twist = Twist()
        twist.linear.x, twist.angular.z = linear, angular
        self.cmd_pub.publish(twist)

    def on_message(self, topic, msg):
        if topic == 'odom':
            p = msg.pose.pose.position
            self.path.append((p.x, p.y))
            self.odom_frame = msg.header.frame_id
        elif topic == 'ground_truth':
            q = msg.pose.pose.orientation
            p = msg.pose.pose.position
            self.truth_pose = (p.x, p.y, 2 * math.atan2(q.z, q.w))
            self.truth.append((p.x, p.y))
            self.truth_poses.append((_seconds(msg.header.stamp), self.truth_pose))
        elif topic == 'scan':
            self.scan = msg
            self.scan_pose = self.truth_pose
            self.scan_stamp = _seconds(msg.header.stamp)
        elif topic == 'motor_state':
            self.motors_enabled = msg.motors_enabled
        elif topic == 'sonar':
            self.sonar = msg

    def pose_at(self, stamp):
        """The true pose (ground_truth) nearest in time to stamp (s), or None before any."""
        if not self.truth_poses:
            return None
        return min(self.truth_poses, key=lambda kept: abs(kept[0] - stamp))[1]

    def scan_points(self):
        """The last scan's hits in the map frame (true pose; the laser mount is small)."""
        if self.scan is None or self.scan_pose is None:
            return np.zeros((0, 2))
        s = self.scan
        r = np.asarray(s.ranges, np.float64)
        angles = s.angle_min + s.angle_increment * np.arange(len(r)) + self.scan_pose[2]
        hit = np.isfinite(r) & (r < s.range_max)
        x, y = self.scan_pose[:2]
        return np.stack([x + r * np.cos(angles), y + r * np.sin(angles)], axis=1)[hit]

    def odometry_in_map(self, world):
        """The odometry path (xs, ys) in the map frame: odometry starts at (0, 0) at the robot's
        start pose, which bringup's map → odom transform gives (in a shared world, each robot
        starts elsewhere); without it, the world's home."""
        x0, y0, th = self.odom_origins.get(
            self.odom_frame, (world.start[0] / 1000.0, world.start[1] / 1000.0, world.start[2])
        )
        c, s = math.cos(th), math.sin(th)
        return (
            [x0 + c * x - s * y for x, y in self.path],
            [y0 + s * x + c * y for x, y in self.path],
        )

    def write_artifacts(self, folder):
        figure = new_figure(8.0, 5.5)
        axes = figure.add_subplot()
        world = load_world(default_world_path())
        draw_walls(axes, world)
        if self.truth:
            tx, ty = zip(*self.truth, strict=False)
            axes.plot(tx, ty, c='tab:green', label='true path (ground_truth)')
        if self.path:
            axes.plot(*self.odometry_in_map(world), c='tab:blue', ls='--', label='odometry path')
        points = self.scan_points()
        if len(points):
            axes.scatter(points[:, 0], points[:, 1], s=3, c='tab:red', label='last scan')
        axes.set_aspect('equal')
        axes.set_xlabel('x (m)')
        axes.set_ylabel('y (m)')
        axes.set_title(f'P2OS emulator: wall following in {world.name}')
        axes.legend(loc='upper right', fontsize='small')
        paths = [save_figure(figure, folder / 'office_tour.png')]
        paths.append(
            save_lines(
                folder / 'odometry.csv', ['x_m,y_m'] + [f'{x:.4f},{y:.4f}' for x, y in self.path]
            )
        )
        paths.append(
            save_lines(
                folder / 'ground_truth.csv',
                ['x_m,y_m'] + [f'{x:.4f},{y:.4f}' for x, y in self.truth],
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


def write_shared_world(scripts, folder):
    """The demo's picture of several Pioneers sharing the office world (RobotPlugin.
    write_group_artifacts): (paths, summary lines)."""
    return write_fleet_picture(scripts, folder, load_world(default_world_path()))


def _seconds(stamp):
    return stamp.sec + stamp.nanosec * 1e-9


def _stamp(msg):
    return (msg.header.stamp.sec, msg.header.stamp.nanosec)


def _scan(msg):
    r = np.asarray(msg.ranges, np.float64)
    near = r[np.isfinite(r) & (r < msg.range_max)]
    return f'{len(r)} rays, nearest {near.min():.2f} m' if len(near) else f'{len(r)} rays'


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
    # by name, not imported: node.main imports this plugin
    create_node=ByName('p2os_driver.node:P2osNode'),
    describe_robot=lambda parameters: description.from_parameters(parameters).xml(),
    start_emulator=DemoEmulator,
    emulator_arguments=('--port', '8101', '--world', 'default'),
    world_option=True,
    start_shared_emulators=shared_emulators,
    write_group_artifacts=write_shared_world,
    sim_parameters={'port': 'tcp://127.0.0.1:8101', **DEMO_PARAMETERS},
    replay_links=(
        ReplayLink('p2os', 'port', address='tcp://{host}:{port}', gate=is_handshake_request),
    ),
    demo_topics=(
        DemoTopic('odom', Odometry, _odom),
        DemoTopic('ground_truth', Odometry, _odom),
        DemoTopic('scan', LaserScan, _scan),
        DemoTopic('sonar', SonarArray, _sonar),
        DemoTopic('sonar/points', PointCloud2, lambda m: f'{m.width} echo points', required=False),
        DemoTopic('encoders', EncoderCounts, lambda m: f'left={m.left} right={m.right}'),
        DemoTopic('gripper_state', GripperState, _gripper),
        DemoTopic('battery', BatteryState, lambda m: f'{m.voltage:.2f} V'),
        DemoTopic(
            'motor_state', MotorState, lambda m: 'enabled' if m.motors_enabled else 'disabled'
        ),
    ),
    make_demo_script=OfficeTour,
    label='P2OS',
    foxglove=FoxgloveView(
        plots=('odom.twist.twist.linear.x', 'odom.twist.twist.angular.z', 'battery.voltage'),
        services=(
            ('enable_motors', 'enable motors'),
            ('disable_motors', 'disable motors'),
            ('reset_odometry', 'reset odometry'),
        ),
        teleop=True,
        scans=('scan',),
        grids=('map',),
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
