"""Every driver is a managed (lifecycle) node: each transition over the standard services, from
another process, with what the robot (its emulator) sees at each step."""

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Twist
from helpers import wait_for
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState
from nav_msgs.msg import Odometry
from ros_observer import DriverProcesses, latest_status
from std_srvs.srv import Trigger

from ipaq_driver import protocol as ipaq_protocol
from ipaq_driver.emulator import EmulatorOptions as IpaqOptions
from ipaq_driver.emulator import IpaqEmulator
from legacy_robot_bringup.registry import discover_plugins
from p2os_driver import protocol as p2os_protocol
from p2os_driver.emulator import EmulatorOptions, P2osEmulator

C = p2os_protocol.Command
L = ipaq_protocol.Letter
ROBOTS = discover_plugins()


class Lifecycle:
    """The standard lifecycle services of one node, called from the test process."""

    def __init__(self, ros, node_name):
        self.ros = ros
        self.node_name = node_name

    def state(self):
        return self.ros.lifecycle_state(self.node_name)

    def change(self, transition_id):
        request = ChangeState.Request(transition=Transition(id=transition_id))
        return self.ros.call(ChangeState, f'{self.node_name}/change_state', request).success


@pytest.fixture
def drivers():
    started = DriverProcesses()
    yield started
    started.stop_all()


def p2os_commands(emulator, number):
    return [args for _, n, args in emulator.received_commands() if n == number]


def test_p2os_every_transition_reaches_the_robot(drivers):
    emulator = P2osEmulator(EmulatorOptions())
    port = emulator.start_tcp()
    _, process, ros = drivers.start(
        'p2os_driver.node',
        '/managed',
        emulator,
        {'port': f'tcp://127.0.0.1:{port}', 'autostart': False, 'enable_motors_on_start': True},
    )
    life = Lifecycle(ros, 'p2os_driver')
    odom = ros.listen(Odometry, 'odom')
    cmd = ros.node.create_publisher(Twist, '/managed/cmd_vel', 10)
    assert life.state() == State.PRIMARY_STATE_UNCONFIGURED
    ros.spin_until(lambda: False, 1.0)
    assert emulator.received_commands() == []  # no link before configure

    assert life.change(Transition.TRANSITION_CONFIGURE)
    assert wait_for(lambda: p2os_commands(emulator, C.OPEN), 10)  # the link opens
    assert life.state() == State.PRIMARY_STATE_INACTIVE
    ros.spin_until(lambda: False, 1.0)
    assert not odom  # inactive: nothing published
    refused = ros.call(Trigger, 'enable_motors', Trigger.Request())
    assert not refused.success and 'not active' in refused.message

    assert life.change(Transition.TRANSITION_ACTIVATE)
    assert ros.spin_until(lambda: odom, 5)
    assert ros.call(Trigger, 'enable_motors', Trigger.Request()).success
    drive = Twist()
    drive.linear.x = 0.3
    for _ in range(5):
        cmd.publish(drive)
        ros.spin_until(lambda: False, 0.1)
    assert wait_for(lambda: emulator.robot.vel_setpoint == 300, 2)

    cmd.publish(drive)
    assert life.change(Transition.TRANSITION_DEACTIVATE)  # the robot stops at once
    assert wait_for(lambda: emulator.robot.vel_setpoint == 0, 1)
    cmd.publish(drive)
    ros.spin_until(lambda: False, 0.5)
    assert emulator.robot.vel_setpoint == 0  # inactive: cmd_vel ignored
    count = len(odom)
    ros.spin_until(lambda: False, 0.5)
    assert len(odom) <= count + 1  # and odometry stops

    assert life.change(Transition.TRANSITION_CLEANUP)  # the link closes, politely
    assert wait_for(lambda: p2os_commands(emulator, C.CLOSE), 5)
    assert life.state() == State.PRIMARY_STATE_UNCONFIGURED
    opens = len(p2os_commands(emulator, C.OPEN))
    assert life.change(Transition.TRANSITION_CONFIGURE)  # and opens again
    assert wait_for(lambda: len(p2os_commands(emulator, C.OPEN)) > opens, 10)
    closes = len(p2os_commands(emulator, C.CLOSE))

    assert life.change(Transition.TRANSITION_INACTIVE_SHUTDOWN)  # goodbye
    assert wait_for(lambda: len(p2os_commands(emulator, C.CLOSE)) > closes, 5)
    assert life.state() == State.PRIMARY_STATE_FINALIZED
    assert process.poll() is None  # finalized, until the process is stopped


def test_ipaq_deactivate_stops_the_trike_and_cleanup_says_goodbye(drivers):
    emulator = IpaqEmulator(
        IpaqOptions(control_port=0, frame_dump_port=0, tracking_port=0)
    ).start()
    _, process, ros = drivers.start(
        'ipaq_driver.node', '/managed', emulator, {**emulator.parameters, 'autostart': False}
    )
    life = Lifecycle(ros, 'ipaq_driver')
    ros.spin_until(lambda: False, 1.0)
    assert emulator.received_commands() == []
    assert life.change(Transition.TRANSITION_CONFIGURE)
    assert wait_for(lambda: emulator.received_commands(), 10)
    assert life.change(Transition.TRANSITION_ACTIVATE)
    cmd = ros.node.create_publisher(Twist, '/managed/cmd_vel', 10)
    drive = Twist()
    drive.linear.x = 0.3
    for _ in range(10):
        cmd.publish(drive)
        ros.spin_until(lambda: False, 0.1)
    assert emulator.trike.v_setpoint == pytest.approx(0.3, abs=0.02)
    assert life.change(Transition.TRANSITION_DEACTIVATE)
    assert wait_for(lambda: emulator.trike.v_setpoint == 0, 2)
    assert life.change(Transition.TRANSITION_CLEANUP)
    assert wait_for(lambda: emulator.received_commands()[-1][1] is L.STOP_TRACKING, 5)


@pytest.mark.parametrize('name', sorted(ROBOTS))
def test_every_robot_is_a_managed_node(drivers, name):
    """configure opens the link, activate publishes, cleanup closes it, shutdown finalizes:
    seen in the link's diagnostics, which keep reporting in every state."""
    plugin = ROBOTS[name]
    emulator = plugin.start_emulator()
    _, process, ros = drivers.start(
        f'{plugin.package}.node', f'/{name}', emulator, {**emulator.parameters, 'autostart': False}
    )
    life = Lifecycle(ros, plugin.node_name)
    arrays = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', arrays.append, 10)

    def links_up():
        statuses = [
            s
            for s in (arrays[-1].status if arrays else ())
            if s.name.endswith('link') or s.name.endswith('http server')
        ]
        return bool(statuses) and all(s.level == DiagnosticStatus.OK for s in statuses)

    received = [ros.listen(t.msg_type, t.topic) for t in plugin.demo_topics]
    assert life.state() == State.PRIMARY_STATE_UNCONFIGURED
    assert ros.spin_until(lambda: arrays, 5) and not links_up()
    assert life.change(Transition.TRANSITION_CONFIGURE)
    assert ros.spin_until(links_up, 15), arrays[-1]
    ros.spin_until(lambda: False, 0.5)
    assert not any(received)  # inactive: configured, silent
    assert life.change(Transition.TRANSITION_ACTIVATE)
    assert ros.spin_until(lambda: any(received), 15), 'nothing published while active'
    assert life.change(Transition.TRANSITION_DEACTIVATE)
    assert life.change(Transition.TRANSITION_CLEANUP)
    arrays.clear()
    assert ros.spin_until(lambda: arrays and not links_up(), 5)
    assert (
        latest_status(arrays, 'link') is None
        or latest_status(arrays, 'link').level != DiagnosticStatus.OK
    )
    assert life.change(Transition.TRANSITION_UNCONFIGURED_SHUTDOWN)
    assert life.state() == State.PRIMARY_STATE_FINALIZED
