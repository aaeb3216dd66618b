"""aibo_driver with model ers7 and protocol urbi, as a real process against the URBI emulator,
observed over DDS from this process."""

import io
import math
import wave

import pytest
from geometry_msgs.msg import Twist
from helpers import wait_for
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState
from ros_observer import DriverProcesses
from sensor_msgs.msg import (
    BatteryState,
    CameraInfo,
    CompressedImage,
    Image,
    Imu,
    JointState,
    Range,
)

from aibo_driver import urbi
from aibo_driver.emulator_urbi import UrbiEmulator, UrbiOptions
from aibo_driver.models import MODELS
from legacy_robot_interfaces.msg import NamedValues
from legacy_robot_interfaces.srv import PlayNamed, UploadFile


@pytest.fixture
def setup():
    drivers = DriverProcesses()

    def start(**parameters):
        model = parameters.pop('model', 'ers7')
        emulator = UrbiEmulator(UrbiOptions(port=0, model=model, speed_scale=5.0)).start()
        emulator, process, ros = drivers.start(
            'aibo_driver.node',
            '/dog7',
            emulator,
            {**emulator.parameters, 'joint_state_rate': 10.0, 'sensor_rate': 1.0, **parameters},
        )
        return emulator, process, ros

    yield start
    drivers.stop_all()


def test_an_ers7_over_urbi_publishes_every_stream_and_obeys_cmd_vel_and_head(setup, tmp_path):
    emulator, process, ros = setup()
    topics = {
        name: ros.listen(kind, name)
        for name, kind in (
            ('camera/image_raw', Image),
            ('camera/image_raw/compressed', CompressedImage),
            ('camera/camera_info', CameraInfo),
            ('joint_states', JointState),
            ('imu', Imu),
            ('ir_range', Range),
            ('ir_range_near', Range),
            ('chest_range', Range),
            ('battery', BatteryState),
        )
    }
    assert ros.spin_until(lambda: all(topics.values()), 30), {
        name: len(messages) for name, messages in topics.items()
    }
    image = topics['camera/image_raw'][-1]
    assert (image.width, image.height, image.encoding) == (208, 160, 'rgb8')
    compressed = topics['camera/image_raw/compressed'][-1]
    assert bytes(compressed.data[:2]) == b'\xff\xd8'  # the dog's JPEG, as sent
    info = topics['camera/camera_info'][-1]
    assert info.k[0] == pytest.approx(104 / math.tan(math.radians(56.9) / 2), rel=1e-3)
    joints = topics['joint_states'][-1]
    assert set(joints.name) == {j.name for j in MODELS['ers7'].joints}
    assert topics['imu'][-1].linear_acceleration.z == pytest.approx(-9.81)
    assert topics['chest_range'][-1].header.frame_id.endswith('chest_ir')
    assert topics['battery'][-1].percentage == pytest.approx(0.83)

    cmd_vel = ros.node.create_publisher(Twist, '/dog7/cmd_vel', 10)
    forward = Twist()
    forward.linear.x = 0.05
    assert ros.spin_until(lambda: cmd_vel.publish(forward) or emulator.pose()[0] > 0.005, 20), (
        emulator.pose()
    )
    # silence: the velocity watchdog stops the walk
    assert wait_for(lambda: 'robot.stopwalk()' in emulator.commands, 10)

    head = ros.node.create_publisher(JointState, '/dog7/head_command', 10)
    command = JointState(name=['headPan', 'neck'], position=[math.radians(30), math.radians(-20)])
    dog = emulator.dog
    assert ros.spin_until(
        lambda: (
            head.publish(command) or (dog.joints['headPan'] == 30 and dog.joints['neck'] == -20)
        ),
        10,
    ), dog.joints

    reply = ros.call(PlayNamed, 'play_action', PlayNamed.Request(name='sit'))
    assert reply.success, reply.message
    assert wait_for(lambda: dog.posture == 'sit', 10)
    refused = ros.call(PlayNamed, 'play_action', PlayNamed.Request(name='dance'))
    assert not refused.success and 'valid: sit' in refused.message

    sound = tmp_path / 'hello.wav'
    sound.write_bytes(urbi.wav(bytes(2 * 22050), 22050, 16))  # 1 s of silence at 22.05 kHz
    reply = ros.call(UploadFile, 'play_sound', UploadFile.Request(path=str(sound)))
    assert reply.success, reply.message
    assert wait_for(lambda: len(dog.sounds) == 1, 10)
    with wave.open(io.BytesIO(dog.sounds[0])) as played:
        assert (played.getframerate(), played.getsampwidth()) == (16000, 2)  # the ERS-7's
    missing = ros.call(UploadFile, 'play_sound', UploadFile.Request(path=str(tmp_path / 'no')))
    assert not missing.success and 'cannot read' in missing.message
    upload = ros.call(UploadFile, 'upload_file', UploadFile.Request(path=str(sound)))
    assert not upload.success and 'not over URBI' in upload.message

    leds = ros.node.create_publisher(NamedValues, '/dog7/leds', 10)
    lit = NamedValues(names=['ledF3', 'ledNope'], values=[1.0, 1.0])
    assert ros.spin_until(lambda: leds.publish(lit) or dog.leds['ledF3'] == 1.0, 10)

    def change(transition):
        request = ChangeState.Request(transition=Transition(id=transition))
        return ros.call(ChangeState, 'aibo_driver/change_state', request).success

    stops = emulator.commands.count('stop drvcam')
    assert change(Transition.TRANSITION_DEACTIVATE)  # the dog's jobs end with it
    assert wait_for(lambda: emulator.commands.count('stop drvcam') == stops + 1, 10)
    assert change(Transition.TRANSITION_ACTIVATE)
    assert wait_for(lambda: emulator.commands.count('drvcam: loop {camera.val; noop}') == 2, 10), (
        emulator.commands[-8:]
    )


def test_an_ers7_over_rcodeplus_is_refused_with_the_valid_combinations(setup):
    from helpers import run_module

    result = run_module(
        'aibo_driver.node',
        '--ros-args',
        '-p',
        'model:=ers7',
        '-p',
        'protocol:=rcodeplus',
        timeout=60,
    )
    assert result.returncode != 0
    assert 'ers7/urbi' in result.stderr + result.stdout


def test_an_ers210_over_urbi_publishes_its_own_joints_camera_and_range(setup):
    emulator, process, ros = setup(model='ers210')
    status = ros.diagnostic_status('dog')
    topics = {
        name: ros.listen(kind, name)
        for name, kind in (
            ('camera/image_raw', Image),
            ('joint_states', JointState),
            ('ir_range', Range),
            ('imu', Imu),
        )
    }
    assert ros.spin_until(lambda: all(topics.values()), 30), {
        name: len(messages) for name, messages in topics.items()
    }
    image = topics['camera/image_raw'][-1]
    assert (image.width, image.height) == (176, 144)
    assert set(topics['joint_states'][-1].name) == {j.name for j in MODELS['ers210'].joints}
    assert ros.spin_until(lambda: status() is not None and status().message == 'streaming', 10), (
        status() and status().message
    )
