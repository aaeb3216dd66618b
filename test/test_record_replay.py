"""Record → replay, for every robot, as real processes: the driver runs against its emulator
with record_path set; then `recording replay` serves that file, the unchanged driver runs
against it with the parameters the replay wrote, and it must publish the same messages
(content and order, header stamps aside) as it did live."""

import difflib
import math
import random
import signal
import subprocess
import time

import pytest
import yaml
from builtin_interfaces.msg import Time
from helpers import Lines, start_module
from lifecycle_msgs.msg import State
from ros_observer import Observer

from legacy_robot_bench.common.bench import ros_args
from legacy_robot_bringup.paths import recording_file
from legacy_robot_bringup.recordings import _Announced
from legacy_robot_bringup.registry import discover_plugins
from legacy_robot_common.recording import FROM_ROBOT, read_recording, write_recording

ROBOTS = discover_plugins()
LIVE_SECONDS = 6.0
# The rabbit's scenario acts 2, 4, 8 and 11 s after the emulator starts; on a loaded machine
# the first actions can come before this process has matched the bridge's volatile topics, so
# the live run lasts the whole scenario and its later events (and the recording) count.
LIVE_SECONDS_OF = {'nabaztag': 14.0}
# Snapshots taken on a timer and throttled (the Nabaztag's list of rabbits: a change within
# 0.2 s of the last list waits for the next one): which intermediate states get a list of their
# own depends on the timing of the requests, not on what they say, so only the end is compared.
SNAPSHOT_TOPICS = {'rabbits'}
ACT_PERIOD = 0.1
QUIET_AFTER_END = 2.0  # s of replay after its end, for the driver's last messages
REPLAY_PATIENCE = 40.0  # s at most for the replayed run
DISCOVERY_PATIENCE = 30.0  # s at most until this process's subscribers have found the driver


# ---- what each robot is asked to do while it is recorded --------------------------------
# Only inputs the replayed driver does not need to repeat: a stream the robot sends whatever
# the driver does (P2OS SIPs, the Pleo's monitor output: the replay waits a moment for each
# command line, then plays on), or a request whose answer starts a stream (iPaq tracking). A
# driver whose requests follow its inputs (the AIBO's camera mode, the iPaq's wheel speeds
# in every poll) is left alone: without those inputs the replay could not answer it.
class DemoScriptStimulus:
    """The robot's own demo script (the P2OS drives its square, the Pleo walks)."""

    def __init__(self, plugin):
        self.script = plugin.make_demo_script()

    def setup(self, observer):
        self.script.setup(observer.node, observer.ns)

    def on_message(self, topic, msg):
        self.script.on_message(topic, msg)

    def act(self, elapsed):
        self.script.act(elapsed)


class StartTracking:
    """The iPaq's colour tracking, asked for once: its results stream on a port of their own."""

    def setup(self, observer):
        from legacy_robot_interfaces.srv import ColorTracking

        self.client = observer.node.create_client(
            ColorTracking, f'{observer.ns}/start_color_tracking'
        )
        self.request = ColorTracking.Request(
            r_min=200, r_max=255, g_min=0, g_max=60, b_min=0, b_max=60
        )
        self.pending = None
        self.started = False

    def act(self, elapsed):
        """Ask until the driver says yes: until its control link is up it answers 'not
        connected', and how soon that is depends on the machine's load."""
        if self.started or not self.client.service_is_ready():
            return
        if self.pending is not None and self.pending.done():
            self.started = self.pending.result().success
            self.pending = None
        if self.pending is None and not self.started:
            self.pending = self.client.call_async(self.request)


STIMULI = {
    'p2os': DemoScriptStimulus,
    'pleo': DemoScriptStimulus,
    'ipaq': lambda plugin: StartTracking(),
}


# ---- messages as comparable values -------------------------------------------------------
# durations this host measured of its own work, as host-clock times are: not the robot's data
HOST_MEASURED_FIELDS = {'recogniser_seconds'}  # the rabbit's speech recogniser's wall time


def canonical(value):
    """A message as nested tuples: host-clock times and host-measured durations left out,
    floats as their repr."""
    if hasattr(value, 'get_fields_and_field_types'):
        return tuple(
            (name, canonical(getattr(value, name)))
            for name in value.get_fields_and_field_types()
            if not isinstance(getattr(value, name), Time) and name not in HOST_MEASURED_FIELDS
        )
    if isinstance(value, float):
        return 'nan' if math.isnan(value) else repr(value)
    if isinstance(value, (str, bytes, int, bool)) or value is None:
        return value
    if hasattr(value, 'tolist'):
        value = value.tolist()
    return tuple(canonical(item) for item in value)


def collapse(messages):
    """Consecutive equal messages as one: timer-driven topics repeat at their own pace."""
    return [m for i, m in enumerate(messages) if i == 0 or m != messages[i - 1]]


# ---- the two runs --------------------------------------------------------------------------
def listen(observer, plugin, stimulus=None):
    """({topic: [canonical messages]}, a function true once every subscription has matched
    a publisher)."""
    received, subscriptions = {}, []
    for demo_topic in plugin.demo_topics:
        received[demo_topic.topic] = []

        def on_message(msg, topic=demo_topic.topic):
            received[topic].append(canonical(msg))
            if hasattr(stimulus, 'on_message'):
                stimulus.on_message(topic, msg)

        subscriptions.append(
            observer.node.create_subscription(
                demo_topic.msg_type, f'{observer.ns}/{demo_topic.topic}', on_message, 10
            )
        )
    return received, lambda: all(s.get_publisher_count() for s in subscriptions)


def stop(process):
    """SIGINT, then its stderr (stdout, if piped, is another reader's)."""
    if process.stdin is not None:
        process.stdin.close()
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    process.wait(timeout=30)
    return process.stderr.read()


def record_live(plugin, path):
    emulator = plugin.start_emulator()
    stimulus = STIMULI.get(plugin.name, lambda plugin: None)(plugin)
    namespace = f'/live_{plugin.name}'
    # the listener first: what the driver publishes in its first second (the rabbit's first
    # events) must not go out before anyone listens
    observer = Observer(namespace)
    received, matched = listen(observer, plugin, stimulus)
    driver = start_module(
        f'{plugin.package}.node',
        *ros_args(namespace, {**emulator.parameters, 'record_path': str(path)}),
    )
    try:
        # the window starts once this process sees the driver's publishers: the rabbit's first
        # events come within a second or two of the bridge, and DDS matching takes about as long
        assert observer.spin_until(matched, DISCOVERY_PATIENCE), (
            "the driver's publishers were not discovered"
        )
        if stimulus is not None:
            stimulus.setup(observer)
        start = time.monotonic()
        while time.monotonic() - start < LIVE_SECONDS_OF.get(plugin.name, LIVE_SECONDS):
            observer.spin_until(lambda: False, ACT_PERIOD)
            if stimulus is not None:
                stimulus.act(time.monotonic() - start)
        err = stop(driver)
        assert driver.returncode == 0, err
        return received, emulator
    except BaseException:
        stop(driver)
        emulator.stop()
        raise
    finally:
        observer.close()


def replay(plugin, path, folder, *options):
    params = folder / 'replay.yaml'
    server = start_module(
        'legacy_robot_bringup.recordings',
        'replay',
        str(path),
        '--params-out',
        str(params),
        '--start-paused',
        *options,
        stdin=subprocess.PIPE,
    )
    output = Lines(server)
    namespace = f'/replayed_{plugin.name}'
    observer = Observer(namespace)
    driver = None
    try:
        assert observer.spin_until(lambda: output.has('replay: replay of'), 30), (
            server.stderr.read() if server.poll() is not None else output.lines
        )
        received, matched = listen(observer, plugin)
        driver = start_module(
            f'{plugin.package}.node',
            '--ros-args',
            '-r',
            f'__ns:={namespace}',
            '--params-file',
            str(params),
        )
        # the replay plays once every subscription here has matched the replayed driver's
        # publisher: a fixed delay lost the AIBO's first second of audio when the driver's
        # start and DDS discovery took longer than the delay (CI, a loaded machine)
        assert observer.spin_until(matched, DISCOVERY_PATIENCE), (
            "the replayed driver's publishers were not discovered"
        )
        # and once it is active: its publishers exist from its start, but publish only from
        # activation, and a replay answers at once (the AIBO's first audio, answered between
        # configure and activate, was dropped). get_state answers once the driver spins,
        # after autostart's activation.
        assert observer.lifecycle_state(plugin.node_name) == State.PRIMARY_STATE_ACTIVE
        server.stdin.write('\n')
        server.stdin.flush()
        assert observer.spin_until(lambda: output.has(_Announced.END), REPLAY_PATIENCE), (
            output.lines
        )
        observer.spin_until(lambda: False, QUIET_AFTER_END)
        err = stop(driver)
        assert driver.returncode == 0, err
        assert 'Traceback' not in err, err
        return received, yaml.safe_load(params.read_text())['/**']['ros__parameters'], output
    finally:
        if driver is not None:
            stop(driver)
        stop(server)
        observer.close()


# ---- the test ---------------------------------------------------------------------------------
@pytest.mark.parametrize('name', sorted(ROBOTS))
def test_a_replayed_recording_makes_the_driver_publish_what_it_published_live(name, tmp_path):
    plugin = ROBOTS[name]
    path = tmp_path / f'{name}.mcap'
    live, emulator = record_live(plugin, path)
    try:
        recording = read_recording(path)
        assert recording.node == plugin.node_name and not recording.problem
        assert sum(link.byte_count(FROM_ROBOT) for link in recording.links.values()) > 0
        replayed, parameters, output = replay(plugin, path, tmp_path)
    finally:
        emulator.stop()  # after the replay: the Nabaztag's files live in its folder
    assert 'record_path' not in parameters
    assert any(line.startswith('replay ') for line in output.lines), output.lines
    compared = 0
    for topic, messages in live.items():
        before, after = collapse(messages), collapse(replayed[topic])
        if not before:
            continue  # nothing live on this topic in these few seconds
        if topic in SNAPSHOT_TOPICS:
            # either run may end in the middle of a change: the state one ended in is one the
            # other went through
            assert before[-1] in after or (after and after[-1] in before), (
                f'{topic}: the runs end in states the other never had'
            )
            compared += 1
            continue
        block = difflib.SequenceMatcher(None, before, after, autojunk=False).find_longest_match(
            0, len(before), 0, len(after)
        )
        # the live run's tail must be there in full, in order. The replay plays only once its
        # subscribers have found the driver, so it sees the recording from its start; the live
        # subscriber missed what the driver published before it was discovered, and the
        # recording goes on until the live driver stopped, after the live window
        why = (
            f'{topic}: {block} of {len(before)} live / {len(after)} replayed messages; '
            f'live {before[block.a + block.size :][:1]!r:.600} '
            f'replayed {after[block.b + block.size :][:1]!r:.600}'
        )
        assert block.a + block.size == len(before), f'the live tail is not replayed: {why}'
        assert block.size >= math.ceil(0.75 * len(before)), f'too few in order: {why}'
        compared += block.size
    assert compared >= 5, (
        f'only {compared} messages compared',
        {t: (len(collapse(m)), len(collapse(replayed[t]))) for t, m in live.items()},
    )


# ---- damaged recordings ---------------------------------------------------------------------
DAMAGED_CHUNKS = 200  # chunks per connection: a few seconds of each robot


def damage(recording, seed):
    """Flip about one byte in 300 of what the robot sent, drop one chunk in 17 and send one in
    23 twice: a line with noise and losses, as a real recording may hold."""
    rng = random.Random(seed)
    for link in recording.links.values():
        for connection in link.connections.values():
            chunks = []
            for index, chunk in enumerate(connection.chunks[:DAMAGED_CHUNKS]):
                if chunk.direction == FROM_ROBOT:
                    if index % 17 == 5:
                        continue
                    data = bytearray(chunk.data)
                    for _ in range(max(1, len(data) // 300)):
                        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
                    chunk.data = bytes(data)
                    if index % 23 == 7:
                        chunks.append(chunk)
                chunks.append(chunk)
            connection.chunks = chunks


@pytest.mark.parametrize('name', sorted(ROBOTS))
def test_a_damaged_recording_never_crashes_the_replay_or_the_driver(name, tmp_path):
    plugin = ROBOTS[name]
    recording = read_recording(recording_file(name))
    damage(recording, seed=len(name))
    path = tmp_path / 'damaged.mcap'
    write_recording(path, recording)
    # four times as fast; replay() checks that both exit cleanly, without a traceback
    _, _, output = replay(plugin, path, tmp_path, '--speed', '4')
    assert any(line.startswith('replay ') for line in output.lines), output.lines
