"""pleo_driver and urf_builder as real processes, observed and called over DDS."""

import math
import pathlib
import signal

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from helpers import run_module, start_module, wait_for
from ros_observer import DriverProcesses, Observer, latest_status, ros_args
from sensor_msgs.msg import BatteryState, JointState
from std_srvs.srv import Trigger

from legacy_robot_interfaces.msg import MonitorLog, NamedValues, NxpPacket, SensorEvent
from legacy_robot_interfaces.srv import (
    BuildProject,
    JointCommand,
    PlayNamed,
    SetPercent,
    TextCommand,
)
from pleo_driver import sample
from pleo_driver.emulator import EmulatorOptions, PleoEmulator
from pleo_driver.sample import build_sample_project


@pytest.fixture
def setup(tmp_path):
    drivers = DriverProcesses()

    def start(**parameters):
        emulator = PleoEmulator(
            EmulatorOptions(urf_path=build_sample_project(str(tmp_path)).urf_path, dump_rate=20)
        ).start()
        emulator, process, ros = drivers.start(
            'pleo_driver.node',
            '/pleo',
            emulator,
            {**emulator.parameters, 'battery_interval': 0.5, **parameters},
        )
        # connected once the start-up commands ran: the first battery poll comes next
        assert wait_for(lambda: 'STATS POWER' in emulator.received, 20), 'no connection'
        return emulator, process, ros

    yield start
    drivers.stop_all()


def ok(response):
    assert response.success, response.message
    return response


def test_topics_and_diagnostics(setup):
    emulator, process, ros = setup(log_enable=['nxp'])
    joints = ros.listen(JointState, 'joint_states')
    sensors = ros.listen(NamedValues, 'sensors')
    battery = ros.listen(BatteryState, 'battery')
    events = ros.listen(SensorEvent, 'sensor_events')
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    assert ros.spin_until(lambda: joints and sensors and battery, 20)
    assert joints[-1].name[13] == 'head' and len(joints[-1].position) == 14
    assert joints[-1].position[1] == pytest.approx(math.radians(45))  # elbow at neutral
    assert sensors[-1].names[6] == 'head' and len(sensors[-1].values) == 41
    assert 0.5 < battery[-1].percentage <= 0.87
    unmeasured = ('voltage', 'temperature', 'current', 'charge', 'capacity', 'design_capacity')
    assert all(math.isnan(getattr(battery[-1], field)) for field in unmeasured)  # not 0.0
    emulator.touch('head', 0.5)
    assert ros.spin_until(
        lambda: any(e.sensor == 'head' and e.event == 'touched' for e in events), 10
    )
    assert ros.spin_until(
        lambda: any(e.sensor == 'head' and e.event == 'released' for e in events), 10
    )
    assert ros.spin_until(
        lambda: getattr(latest_status(diagnostics, 'pleo'), 'level', None) == DiagnosticStatus.OK,
        5,
    ), latest_status(diagnostics, 'pleo')
    values = {v.key: v.value for v in latest_status(diagnostics, 'pleo').values}
    assert values['joint dumps'] == 'yes' and values['bad lines'] == '0'
    assert values['resyncs'] == '0'


def test_joint_motion_and_sound_services(setup):
    emulator, process, ros = setup()
    joints = ros.listen(JointState, 'joint_states')
    log = ros.listen(MonitorLog, 'monitor_log')
    ok(
        ros.call(
            JointCommand,
            'joint_command',
            JointCommand.Request(joint='tail_horizontal', position=math.radians(30), wait=True),
        )
    )
    assert 'JOINT ANGLE 9 30' in emulator.received
    assert ros.spin_until(
        lambda: joints and abs(joints[-1].position[9] - math.radians(30)) < 0.02, 5
    )
    refused = ros.call(
        JointCommand,
        'joint_command',
        JointCommand.Request(joint='torso', position=math.radians(40), wait=False),
    )
    assert not refused.success and 'outside its limits' in refused.message
    assert not any(c.startswith('JOINT MOVE 8') for c in emulator.received)
    ok(ros.call(SetPercent, 'motion_speed', SetPercent.Request(percent=150.0)))
    ok(ros.call(PlayNamed, 'motion_play', PlayNamed.Request(name='wag')))
    ok(ros.call(PlayNamed, 'sound_play', PlayNamed.Request(name='chirp')))
    ok(ros.call(SetPercent, 'sound_volume', SetPercent.Request(percent=80.0)))
    assert emulator.state.sound_volume == 80 and emulator.state.motion_speed == 150
    assert ros.spin_until(lambda: any('wag playing' in m.text for m in log), 5)
    missing = ros.call(PlayNamed, 'motion_play', PlayNamed.Request(name='nosuch'))
    assert not missing.success and 'no motion named nosuch' in missing.message
    bad = ros.call(PlayNamed, 'sound_play', PlayNamed.Request(name='two words'))
    assert not bad.success and 'one word' in bad.message
    ok(ros.call(Trigger, 'joint_neutral', Trigger.Request()))


def test_app_load_goes_to_the_sd_card_and_raw_commands(setup):
    emulator, process, ros = setup()
    nxp = ros.listen(NxpPacket, 'nxp_packets')
    ok(ros.call(PlayNamed, 'app_load', PlayNamed.Request(name='sample')))
    assert 'APP LOAD a:sample' in emulator.received
    ok(ros.call(TextCommand, 'log_enable', TextCommand.Request(command='nxp')))
    ok(ros.call(TextCommand, 'pkt_send', TextCommand.Request(command='?')))
    assert ros.spin_until(lambda: {m.direction for m in nxp} == {0, 1}, 5)
    raw = ok(ros.call(TextCommand, 'monitor_command', TextCommand.Request(command='stats power')))
    assert 'Battery sensor value' in raw.reply
    unknown = ros.call(TextCommand, 'monitor_command', TextCommand.Request(command='explode'))
    assert not unknown.success and 'Unknown command' in unknown.reply


def test_bad_parameters_exit_2():
    done = run_module('pleo_driver.node', *ros_args('/bad', {'answer_timeout': -1.0}))
    assert done.returncode == 2 and 'answer_timeout' in done.stderr


def test_sigterm_is_a_clean_exit(setup):
    emulator, process, ros = setup()
    process.send_signal(signal.SIGTERM)
    assert process.wait(20) == 0


def test_urf_builder_node_builds_a_project(tmp_path):
    project = pathlib.Path(sample.sample_project(str(tmp_path / 'sample')))
    process = start_module(
        'pleo_driver.urf_builder',
        *ros_args('/tools', {'amx_dir': str(project.parent / 'prebuilt'), 'build_time': 1000}),
    )
    ros = Observer('/tools')
    try:
        reply = ros.call(
            BuildProject,
            'build_project',
            BuildProject.Request(project=str(project), action='rebuild'),
            timeout=30,
        )
        assert reply.success, reply.message
        assert reply.urf_path.endswith('build/sample.urf') and reply.urf_size == 14664
        assert '*** Writing build/sample.urf ***' in reply.log
        bad = ros.call(
            BuildProject,
            'build_project',
            BuildProject.Request(project=str(tmp_path / 'none.upf'), action='build'),
        )
        assert not bad.success and 'cannot read project' in bad.message
        wrong = ros.call(
            BuildProject,
            'build_project',
            BuildProject.Request(project=str(project), action='explode'),
        )
        assert not wrong.success and "unknown command 'explode'" in wrong.message
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=20)
        ros.close()
