"""ipaq_driver as a real process against the emulator, observed over DDS from this process."""

import math
import signal

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from geometry_msgs.msg import Twist, TwistStamped
from helpers import run_module, wait_for
from nav_msgs.msg import Odometry
from ros_observer import DriverProcesses, latest_status
from sensor_msgs.msg import CameraInfo, Image, JointState, Range
from std_srvs.srv import Trigger

from ipaq_driver import protocol as p
from ipaq_driver.emulator import EmulatorOptions, IpaqEmulator
from ipaq_driver.units import Units
from legacy_robot_common.messages import image_to_array
from legacy_robot_interfaces.msg import TrackingResult, WheelPower
from legacy_robot_interfaces.srv import (
    BytesCommand,
    ColorTracking,
    SetDistance,
    SetPose,
    TextCommand,
    WindowTracking,
)

L = p.Letter
FREE_PORTS = dict(control_port=0, frame_dump_port=0, tracking_port=0)
RED = dict(r_min=180, r_max=240, g_min=16, g_max=90, b_min=16, b_max=110)


@pytest.fixture
def setup():
    drivers = DriverProcesses()

    def start(**options_and_parameters):
        options = {
            k: v
            for k, v in options_and_parameters.items()
            if k in EmulatorOptions.__dataclass_fields__
        }
        parameters = {k: v for k, v in options_and_parameters.items() if k not in options}
        emulator = IpaqEmulator(EmulatorOptions(**{**FREE_PORTS, **options})).start()
        emulator, process, ros = drivers.start(
            'ipaq_driver.node', '/trike', emulator, {**emulator.parameters, **parameters}
        )
        # services answer "not connected" until the control link is up: wait for the first poll
        assert wait_for(
            lambda: any(c[1] is L.SET_PARAMETERS for c in emulator.received_commands()), 20
        ), 'no connection'
        return emulator, process, ros

    yield start
    drivers.stop_all()


def test_tf_odom_to_base_link_and_the_camera_and_range_mounts(setup):
    emulator, process, ros = setup(camera_mount=[0.05, 0.0, 0.3, 0.0])
    dynamic, static = ros.listen_tf()
    odom = ros.listen(Odometry, 'odom')
    assert ros.spin_until(lambda: dynamic and static and odom, 20)

    def stamp_of(m):
        return (m.header.stamp.sec, m.header.stamp.nanosec)

    def base_link_transforms():
        return [t for m in dynamic for t in m.transforms if t.child_frame_id == 'base_link']

    def odom_stamps_with_a_transform():
        return {stamp_of(m) for m in odom} & {stamp_of(t) for t in base_link_transforms()}

    # /tf and odom match the driver at different moments, so the first messages of one may have
    # no partner in the other; from the first common instant on, every odom has its transform
    assert ros.spin_until(odom_stamps_with_a_transform, 10), 'no transform with an odom stamp'
    first = min(odom_stamps_with_a_transform())
    assert ros.spin_until(lambda: sum(stamp_of(m) > first for m in odom) >= 3, 10)
    later_odom = {stamp_of(m) for m in odom if stamp_of(m) > first}
    assert ros.spin_until(lambda: later_odom <= {stamp_of(t) for t in base_link_transforms()}, 5)
    assert {t.header.frame_id for t in base_link_transforms()} == {'odom'}
    mounts = {t.child_frame_id: t for t in static[-1].transforms}
    assert set(mounts) == {'ir_range', 'camera_optical_frame', 'base_footprint'}
    assert mounts['camera_optical_frame'].header.frame_id == 'camera'
    # the camera hangs on its pan/tilt neck (moving joints, /tf), the neck where camera_mount says
    assert ros.spin_until(
        lambda: (
            {'camera_pan_link', 'camera'}
            <= {t.child_frame_id for m in dynamic for t in m.transforms}
        ),
        5,
    )
    neck = {t.child_frame_id: t for m in dynamic for t in m.transforms}
    pan = neck['camera_pan_link'].transform.translation
    assert neck['camera_pan_link'].header.frame_id == 'base_link' and (pan.x, pan.z) == (0.05, 0.3)
    assert neck['camera'].header.frame_id == 'camera_pan_link'


def _reverse(ros, wheel):
    cmd = ros.node.create_publisher(Twist, '/trike/cmd_vel', 10)
    drive = Twist()
    drive.linear.x = -0.3
    for _ in range(15):
        cmd.publish(drive)
        ros.spin_until(lambda: False, 0.1)
    return wheel[-5:]


def test_signed_wheel_power_decodes_negative_when_configured(setup):
    emulator, process, ros = setup(
        units=Units(voltage_signed=True, current_signed=True),
        voltage_signed=True,
        current_signed=True,
    )
    wheel = ros.listen(WheelPower, 'wheel_power')
    assert ros.spin_until(lambda: wheel, 20)
    reversing = _reverse(ros, wheel)
    assert all(m.voltage < 0 and m.current < 0 for m in reversing), reversing
    assert all(abs(m.voltage) < 20 for m in reversing)  # volts, not 65 436 steps


def test_signed_wheel_power_read_unsigned_says_which_parameter(setup):
    emulator, process, ros = setup(units=Units(voltage_signed=True, current_signed=True))
    wheel = ros.listen(WheelPower, 'wheel_power')
    status = ros.diagnostic_status('ipaq_driver: robot')
    assert ros.spin_until(lambda: wheel, 20)
    reversing = _reverse(ros, wheel)
    assert all(m.voltage > 60 for m in reversing)  # the wrong answer, as issued
    assert ros.status_says(status, 'voltage_signed:=true', 5), status()
    assert status().level == DiagnosticStatus.WARN


def test_replies_that_never_parse_point_at_framed_responses(setup):
    emulator, process, ros = setup(framed_responses=False)  # the robot answers unframed
    status = ros.diagnostic_status('ipaq_driver: robot')
    assert ros.status_says(status, 'framed_responses (now true)', 15), status()
    assert status().level == DiagnosticStatus.ERROR


def _ok(response):
    assert response.success, response.message
    return response


def test_telemetry_tracking_bitmap_and_frame_topics(setup):
    emulator, process, ros = setup(ball_orbit=0.0)
    topics = {
        name: ros.listen(kind, name)
        for name, kind in (
            ('range', Range),
            ('wheel_power', WheelPower),
            ('odom', Odometry),
            ('tracking', TrackingResult),
            ('tracking/bitmap', Image),
            ('camera/image_raw', Image),
            ('tracking/camera_info', CameraInfo),
            ('camera/camera_info', CameraInfo),
        )
    }
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    assert ros.spin_until(
        lambda: topics['odom'] and topics['range'] and topics['wheel_power'], 20
    ), 'no telemetry'
    assert topics['range'][-1].radiation_type == Range.INFRARED
    assert topics['range'][-1].header.frame_id == 'ir_range'
    assert topics['odom'][-1].header.frame_id == 'odom'
    assert topics['odom'][-1].child_frame_id == 'base_link'

    _ok(ros.call(ColorTracking, 'start_color_tracking', ColorTracking.Request(**RED)))
    assert ros.spin_until(lambda: len(topics['tracking']) >= 10, 5)
    assert ros.spin_until(lambda: abs(topics['tracking'][-1].x - 40) <= 4, 5)  # camera follows
    assert topics['tracking'][-1].confidence > 100
    assert emulator.trike.pan != 128

    reply = _ok(ros.call(TextCommand, 'cmucam_command', TextCommand.Request(command='LM 1')))
    assert reply.reply == 'ACK\r'
    assert ros.spin_until(lambda: len(topics['tracking/bitmap']) >= 2, 5)
    bitmap = image_to_array(topics['tracking/bitmap'][-1])
    assert bitmap.shape == (48, 80) and set(np.unique(bitmap)) <= {0, 255} and bitmap.any()

    _ok(ros.call(Trigger, 'dump_frame', Trigger.Request()))
    assert ros.spin_until(lambda: topics['camera/image_raw'], 5)
    frame = topics['camera/image_raw'][-1]
    assert (frame.width, frame.height, frame.encoding) == (160, 143, 'rgb8')
    pixels = image_to_array(frame)
    assert ((pixels[..., 0] > 180) & (pixels[..., 1] < 90)).sum() > 20  # the ball
    # every image has its camera_info beside it, same stamp, in the optical frame
    for image_topic, info_topic in (
        ('camera/image_raw', 'camera/camera_info'),
        ('tracking/bitmap', 'tracking/camera_info'),
    ):
        image = topics[image_topic][-1]
        assert ros.spin_until(
            lambda image=image, info_topic=info_topic: any(
                i.header == image.header for i in topics[info_topic]
            ),
            5,
        )
        info = next(i for i in topics[info_topic] if i.header == image.header)
        assert image.header.frame_id == 'camera_optical_frame'
        assert (info.width, info.height) == (image.width, image.height)
        assert info.k[0] > 0 and info.k[2] == pytest.approx((image.width - 1) / 2)
    assert topics['tracking'][-1].header.frame_id == 'camera_optical_frame'

    _ok(ros.call(Trigger, 'stop_tracking', Trigger.Request()))
    assert emulator.tracking is None

    def robot_status():
        for array in reversed(diagnostics):
            for status in array.status:
                if status.name.endswith('robot') and status.level == DiagnosticStatus.OK:
                    return {kv.key: kv.value for kv in status.values}
        return None

    def carried():
        return [v for k, v in (robot_status() or {}).items() if k.endswith('carries')]

    # diagnostics come once a second: the one received first may predate the frame dump
    assert ros.spin_until(lambda: any('FrameDump' in v for v in carried()), 5)
    assert any('TrackingPacket' in v and 'Bitmap' in v for v in carried())


def test_drive_by_cmd_vel_then_timeout_stop_and_odometry_follows_the_ipaq(setup):
    emulator, process, ros = setup(cmd_vel_timeout=0.4)
    odom = ros.listen(Odometry, 'odom')
    assert ros.spin_until(lambda: odom, 20)
    cmd = ros.node.create_publisher(Twist, '/trike/cmd_vel', 10)
    drive = Twist()
    drive.linear.x, drive.angular.z = 0.4, 0.3
    for _ in range(20):
        cmd.publish(drive)
        ros.spin_until(lambda: False, 0.1)
    assert emulator.trike.v > 0.3
    steer = Units().raw_to_steering(Units().steering_to_raw(math.atan(0.35 * 0.3 / 0.4)))
    assert emulator.trike.steer == pytest.approx(steer)
    assert ros.spin_until(lambda: emulator.trike.v == 0.0, 3)  # cmd_vel stopped
    ros.spin_until(lambda: False, 0.3)
    x, y, yaw = emulator.trike.integrated
    last = odom[-1]
    assert x > 0.3 and y > 0.0
    assert last.pose.pose.position.x == pytest.approx(x, abs=0.01)
    assert last.pose.pose.position.y == pytest.approx(y, abs=0.01)
    assert 2 * math.atan2(
        last.pose.pose.orientation.z, last.pose.pose.orientation.w
    ) == pytest.approx(yaw, abs=0.01)
    assert any(m.twist.twist.linear.x > 0.3 for m in odom)


def test_services_reach_the_robot(setup):
    emulator, process, ros = setup()
    _ok(
        ros.call(
            SetPose,
            'set_pose',
            SetPose.Request(x=2.0, y=-1.0, theta=0.5, set_x=True, set_theta=True),
        )
    )
    assert emulator.trike.integrated[0] == pytest.approx(2.0)
    assert emulator.trike.integrated[2] == pytest.approx(0.5)
    _ok(ros.call(WindowTracking, 'start_window_tracking', WindowTracking.Request(mode=3)))
    assert emulator.tracking.letter is L.WINDOW_TRACK_NO_MOVE
    bad = ros.call(WindowTracking, 'start_window_tracking', WindowTracking.Request(mode=9))
    assert not bad.success and 'tracking mode' in bad.message
    _ok(ros.call(SetDistance, 'set_safety_distance', SetDistance.Request(distance=0.25)))
    assert emulator.trike.safety_raw == Units().range_to_raw(0.25)
    far = ros.call(SetDistance, 'set_safety_distance', SetDistance.Request(distance=3.0))
    assert not far.success and 'beyond' in far.message
    stem = _ok(
        ros.call(BytesCommand, 'brainstem_command', BytesCommand.Request(data=[2, 2, 30, 0x80]))
    )
    assert list(stem.reply[:3]) == [2, 3, 4]
    silent = ros.call(BytesCommand, 'brainstem_command', BytesCommand.Request(data=[8, 1, 0]))
    assert not silent.success and 'BrainStem failed to respond' in silent.message
    nck = ros.call(TextCommand, 'cmucam_command', TextCommand.Request(command='ZZ'))
    assert not nck.success and nck.reply == 'NCK\r'
    _ok(ros.call(Trigger, 'init_brainstem', Trigger.Request()))
    assert emulator.brainstem_inits == 1
    _ok(ros.call(Trigger, 'kill_motor', Trigger.Request()))
    assert emulator.trike.motor_killed
    pan_tilt = ros.node.create_publisher(JointState, '/trike/camera/pan_tilt', 10)
    pan_tilt.publish(JointState(name=['pan', 'tilt'], position=[0.5, -0.2]))
    units = Units()
    assert ros.spin_until(lambda: emulator.trike.pan_target == units.servo_to_raw(0.5), 3)
    assert emulator.trike.tilt_target == units.servo_to_raw(-0.2)


def test_camera_errors_become_clear_service_failures(setup):
    emulator, process, ros = setup(camera_timeout=True)
    response = ros.call(ColorTracking, 'start_color_tracking', ColorTracking.Request(**RED))
    assert not response.success and 'CMUcam timed out' in response.message


def test_swapped_stream_ports_and_terminate_service(setup):
    emulator, process, ros = setup(swap_stream_ports=True, ball_orbit=0.0)
    tracking = ros.listen(TrackingResult, 'tracking')
    frames = ros.listen(Image, 'camera/image_raw')
    _ok(ros.call(ColorTracking, 'start_color_tracking', ColorTracking.Request(mode=3, **RED)))
    _ok(ros.call(Trigger, 'dump_frame', Trigger.Request()))
    assert ros.spin_until(lambda: tracking and frames, 5)
    _ok(ros.call(Trigger, 'terminate_server', Trigger.Request()))
    assert emulator.terminated.wait(3)
    assert process.poll() is None  # the driver keeps trying to reconnect


@pytest.mark.parametrize('signum', [signal.SIGINT, signal.SIGTERM])
def test_shutdown_stops_the_wheel_and_tracking(setup, signum):
    emulator, process, ros = setup()
    odom = ros.listen(Odometry, 'odom')
    assert ros.spin_until(lambda: odom, 20)
    process.send_signal(signum)
    assert process.wait(20) == 0, process.stderr.read()
    last = emulator.received_commands()[-2:]
    assert [letter for _, letter, _ in last] == [L.SET_PARAMETERS, L.STOP_TRACKING]
    assert last[0][2][5] == p.MaskBits().mask('vel') and last[0][2][1] == 0


@pytest.mark.parametrize(
    'parameter, message',
    [
        ('control_port:=0', "'control_port' must be an integer within 1..65535"),
        ('p_mask_bits:=[0,1,2]', 'p_mask_bits needs 7 bit numbers'),
        ('p_mask_bits:=[0,1,2,3,4,5,5]', 'seven different numbers'),
        ('range_conversion:=sonar', "expected one of 'gp2d02', 'linear'"),
        ('velocity_scale:=0.0', 'velocity_scale'),
    ],
)
def test_bad_parameters_exit_2_with_a_clear_message(parameter, message):
    result = run_module('ipaq_driver.node', '--ros-args', '-p', parameter, timeout=30)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_unreachable_robot_reports_in_diagnostics_and_keeps_trying(setup):
    emulator, process, ros = setup()
    emulator.stop()
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)

    def control_link():
        for array in diagnostics:
            for status in array.status:
                if status.name.endswith('control link') and status.level != DiagnosticStatus.OK:
                    return status
        return None

    assert ros.spin_until(control_link, 10)
    assert wait_for(lambda: process.poll() is None, 0.1)


def test_safety_distance_parameter_is_sent_on_every_connect(setup):
    emulator, process, ros = setup(safety_distance=0.25)
    raw = Units().range_to_raw(0.25)
    assert wait_for(lambda: emulator.trike.safety_raw == raw, 20)
    emulator.trike.safety_raw = 0  # as after an iPaq restart
    emulator.drop_clients()
    assert wait_for(lambda: emulator.trike.safety_raw == raw, 20)


def test_cmd_vel_as_twist_stamped_drives_the_trike(setup):
    emulator, process, ros = setup()
    cmd = ros.node.create_publisher(TwistStamped, '/trike/cmd_vel', 10)
    # at 10 Hz as a controller sends, until the trike drives: the driver looks at cmd_vel's
    # publishers every 0.5 s, and on a loaded machine discovery takes longer (seen in CI)
    for _ in range(100):
        msg = TwistStamped()
        msg.header.stamp = ros.node.get_clock().now().to_msg()
        msg.twist.linear.x = 0.3
        cmd.publish(msg)
        ros.spin_until(lambda: False, 0.1)
        if emulator.trike.v_setpoint == pytest.approx(0.3, abs=0.02):
            break
    assert emulator.trike.v_setpoint == pytest.approx(0.3, abs=0.02)


def test_default_mounts_optical_frame_and_stable_status_names(setup):
    emulator, process, ros = setup()
    dynamic, static = ros.listen_tf()
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    assert ros.spin_until(lambda: static and latest_status(diagnostics, 'tracking port link'), 20)
    frames = {t.child_frame_id: t for t in static[-1].transforms}
    assert ros.spin_until(
        lambda: any(t.child_frame_id == 'camera_pan_link' for m in dynamic for t in m.transforms),
        10,
    )
    neck = next(t for m in dynamic for t in m.transforms if t.child_frame_id == 'camera_pan_link')
    camera = neck.transform.translation
    assert (camera.x, camera.z) == (0.10, 0.25)  # not identity: the documented guess
    optical = frames['camera_optical_frame'].transform.rotation
    assert (optical.x, optical.y, optical.z, optical.w) == (-0.5, 0.5, -0.5, 0.5)
    names = {s.name for array in diagnostics for s in array.status}
    assert {
        'trike/ipaq_driver: control link',
        'trike/ipaq_driver: frame_dump port link',
        'trike/ipaq_driver: tracking port link',
        'trike/ipaq_driver: robot',
    } <= names
    assert not any(ch.isdigit() for name in names for ch in name)  # no port numbers
    hardware = latest_status(diagnostics, ': robot').hardware_id
    assert hardware == f'iPaq robot 127.0.0.1:{emulator.parameters["control_port"]}'
