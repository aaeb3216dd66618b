"""The Foxglove relay as a user meets it: bringup --sim --foxglove, a WebSocket client that
knows only the Foxglove protocol, the robot's data decoded from the advertised definitions,
a service called and cmd_vel published from the client moving the emulated robot."""

import re
import signal
import threading

import pytest
import rclpy
from geometry_msgs.msg import Twist, Vector3
from helpers import Lines, start_module, wait_for
from mcap_ros2._dynamic import generate_dynamic
from rclpy.node import Node
from rclpy.serialization import serialize_message
from std_msgs.msg import String
from std_srvs.srv import Trigger

from legacy_robot_bringup.foxglove_client import FoxgloveClient
from legacy_robot_common import driver_node
from legacy_robot_common.foxglove_relay import ClientAccess, FoxgloveRelay
from legacy_robot_common.message_definitions import MessageDefinitions, UnknownType
from legacy_robot_common.params import ParameterError

ANNOUNCEMENT = re.compile(r'foxglove: (ws://localhost:\d+)')


@pytest.fixture
def relay_url():
    process = start_module(
        'legacy_robot_bringup.compose', 'p2os', 'ipaq', '--sim', '--foxglove', '0'
    )
    lines = Lines(process)
    try:
        assert wait_for(lambda: lines.find(ANNOUNCEMENT) or process.poll() is not None, 60)
        match = lines.find(ANNOUNCEMENT)
        assert match, f'no Foxglove announcement; stderr: {process.stderr.read()}'
        yield match.group(1)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(30)
        stderr = process.stderr.read()
        assert code == 0 and 'Traceback' not in stderr, stderr[-3000:]


def test_a_foxglove_client_sees_calls_and_drives_the_robots(relay_url):
    client = FoxgloveClient(relay_url)
    try:
        wanted = [
            '/p2os/odom',
            '/ipaq/camera/image_raw',
            '/p2os/robot_description',
            '/tf_static',
            '/diagnostics',
        ]
        assert client.wait_for(
            lambda: (
                all(t in client.channels for t in wanted)
                and '/p2os/enable_motors' in client.services
            ),
            20,
        ), (
            [t for t in wanted if t not in client.channels],
            sorted(s for s in client.services if s.startswith('/p2os')),
        )
        odom = client.channels['/p2os/odom']
        assert (odom['encoding'], odom['schemaName'], odom['schemaEncoding']) == (
            'cdr',
            'nav_msgs/msg/Odometry',
            'ros2msg',
        )
        assert 'MSG: geometry_msgs/PoseWithCovariance' in odom['schema']  # definitions inlined
        assert 'legacy_robot_interfaces/msg/TrackingResult' in {
            c['schemaName'] for c in client.channels.values()
        }  # our own types too
        for topic in wanted[:4]:
            client.subscribe(topic)
        assert client.wait_for(lambda: all(client.messages.get(t) for t in wanted[2:4]), 20)
        assert call_trigger(client, '/p2os/enable_motors').success
        assert call_trigger(client, '/ipaq/dump_frame').success  # the frame follows
        assert client.wait_for(lambda: all(client.messages.get(t) for t in wanted[:4]), 20), {
            t: len(client.messages.get(t, [])) for t in wanted[:4]
        }
        image = client.messages['/ipaq/camera/image_raw'][-1]
        assert image.width > 0 and len(image.data) == image.step * image.height
        assert image.header.frame_id == 'ipaq/camera_optical_frame'
        assert client.messages['/p2os/robot_description'][0].data.startswith('<?xml')
        static_children = {
            t.child_frame_id for m in client.messages['/tf_static'] for t in m.transforms
        }
        assert 'p2os/sonar_0' in static_children and 'ipaq/ir_range' in static_children

        start_x = client.messages['/p2os/odom'][-1].pose.pose.position.x
        channel = client.advertise('/p2os/cmd_vel', 'geometry_msgs/msg/Twist')
        forward = serialize_message(Twist(linear=Vector3(x=0.3)))
        for _ in range(40):  # 4 s at 10 Hz, as the Teleop panel sends
            client.publish(channel, forward)
            client.receive(0.1)
        moved = client.messages['/p2os/odom'][-1].pose.pose.position.x - start_x
        assert moved > 0.2, f'the robot moved {moved:.3f} m'
    finally:
        client.close()


def call_trigger(client, name):
    """A std_srvs/Trigger service called through Foxglove; its decoded response."""
    answer = client.call(name, serialize_message(Trigger.Request()))
    assert isinstance(answer, tuple) and answer[0] == 'cdr', answer
    schema = client.services[name]['response']
    return generate_dynamic(schema['schemaName'], schema['schema'])[schema['schemaName']](
        answer[1]
    )


def test_a_client_may_publish_only_on_topics_the_drivers_subscribe_to(relay_url):
    client = FoxgloveClient(relay_url)
    try:
        assert client.wait_for(lambda: '/p2os/odom' in client.channels, 20)
        client.subscribe('/p2os/odom')
        assert client.wait_for(lambda: client.messages.get('/p2os/odom'), 10)
        before = len(client.messages['/p2os/odom'])
        channel = client.advertise('/p2os/odom', 'nav_msgs/msg/Odometry')  # nobody listens
        client.publish(channel, b'\x00\x01\x00\x00garbage')
        client.receive(1.0)
        decoded = client.messages['/p2os/odom'][before:]
        assert decoded and all(m.header.frame_id == 'p2os/odom' for m in decoded)
    finally:
        client.close()


@pytest.mark.parametrize('kind', list(driver_node.EXECUTORS))
def test_a_client_that_subscribes_before_the_relay_spins_gets_the_messages(kind):
    """bringup starts the relay's server before it adds the relay to its executor; a client
    that connected in that moment (hosts_bench's desk, which connects until the relay answers)
    subscribed to every channel and got nothing for good: the relay dropped the subscriptions
    it could not hand to an executor yet (docs/hosts.md, "a relay that relays nothing")."""
    context = rclpy.Context()
    rclpy.init(context=context)
    executor = driver_node.make_executor(context, kind)
    talker = Node('early_talker', context=context)
    talker.create_publisher(String, '/early/said', driver_node.LATCHED).publish(
        String(data='before anyone watched')
    )
    relay = client = None

    def spun_and_received():  # the executor's turn, then the client's
        executor.spin_once(timeout_sec=0.02)
        client.receive_one(0.02)
        return client.messages.get('/early/said')

    try:
        # in the graph before the relay starts: its first look advertises the channel
        assert wait_for(lambda: '/early/said' in dict(talker.get_topic_names_and_types()))
        relay = FoxgloveRelay(port=0, context=context)
        client = FoxgloveClient(relay.url)
        assert client.wait_for(lambda: '/early/said' in client.channels, 10)
        client.subscribe('/early/said')
        assert wait_for(lambda: relay.watching_clients, 10)  # taken by the relay, no executor
        executor.add_node(talker)
        executor.add_node(relay)
        assert wait_for(spun_and_received, 10), relay._status()
        assert client.messages['/early/said'][0].data == 'before anyone watched'
    finally:
        if client is not None:
            client.close()
        executor.shutdown()
        for node in (relay, talker):
            if node is not None:
                node.destroy_node()
        rclpy.shutdown(context=context)


def test_client_access_is_open_on_loopback_and_closed_elsewhere_unless_given():
    here = ClientAccess('127.0.0.1')
    assert here.may_publish('/p2os/cmd_vel') and here.may_call('/p2os/enable_motors')
    assert not here.opened()
    for address in ('0.0.0.0', '192.0.2.1', '::'):
        lan = ClientAccess(address)
        assert not lan.may_publish('/p2os/cmd_vel') and not lan.may_call('/p2os/enable_motors')
    given = ClientAccess('0.0.0.0', publish=['.*/cmd_vel'], services=['/p2os/enable_.*'])
    assert given.may_publish('/p2os/cmd_vel') and not given.may_publish('/p2os/cmd_vel_x')
    assert given.may_call('/p2os/enable_motors') and not given.may_call('/p2os/disable_motors')
    assert given.opened() == '--foxglove-publish .*/cmd_vel, --foxglove-services /p2os/enable_.*'
    assert not ClientAccess('localhost', publish=[]).may_publish('/p2os/cmd_vel')  # given: holds
    listed = ClientAccess('0.0.0.0', publish=['.*/cmd_vel,/r[0-9]{1,2}/gripper .*/led'])
    assert [p.pattern for p in listed.publish] == ['.*/cmd_vel', '/r[0-9]{1,2}/gripper', '.*/led']
    with pytest.raises(ParameterError, match=r"--foxglove-publish '\(': not a regular"):
        ClientAccess('0.0.0.0', publish=['('])


def test_options_given_on_loopback_hold_there_too():
    """Given, the options mean what they say on every address: a loopback relay allowed nothing
    refuses the advertise and the call, names the option to the client and counts both."""
    context = rclpy.Context()
    rclpy.init(context=context)
    executor = driver_node.make_executor(context, 'single')
    robot = Node('loopback_robot', context=context)
    robot.create_service(Trigger, '/robot/enable', lambda request, response: response)
    driven = []
    robot.create_subscription(Twist, '/robot/cmd_vel', driven.append, 10)
    nothing = ClientAccess('127.0.0.1', publish=[], services=[])
    relay = FoxgloveRelay(port=0, access=nothing, context=context)
    executor.add_node(robot)
    executor.add_node(relay)
    spinning = threading.Thread(target=executor.spin, daemon=True)
    spinning.start()
    client = FoxgloveClient(relay.url)
    try:
        assert client.wait_for(lambda: '/robot/enable' in client.services, 10)
        answer = client.call('/robot/enable', serialize_message(Trigger.Request()))
        assert 'may not call /robot/enable: not allowed here' in answer, answer
        channel = client.advertise('/robot/cmd_vel', 'geometry_msgs/msg/Twist')
        client.publish(channel, serialize_message(Twist(linear=Vector3(x=0.3))))
        assert client.wait_for(lambda: len(client.statuses) == 2, 10), client.statuses
        assert '(bringup --foxglove-services REGEX allows it)' in client.statuses[0]
        assert 'may not publish on /robot/cmd_vel' in client.statuses[1]
        assert '--foxglove-publish' in client.statuses[1]
        assert wait_for(lambda: relay._status()[2]['client messages refused'] == 3, 10)
        assert not driven
    finally:
        client.close()
        executor.shutdown()
        spinning.join(5)
        for node in (relay, robot):
            node.destroy_node()
        rclpy.shutdown(context=context)


def test_a_bad_pattern_is_a_usage_error():
    process = start_module(
        'legacy_robot_bringup.compose', 'p2os', '--sim', '--foxglove', '0',
        '--foxglove-services', '[',
    )  # fmt: skip
    assert process.wait(60) == 2
    assert "error: --foxglove-services '[': not a regular expression" in process.stderr.read()


def test_message_definitions_come_from_the_installed_interfaces():
    definitions = MessageDefinitions()
    text = definitions.definition('legacy_robot_interfaces/msg/GripperState')
    assert 'std_msgs/Header header' in text.splitlines()
    assert 'MSG: std_msgs/Header' in text
    request, response = definitions.service_definitions('lifecycle_msgs/srv/ChangeState')
    assert 'MSG: lifecycle_msgs/Transition' in request and response.startswith('bool success')
    for bad in ('nav_msgs/msg/NoSuchThing', 'no_such_package/msg/X', 'Odometry'):
        with pytest.raises(UnknownType):
            definitions.definition(bad)


def test_the_shipped_layouts_are_the_robots_views(tmp_path):
    """config/foxglove/<robot>.json equal what the plugins' FoxgloveViews build now, and name
    only topics and services the robots have (relative to their namespace)."""
    from helpers import ROOT

    from legacy_robot_bringup.foxglove import write_layouts
    from legacy_robot_bringup.registry import discover_plugins

    plugins = discover_plugins()
    for path in write_layouts(tmp_path, plugins):
        shipped = ROOT / 'config' / 'foxglove' / path.name
        assert shipped.read_text() == path.read_text(), (
            f'{shipped} is stale: python -m legacy_robot_bringup.foxglove --write-layouts '
            'config/foxglove'
        )
    for name, plugin in plugins.items():
        layout = (ROOT / 'config' / 'foxglove' / f'{name}.json').read_text()
        follow = f'"{name}/{plugin.foxglove.follow_frame}"'  # a link of the robot's model
        assert f'/{name}/robot_description' in layout and follow in layout
        assert ('/cmd_vel' in layout) == plugin.foxglove.teleop


def test_the_demo_serves_every_robot_to_foxglove(tmp_path):
    process = start_module(
        'legacy_robot_bringup.demo',
        '--duration',
        '25',
        '--plain',
        '--output',
        str(tmp_path),
        '--foxglove',
        '0',
    )
    lines = Lines(process)
    try:
        assert wait_for(lambda: lines.find(ANNOUNCEMENT) or process.poll() is not None, 60)
        client = FoxgloveClient(lines.find(ANNOUNCEMENT).group(1))
        try:
            robots = ('aibo', 'ipaq', 'nabaztag', 'p2os', 'pleo')
            assert client.wait_for(
                lambda: all(
                    any(t.startswith(f'/{robot}/') for t in client.channels) for robot in robots
                ),
                20,
            )
            for topic in ('/p2os/odom', '/pleo/joint_states', '/aibo/camera/image_raw'):
                client.subscribe(topic)
            assert client.wait_for(
                lambda: all(
                    client.messages.get(t)
                    for t in ('/p2os/odom', '/pleo/joint_states', '/aibo/camera/image_raw')
                ),
                15,
            )
        finally:
            client.close()
    finally:
        assert process.wait(60) == 0, process.stderr.read()


def test_the_relay_executable_beside_drivers_and_a_taken_port(tmp_path):
    """foxglove_relay as its own process (the launch files' form) sees the graph of other
    processes; a port that is taken is a clear error, exit 2."""
    driver = start_module(
        'p2os_driver.node', '--ros-args', '-r', '__ns:=/solo', '-p', 'port:=tcp://127.0.0.1:9'
    )  # nothing there: it retries
    relay = start_module('legacy_robot_bringup.foxglove', '--port', '0')
    lines = Lines(relay)
    try:
        assert wait_for(lambda: lines.find(ANNOUNCEMENT) or relay.poll() is not None, 60)
        url = lines.find(ANNOUNCEMENT).group(1)
        client = FoxgloveClient(url)
        try:
            assert client.wait_for(
                lambda: (
                    '/solo/odom' in client.channels and '/solo/enable_motors' in client.services
                ),
                20,
            )
        finally:
            client.close()
        taken = start_module('legacy_robot_bringup.foxglove', '--port', url.rsplit(':', 1)[1])
        assert taken.wait(30) == 2
        assert 'cannot listen' in taken.stderr.read()
    finally:
        for process in (relay, driver):
            process.send_signal(signal.SIGINT)
            assert process.wait(30) == 0
