"""Robot models: every robot (and every P2OS model) is a URDF the official parser reads, every
frame a driver puts on TF is a link of its URDF and hangs in one tree, and moving joints follow
joint_states. Offline for the model tables, over DDS for the running drivers."""

import math

import pytest
from helpers import start_module
from ros_observer import Observer, parents_by_child, reachable
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from urdf_parser_py.urdf import URDF

from ipaq_driver import description as ipaq_description
from legacy_robot_common.robot_model import DESCRIPTION_QOS, quaternion_rpy
from legacy_robot_interfaces.srv import JointCommand
from p2os_driver import description as p2os_description
from p2os_driver.models import MODELS
from pleo_driver import description as pleo_description
from pleo_driver import protocol as pleo

ROBOTS = ('p2os', 'ipaq', 'pleo', 'aibo')


# ---- the model tables, offline ----------------------------------------------------------------
@pytest.mark.parametrize('subclass', sorted(MODELS))
def test_every_p2os_model_is_a_urdf_with_its_sonar_wheels_and_size(subclass):
    model = MODELS[subclass]
    robot = URDF.from_xml_string(p2os_description.describe(model, 'base_link', 'sonar_').xml())
    assert robot.get_root() == 'base_link'
    links = {link.name for link in robot.links}
    assert {f'sonar_{i}' for i in range(len(model.sonar))} <= links
    for i, (x, y, heading) in enumerate(model.sonar):  # the table's poses, in metres
        origin = robot.joint_map[f'sonar_{i}_joint'].origin
        assert origin.xyz[:2] == pytest.approx([x / 1000, y / 1000])
        assert origin.rpy[2] == pytest.approx(math.radians(heading))
    wheels = {joint.name for joint in robot.joints if joint.type == 'continuous'}
    assert wheels == {name for name, _, _ in p2os_description.wheel_joints(model)}
    body = robot.link_map['base_link'].visuals[0].geometry.size
    assert body[0] == pytest.approx(model.length / 1000)  # the table's length


def test_the_pleo_model_has_every_joint_the_driver_publishes_with_the_joint_table_limits():
    robot = URDF.from_xml_string(pleo_description.describe('base_link', 'p1_').xml())
    for joint in pleo.JOINTS:
        urdf_joint = robot.joint_map[f'p1_{joint.name}']
        assert urdf_joint.type == 'revolute'
        assert (urdf_joint.limit.lower, urdf_joint.limit.upper) == pytest.approx(
            (math.radians(joint.low), math.radians(joint.high))
        )
    assert robot.get_root() == 'base_link'


def test_the_trikebot_camera_hangs_on_a_pan_tilt_neck():
    """Positive pan looks left and positive tilt up, as the emulator's camera (and so the
    pan/tilt command and the tracking packets' servo positions) turn."""
    from legacy_robot_common.model_picture import link_poses
    from legacy_robot_common.robot_model import joint_transform

    robot = URDF.from_xml_string(
        ipaq_description.describe(
            'base_link',
            'camera',
            'ir_range',
            0.35,
            [0.1, 0, 0.25, 0],
            [0.15, 0, 0.1, 0],
            (-1.5, 1.5),
        ).xml()
    )
    assert robot.get_chain('base_link', 'camera', links=False) == ['pan', 'tilt']
    assert robot.joint_map['pan'].origin.xyz == [0.1, 0, 0.25]
    moved = {
        'camera_pan_link': joint_transform(robot.joint_map['pan'], 0.5, None),
        'camera': joint_transform(robot.joint_map['tilt'], 0.3, None),
    }
    looking = link_poses(robot, moved)['camera'][:3, 0]  # the camera's x axis in base
    assert looking[1] > 0 and looking[2] == pytest.approx(math.sin(0.3))  # left, and up


# ---- the running drivers ------------------------------------------------------------------------
def _links(description):
    return {link.name for link in URDF.from_xml_string(description).links}


def _transforms(messages, child):
    return [t for m in messages for t in m.transforms if t.child_frame_id == child]


def test_every_robots_tf_frames_are_links_of_its_model_and_joints_follow(tmp_path):
    params = tmp_path / 'encoders.yaml'
    params.write_text('/p2os/p2os_driver:\n  ros__parameters:\n    encoder_stream: true\n')
    process = start_module(
        'legacy_robot_bringup.compose', *ROBOTS, '--sim', '--params-file', str(params)
    )
    ros = Observer('')
    try:
        dynamic, static = ros.listen_tf()
        descriptions = {
            robot: ros.listen(String, f'{robot}/robot_description', DESCRIPTION_QOS)
            for robot in ROBOTS
        }
        joints = {
            robot: ros.listen(JointState, f'{robot}/joint_states')
            for robot in ('p2os', 'ipaq', 'pleo')
        }
        # the iPaq reports its neck only while tracking: its joint_states come from a command
        assert ros.spin_until(
            lambda: all(descriptions.values()) and joints['p2os'] and joints['pleo'], 60
        ), (
            process.stderr.read()
            if process.poll() is not None
            else f'missing: {[r for r in ROBOTS if not descriptions[r]]}, '
            f'{[r for r, j in joints.items() if not j]}'
        )
        _pleo_tail_follows(ros, joints['pleo'], dynamic)
        _ipaq_pan_follows(ros, joints['ipaq'], dynamic)
        ros.spin_until(lambda: False, 1.5)  # every joint republished at least once
        tree = parents_by_child(dynamic + static)
        assert all(len(parents) == 1 for parents in tree.values()), tree
        tree = {child: parents.pop() for child, parents in tree.items()}
        for robot in ROBOTS:
            prefix = f'{robot}/'
            robot_model = URDF.from_xml_string(descriptions[robot][-1].data)
            links = {prefix + link.name for link in robot_model.links}
            on_tf = {
                frame for edge in tree.items() for frame in edge if frame.startswith(prefix)
            } - {f'{prefix}odom'}
            assert on_tf <= links, (robot, on_tf - links)
            root = (
                f'{prefix}odom'
                if robot in ('p2os', 'ipaq', 'aibo')
                else prefix + robot_model.get_root()
            )
            assert links - {root} <= reachable(tree, root), (robot, links - reachable(tree, root))
            names = {joint.name for joint in robot_model.joints}
            for message in joints.get(robot, []):
                assert set(message.name) <= names, (robot, message.name)
        assert {'left_wheel_joint', 'right_wheel_joint'} <= set(joints['p2os'][-1].name)
    finally:
        ros.close()
        process.terminate()
        process.wait(20)


def _pleo_tail_follows(ros, joints, dynamic):
    def move_tail():
        return ros.call(
            JointCommand,
            'pleo/joint_command',
            JointCommand.Request(joint='tail_horizontal', position=math.radians(30), wait=True),
        )

    answer = move_tail()
    for _ in range(20):  # dumps may come before the monitor's startup commands are done
        if answer.success or 'not connected' not in answer.message:
            break
        ros.spin_until(lambda: False, 0.5)
        answer = move_tail()
    assert answer.success, answer.message
    index = [j.name for j in pleo.JOINTS].index('tail_horizontal')
    assert ros.spin_until(lambda: abs(joints[-1].position[index] - math.radians(30)) < 0.02, 5)
    _follows(ros, joints[-1], 'tail_horizontal', dynamic, 'pleo/tail_base', axis=2)


def _ipaq_pan_follows(ros, joints, dynamic):
    command = ros.node.create_publisher(JointState, '/ipaq/camera/pan_tilt', 10)
    ros.spin_until(lambda: command.get_subscription_count() > 0, 5)
    command.publish(JointState(name=['pan'], position=[0.5]))
    assert ros.spin_until(
        lambda: joints and 'pan' in joints[-1].name and abs(joints[-1].position[0] - 0.5) < 0.02, 5
    ), joints[-1:]
    _follows(ros, joints[-1], 'pan', dynamic, 'ipaq/camera_pan_link', axis=2)


def _follows(ros, joint_state, name, dynamic, child, axis):
    """The transform of child stamped with joint_state's stamp (the driver sends it right after
    the message) turns by the joint's position."""
    position = dict(zip(joint_state.name, joint_state.position, strict=False))[name]
    stamp = (joint_state.header.stamp.sec, joint_state.header.stamp.nanosec)

    def same_stamp():
        return [
            t
            for t in _transforms(dynamic, child)
            if (t.header.stamp.sec, t.header.stamp.nanosec) == stamp
        ]

    assert ros.spin_until(same_stamp, 5), f'no {child} transform with the joint_states stamp'
    assert quaternion_rpy(same_stamp()[-1].transform.rotation)[axis] == pytest.approx(
        position, abs=1e-6
    )


# ---- the demo's model pictures ------------------------------------------------------------------
def test_the_model_picture_takes_the_live_pose_of_each_joint():
    from legacy_robot_common.model_picture import link_poses
    from legacy_robot_common.robot_model import joint_transform

    robot = URDF.from_xml_string(pleo_description.describe('base_link').xml())
    tail = robot.joint_map['tail_horizontal']
    moved = {'r/tail_base': joint_transform(tail, math.radians(30), None, 'r/')}
    at_rest, posed = link_poses(robot, {}, 'r/'), link_poses(robot, moved, 'r/')
    assert at_rest['tail'][1, 0] == pytest.approx(0.0)  # tail straight back
    assert math.degrees(math.atan2(posed['tail'][1, 0], posed['tail'][0, 0])) == pytest.approx(30)
    assert set(posed) == {link.name for link in robot.links}  # every link placed


def test_the_demo_draws_each_robot_from_its_model(tmp_path):
    from helpers import run_module
    from PIL import Image

    result = run_module(
        'legacy_robot_bringup.demo',
        'pleo',
        'ipaq',
        '--duration',
        '8',
        '--output',
        str(tmp_path),
        '--plain',
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for robot in ('pleo', 'ipaq'):
        path = tmp_path / robot / 'model.png'
        assert f'{path}' in result.stdout
        with Image.open(path) as picture:
            assert picture.size[0] > 500 and len(picture.getcolors(1 << 16) or ()) > 10
