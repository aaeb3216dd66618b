"""P2OS parts of the fault suite (`make soak`, legacy_robot_bench.soak)."""

import math
import signal
import time

from nav_msgs.msg import Odometry

from legacy_robot_bench.common.soak import (
    FuzzTarget,
    NoiseSpec,
    RestartSpec,
    Row,
    noise_arguments,
    stream_rejects,
)
from legacy_robot_common.emulator import free_port
from p2os_driver import protocol as p
from p2os_driver.emulator import EmulatorOptions, P2osEmulator, sip_body

DECODERS = {
    p.PacketType.SIP_STOPPED: p.decode_sip,
    p.PacketType.SIP_MOVING: p.decode_sip,
    p.PacketType.ENCODER: p.decode_encoders,
    p.PacketType.GRIPPER: p.decode_gripper,
    p.PacketType.IO: p.decode_io,
    p.PacketType.SERAUX: p.decode_seraux,
    p.PacketType.PLAYLIST: p.decode_playlist,
    p.PacketType.CONFIG: p.decode_config,
}


def server_bodies():
    """Valid bodies of every packet type the robot sends, from the emulator's encoders."""
    emulator = P2osEmulator()
    robot = emulator.robot
    robot.enabled = robot.sonar_enabled = True
    sips = [sip_body(robot, EmulatorOptions())]  # standing: SIP_STOPPED
    robot.set_velocity(400)
    for _ in range(4):
        robot.step(0.1)
        sips.append(sip_body(robot, EmulatorOptions()))
        sips.append(sip_body(robot, EmulatorOptions(later_firmware_tail=True)))
    return sips + [
        p.encode_encoders(123456, -654321),
        p.encode_gripper(p.GripperPacket(2, 0x15, 10)),
        p.encode_io(p.IoPacket(b'\x01\x02', b'\x04', [0, 512, 2047])),
        p.encode_seraux(b'hello aux'),
        p.encode_playlist([]),
        p.encode_playlist([('bark', 0, 4000), ('beep', 4000, 800)]),
        p.encode_config({'robot_type': 'Pioneer', 'subtype': 'p2dx', 'serial': 'SIM'}),
        p.encode_sync2_reply('emulated', 'Pioneer', 'p2dx'),
    ]


def decode_body(body):
    decoder = DECODERS.get(body[0])
    return decoder(body) if decoder is not None else None


def decode_stream(data):
    """What the client does with bytes from the robot: frame, then decode each body."""
    return stream_rejects(p.PacketReceiver().feed(data), decode_body)


def decode_commands(data):
    """What the emulator does with bytes from a client."""
    return stream_rejects(
        p.PacketReceiver(max_count=p.P2OS_MAX_COUNT).feed(data), p.decode_command
    )


def fuzz_targets():
    bodies = server_bodies()
    packets = [p.build_packet(body) for body in bodies]
    commands = [
        p.encode_command(p.Command.VEL, 300),
        p.encode_command(p.Command.RVEL, -20),
        p.encode_command(p.Command.OPEN),
        p.encode_two_bytes(p.Command.VEL2, 10, -10),
    ]
    targets = [
        FuzzTarget(
            'P2OS byte stream (receiver + decoders)',
            decode_stream,
            packets + [b''.join(packets)],
            max_random=800,
            stream=True,
        ),
        FuzzTarget('P2OS SYNC2 reply', p.decode_sync2_reply, [bodies[-1]]),
        FuzzTarget(
            'P2OS commands (emulator side)',
            decode_commands,
            commands + [b''.join(commands)],
            stream=True,
        ),
    ]
    for kind in sorted(set(DECODERS), key=int):
        seeds = [body for body in bodies if body[0] == kind]
        targets.append(FuzzTarget(f'P2OS {kind.name} body', DECODERS[kind], seeds))
    return targets


def restart_spec(folder):
    port = free_port()
    return RestartSpec(
        ['p2os_driver.emulator', '--port', str(port)],
        'p2os_driver.node',
        {'port': f'tcp://127.0.0.1:{port}'},
        'odom',
        Odometry,
    )


# ---- safety: cmd_vel timeout, goodbye on SIGINT / SIGTERM (rclpy from here on) --------------
STOP_DELIVERY = 0.05  # s: the stop must reach the robot this soon after cmd_vel_timeout
SAFETY_NAMESPACE = '/soak'


def commanded_stop(robot):
    """The robot has been told to stand still (VEL + RVEL 0, or VEL2 0 0)."""
    if robot.wheel_mode:
        return robot.wheel_setpoints == (0, 0)
    return robot.vel_setpoint == 0 and robot.rvel_setpoint == 0


def cmd_vel_stop_delays(repeats, timeout=0.5):
    """Drive with cmd_vel at 20 Hz, then stop publishing: seconds until the robot is told to
    stop, per repeat."""
    from geometry_msgs.msg import Twist

    from legacy_robot_bench.common.bench import driver_against, wait_ready, wait_until

    emulator = P2osEmulator().start()
    parameters = {
        **emulator.parameters,
        'enable_motors_on_start': True,
        'cmd_vel_timeout': timeout,
    }
    with driver_against(emulator, 'p2os_driver.node', SAFETY_NAMESPACE, parameters) as (
        driver,
        listener,
    ):
        publisher = listener.node.create_publisher(Twist, f'{SAFETY_NAMESPACE}/cmd_vel', 10)
        wait_ready(
            driver,
            lambda: emulator.robot.enabled and publisher.get_subscription_count(),
            'driver did not connect',
            settle=1.0,
        )
        delays = []
        for _ in range(repeats):
            drive = Twist()
            drive.linear.x = 0.3
            for _ in range(10):
                publisher.publish(drive)
                time.sleep(0.05)
            last = time.monotonic()
            if not wait_until(lambda: not commanded_stop(emulator.robot), 1.0, poll=0.005):
                raise RuntimeError('cmd_vel did not reach the robot')
            if wait_until(lambda: commanded_stop(emulator.robot), timeout + 2.0, poll=0.002):
                delays.append(time.monotonic() - last)
            else:
                delays.append(float('inf'))
    return delays


def goodbye_after_signal(stop_signal):
    """Start the driver, let it enable the motors, send stop_signal: (exit code, the last
    commands the robot received)."""
    from legacy_robot_bench.common.bench import start_driver, wait_ready

    emulator = P2osEmulator().start()
    driver = start_driver(
        'p2os_driver.node',
        SAFETY_NAMESPACE,
        {**emulator.parameters, 'enable_motors_on_start': True},
    )
    try:
        wait_ready(driver, lambda: emulator.robot.enabled, 'driver did not connect', settle=0.0)
        driver.send_signal(stop_signal)
        code = driver.wait(20)
        return code, [(n, a) for _, n, a in emulator.received_commands()][-4:]
    finally:
        if driver.poll() is None:
            driver.kill()
        emulator.stop()


GOODBYE = [
    (p.Command.SONAR, 0),
    (p.Command.STOP, None),
    (p.Command.ENABLE, 0),
    (p.Command.CLOSE, None),
]


def safety_rows(repeats):
    timeout = 0.5
    delays = cmd_vel_stop_delays(repeats, timeout)
    worst = max(delays)
    rows = [
        Row(
            'P2OS safety',
            f'cmd_vel stops ({repeats} times, cmd_vel_timeout {timeout} s)',
            f'stop after {1000 * min(delays):.0f}..{1000 * worst:.0f} ms',
            f'<= {1000 * (timeout + STOP_DELIVERY):.0f} ms',
            worst <= timeout + STOP_DELIVERY,
        )
    ]
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        outcomes = [goodbye_after_signal(stop_signal) for _ in range(repeats)]
        good = sum(code == 0 and last == GOODBYE for code, last in outcomes)
        rows.append(
            Row(
                'P2OS safety',
                f'driver killed with {stop_signal.name} ({repeats} times)',
                f'{good}/{repeats}: STOP, ENABLE 0, CLOSE seen and exit 0',
                'every time',
                good == repeats,
            )
        )
    return rows


# ---- link noise ----------------------------------------------------------------------------
def noise_spec(rate):
    """Drive a wide circle at 1 m/s (the 15-bit position counters wrap every ~33 m) while
    rate of the bytes are dropped and as many corrupted; afterwards the driver's odometry
    must still agree with the robot's own."""
    from geometry_msgs.msg import Twist

    emulator = P2osEmulator(
        EmulatorOptions(room_width=2000, room_height=2000, drop_rate=rate, corrupt_rate=rate)
    ).start()
    publishers = {}

    def drive(node, namespace):
        if namespace not in publishers:
            publishers[namespace] = node.create_publisher(Twist, f'{namespace}/cmd_vel', 10)
        twist = Twist()
        twist.linear.x, twist.angular.z = 1.0, 0.05
        publishers[namespace].publish(twist)

    def check(emulator, received, diagnostics):
        if not received['odom']:
            return [Row('noise', 'P2OS odometry', 'no odom received', '< 5 cm', False)]
        true_x, true_y, _ = emulator.robot.odometry
        last = received['odom'][-1].pose.pose.position
        error = math.hypot(last.x - true_x / 1000, last.y - true_y / 1000)
        travelled = math.hypot(true_x, true_y) / 1000
        return [
            Row(
                'noise',
                'P2OS odometry',
                f'driver vs robot {100 * error:.1f} cm after the '
                f'noise ({travelled:.0f} m from the start)',
                '< 5 cm',
                error < 0.05,
            )
        ]

    return NoiseSpec(
        emulator,
        'p2os_driver.node',
        {**emulator.parameters, 'enable_motors_on_start': True, 'max_linear_speed': 1.5},
        'odom',
        Odometry,
        {'odom': Odometry},
        drive,
        check,
    )


# ---- the mixed soak (legacy_robot_bench.mixed_soak) -----------------------------------------
def mixed_emulator_arguments(rate):
    return noise_arguments(rate)


def mixed_activity(ros, robot, elapsed):
    """Drive a circle with cmd_vel at 10 Hz, motors enabled every 30 s (a restarted robot
    starts disabled), sonar switched by its parameter every minute."""
    from geometry_msgs.msg import Twist, Vector3
    from std_srvs.srv import Trigger

    ros.publish(
        Twist, f'{robot.namespace}/cmd_vel', Twist(linear=Vector3(x=0.2), angular=Vector3(z=0.3))
    )
    if ros.due(robot, 'enable', 30.0):
        ros.call(Trigger, f'{robot.namespace}/enable_motors', Trigger.Request())
    if ros.due(robot, 'sonar', 60.0):
        ros.set_parameters(
            f'{robot.namespace}/{robot.plugin.node_name}', {'use_sonar': ros.random.random() < 0.5}
        )
