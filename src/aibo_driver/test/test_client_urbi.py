"""The URBI client against the URBI emulator over real loopback TCP."""

import collections
import io
import wave

import numpy as np
import pytest
from helpers import wait_for

from aibo_driver.client import AudioReply, CameraFrame
from aibo_driver.client_urbi import (
    Battery,
    JointValues,
    SensorValues,
    UrbiClient,
    UrbiConnected,
    UrbiError,
    UrbiSettings,
    to_model_format,
)
from aibo_driver.emulator_urbi import UrbiEmulator, UrbiOptions
from aibo_driver.models import MODELS


class Session:
    def __init__(self, emulator_model='ers7', **settings):
        self.emulator = UrbiEmulator(
            UrbiOptions(port=0, model=emulator_model, speed_scale=10.0)
        ).start()
        self.records = collections.defaultdict(list)
        settings.setdefault('joint_rate', 20.0)
        settings.setdefault('sensor_rate', 20.0)
        self.client = UrbiClient(
            UrbiSettings(host='127.0.0.1', port=self.emulator.server.port, **settings)
        )
        self.client.on_record = lambda record: self.records[type(record)].append(record)
        self.client.start()

    def wait(self, kind, count=1, timeout=10.0):
        assert wait_for(lambda: len(self.records[kind]) >= count, timeout), (
            f'{count} {kind.__name__} wanted, got {len(self.records[kind])} '
            f'(last error: {self.client.counters.last_error!r})'
        )
        return self.records[kind][-1]

    def close(self):
        self.client.stop()
        self.emulator.stop()


@pytest.fixture
def session():
    session = Session()
    yield session
    session.close()


def test_every_stream_arrives_as_the_records_the_node_publishes(session):
    connected = session.wait(UrbiConnected)
    assert 'URBI Kernel' in connected.kernel and connected.ident.startswith('U')
    frame = session.wait(CameraFrame, 3)
    assert frame.jpeg[:2] == b'\xff\xd8' and frame.rgb.shape == (160, 208, 3)
    audio = session.wait(AudioReply, 3)
    assert audio.chunks[0].pcm.shape == (512, 2) and audio.chunks[0].pcm.any()
    joints = session.wait(JointValues, 2)
    assert set(joints.degrees) == {j.name for j in MODELS['ers7'].joints}
    assert joints.degrees['legLF3'] == 30.0
    sensors = session.wait(SensorValues, 2)
    assert sensors.accel[2] == pytest.approx(-9.81)
    assert set(sensors.ranges) == {'distanceNear', 'distance', 'distanceChest'}
    assert 0.2 <= sensors.ranges['distance'] <= 1.5
    assert session.wait(Battery).fraction == pytest.approx(0.83)
    assert session.client.counters.bad_frames == 0


def test_drive_walks_and_the_watchdog_stops_the_walk(session):
    session.wait(UrbiConnected)
    session.client.drive(0.05, 0.0)
    dog = session.emulator.dog
    assert wait_for(lambda: dog.walk is not None, 5.0)
    # no new command: the watchdog stops the walk
    assert wait_for(lambda: 'robot.stopwalk()' in session.emulator.commands, 5.0)
    assert dog.walk is None and session.emulator.pose()[0] > 0.0
    session.client.drive(0.0, -0.5)
    assert wait_for(lambda: dog.turning is not None and dog.turning[0] == -1, 5.0)


def test_joint_targets_out_of_range_are_clamped_with_a_warning(session):
    session.wait(UrbiConnected)
    assert session.client.look(200.0, -10.0) is False  # pan beyond 91°
    assert session.client.counters_extra['clamped'] == 1
    dog = session.emulator.dog
    assert wait_for(lambda: dog.joints['headPan'] == 91 and dog.joints['neck'] == -10, 5.0)
    with pytest.raises(ValueError, match='valid: ledF1'):
        session.client.set_led('ledX', 1)
    session.client.set_led('ledF3', 1)
    assert wait_for(lambda: dog.leds['ledF3'] == 1.0, 5.0)


def test_say_sends_a_wav_in_the_dogs_format(session):
    session.wait(UrbiConnected)
    tone = (8000 * np.sin(np.arange(22050) * 2 * np.pi * 440 / 22050)).astype(np.int16)
    assert session.client.say(tone, 22050) == pytest.approx(1.0, abs=0.01)
    dog = session.emulator.dog
    assert wait_for(lambda: len(dog.sounds) == 1, 5.0)
    with wave.open(io.BytesIO(dog.sounds[0])) as reader:
        assert (reader.getframerate(), reader.getsampwidth(), reader.getnchannels()) == (
            16000,
            2,
            1,
        )
        assert abs(reader.getnframes() - 16000) <= 1


def test_speaker_formats_follow_the_model():
    eight = to_model_format(np.full(800, 32767, np.int16), 8000, MODELS['ers210'].speaker)
    assert len(eight) == 800 and eight[0] == 255
    assert to_model_format(np.zeros(10, np.int16), 8000, MODELS['ers210'].speaker) == bytes(
        [128] * 10
    )


def test_stop_ends_every_job_and_switches_the_motors_off(session):
    session.wait(CameraFrame)
    session.client.stop()
    commands = session.emulator.commands
    assert wait_for(lambda: 'motor off' in commands, 5.0)
    for tag in ('drvcam', 'drvmic', 'drvjoints', 'drvsensors', 'drvbattery'):
        assert commands.count(f'stop {tag}') == 2  # before starting, and at the end
    assert commands[-1] == 'motor off' and session.emulator.dog.motors is False


def test_a_dropped_link_comes_back_with_its_jobs(session):
    session.wait(CameraFrame)
    session.emulator.drop_clients()
    assert wait_for(lambda: session.client.counters.reconnects >= 1, 10.0)
    before = len(session.records[CameraFrame])
    session.wait(CameraFrame, before + 2)


def test_a_stuck_interpreter_is_found_by_the_ping_watchdog_and_the_link_rebuilt():
    session = Session(ping_period=0.2, ping_timeout=0.6)
    try:
        session.wait(UrbiConnected)
        session.emulator.stalled.set()  # the camera still streams, nothing answers
        assert wait_for(lambda: session.client.counters_extra['pings lost'] >= 1, 10.0)
        session.emulator.stalled.clear()
        assert wait_for(lambda: session.client.counters.reconnects >= 1, 10.0)
        session.wait(UrbiConnected, 2)
    finally:
        session.close()


def test_errors_for_our_own_commands_are_counted_and_reported():
    """An ERS-210 client on an ERS-7: its headRoll reads are unknown identifiers there."""
    session = Session(model='ers210', camera=False, audio=False)
    try:
        error = session.wait(UrbiError)
        assert 'Unknown identifier' in error.text
        assert session.client.counters_extra['errors'] >= 1
        assert session.client.connected
    finally:
        session.close()


def test_actions_by_name_send_the_sticks_posture_scripts(session):
    session.wait(UrbiConnected)
    assert session.client.play_action('Lie') == 'robot.lay()'
    assert wait_for(lambda: session.emulator.dog.posture == 'lay', 5.0)
    with pytest.raises(ValueError, match='valid: sit'):
        session.client.play_action('dance')


def test_streaming_off_stops_every_job_and_on_starts_them_again():
    """The node's deactivate and activate."""
    session = Session(ping_period=0.2)
    try:
        session.wait(CameraFrame)
        commands = session.emulator.commands
        session.client.set_streaming(False)
        assert wait_for(lambda: commands.count('stop drvbattery') == 2, 5.0)
        pings = commands.count('drvping: ping')
        assert wait_for(lambda: commands.count('drvping: ping') >= pings + 2, 5.0)
        frames = len(session.records[CameraFrame])  # a loop turn under way has ended by now
        assert wait_for(lambda: commands.count('drvping: ping') >= pings + 4, 5.0)
        assert len(session.records[CameraFrame]) == frames
        session.client.set_streaming(True)
        session.wait(CameraFrame, frames + 2)
    finally:
        session.close()


def test_frames_whose_length_lies_are_counted_and_the_streams_go_on():
    session = Session()
    session.emulator.options.bad_length_every = 3  # every third camera frame lies by 7 bytes
    try:
        session.wait(CameraFrame, 6)
        assert wait_for(lambda: session.client.counters.bad_frames >= 2, 10.0)
        audio = len(session.records[AudioReply])
        joints = len(session.records[JointValues])
        frames = len(session.records[CameraFrame])
        session.wait(CameraFrame, frames + 3)
        session.wait(AudioReply, audio + 3)
        session.wait(JointValues, joints + 2)
        assert session.client.connected and session.client.counters.reconnects == 0
        for frame in session.records[CameraFrame]:
            assert frame.jpeg.endswith(b'\xff\xd9')  # no frame with another message's bytes
    finally:
        session.close()
