"""The URBI emulator over real loopback TCP, spoken to with the codec alone (urbi.py)."""

import io
import time
import wave

import numpy as np
import pytest

from aibo_driver import protocol as p
from aibo_driver import urbi
from aibo_driver.emulator import build_parser, urbi_options_from_args
from aibo_driver.emulator_urbi import UrbiEmulator, UrbiOptions, split_statements
from aibo_driver.scene import PINK
from legacy_robot_common.streams import SocketStream


class Peer:
    """A raw URBI connection: every record received, in order."""

    def __init__(self, port):
        self.stream = SocketStream.connect('127.0.0.1', port)
        self.decoder = urbi.StreamDecoder()
        self.records = []
        self._unread = []

    def send(self, data):
        self.stream.write(data)

    def until(self, predicate, timeout=10.0):
        """Read until predicate(record) holds for a new record; that record."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._unread += self.decoder.records()
            while self._unread:
                record = self._unread.pop(0)
                self.records.append(record)
                if predicate(record):
                    return record
            self.decoder.feed(self.stream.read(65536, 0.2) or b'')
        raise AssertionError(f'nothing matched in {timeout} s; last: {self.records[-3:]}')

    def ask(self, command, tag):
        self.send(command)
        return self.until(lambda r: r.tag == tag)

    def sync(self):
        """A ping's pong: everything the server sent before it has been read."""
        self.send(urbi.ping('sync'))
        return self.until(lambda r: r.tag == 'sync')

    def close(self):
        self.stream.close()


@pytest.fixture
def dog():
    emulator = UrbiEmulator(UrbiOptions(port=0, speed_scale=20.0)).start()
    yield emulator
    emulator.stop()


@pytest.fixture
def peer(dog):
    peer = Peer(dog.server.port)
    peer.until(lambda r: r.tag == 'ident')
    yield peer
    peer.close()


def test_the_banner_names_the_kernel_and_the_connection(dog, peer):
    start = [r.text for r in peer.records if r.tag == 'start']
    assert any('URBI Kernel version 1.0 rev. 153' in line for line in start)
    assert peer.records[-1].text.startswith('ID: U')
    assert all(r.kind == 'system' for r in peer.records)
    pong = peer.sync()
    assert pong.kind == 'system' and pong.text.startswith('pong time=')


def test_a_tagged_camera_loop_sends_jpeg_of_the_ball_until_stopped(dog, peer):
    peer.send(urbi.loop('cam', 'camera.val'))
    frames = [
        peer.until(lambda r: isinstance(r, urbi.Binary) and r.tag == 'cam') for _ in range(3)
    ]
    assert {(f.kind, f.width, f.height) for f in frames} == {('jpeg', 208, 160)}
    rgb = p.decode_jpeg(frames[-1].data)
    assert rgb.shape == (160, 208, 3)
    pink = np.all(np.abs(rgb.astype(int) - PINK.astype(int)) < 60, axis=2)
    assert pink.sum() > 50  # the ball is in the picture
    peer.send(urbi.stop('cam'))
    peer.sync()
    peer.sync()  # a turn of the loop under way at the stop has been read by now
    seen = len(peer.records)
    peer.sync()
    assert not [r for r in peer.records[seen:] if r.tag == 'cam']


def test_every_and_the_microphone_loop(dog, peer):
    peer.send(urbi.every('acc', 50, 'accelZ.val'))
    assert peer.until(lambda r: r.tag == 'acc').number() == pytest.approx(-9.81)
    peer.send(urbi.loop('mic', 'micro.val'))
    chunk = peer.until(lambda r: r.tag == 'mic')
    assert (chunk.kind, chunk.channels, chunk.rate, chunk.bits, len(chunk.data)) == (
        'raw',
        2,
        16000,
        16,
        2048,
    )
    peer.send(urbi.stop('acc') + urbi.stop('mic'))
    peer.sync()
    peer.sync()
    seen = len(peer.records)
    peer.sync()
    assert not [r for r in peer.records[seen:] if r.tag in ('acc', 'mic')]


def test_devices_of_the_ers7_and_errors_for_unknown_identifiers(dog, peer):
    assert peer.ask(urbi.battery('bat'), 'bat').number() == pytest.approx(0.83)
    assert 20 <= peer.ask(urbi.read('distance', 'd'), 'd').number() <= 150
    assert peer.ask(urbi.read('distanceChest', 'c'), 'c').number() == 90
    assert peer.ask(urbi.read('pawLF', 'paw'), 'paw').number() == 0
    peer.send(urbi.assign('headPan', 200.0))  # beyond its 91°: the dog stops at the limit
    assert peer.ask(urbi.read('headPan.val', 'pan'), 'pan').number() == 91
    unknown = peer.ask(urbi.read('headRoll', 'roll'), 'roll')  # an ERS-210 joint
    assert unknown.kind == 'error' and 'Unknown identifier' in unknown.text
    assert peer.ask(b'chinsensor;\n', 'notag').kind == 'error'  # the 2005 manual's spelling
    assert peer.ask(b'motoron;\n', 'notag').kind == 'error'
    assert peer.ask(b'x: stopall;\n', 'x').text == 'All commands cleared'
    assert peer.ask(b'1 +;\n', 'error').text == 'Syntax error'


def test_walking_and_turning_scripts_move_the_pose(dog, peer):
    peer.send(urbi.walk(1000))
    assert peer.ask(urbi.ping('t'), 't')  # a background walk does not hold the connection
    deadline = time.monotonic() + 5
    while dog.pose()[0] < 0.05 and time.monotonic() < deadline:
        peer.sync()
    x, _, _ = dog.pose()
    assert x == pytest.approx(0.06 * 1.0, abs=0.01)  # 1 s of stepping at 0.06 m/s
    peer.send(urbi.turn(-2000))
    peer.send(urbi.stop_walk())  # stopwalk and stopturn
    peer.sync()
    _, _, yaw = dog.pose()
    assert -1.0 < yaw <= 0.0
    peer.send(urbi.posture('sit'))
    assert peer.ask(urbi.read('legLF3', 'knee'), 'knee').number() == 110


def test_the_speaker_takes_exactly_the_wav_bytes_and_refuses_other_sound(dog, peer):
    good = urbi.wav(bytes(3200), 16000, 16)
    peer.send(urbi.speaker_wav(good) + urbi.ping('after'))
    peer.until(lambda r: r.tag == 'after')  # the bytes after the payload were a command
    assert dog.dog.sounds == [good]
    peer.send(urbi.speaker_wav(b'not a wav at all') + urbi.ping('after2'))
    failed = peer.until(lambda r: r.kind == 'error')
    assert failed.text == 'Sound conversion failed'
    sound = io.BytesIO()
    with wave.open(sound, 'wb') as writer:
        writer.setnchannels(1), writer.setsampwidth(2), writer.setframerate(44100)
        writer.writeframes(bytes(100))
    peer.send(urbi.speaker_wav(sound.getvalue()) + urbi.ping('after3'))
    assert peer.until(lambda r: r.kind == 'error').text == 'Sound conversion failed'
    assert len(dog.dog.sounds) == 1


def test_statements_split_at_the_top_level_only():
    statements, rest = split_statements('a: loop {camera.val; noop}, stop a; b = 1; tail')
    assert statements == [('a: loop {camera.val; noop}', ','), ('stop a', ';'), ('b = 1', ';')]
    assert rest == ' tail'


def test_the_command_line_picks_urbi_and_the_ers7():
    options = urbi_options_from_args(build_parser().parse_args(['--protocol', 'urbi']))
    assert (options.model, options.port) == ('ers7', 54000)
    with pytest.raises(ValueError, match='valid'):
        UrbiOptions(model='ers220')
