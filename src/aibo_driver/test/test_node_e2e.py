"""aibo_driver as a real process against the emulator, observed over DDS from this process."""

import math

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from helpers import run_module, wait_for
from ros_observer import DriverProcesses, latest_status
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from std_msgs.msg import String

from aibo_driver import protocol as p
from aibo_driver.emulator import AiboEmulator, EmulatorOptions
from legacy_robot_common.driver_node import LATCHED
from legacy_robot_common.messages import image_to_array
from legacy_robot_interfaces.msg import (
    AiboSensorWords,
    AudioData,
    AudioDataStamped,
    AudioInfo,
    ColorDetection,
    SemanticEvent,
    VoiceMatches,
)
from legacy_robot_interfaces.srv import SetCameraMode, SetProperty, TextCommand, UploadFile


@pytest.fixture
def setup():
    drivers = DriverProcesses()

    def start(options=None, **parameters):
        options = options or EmulatorOptions()
        options.telemetry_port = options.rcode_port = 0
        emulator = AiboEmulator(options).start()
        emulator, process, ros = drivers.start(
            'aibo_driver.node', '/dog', emulator, {**emulator.parameters, **parameters}
        )
        assert wait_for(lambda: emulator.requests['get_audio'] > 0, 20), 'no connection'
        if emulator.rcode is not None:  # rcode_command answers "not connected" until then
            arrays = []
            ros.node.create_subscription(DiagnosticArray, '/diagnostics', arrays.append, 10)

            def rcode_up():
                status = latest_status(arrays, 'RCODE link')
                return status is not None and status.level == DiagnosticStatus.OK

            assert ros.spin_until(rcode_up, 10), 'RCODE link not up'
        return emulator, process, ros

    yield start
    drivers.stop_all()


def test_every_topic_and_service_with_rcodeplus(setup, tmp_path):
    emulator, process, ros = setup(property_presets=['gain_high=2:3'], rput_enabled=True)
    topics = {
        name: ros.listen(kind, name)
        for name, kind in (
            ('camera/image_raw', Image),
            ('camera/image_raw/compressed', CompressedImage),
            ('camera/camera_info', CameraInfo),
            ('color_detection', ColorDetection),
            ('audio/audio', AudioData),
            ('audio/audio_stamped', AudioDataStamped),
            ('sensor_words', AiboSensorWords),
            ('rcode/output', String),
        )
    }
    info = ros.listen(AudioInfo, 'audio/audio_info', LATCHED)
    diagnostics = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', diagnostics.append, 10)
    assert ros.spin_until(
        lambda: all(
            topics[t]
            for t in ('camera/image_raw', 'color_detection', 'sensor_words', 'audio/audio')
        ),
        20,
    )
    image = topics['camera/image_raw'][-1]
    assert (image.width, image.height, image.encoding) == (176, 144, 'rgb8')
    assert image.header.frame_id == 'aibo_camera_optical_frame'
    assert ros.spin_until(lambda: topics['camera/camera_info'], 5)
    assert topics['camera/camera_info'][-1].k[0] == pytest.approx(88 / np.tan(np.radians(28.8)))
    color = topics['color_detection'][-1]
    assert color.channel_labels[0] == 'pink ball' and len(color.channel_labels) == 8
    assert image_to_array(color.mask).shape == (72, 88)
    stamped = topics['audio/audio_stamped'][-1] if topics['audio/audio_stamped'] else None
    assert stamped is None or len(stamped.audio.data) == 2048
    assert ros.spin_until(lambda: info, 5)
    assert (info[0].channels, info[0].sample_rate, info[0].sample_format) == (2, 16000, 'S16LE')
    sequences = [m.sequence for m in topics['sensor_words']]
    assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))

    reply = ros.call(SetProperty, 'set_property', SetProperty.Request(preset='gain_high'))
    assert reply.success, reply.message
    assert ros.call(SetProperty, 'set_property', SetProperty.Request(index=5, value=1)).success
    # the reply comes when the bytes are sent (the dog answers nothing): wait for the dog
    assert wait_for(lambda: emulator.properties == [(2, 3), (5, 1)], 5), emulator.properties
    reply = ros.call(SetProperty, 'set_property', SetProperty.Request(preset='turbo'))
    assert not reply.success and 'gain_high' in reply.message

    reply = ros.call(
        TextCommand, 'rcode_command', TextCommand.Request(command='PRINT:"v%d":AP_Version')
    )
    assert reply.success and reply.reply == 'v252'
    refused = ros.call(TextCommand, 'rcode_command', TextCommand.Request(command='FOO'))
    assert not refused.success and refused.message == 'ERROR: unknown command FOO', refused
    assert ros.spin_until(lambda: any(m.data == 'v252' for m in topics['rcode/output']), 5)

    motion = tmp_path / 'wave.mtn'
    motion.write_bytes(b'MTN' + bytes(500))
    reply = ros.call(UploadFile, 'upload_file', UploadFile.Request(path=str(motion)))
    assert reply.success and reply.bytes_sent == 503, reply.message
    assert wait_for(lambda: emulator.files == {'wave.mtn': b'MTN' + bytes(500)}, 5)
    reply = ros.call(UploadFile, 'upload_file', UploadFile.Request(path=str(tmp_path / 'nope')))
    assert not reply.success and 'cannot read' in reply.message

    reply = ros.call(SetCameraMode, 'set_camera_mode', SetCameraMode.Request(mode='jpeg'))
    assert reply.success, reply.message
    assert ros.spin_until(lambda: topics['camera/image_raw/compressed'], 10)
    jpeg = topics['camera/image_raw/compressed'][-1]
    assert jpeg.format == 'rgb8; jpeg compressed bgr8' and bytes(jpeg.data[:2]) == b'\xff\xd8'
    reply = ros.call(SetCameraMode, 'set_camera_mode', SetCameraMode.Request(mode='mpeg'))
    assert not reply.success and 'camera mode' in reply.message

    assert ros.spin_until(lambda: latest_status(diagnostics, ': dog') is not None, 5)
    dog = latest_status(diagnostics, ': dog')
    assert dog.level == DiagnosticStatus.OK, dog.message
    values = {v.key: v.value for v in dog.values}
    assert values['product'] == 'rcodeplus' and values['audio chunks lost'] == '0'


@pytest.mark.parametrize(
    'driver_layout, taken',
    [('name32,size32,data', True), ('name0,size32,data', False)],
    ids=['matching', 'mismatched'],
)
def test_rput_without_a_reply_is_unconfirmed_and_a_dropped_link_is_a_failure(
    setup, tmp_path, driver_layout, taken
):
    """A dog that wants a uint32 name length, name, uint32 size, data and sends no reply."""
    emulator, process, ros = setup(
        EmulatorOptions(rput=p.RputLayout(['name32', 'size32', 'data'])),
        rput_enabled=True,
        rput_layout=driver_layout,
    )
    motion = tmp_path / 'bow.mtn'
    motion.write_bytes(b'MTN' + bytes(2997))
    reply = ros.call(UploadFile, 'upload_file', UploadFile.Request(path=str(motion)))
    if taken:
        assert reply.success and reply.bytes_sent == 3000, reply.message
        assert 'unconfirmed' in reply.message and emulator.files == {
            'bow.mtn': motion.read_bytes()
        }
    else:
        assert not reply.success and reply.bytes_sent == 0
        assert 'closed the link' in reply.message and 'rput_layout' in reply.message
        assert emulator.files == {}


def start_unconnected(setup_drivers, options, **parameters):
    """The driver against a dog it cannot talk to (the fixture's wait for audio would fail)."""
    options.telemetry_port = options.rcode_port = 0
    emulator = AiboEmulator(options).start()
    return setup_drivers.start(
        'aibo_driver.node',
        '/dog',
        emulator,
        {**emulator.parameters, 'rcode_enabled': False, **parameters},
    )


@pytest.fixture
def drivers():
    started = DriverProcesses()
    yield started
    started.stop_all()


def test_a_dog_that_hangs_up_after_a_request_names_the_opcode(drivers):
    # the dog's GETAUDIO byte is another one than the driver's: it drops the link at ours
    opcodes = p.OpcodeMap({'get_audio': p.DEFAULT_OPCODES[p.Op.GET_AUDIO] + 0x40})
    emulator, process, ros = start_unconnected(
        drivers, EmulatorOptions(opcodes=opcodes, close_on_unknown=True)
    )
    status = ros.diagnostic_status(': dog')
    assert ros.status_says(status, 'closed the link right after', 20), status()
    assert 'get_audio' in status().message and 'opcodes.get_audio' in status().message
    assert status().level == DiagnosticStatus.ERROR


def test_replies_that_never_parse_point_at_version_size_prefix(drivers):
    emulator, process, ros = start_unconnected(drivers, EmulatorOptions(version_size_prefix=True))
    status = ros.diagnostic_status(': dog')
    assert ros.status_says(status, 'version_size_prefix (now false)', 20), status()
    assert status().level == DiagnosticStatus.ERROR


def test_lifeplus_voice_and_semantic_topics(setup):
    emulator, process, ros = setup(EmulatorOptions(product='lifeplus'))
    voice = ros.listen(VoiceMatches, 'voice')
    semantic = ros.listen(SemanticEvent, 'semantic')
    assert ros.spin_until(lambda: voice and len(semantic) >= 2, 15)
    assert len(voice[0].ids) == 10 and len(semantic[0].raw) == 10
    assert semantic[1].sequence == semantic[0].sequence + 1
    reply = ros.call(TextCommand, 'rcode_command', TextCommand.Request(command='PRINT:"x"'))
    assert not reply.success and 'rcode_enabled' in reply.message
    reply = ros.call(UploadFile, 'upload_file', UploadFile.Request(path='/etc/hostname'))
    assert not reply.success


def test_a_lifeplus_dog_turns_the_rcode_link_off_once(setup):
    """rcode_enabled is true by default; a LifePlus dog has no RCodePlus pipe: said once,
    no connect attempt every few seconds for ever."""
    emulator, process, ros = setup(EmulatorOptions(product='lifeplus'), rcode_enabled=True)
    arrays = []
    ros.node.create_subscription(DiagnosticArray, '/diagnostics', arrays.append, 10)

    def rcode_link():
        return latest_status(arrays, 'RCODE link')

    assert ros.spin_until(
        lambda: rcode_link() is not None and 'LifePlus has no RCodePlus' in rcode_link().message,
        15,
    ), rcode_link()
    assert rcode_link().level == DiagnosticStatus.OK
    failures = {v.key: v.value for v in rcode_link().values}['connect failures']
    ros.spin_until(lambda: False, 6.0)
    assert {v.key: v.value for v in rcode_link().values}['connect failures'] == failures
    reply = ros.call(TextCommand, 'rcode_command', TextCommand.Request(command='PRINT:"x"'))
    assert not reply.success and 'LifePlus has no RCodePlus' in reply.message


def test_reconnects_when_the_dog_comes_back(setup):
    emulator, process, ros = setup()
    images = ros.listen(Image, 'camera/image_raw')
    assert ros.spin_until(lambda: images, 20)
    port = emulator.telemetry.port
    emulator.stop()
    emulator.options.telemetry_port = port
    revived = AiboEmulator(emulator.options).start()
    try:
        count = len(images)
        assert ros.spin_until(lambda: len(images) > count + 3, 20)
    finally:
        revived.stop()
    assert process.poll() is None


@pytest.mark.parametrize(
    'parameters, complaint',
    [
        (['-p', 'yuv10_layout:=zigzag'], 'yuv10_layout'),
        (['-p', 'opcodes.get_jpeg:=3'], 'share the byte 3'),
        (['-p', 'property_presets:=[gain]'], 'name=index:value'),
        (['-p', 'audio_poll_rate:=1.0'], 'audio_poll_rate'),
    ],
)
def test_bad_parameters_exit_2_with_a_clear_message(parameters, complaint):
    result = run_module('aibo_driver.node', '--ros-args', *parameters, timeout=30)
    assert result.returncode == 2
    assert complaint in result.stderr


def test_no_audio_chunk_lost_in_two_minutes(setup):
    """Real-dog pacing with every stream on: the sequence numbers reaching ROS have no gap."""
    emulator, process, ros = setup()
    words = ros.listen(AiboSensorWords, 'sensor_words', 100)
    ros.listen(Image, 'camera/image_raw')
    ros.listen(ColorDetection, 'color_detection')
    assert ros.spin_until(lambda: words, 20)
    overruns = emulator.audio.overruns  # the ring overflowed before the driver connected
    ros.spin_until(lambda: False, 120.0)
    sequences = [m.sequence for m in words]
    assert len(sequences) >= 0.95 * 120 / p.CHUNK_SECONDS
    assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))
    assert emulator.audio.overruns == overruns


def test_body_head_camera_chain_and_optical_frame_on_tf_static(setup):
    emulator, process, ros = setup(head_mount=[0.08, 0.0, 0.09, 0.0, -0.3, 0.0])
    dynamic, static = ros.listen_tf()
    info = ros.listen(CameraInfo, 'camera/camera_info')

    def moving():
        return {t.child_frame_id: t for m in dynamic for t in m.transforms}

    assert ros.spin_until(lambda: static and info and 'aibo_neck' in moving(), 20)
    frames = {t.child_frame_id: t for m in static for t in m.transforms}
    assert frames['aibo_camera'].header.frame_id == 'aibo_head'
    assert frames['aibo_camera_optical_frame'].header.frame_id == 'aibo_camera'
    # the head mount is the neck joint's origin: Head_Tilt (0 on the emulated dog) turns it
    neck = moving()['aibo_neck']
    assert neck.header.frame_id == 'aibo_base'
    assert neck.transform.translation.z == pytest.approx(0.09)
    assert 2 * math.asin(neck.transform.rotation.y) == pytest.approx(-0.3)  # pitched down
    assert moving()['aibo_head'].header.frame_id == 'aibo_head_pan'
    assert info[-1].header.frame_id == 'aibo_camera_optical_frame'
