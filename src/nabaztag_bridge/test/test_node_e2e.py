"""nabaztag_bridge as a real process; an emulated rabbit calls it over HTTP on loopback and
this process watches and drives it over DDS."""

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from helpers import run_module, wait_for
from rclpy.qos import DurabilityPolicy, QoSProfile
from ros_observer import DriverProcesses, latest_status

from legacy_robot_common.driver_node import LATCHED
from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import ChoreographyStep, RabbitEvent, RabbitList, RabbitRecording
from legacy_robot_interfaces.srv import (
    RabbitAmbient,
    RabbitChoreography,
    RabbitEars,
    RabbitProgram,
    RabbitRawPacket,
    RabbitSetting,
    RabbitSound,
)
from nabaztag_bridge import protocol as p
from nabaztag_bridge.emulator import RabbitEmulator, RabbitOptions, ping_url, rabbit_request

SERIAL = '0019db000001'


def test_events_recordings_rabbits_and_diagnostics(setup):
    rabbit, process, ros = setup()
    events = ros.listen(RabbitEvent, 'events')
    recordings = ros.listen(RabbitRecording, 'recordings')
    rabbits = ros.listen(RabbitList, 'rabbits', LATCHED)
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    assert ros.spin_until(
        lambda: rabbits and rabbits[-1].rabbits and rabbits[-1].rabbits[0].state == 'idle', 10
    )
    state = rabbits[-1].rabbits[0]
    assert (state.serial, state.state, state.bytecode_version, state.plugin) == (
        SERIAL,
        'idle',
        65808,
        'none',
    )
    assert ros.spin_until(lambda: ros.node.count_publishers('/rabbit/events') == 1, 5)

    def kinds():
        return {e.kind for e in events}

    rabbit.click()  # the rabbit holds one pending event: one at a time
    assert ros.spin_until(lambda: RabbitEvent.CLICK in kinds(), 10), kinds()
    rabbit.move_ears(2, 14)
    rabbit.show_tag('d0021a0352d64cec')
    rabbit.record(1.0)
    assert ros.spin_until(
        lambda: {RabbitEvent.EARS_MOVED, RabbitEvent.RFID, RabbitEvent.RECORDING} <= kinds(), 15
    ), kinds()
    ears = [e for e in events if e.kind == RabbitEvent.EARS_MOVED][0]
    assert (ears.serial, ears.ear0, ears.ear1) == (SERIAL, 2, 14)
    assert [e.rfid for e in events if e.kind == RabbitEvent.RFID] == ['d0021a0352d64cec']
    assert ros.spin_until(lambda: recordings, 5)
    upload = recordings[0]
    assert upload.sample_rate == 8000 and bytes(upload.wav[:4]) == b'RIFF'
    assert abs(len(upload.pcm) / 8000 - 1.0) < 0.07

    def status():
        return latest_status(diagnostics, 'http server')

    def values():
        return {v.key: v.value for v in status().values}

    # a status published before the upload was counted can be the newest one for a while
    assert ros.spin_until(
        lambda: (
            status() is not None
            and status().level == DiagnosticStatus.OK
            and '1 of 1 rabbits online' in status().message
            and values()['recordings'] != '0'
        ),
        5,
    )
    assert int(values()['recordings']) == 1 and int(values()['pings']) > 0


def test_services_drive_the_rabbit(setup):
    rabbit, process, ros = setup()

    def call(kind, service, **fields):
        reply = ros.call(kind, service, kind.Request(**fields))
        assert reply is not None, f'{service}: no reply'
        return reply

    assert call(RabbitEars, 'set_ears', serial=SERIAL, ear0=6, ear1=11).success
    assert wait_for(lambda: rabbit.status()['ears'] == (6, 11), 5)
    steps = [
        ChoreographyStep(wait=0, opcode=ChoreographyStep.LED, args=[1, 0, 255, 0, 0, 0]),
        ChoreographyStep(wait=2, opcode=ChoreographyStep.EAR, args=[0, 3, 0]),
    ]
    reply = call(RabbitChoreography, 'play_choreography', serial='', tempo=2, steps=steps)
    assert reply.success, reply.message
    assert wait_for(lambda: rabbit.status()['leds'][1] == (0, 255, 0), 5)
    assert call(RabbitSound, 'play_sound', serial=SERIAL, media_file='tone.wav').success
    assert wait_for(lambda: any(key == 'MU' and size > 0 for key, _, size in rabbit.played), 5)
    assert call(RabbitProgram, 'send_program', serial=SERIAL, program='PL 3\nMW').success
    assert wait_for(lambda: ('PL', '3', 0) in rabbit.played, 5)
    assert call(
        RabbitAmbient,
        'set_ambient',
        serial=SERIAL,
        service_types=[1, 6],
        service_values=[3, 1],
        ear0=4,
        ear1=4,
        nose_blinks=1,
    ).success
    assert wait_for(lambda: rabbit.status()['services'] == ((1, 3), (6, 1)), 5)
    assert call(RabbitSetting, 'rabbit_setting', serial=SERIAL, name='sleep').success
    assert wait_for(lambda: rabbit.status()['state'] == 'asleep', 5)
    assert call(RabbitSetting, 'rabbit_setting', serial=SERIAL, name='wake').success
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 5)
    assert call(
        RabbitSetting, 'rabbit_setting', serial=SERIAL, name='ping_interval', value=2
    ).success
    assert wait_for(lambda: rabbit.status()['ping_delay'] == 2, 5)
    packet = list(p.encode_packet([p.ping_interval_block(1)]))
    assert call(RabbitRawPacket, 'send_raw_packet', serial=SERIAL, packet=packet).success
    assert wait_for(lambda: rabbit.status()['ping_delay'] == 1, 5)
    assert call(RabbitSetting, 'rabbit_setting', serial='', name='plugin', text='echo').success
    rabbit.record(0.5)
    assert wait_for(lambda: any('/recordings/' in url for _, url, _ in rabbit.played), 15)


@pytest.mark.parametrize(
    'kind, name, fields, problem',
    [
        (RabbitEars, 'set_ears', dict(serial='0019db0000ff', ear0=1), 'has called'),
        (RabbitEars, 'set_ears', dict(serial=SERIAL, ear0=17), '0..16'),
        (RabbitEars, 'set_ears', dict(serial='rabbit-1'), 'not 12 hex digits'),
        (RabbitProgram, 'send_program', dict(serial=SERIAL, program='ID 1\nCL 0xff'), 'decimal'),
        (RabbitSound, 'play_sound', dict(serial=SERIAL), 'either url or media_file'),
        (RabbitSound, 'play_sound', dict(serial=SERIAL, media_file='../etc/passwd'), 'media root'),
        (RabbitChoreography, 'play_choreography', dict(serial=SERIAL, tempo=0), 'tempo 0'),
        (
            RabbitChoreography,
            'play_choreography',
            dict(
                serial=SERIAL, tempo=5, steps=[ChoreographyStep(opcode=7, args=[9, 0, 0, 0, 0, 0])]
            ),
            'led 9',
        ),
        (RabbitAmbient, 'set_ambient', dict(serial=SERIAL, service_types=[1]), '1 service types'),
        (RabbitSetting, 'rabbit_setting', dict(serial=SERIAL, name='fly'), 'unknown setting'),
        (
            RabbitSetting,
            'rabbit_setting',
            dict(serial=SERIAL, name='ping_interval', value=0),
            '1..255',
        ),
        (RabbitSetting, 'rabbit_setting', dict(serial=SERIAL, name='plugin', text='dice'), 'dice'),
        (RabbitRawPacket, 'send_raw_packet', dict(serial=SERIAL, packet=[0x7F, 0xFF]), 'empty'),
    ],
)
def test_bad_service_requests_are_refused_with_the_reason(setup, kind, name, fields, problem):
    rabbit, process, ros = setup()
    reply = ros.call(kind, name, kind.Request(**fields))
    assert reply is not None and not reply.success and problem in reply.message, reply
    assert process.poll() is None


@pytest.mark.parametrize(
    'parameters, problem',
    [
        (['bytecode_file:=/no/such/file'], 'bytecode_file'),
        (['bytecode_file:=/etc/hostname'], 'not a bytecode'),
        (["locate_ping:='10.0.0.1:'"], 'must not end'),
        (['locate_ping:=10.0.0.1:'], 'bad ROS arguments'),  # not YAML: rcl refuses it
        (['media_root:=/no/such/folder'], 'not a folder'),
        (['allowed_serials:=0019db,zz'], 'allowed_serials'),
        (['plugin:=dice'], 'plugin'),
        (['port:=70000'], 'port'),
    ],
)
def test_bad_parameters_exit_2_with_a_clear_message(parameters, problem):
    args = ['--ros-args', '-p', 'host:=127.0.0.1']
    for parameter in parameters:
        args += ['-p', parameter]
    result = run_module('nabaztag_bridge.node', *args)
    assert result.returncode == 2 and problem in result.stderr, result.stderr


def test_a_busy_port_is_a_clear_error():
    import socket

    with socket.create_server(('127.0.0.1', 0)) as busy:
        result = run_module(
            'nabaztag_bridge.node',
            '--ros-args',
            '-p',
            'host:=127.0.0.1',
            '-p',
            f'port:={busy.getsockname()[1]}',
        )
    assert result.returncode == 2 and 'cannot listen' in result.stderr, result.stderr


def test_rabbits_registering_together_get_a_few_lists_not_one_each(setup):
    """Each new rabbit used to publish the whole list at once: 300 rabbits meant 300 lists of
    up to 300, which held the HTTP thread up for seconds (5,000 rabbits: minutes)."""
    rabbit, process, ros = setup(rabbits_period=1.0)
    every_list = QoSProfile(depth=10_000, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    lists = ros.listen(RabbitList, 'rabbits', every_list)
    assert ros.spin_until(lambda: lists, 5)
    base = 'http://' + rabbit.options.server.rsplit('/', 1)[0]
    newcomers = 300
    before = len(lists)
    for n in range(newcomers):
        rabbit_request(ping_url(base, f'0019dbff{n:04x}', 65808, 0, p.IDLE_ID))
    assert ros.spin_until(lambda: len(lists[-1].rabbits) == newcomers + 1, 10), len(
        lists[-1].rabbits
    )
    assert len(lists) - before <= 30, f'{len(lists) - before} lists for {newcomers} rabbits'


def test_one_diagnostics_status_per_rabbit():
    drivers = DriverProcesses()
    port = free_port()
    emulator = RabbitEmulator(
        RabbitOptions(server=f'127.0.0.1:{port}/vl', boot=False), count=2
    ).start()
    try:
        _, _, ros = drivers.start(
            'nabaztag_bridge.node',
            '/rabbit',
            emulator,
            {'host': '127.0.0.1', 'port': port, 'ping_interval': 1},
        )
        diagnostics = []
        ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
        serials = [rabbit.serial for rabbit in emulator.rabbits]

        def per_rabbit():
            return {
                s.name: s
                for s in (diagnostics[-1].status if diagnostics else ())
                if ': rabbit ' in s.name
            }

        assert ros.spin_until(lambda: len(per_rabbit()) == 2, 20), per_rabbit()
        statuses = per_rabbit()
        for serial in serials:
            status = statuses[f'rabbit/nabaztag_bridge: rabbit {serial}']
            assert status.hardware_id == f'Nabaztag/tag {serial}'
            assert status.level == DiagnosticStatus.OK and status.message.startswith('online')
    finally:
        drivers.stop_all()
