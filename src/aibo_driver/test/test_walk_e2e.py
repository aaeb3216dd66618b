"""The AIBO walks from cmd_vel: the driver process against a fast emulated dog, over DDS."""

import math

import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import Twist
from helpers import wait_for
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Log
from rclpy.qos import DurabilityPolicy, QoSProfile
from ros_observer import DriverProcesses, latest_status
from sensor_msgs.msg import BatteryState, JointState, Range
from std_msgs.msg import String
from std_srvs.srv import Trigger

from aibo_driver.emulator import AiboEmulator, EmulatorOptions
from legacy_robot_common.driver_node import LATCHED
from legacy_robot_common.robot_model import parse
from legacy_robot_interfaces.msg import SensorEvent
from legacy_robot_interfaces.srv import PlayNamed

FAST = 5.0  # the emulated dog walks 5 times as fast; the driver is told its gait speeds


@pytest.fixture
def drivers():
    processes = DriverProcesses()
    yield processes
    processes.stop_all()


def start(drivers, options, **parameters):
    options.telemetry_port = options.rcode_port = 0
    emulator = AiboEmulator(options).start()
    return drivers.start(
        'aibo_driver.node',
        '/dog',
        emulator,
        {
            **emulator.parameters,
            'image_rate': 1.0,
            'audio_enabled': False,
            'color_rate': 0.0,
            **parameters,
        },
    )


def test_cmd_vel_walks_turns_and_stops_the_dog_odometry_joints_and_head_follow(drivers):
    emulator, process, ros = start(
        drivers,
        EmulatorOptions(speed_scale=FAST),
        normal_speed=0.06 * FAST,
        slow_speed=0.03 * FAST,
        normal_turn_rate=0.5 * FAST,
        slow_turn_rate=0.25 * FAST,
        joint_state_rate=10.0,
        motion_poll_rate=10.0,
        cmd_vel_timeout=0.4,
    )
    joints = ros.listen(JointState, 'joint_states')
    odometry = ros.listen(Odometry, 'odom')
    ranges = ros.listen(Range, 'ir_range')
    battery = ros.listen(BatteryState, 'battery')
    model = ros.listen(String, 'robot_description', LATCHED)
    events = ros.listen(SensorEvent, 'sensor_events')
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    cmd_vel = ros.node.create_publisher(Twist, '/dog/cmd_vel', 10)
    head = ros.node.create_publisher(JointState, '/dog/head_command', 10)
    assert ros.spin_until(lambda: joints and model and ranges and battery, 20)
    urdf = parse(model[-1].data)
    assert set(joints[-1].name) == {j.name for j in urdf.joints if j.type == 'revolute'}
    # the room's wall is 1.5 m ahead: nothing within the IR's 0.6 m (REP-117: +inf)
    assert ranges[-1].header.frame_id == 'aibo_head_ir' and ranges[-1].range == math.inf
    assert battery[-1].percentage == pytest.approx(0.87)

    def drive(vx, vy, wz, until, timeout=10):
        twist = Twist()
        twist.linear.x, twist.linear.y, twist.angular.z = vx, vy, wz
        return ros.spin_until(lambda: cmd_vel.publish(twist) or until(), timeout)

    def pose():
        return emulator.pose()

    walked = len(joints)
    assert drive(0.3, 0.0, 0.0, lambda: pose()[0] > 0.5), pose()
    swing = {round(m.position[m.name.index('LFLeg_1')], 2) for m in joints[walked:]}
    assert len(swing) > 2  # the legs move while walking
    # commands stop: after cmd_vel_timeout the driver sends STOP_WALK (a 10 m walk goes on)
    assert wait_for(lambda: emulator.dog.playing is None, 5)
    lines = [line for line in emulator.rcode_lines if line.startswith('PLAY')]
    # one STOP_WALK on connecting (a dog left walking by a lost link stops), the walk, its stop
    assert lines == [
        'PLAY:ACTION:STOP_WALK',
        'PLAY:ACTION:WALK:0:10000',
        'PLAY:ACTION:STOP_WALK',
    ]
    assert drive(0.0, -0.3, 0.0, lambda: pose()[1] < -0.3), pose()  # to the right
    assert drive(0.3, 0.0, 0.0, lambda: pose()[0] > 0.8), pose()  # a new direction
    lines = [line for line in emulator.rcode_lines if line.startswith('PLAY')]
    assert lines[3:] == [
        'PLAY:ACTION:WALK:-90:10000',
        'PLAY:ACTION:STOP_WALK',
        'PLAY:ACTION:WALK:0:10000',
    ]
    assert drive(0.0, 0.0, 2.5, lambda: pose()[2] > 1.0), pose()  # turn left
    assert 'PLAY:ACTION:TURN:45' in emulator.rcode_lines
    drive(0.0, 0.0, 0.0, lambda: emulator.dog.playing is None)  # zero stops at once
    # STOP_WALK, unless the zero came between two turn chunks (nothing left to stop)
    last = [line for line in emulator.rcode_lines if line.startswith('PLAY')][-1]
    assert last in ('PLAY:ACTION:STOP_WALK', 'PLAY:ACTION:TURN:45')
    assert ros.spin_until(lambda: odometry and odometry[-1].twist.twist.angular.z == 0, 5)
    last = odometry[-1]
    x, y, yaw = pose()[:3]
    o = last.pose.pose
    walked_yaw = 2 * math.atan2(o.orientation.z, o.orientation.w)
    sigma = math.sqrt(last.pose.covariance[0])  # grows with the distance walked
    assert sigma > 0.1
    assert math.hypot(o.position.x - x, o.position.y - y) < 2 * sigma, (o.position, x, y)
    assert abs(walked_yaw - yaw) < 2 * math.sqrt(last.pose.covariance[35]) + 0.1
    assert last.header.frame_id == 'odom' and last.child_frame_id == 'aibo_base'

    # a touch and a fall latch on the dog: events, then cleared by the driver
    emulator.run_rcode('SET:Head_ON:1')
    emulator.run_rcode('SET:Status:1')
    assert ros.spin_until(
        lambda: (
            {(e.sensor, e.event) for e in events} >= {('Head_ON', 'touched'), ('Status', 'fall')}
        ),
        5,
    ), events
    assert wait_for(lambda: {'SET:Head_ON:0', 'SET:Status:0'} <= set(emulator.rcode_lines), 5)

    # head: radians, R-CODE signs; far out of range is clamped to the joint limit
    head.publish(JointState(name=['Head_Pan', 'Head_Tilt'], position=[3.0, -0.2]))
    assert wait_for(lambda: emulator.dog.head['Head_Pan'] == pytest.approx(92.6), 5)
    assert 'PLAY:ACTION:MOVE_HEAD:93:-11' in emulator.rcode_lines
    head.publish(JointState(name=['Head_Pan', 'Neck'], position=[math.nan, 0.0]))

    reply = ros.call(PlayNamed, 'play_action', PlayNamed.Request(name='sit'))
    assert reply.success and reply.message == 'sent PLAY:ACTION:SIT', reply.message
    reply = ros.call(PlayNamed, 'play_action', PlayNamed.Request(name='moonwalk'))
    assert not reply.success and 'valid: sit, stand, lie' in reply.message
    nan = Twist()
    nan.linear.x = math.nan
    cmd_vel.publish(nan)
    reply = ros.call(Trigger, 'stop', Trigger.Request())
    assert reply.success
    reply = ros.call(Trigger, 'emergency_stop', Trigger.Request())
    assert reply.success and 'QUIT' in emulator.rcode_lines

    def counted():
        status = latest_status(diagnostics, ': motion')
        values = {v.key: v.value for v in status.values} if status else {}
        wanted = {'bad cmd_vel': '1', 'head clamped': '1', 'falls': '1'}
        return all(values.get(k) == v for k, v in wanted.items()) and values

    assert ros.spin_until(counted, 5), latest_status(diagnostics, ': motion')
    assert counted()['bad head_command'] == '2'
    assert process.poll() is None


def test_a_lifeplus_stick_cannot_move_the_dog_said_once(drivers):
    emulator, process, ros = start(
        drivers, EmulatorOptions(product='lifeplus'), product='lifeplus', rcode_enabled=True
    )
    logs = []
    rosout = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    ros.node.create_subscription(Log, '/rosout', logs.append, rosout)
    cmd_vel = ros.node.create_publisher(Twist, '/dog/cmd_vel', 10)
    reply = ros.call(PlayNamed, 'play_action', PlayNamed.Request(name='sit'))  # the node is up
    assert not reply.success and 'LifePlus has no RCodePlus' in reply.message
    assert not ros.call(Trigger, 'stop', Trigger.Request()).success
    twist = Twist()
    twist.linear.x = 0.1
    assert ros.spin_until(
        lambda: cmd_vel.publish(twist) or any('cmd_vel ignored' in m.msg for m in logs), 10
    ), [m.msg for m in logs]
    ros.spin_until(lambda: cmd_vel.publish(twist) or False, 1.0)  # more: still one WARN
    ignored = [m for m in logs if 'cmd_vel ignored' in m.msg]
    assert len(ignored) == 1 and ignored[0].level == Log.WARN, ignored  # many cmd_vel, one WARN
    assert process.poll() is None
