"""The move and turn actions: p2os_driver as a real process against the emulator, goals sent
by a real action client over DDS; the emulator's true pose is the ground truth."""

import math

import pytest
from geometry_msgs.msg import Twist
from helpers import wait_for
from nav_msgs.msg import Odometry
from rcl_interfaces.msg import Log
from rclpy.action import ActionClient
from ros_observer import DriverProcesses

from legacy_robot_interfaces.action import Move, Turn
from legacy_robot_interfaces.msg import MotorState
from p2os_driver import protocol as p
from p2os_driver.emulator import EmulatorOptions, P2osEmulator

C = p.Command


@pytest.fixture
def pioneer():
    drivers = DriverProcesses()
    emulator = P2osEmulator(EmulatorOptions(room_width=20.0, room_height=20.0))
    port = emulator.start_tcp()
    emulator_, process, ros = drivers.start(
        'p2os_driver.node',
        '/pioneer',
        emulator,
        {'port': f'tcp://127.0.0.1:{port}', 'enable_motors_on_start': True},
    )
    motor = ros.listen(MotorState, 'motor_state')
    odom = ros.listen(Odometry, 'odom')
    ready = ros.spin_until(lambda: motor and motor[-1].motors_enabled and odom, 20)
    assert ready, process.stderr.read() if process.poll() is not None else 'no motor state'
    clients = {
        kind: ActionClient(ros.node, kind, f'/pioneer/{name}')
        for kind, name in ((Move, 'move'), (Turn, 'turn'))
    }
    assert ros.spin_until(lambda: all(c.server_is_ready() for c in clients.values()), 10)
    yield emulator, ros, clients
    for client in clients.values():
        client.destroy()
    drivers.stop_all()


def send(ros, client, goal, feedback=None):
    """Send goal; → the goal handle, accepted."""
    sent = client.send_goal_async(
        goal,
        feedback_callback=lambda m: feedback.append(m.feedback) if feedback is not None else None,
    )
    assert ros.spin_until(sent.done, 10) and sent.result().accepted
    return sent.result()


def result_of(ros, handle, timeout=30):
    """→ (status, result) of a goal."""
    future = handle.get_result_async()
    assert ros.spin_until(future.done, timeout), 'no result'
    return future.result().status, future.result().result


def publish_until(ros, publisher, msg, done, timeout=10.0):
    """Publish msg every 0.1 s until done() (DDS may drop what a new publisher sends before
    it has matched the driver's subscription)."""
    for _ in range(int(timeout / 0.1)):
        publisher.publish(msg)
        if ros.spin_until(done, 0.1):
            return
    raise AssertionError('the message had no effect')


def true_pose(emulator):
    with emulator.robot.lock:
        return tuple(emulator.robot.pose)


def test_move_1_m_and_turn_90_degrees_end_on_target_with_feedback(pioneer):
    emulator, ros, clients = pioneer
    x0, y0, th0 = true_pose(emulator)
    feedback = []
    handle = send(ros, clients[Move], Move.Goal(distance_m=1.0), feedback)
    status, result = result_of(ros, handle)
    assert result.success, result.message
    x1, y1, th1 = true_pose(emulator)
    travelled = math.hypot(x1 - x0, y1 - y0) / 1000.0
    assert travelled == pytest.approx(1.0, abs=0.02)
    assert result.travelled_m == pytest.approx(1.0, abs=0.02)
    assert len(feedback) >= 10  # about one per SIP over the move
    assert feedback[0].remaining_m > 0.8 and feedback[-1].remaining_m < 0.05
    sent = [(n, a) for _, n, a in emulator.received_commands() if n in (C.MOVE, C.SETV)]
    assert (C.MOVE, 1000) in sent  # the robot's own move, not a velocity loop
    assert not [a for _, n, a in emulator.received_commands() if n == C.VEL and a]

    turns = []
    handle = send(
        ros, clients[Turn], Turn.Goal(mode=Turn.Goal.RELATIVE, angle_rad=math.pi / 2), turns
    )
    status, result = result_of(ros, handle)
    assert result.success, result.message
    turned = math.degrees(true_pose(emulator)[2] - th1)
    assert turned == pytest.approx(90.0, abs=2.0)
    assert turns and abs(turns[-1].remaining_rad) < math.radians(5)
    assert (C.DHEAD, 90) in [(n, a) for _, n, a in emulator.received_commands()]


def test_cancel_stops_the_robot_with_stop(pioneer):
    emulator, ros, clients = pioneer
    handle = send(ros, clients[Move], Move.Goal(distance_m=5.0, speed_m_s=0.3))
    assert wait_for(lambda: emulator.robot.v > 100, 10)
    cancel = handle.cancel_goal_async()
    assert ros.spin_until(cancel.done, 10)
    status, result = result_of(ros, handle)
    assert not result.success and 'cancel' in result.message
    assert wait_for(lambda: C.STOP in [n for _, n, _ in emulator.received_commands()], 5)
    assert wait_for(lambda: emulator.robot.v == 0, 5)


def test_cmd_vel_pre_empts_a_move_and_a_new_goal_replaces_one(pioneer):
    emulator, ros, clients = pioneer
    first = send(ros, clients[Move], Move.Goal(distance_m=5.0, speed_m_s=0.3))
    assert wait_for(lambda: emulator.robot.v > 100, 10)
    second = send(ros, clients[Turn], Turn.Goal(mode=Turn.Goal.ABSOLUTE, heading_rad=1.0))
    status, result = result_of(ros, first)
    assert not result.success and result.message == 'replaced by a new goal'
    assert wait_for(lambda: emulator.robot.w > 0.1, 10)
    cmd = ros.node.create_publisher(Twist, '/pioneer/cmd_vel', 10)
    ended = second.get_result_async()
    publish_until(ros, cmd, Twist(), ended.done)  # a new publisher: the first may be lost
    status, result = result_of(ros, second)
    assert not result.success and result.message == 'pre-empted by cmd_vel'


def test_a_turn_replacing_a_move_stops_the_translation(pioneer):
    """Translation and rotation are separate on the robot: a DHEAD alone leaves the MOVE
    going (against AMRISim the replaced 2 m move drove on to its end during the turn)."""
    emulator, ros, clients = pioneer
    first = send(ros, clients[Move], Move.Goal(distance_m=5.0, speed_m_s=0.3))
    assert wait_for(lambda: emulator.robot.v > 100, 10)
    x0, y0, _ = true_pose(emulator)
    second = send(ros, clients[Turn], Turn.Goal(mode=Turn.Goal.RELATIVE, angle_rad=math.pi / 2))
    status, result = result_of(ros, first)
    assert result.message == 'replaced by a new goal'
    status, result = result_of(ros, second)
    assert result.success, result.message
    x1, y1, _ = true_pose(emulator)
    # 0.3 m/s stops within 0.15 m at the emulator's 300 mm/s²; the move had 4 m to go
    assert math.hypot(x1 - x0, y1 - y0) < 300.0
    assert emulator.robot.trans_mode == 'vel' and emulator.robot.v == 0


def test_a_move_after_a_turning_cmd_vel_drives_straight(pioneer):
    """A goal forgets the cmd_vel in the driver; the robot's rotation must end too, or the
    move drives an arc and never comes to rest (against AMRISim: a timeout)."""
    emulator, ros, clients = pioneer
    cmd = ros.node.create_publisher(Twist, '/pioneer/cmd_vel', 10)
    twist = Twist()
    twist.angular.z = 0.3
    publish_until(ros, cmd, twist, lambda: emulator.robot.w > 0.2)
    _, _, th0 = true_pose(emulator)
    handle = send(ros, clients[Move], Move.Goal(distance_m=0.5))
    status, result = result_of(ros, handle)
    assert result.success, result.message
    _, _, th1 = true_pose(emulator)
    # the rotation at 0.3 rad/s stops within 0.03 rad at 100°/s²
    assert abs(math.degrees(th1 - th0)) < 5.0
    assert emulator.robot.w == 0


def test_bad_goals_are_refused_and_nothing_is_sent(pioneer):
    emulator, ros, clients = pioneer
    emulator.clear_commands()
    for client, goal, words in (
        (clients[Move], Move.Goal(distance_m=math.nan), 'distance_m is nan'),
        (clients[Move], Move.Goal(distance_m=math.inf), 'distance_m is inf'),
        (clients[Move], Move.Goal(distance_m=40.0), 'several goals'),
        (clients[Move], Move.Goal(distance_m=1.0, speed_m_s=-1.0), 'negative'),
        (clients[Turn], Turn.Goal(mode=1, angle_rad=4.0), 'beyond'),
        (clients[Turn], Turn.Goal(mode=7), 'neither'),
    ):
        status, result = result_of(ros, send(ros, client, goal))
        assert not result.success and words in result.message, result.message
    moving = (C.MOVE, C.HEAD, C.DHEAD, C.SETV, C.SETRV)
    assert not [n for _, n, _ in emulator.received_commands() if n in moving]


def test_speed_is_clamped_to_the_robot_with_a_warn(pioneer):
    emulator, ros, clients = pioneer
    logs = []
    ros.node.create_subscription(Log, '/rosout', logs.append, 100)
    handle = send(ros, clients[Move], Move.Goal(distance_m=0.3, speed_m_s=9.0))
    status, result = result_of(ros, handle)
    assert result.success, result.message

    def setv():
        return [a for _, n, a in emulator.received_commands() if n == C.SETV]

    top = int(emulator.robot.model.max_velocity)  # the emulator's CONFIG TransVelTop
    assert wait_for(lambda: setv() == [top, top], 5), setv()  # clamped; the default back
    assert ros.spin_until(
        lambda: any(m.level == Log.WARN and 'speed_m_s clamped' in m.msg for m in logs), 5
    )


def test_motors_off_and_link_loss_abort_and_leave_the_robot_still(pioneer):
    emulator, ros, clients = pioneer
    handle = send(ros, clients[Move], Move.Goal(distance_m=5.0, speed_m_s=0.3))
    assert wait_for(lambda: emulator.robot.v > 100, 10)
    with emulator.robot.lock:
        emulator.robot.enabled = False
    status, result = result_of(ros, handle)
    assert not result.success and 'motors' in result.message
    with emulator.robot.lock:
        emulator.robot.enabled = True
    handle = send(ros, clients[Move], Move.Goal(distance_m=5.0, speed_m_s=0.3))
    assert wait_for(lambda: emulator.robot.v > 100, 10)
    emulator.drop_clients()
    status, result = result_of(ros, handle)
    assert not result.success and 'link lost' in result.message
    assert wait_for(lambda: emulator.robot.trans_mode == 'vel' and emulator.robot.v == 0, 10)


def test_timeout_aborts_and_stops(pioneer):
    emulator, ros, clients = pioneer
    handle = send(ros, clients[Move], Move.Goal(distance_m=2.0, speed_m_s=0.2, timeout_s=1.0))
    status, result = result_of(ros, handle)
    assert not result.success and result.message == 'timed out after 1.0 s'
    assert wait_for(lambda: C.STOP in [n for _, n, _ in emulator.received_commands()], 5)
    assert wait_for(lambda: emulator.robot.v == 0, 5)


def test_the_cmd_vel_watchdog_never_stops_a_move(pioneer):
    """A cmd_vel just before a goal: its cmd_vel_timeout (0.5 s) passes during the move, and
    no stop (VEL 0) goes out; the move ends on target."""
    emulator, ros, clients = pioneer
    cmd = ros.node.create_publisher(Twist, '/pioneer/cmd_vel', 10)
    twist = Twist()
    twist.linear.x = 0.1
    publish_until(ros, cmd, twist, lambda: emulator.robot.vel_setpoint == 100)
    begun = max(t for t, n, a in emulator.received_commands() if (n, a) == (C.VEL, 100))
    handle = send(ros, clients[Move], Move.Goal(distance_m=0.6, speed_m_s=0.3))
    status, result = result_of(ros, handle)
    assert result.success, result.message
    moved = min(t for t, n, _ in emulator.received_commands() if n == C.MOVE)
    stops = [t for t, n, a in emulator.received_commands() if (n, a) == (C.VEL, 0) and t > begun]
    assert not [t for t in stops if t > moved], 'a velocity stop landed in the move'


def test_a_wall_aborts_the_move():
    drivers = DriverProcesses()
    emulator = P2osEmulator(EmulatorOptions(room_width=2.0, room_height=2.0))
    port = emulator.start_tcp()
    try:
        _, process, ros = drivers.start(
            'p2os_driver.node',
            '/pioneer',
            emulator,
            {'port': f'tcp://127.0.0.1:{port}', 'enable_motors_on_start': True},
        )
        motor = ros.listen(MotorState, 'motor_state')
        assert ros.spin_until(lambda: motor and motor[-1].motors_enabled, 20)
        client = ActionClient(ros.node, Move, '/pioneer/move')
        assert ros.spin_until(client.server_is_ready, 10)
        status, result = result_of(ros, send(ros, client, Move.Goal(distance_m=3.0)))
        # the emulator stalls for the instant of contact, which a SIP may or may not catch
        reasons = ('stalled', 'bumper contact', 'the robot stopped short of the target')
        assert not result.success and result.message.startswith(reasons), result.message
        assert result.travelled_m < 1.0
        client.destroy()
    finally:
        drivers.stop_all()


def test_a_refused_goal_leaves_the_running_one_running(pioneer):
    emulator, ros, clients = pioneer
    running = send(ros, clients[Move], Move.Goal(distance_m=5.0, speed_m_s=0.3))
    assert wait_for(lambda: emulator.robot.v > 100, 10)
    status, result = result_of(ros, send(ros, clients[Turn], Turn.Goal(heading_rad=math.nan)))
    assert not result.success and 'heading_rad is nan' in result.message
    ros.spin_until(lambda: False, 0.5)
    assert emulator.robot.trans_mode == 'move' and emulator.robot.v > 100
    cancel = running.cancel_goal_async()
    assert ros.spin_until(cancel.done, 10)
    status, result = result_of(ros, running)
    assert result.message == 'cancelled: the robot was stopped'
