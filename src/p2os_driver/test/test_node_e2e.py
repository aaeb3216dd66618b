"""p2os_driver as a real process against the emulator, observed over DDS from this process."""

import math
import signal
import time

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Twist, TwistStamped
from helpers import start_module, wait_for
from nav_msgs.msg import Odometry
from ros_observer import DriverProcesses, latest_status
from sensor_msgs.msg import BatteryState, Range
from std_srvs.srv import SetBool, Trigger

from legacy_robot_common.driver_node import LATCHED
from legacy_robot_interfaces.msg import (
    DigitalAnalogIO,
    EncoderCounts,
    GripperState,
    MotorState,
    RobotInfo,
    SonarArray,
)
from legacy_robot_interfaces.srv import (
    BytesCommand,
    DigitalOutput,
    GripperCommand,
    Playlist,
    SetValue,
)
from p2os_driver import protocol as p
from p2os_driver.emulator import EmulatorOptions, P2osEmulator

C = p.Command


@pytest.fixture
def setup():
    drivers = DriverProcesses()

    def start(options=None, **parameters):
        emulator = P2osEmulator(options or EmulatorOptions())
        port = emulator.start_tcp()
        return drivers.start(
            'p2os_driver.node',
            '/pioneer',
            emulator,
            {'port': f'tcp://127.0.0.1:{port}', **parameters},
        )

    yield start
    drivers.stop_all()


def drive(ros, linear_x, messages):
    """Publish cmd_vel at 10 Hz, as a teleop node would."""
    cmd = ros.node.create_publisher(Twist, '/pioneer/cmd_vel', 10)
    # a message sent before discovery matches the driver is lost (slow on a loaded machine)
    assert ros.spin_until(lambda: cmd.get_subscription_count() > 0, 20), 'driver never matched'
    twist = Twist()
    twist.linear.x = linear_x
    for _ in range(messages):
        cmd.publish(twist)
        ros.spin_until(lambda: False, 0.1)


def yaw_of(msg):
    q = msg.pose.pose.orientation
    return 2 * math.atan2(q.z, q.w)


def test_drive_at_1_5_m_s_for_a_minute_without_odometry_freezing(setup):
    emulator, process, ros = setup(
        EmulatorOptions(room_width=2000, room_height=2000),
        max_linear_speed=1.6,
        linear_acceleration=3.0,
        enable_motors_on_start=True,
    )
    odom = ros.listen(Odometry, 'odom')
    cmd = ros.node.create_publisher(Twist, '/pioneer/cmd_vel', 10)
    assert ros.spin_until(lambda: odom, 20), process.stderr.read() if process.poll() else 'no odom'
    drive = Twist()
    drive.linear.x, drive.angular.z = 1.5, 0.1  # a 15 m circle: no wall in a 2 km room
    start = time.monotonic()
    while time.monotonic() - start < 60.0:
        cmd.publish(drive)
        ros.spin_until(lambda: False, 0.1)
    moving = [m for m in odom if m.twist.twist.linear.x > 1.45]
    assert len(moving) > 500  # ≈ 10 Hz for the minute
    steps = [
        math.hypot(
            b.pose.pose.position.x - a.pose.pose.position.x,
            b.pose.pose.position.y - a.pose.pose.position.y,
        )
        for a, b in zip(moving, moving[1:], strict=False)
    ]
    windows = [sum(steps[i : i + 5]) for i in range(len(steps) - 5)]
    assert min(windows) > 0.3 and max(steps) < 0.5  # ≈ 0.15 m per SIP; the pose never froze
    assert sum(steps) > 80  # > 2.9 wraps of the 15-bit x counter
    true_x, true_y, true_th = emulator.robot.odometry
    last = odom[-1]
    error = math.hypot(
        last.pose.pose.position.x - true_x / 1000, last.pose.pose.position.y - true_y / 1000
    )
    assert error < 0.3  # the last SIP is up to 100 ms old: 0.15 m
    assert math.cos(yaw_of(last) - true_th) > 0.99


def test_cmd_vel_timeout_stops_the_robot(setup):
    emulator, process, ros = setup(cmd_vel_timeout=0.5, enable_motors_on_start=True)
    motor = ros.listen(MotorState, 'motor_state')
    assert ros.spin_until(lambda: motor and motor[-1].motors_enabled, 20)
    drive(ros, 0.3, 15)
    assert emulator.robot.vel_setpoint == 300
    assert wait_for(lambda: emulator.robot.vel_setpoint == 0, 2.0)
    sent = emulator.received_commands()
    last_drive = max(t for t, n, a in sent if (n, a) == (C.VEL, 300))
    stop = min(t for t, n, a in sent if (n, a) == (C.VEL, 0) and t > last_drive)
    assert 0.45 < stop - last_drive < 1.0  # cmd_vel_timeout 0.5 s, checked every 50 ms
    assert wait_for(lambda: emulator.robot.v == 0, 3.0)

    # the stop goes out once; from then on PULSE keeps the robot's watchdog fed
    def after_stop():
        return [(n, a) for t, n, a in emulator.received_commands() if t >= stop]

    assert wait_for(lambda: after_stop().count((C.PULSE, None)) >= 3, 5), after_stop()
    after = after_stop()
    assert after[:2] == [(C.VEL, 0), (C.RVEL, 0)]
    assert not [n for n, _ in after[2:] if n in (C.VEL, C.RVEL)]
    assert after.count((C.PULSE, None)) >= 3 and emulator.watchdog_trips == 0


def test_topics_services_and_diagnostics(setup):
    emulator, process, ros = setup(
        EmulatorOptions(model='p2pb', name='pb'), encoder_stream=True, gripper_stream=True
    )
    topics = {
        name: ros.listen(kind, name, *qos)
        for name, kind, *qos in (
            ('robot_info', RobotInfo, LATCHED),
            ('battery', BatteryState),
            ('sonar', SonarArray),
            ('sonar/ranges', Range),
            ('encoders', EncoderCounts),
            ('gripper_state', GripperState),
            ('io', DigitalAnalogIO),
            ('odom', Odometry),
            ('motor_state', MotorState),
        )
    }
    diagnostics = []
    ros.node.create_subscription(
        DiagnosticArray, '/diagnostics', lambda m: diagnostics.extend(m.status), 10
    )
    assert ros.spin_until(lambda: all(topics.values()), 20), (
        [n for n, v in topics.items() if not v]
        if process.poll() is None
        else process.stderr.read()
    )
    info = topics['robot_info'][-1]
    assert (info.name, info.robot_class, info.model) == ('pb', 'Pioneer', 'p2pb')
    assert dict((kv.key, kv.value) for kv in info.values)['config watchdog'] == '2000'
    assert topics['battery'][-1].voltage == pytest.approx(13.0, abs=0.15)
    sonar = topics['sonar'][-1]
    assert len(sonar.ranges) == 24 and sonar.frame_ids[3] == 'sonar_3'

    def frames():
        return {m.header.frame_id for m in topics['sonar/ranges']}

    assert ros.spin_until(lambda: len(frames()) >= 8, 5) and frames() <= set(sonar.frame_ids)
    assert {m.source for m in topics['gripper_state']} == {
        GripperState.SOURCE_SIP,
        GripperState.SOURCE_GRIPPER_PACKET,
    }
    assert not topics['motor_state'][-1].motors_enabled  # motors start disabled

    assert ros.call(Trigger, 'enable_motors', Trigger.Request()).success
    assert ros.spin_until(lambda: topics['motor_state'][-1].motors_enabled, 5)
    reply = ros.call(GripperCommand, 'gripper', GripperCommand.Request(command=7))
    assert reply.success and wait_for(lambda: emulator.robot.gripper.paddles_moving, 2)
    assert ros.call(Playlist, 'playlist', Playlist.Request()).success
    aux = ros.call(
        BytesCommand, 'aux_serial', BytesCommand.Request(data=list(b'abc'), reply_size=3)
    )
    assert aux.success and bytes(aux.reply) == b'abc'
    assert ros.call(
        DigitalOutput, 'digital_output', DigitalOutput.Request(mask=3, values=1)
    ).success
    assert wait_for(lambda: emulator.robot.digital_outputs == 1, 2)
    assert ros.call(SetBool, 'set_sonar', SetBool.Request(data=False)).success
    assert wait_for(lambda: not emulator.robot.sonar_enabled, 2)
    assert ros.call(Trigger, 'io_request', Trigger.Request()).message.startswith('digital in')
    assert ros.call(Trigger, 'e_stop', Trigger.Request()).success

    assert ros.spin_until(
        lambda: any(s.name.endswith('p2os_driver: robot') for s in diagnostics), 5
    )
    robot_status = [s for s in diagnostics if s.name.endswith('p2os_driver: robot')][-1]
    values = {kv.key: kv.value for kv in robot_status.values}
    assert values['model'].startswith('p2pb') and float(values['SIP rate Hz']) > 5


def test_reset_odometry_and_runtime_sonar_parameter(setup):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    emulator, process, ros = setup(enable_motors_on_start=True)
    odom = ros.listen(Odometry, 'odom')
    assert ros.spin_until(lambda: odom, 20)
    drive(ros, 0.4, 20)
    assert odom[-1].pose.pose.position.x > 0.2
    assert ros.call(Trigger, 'stop', Trigger.Request()).success
    ros.spin_until(lambda: False, 2.0)
    assert ros.call(Trigger, 'reset_odometry', Trigger.Request()).success
    count = len(odom)
    assert ros.spin_until(lambda: len(odom) > count + 3, 3)
    assert abs(odom[-1].pose.pose.position.x) < 0.01
    value = ParameterValue(type=ParameterType.PARAMETER_BOOL, bool_value=False)
    result = ros.call(
        SetParameters,
        'p2os_driver/set_parameters',
        SetParameters.Request(parameters=[Parameter(name='use_sonar', value=value)]),
    )
    assert result.results[0].successful
    assert wait_for(lambda: not emulator.robot.sonar_enabled, 2)


def robot_status(ros):
    """Collect the driver's 'robot' diagnostics; returns a function giving the newest status."""
    arrays = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', arrays.append, 10)
    return lambda: latest_status(arrays, 'p2os_driver: robot')


def test_amrisim_p3dx_with_default_parameters(setup):
    """The simulator most users have: p3dx factors, streams it ignores answered 'not supported',
    #35-#37 never sent (AMRISim reads them as laser commands), no gripper, its firmware version."""
    emulator, process, ros = setup(EmulatorOptions.amrisim(), enable_motors_on_start=True)
    odom = ros.listen(Odometry, 'odom')
    info = ros.listen(RobotInfo, 'robot_info', LATCHED)
    gripper = ros.listen(GripperState, 'gripper_state')
    status = robot_status(ros)
    assert ros.spin_until(lambda: odom and info, 20), (
        process.stderr.read() if process.poll() else ''
    )
    assert (info[-1].model, info[-1].firmware_version) == ('p3dx', 'S.0')
    drive(ros, 0.4, 30)
    assert wait_for(lambda: not emulator.robot.moving, 5)  # cmd_vel_timeout stopped it
    ros.spin_until(lambda: False, 0.5)
    true_x, true_y, _ = emulator.robot.odometry
    pose = odom[-1].pose.pose.position
    assert true_x > 500 and math.hypot(pose.x - true_x / 1000, pose.y - true_y / 1000) < 0.01

    started = time.monotonic()
    reply = ros.call(SetBool, 'set_encoder_stream', SetBool.Request(data=True))
    assert not reply.success and reply.message.startswith('not supported by this robot / firmware')
    assert time.monotonic() - started < 5.0  # request_timeout 2 s
    assert not ros.call(Trigger, 'io_request', Trigger.Request()).success
    assert 'not supported' in ros.call(Playlist, 'playlist', Playlist.Request()).message
    for service, srv, request in (
        ('set_gripper_stream', SetBool, SetBool.Request(data=True)),
        ('select_analog_port', SetValue, SetValue.Request(value=3)),
    ):
        reply = ros.call(srv, service, request)
        assert not reply.success and '--no-srisim-laser-compat' in reply.message
    sent = {n for _, n, _ in emulator.received_commands()}
    assert not sent & set(p.SIMULATOR_LASER_COMMANDS) and emulator.laser_commands == 0
    assert ros.spin_until(lambda: status() is not None, 5)
    values = {kv.key: kv.value for kv in status().values}
    assert (values['simulator'], values['has gripper']) == ('True', 'False') and not gripper


def test_unknown_subclass_is_an_error_in_diagnostics(setup):
    emulator, process, ros = setup(EmulatorOptions(model='p3dx', subclass='P3DXX'))
    status = robot_status(ros)
    assert ros.spin_until(
        lambda: status() is not None and status().level == DiagnosticStatus.ERROR, 20
    ), status()
    message = status().message
    assert "'P3DXX'" in message and 'model parameter' in message and 'p2dx factors' in message
    assert 'closest known: p3dx' in message
    ros.spin_until(lambda: False, 2.5)  # for as long as it lasts
    assert status().level == DiagnosticStatus.ERROR


def test_tf_odom_to_base_link_and_the_sonar_frames(setup):
    emulator, process, ros = setup(EmulatorOptions(model='p3at'), enable_motors_on_start=True)
    dynamic, static = ros.listen_tf()
    odom = ros.listen(Odometry, 'odom')
    assert ros.spin_until(lambda: dynamic and static and odom, 20)
    drive(ros, 0.3, 10)
    ros.spin_until(lambda: False, 0.3)  # the odometry of the newest transforms
    stamps = {(m.header.stamp.sec, m.header.stamp.nanosec): m for m in odom}

    def stamp_of(t):
        return (t.header.stamp.sec, t.header.stamp.nanosec)

    newest = [m.transforms[0] for m in dynamic[-3:]]
    assert any(stamp_of(t) in stamps for t in newest)  # the same instants as odom messages
    transform = next(t for t in reversed(newest) if stamp_of(t) in stamps)
    assert (transform.header.frame_id, transform.child_frame_id) == ('odom', 'base_link')
    stamp = stamp_of(transform)
    assert (
        transform.transform.translation.x == pytest.approx(stamps[stamp].pose.pose.position.x)
        and transform.transform.translation.x > 0.05
    )
    sonar = {t.child_frame_id: t for t in static[-1].transforms}
    footprint = sonar.pop('base_footprint')  # REP-105, on the floor below base_link
    assert footprint.header.frame_id == 'base_link'
    assert set(sonar) == {f'sonar_{i}' for i in range(16)}
    assert all(t.header.frame_id == 'base_link' and t.header.stamp.sec > 0 for t in sonar.values())
    assert (
        sonar['sonar_0'].transform.translation.x,
        sonar['sonar_0'].transform.translation.y,
    ) == pytest.approx((0.147, 0.136))  # the P3-AT ring, not the P2's


def restart_emulator(emulator, options=None):
    """Kill the robot and start a fresh one at the same address (it starts with motors off)."""
    port = emulator.tcp.port
    emulator.stop()
    fresh = P2osEmulator(options or EmulatorOptions())
    fresh.start_tcp(port=port)
    return fresh


def test_state_is_restored_after_the_robot_restarts(setup):
    emulator, process, ros = setup()
    motors = ros.listen(MotorState, 'motor_state')
    encoders = ros.listen(EncoderCounts, 'encoders')
    assert ros.spin_until(lambda: motors, 20)
    assert ros.call(Trigger, 'enable_motors', Trigger.Request()).success
    assert ros.call(SetBool, 'set_encoder_stream', SetBool.Request(data=True)).success
    assert ros.call(SetBool, 'set_sonar', SetBool.Request(data=False)).success
    assert ros.spin_until(lambda: motors[-1].motors_enabled and encoders, 5)
    fresh = restart_emulator(emulator)
    try:
        assert wait_for(lambda: fresh.sessions == 1, 10)
        # restored with no user action: the new robot's motors on (the driver sends ENABLE in
        # the burst of each new session, after the stream requests), its sonar off
        assert ros.spin_until(lambda: fresh.robot.enabled, 10)
        assert not fresh.robot.sonar_enabled
        # and the driver says so: encoders and motor_state received after that moment (the
        # old robot's, still queued here, are older; the new robot's first SIPs may precede
        # its ENABLE, so they say off)
        enabled_at = time.time()
        assert ros.spin_until(
            lambda: (
                stamped_after(encoders, enabled_at)
                and stamped_after(motors, enabled_at)
                and stamped_after(motors, enabled_at)[-1].motors_enabled
            ),
            10,
        )
    finally:
        fresh.stop()


def stamped_after(messages, moment):
    """The messages whose header stamp (the driver's host clock) is after moment (time.time())."""
    return [m for m in messages if m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 > moment]


def test_without_restore_the_motors_stay_off_and_diagnostics_say_so(setup):
    emulator, process, ros = setup(restore_state_on_reconnect=False)
    motors = ros.listen(MotorState, 'motor_state')
    status = robot_status(ros)
    assert ros.spin_until(lambda: motors, 20)
    assert ros.call(Trigger, 'enable_motors', Trigger.Request()).success
    assert ros.spin_until(lambda: motors[-1].motors_enabled, 5)
    fresh = restart_emulator(emulator)
    try:
        assert wait_for(lambda: fresh.sessions == 1, 10)
        assert ros.spin_until(
            lambda: (
                status() is not None
                and status().level == DiagnosticStatus.WARN
                and 'restore_state_on_reconnect is false' in status().message
            ),
            10,
        ), status()
        assert not fresh.robot.enabled
        drive(ros, 0.2, 5)
        assert ros.spin_until(
            lambda: 'cmd_vel arrives but the motors are disabled' in status().message, 5
        ), status()
    finally:
        fresh.stop()


@pytest.mark.parametrize('stop_signal', [signal.SIGINT, signal.SIGTERM], ids=['SIGINT', 'SIGTERM'])
def test_shutdown_sequence_reaches_the_robot(setup, stop_signal):
    emulator, process, ros = setup(enable_motors_on_start=True)
    assert wait_for(lambda: emulator.robot.enabled, 20)
    process.send_signal(stop_signal)
    _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    sent = [(n, a) for _, n, a in emulator.received_commands()]
    assert sent[-4:] == [(C.SONAR, 0), (C.STOP, None), (C.ENABLE, 0), (C.CLOSE, None)]
    assert not emulator.robot.enabled


@pytest.mark.parametrize(
    'parameter, message',
    [
        ('port:=tcp://localhost', 'expected tcp://host:port'),
        ('baud:=1234', "parameter 'baud' is 1234"),
        ('model:=r2d2', "parameter 'model' is 'r2d2'"),
    ],
)
def test_bad_parameters_exit_2_with_a_clear_message(parameter, message):
    process = start_module('p2os_driver.node', '--ros-args', '-p', parameter)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2 and message in err, err


# ---- the stacks around the driver (Nav2, ros2_control, robot_localization) -----------------
def publish_stamped(ros, topic, linear_x, messages, age=0.0):
    """TwistStamped at 10 Hz, as Nav2 (enable_stamped_cmd_vel) and ros2_control send it;
    age: how old each stamp is when it is sent, s."""
    cmd = ros.node.create_publisher(TwistStamped, topic, 10)
    for _ in range(messages):
        msg = TwistStamped()
        now = ros.node.get_clock().now().nanoseconds - int(age * 1e9)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 1_000_000_000)
        msg.twist.linear.x = linear_x
        cmd.publish(msg)
        ros.spin_until(lambda: False, 0.1)


def test_cmd_vel_as_twist_stamped_moves_the_robot_and_stale_commands_do_not(setup):
    emulator, process, ros = setup(enable_motors_on_start=True, cmd_vel_timeout=0.5)
    motor = ros.listen(MotorState, 'motor_state')
    assert ros.spin_until(lambda: motor and motor[-1].motors_enabled, 20)
    publish_stamped(ros, '/pioneer/cmd_vel', 0.3, 30, age=2.0)  # 2 s old: never executed
    assert not any((n, a) == (C.VEL, 300) for _, n, a in emulator.received_commands())
    publish_stamped(ros, '/pioneer/cmd_vel', 0.3, 15)  # the driver follows the type
    assert wait_for(lambda: emulator.robot.vel_setpoint == 300, 3.0)
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    assert ros.spin_until(lambda: latest_status(diagnostics, 'p2os_driver: cmd_vel'), 5)
    values = {v.key: v.value for v in latest_status(diagnostics, 'p2os_driver: cmd_vel').values}
    assert values['cmd_vel type'] == 'geometry_msgs/msg/TwistStamped'
    assert int(values['stale commands']) >= 10


def test_cmd_vel_type_forced_to_twist_stamped(setup):
    emulator, process, ros = setup(enable_motors_on_start=True, cmd_vel_type='twist_stamped')
    motor = ros.listen(MotorState, 'motor_state')
    assert ros.spin_until(lambda: motor and motor[-1].motors_enabled, 20)
    assert ros.spin_until(lambda: ros.node.get_subscriptions_info_by_topic('/pioneer/cmd_vel'), 10)
    [info] = ros.node.get_subscriptions_info_by_topic('/pioneer/cmd_vel')
    assert info.topic_type == 'geometry_msgs/msg/TwistStamped'
    publish_stamped(ros, '/pioneer/cmd_vel', -0.2, 10)
    assert wait_for(lambda: emulator.robot.vel_setpoint == -200, 3.0)


def test_odometry_carries_covariances_for_an_ekf(setup):
    emulator, process, ros = setup(
        enable_motors_on_start=True,
        twist_covariance_diagonal='[0.001,0.001,1000.0,1000.0,1000.0,0.002]',
    )
    odom = ros.listen(Odometry, 'odom')
    assert ros.spin_until(lambda: odom, 20)
    pose, twist = odom[-1].pose.covariance, odom[-1].twist.covariance
    assert [pose[7 * i] for i in range(6)] == pytest.approx([0.01, 0.01, 1e3, 1e3, 1e3, 0.01])
    assert [twist[7 * i] for i in range(6)] == pytest.approx([0.001, 0.001, 1e3, 1e3, 1e3, 0.002])
    assert all(pose[i] == 0 for i in range(36) if i % 7)  # diagonal


def test_publish_tf_false_leaves_odom_to_an_ekf_and_keeps_the_sensor_mounts(setup):
    emulator, process, ros = setup(publish_tf=False, odom_child_frame='footprint', base_height=0.2)
    dynamic, static = ros.listen_tf()
    odom = ros.listen(Odometry, 'odom')
    assert ros.spin_until(lambda: odom and static and len(static[-1].transforms) >= 17, 20)
    ros.spin_until(lambda: False, 1.0)
    moved = {(t.header.frame_id, t.child_frame_id) for m in dynamic for t in m.transforms}
    assert moved <= {('base_link', 'left_wheel'), ('base_link', 'right_wheel')}  # no odom → base
    assert odom[-1].child_frame_id == 'base_footprint'
    frames = {t.child_frame_id: t for t in static[-1].transforms}
    assert {f'sonar_{i}' for i in range(16)} <= set(frames)
    base = frames['base_link']  # base_footprint → base_link, 0.2 m up
    assert base.header.frame_id == 'base_footprint' and base.transform.translation.z == 0.2


def test_diagnostics_name_the_robot_by_its_port(setup):
    emulator, process, ros = setup()
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    assert ros.spin_until(lambda: latest_status(diagnostics, ': robot'), 10)
    status = latest_status(diagnostics, ': robot')
    assert status.name == 'pioneer/p2os_driver: robot'
    assert status.hardware_id == f'P2OS robot tcp://127.0.0.1:{emulator.tcp.port}'


def test_bump_stall_takes_only_its_four_values(setup):
    emulator, process, ros = setup()
    motor = ros.listen(MotorState, 'motor_state')
    assert ros.spin_until(lambda: motor, 20)  # connected: SIPs arrive
    refused = ros.call(SetValue, 'bump_stall', SetValue.Request(value=7))
    assert (
        not refused.success
        and 'bump_stall takes 0 off, 1 front, 2 rear, 3 either' in refused.message
    )
    accepted = ros.call(SetValue, 'bump_stall', SetValue.Request(value=2))
    assert accepted.success, accepted.message
    assert wait_for(
        lambda: (C.BUMP_STALL, 2) in [(n, a) for _, n, a in emulator.received_commands()], 3
    )
    assert (C.BUMP_STALL, 7) not in [(n, a) for _, n, a in emulator.received_commands()]
