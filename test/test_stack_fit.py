"""The drivers inside the stacks around them: several robots in one TF world (two of a kind
among them), simulated time for every robot, as a Nav2 / robot_localization user wires them."""

import signal

import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import TwistStamped
from helpers import start_module
from nav_msgs.msg import Odometry
from ros_observer import Observer, parents_by_child, reachable
from rosgraph_msgs.msg import Clock
from std_srvs.srv import Trigger
from tf2_msgs.msg import TFMessage

from legacy_robot_bringup.compose import running
from legacy_robot_bringup.registry import discover_plugins
from legacy_robot_common.tf import TF_QOS, TF_STATIC_LISTENER_QOS

SIM_START = 1000  # s: a simulated clock far from the wall clock's 1.7e9 s


def drive_stamped(ros, topic, linear_x, seconds):
    cmd = ros.node.create_publisher(TwistStamped, topic, 10)
    for _ in range(int(seconds * 10)):
        msg = TwistStamped()
        msg.header.stamp = ros.node.get_clock().now().to_msg()
        msg.twist.linear.x = linear_x
        cmd.publish(msg)
        ros.spin_until(lambda: False, 0.1)


def test_two_pioneers_and_an_ipaq_share_one_tf_world():
    process = start_module('legacy_robot_bringup.compose', 'p2os:r1', 'p2os:r2', 'ipaq', '--sim')
    ros = Observer('')
    try:
        dynamic, static = ros.listen_tf()
        odom = {robot: ros.listen(Odometry, f'{robot}/odom') for robot in ('r1', 'r2', 'ipaq')}
        diagnostics = []
        ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
        assert ros.spin_until(lambda: all(odom.values()), 40), (
            process.stderr.read() if process.poll() is not None else 'no odometry from every robot'
        )
        assert ros.call(Trigger, 'r1/enable_motors', Trigger.Request()).success
        drive_stamped(ros, '/r1/cmd_vel', 0.4, 3.0)  # Nav2-style stamped commands
        ros.spin_until(lambda: False, 1.0)

        tree = parents_by_child(dynamic + static)
        assert all(len(parents) == 1 for parents in tree.values()), tree  # one parent each
        tree = {child: parents.pop() for child, parents in tree.items()}
        for robot in ('r1', 'r2', 'ipaq'):
            frames = reachable(tree, f'{robot}/odom')
            assert {f'{robot}/base_link', f'{robot}/base_footprint'} <= frames, (
                sorted(tree),
                [len(m.transforms) for m in static],
            )
            assert all(frame.startswith(f'{robot}/') for frame in frames)
        assert {f'r1/sonar_{i}' for i in range(8)} <= reachable(tree, 'r1/odom')
        assert {'ipaq/camera_optical_frame', 'ipaq/ir_range'} <= reachable(tree, 'ipaq/odom')

        def poses(child):
            return [
                t.transform.translation.x
                for m in dynamic
                for t in m.transforms
                if t.child_frame_id == child
            ]

        assert max(poses('r1/base_link')) > 0.3  # r1 drove: r2 did not move with it
        assert max(map(abs, poses('r2/base_link'))) < 0.01
        assert odom['r1'][-1].header.frame_id == 'r1/odom'
        assert odom['r1'][-1].child_frame_id == 'r1/base_link'
        assert odom['r1'][-1].twist.covariance[0] > 0 and odom['ipaq'][-1].pose.covariance[0] > 0

        statuses = {s.name: s.hardware_id for array in diagnostics for s in array.status}
        assert statuses['r1/p2os_driver: robot'] != statuses['r2/p2os_driver: robot']
        assert 'ipaq/ipaq_driver: robot' in statuses
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
        ros.close()


def test_frames_namespace_moves_tf_into_the_robot_namespace():
    plugin = discover_plugins()['p2os']
    with running([plugin], sim=True, namespace='/r1', frames='namespace') as composition:
        listener = rclpy.create_node('tf_listener')
        inside, outside = [], []
        listener.create_subscription(
            TFMessage, '/r1/tf_static', inside.append, TF_STATIC_LISTENER_QOS
        )
        listener.create_subscription(
            TFMessage, '/tf_static', outside.append, TF_STATIC_LISTENER_QOS
        )
        listener.create_subscription(TFMessage, '/tf', outside.append, TF_QOS)
        composition.executor.add_node(listener)
        composition.spin(3.0)
        listener.destroy_node()
    children = {t.child_frame_id for m in inside for t in m.transforms}
    assert {'base_footprint', 'sonar_0'} <= children  # frame names kept, topics moved
    assert not outside


def header_stamps(messages):
    return [
        m.header.stamp.sec + m.header.stamp.nanosec / 1e9 for m in messages if hasattr(m, 'header')
    ]


def test_every_robot_follows_simulated_time():
    """use_sim_time with a fake /clock: every stamp is on the simulated clock (the AIBO stamped
    the wall clock)."""
    plugins = list(discover_plugins().values())
    with running(plugins, sim=True, namespace_per_robot=True, use_sim_time=True) as composition:
        clock = rclpy.create_node('fake_clock')
        clock_pub = clock.create_publisher(Clock, '/clock', 10)
        tenths = [SIM_START * 10]

        def tick():
            tenths[0] += 1
            msg = Clock()
            msg.clock.sec, msg.clock.nanosec = tenths[0] // 10, tenths[0] % 10 * 100_000_000
            clock_pub.publish(msg)

        clock.create_timer(0.1, tick)
        received = {}
        for plugin in plugins:
            for topic in plugin.demo_topics:
                messages = received.setdefault(f'{plugin.name}/{topic.topic}', [])
                clock.create_subscription(
                    topic.msg_type, f'/{plugin.name}/{topic.topic}', messages.append, 10
                )
        composition.executor.add_node(clock)
        composition.spin(8.0)
        clock.destroy_node()
    stamped = {topic: header_stamps(messages) for topic, messages in received.items()}
    stamped = {topic: stamps for topic, stamps in stamped.items() if stamps}
    assert {topic.split('/')[0] for topic in stamped} == {p.name for p in plugins}, sorted(stamped)
    for topic, stamps in stamped.items():
        # before the first /clock message arrives, ROS time is 0
        wrong = [s for s in stamps if s > 1.0 and not SIM_START - 1 <= s < SIM_START + 100]
        assert not wrong, f'{topic}: stamps off the simulated clock: {wrong[:3]}'
    assert any(s >= SIM_START for s in stamped['aibo/camera/image_raw'])
