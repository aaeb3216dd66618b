"""Robot recordings (the MCAP files a driver writes with record_path): look inside, export,
replay.

    ros2 run legacy_robot_bringup recording info p2os.mcap
    ros2 run legacy_robot_bringup recording csv p2os.mcap --output p2os.csv
    ros2 run legacy_robot_bringup recording export p2os.mcap --rosbag2 p2os_bag
    ros2 run legacy_robot_bringup recording replay p2os.mcap [--speed 2] [--loop]
        [--params-out replay.yaml] [--delay 2 | --start-paused]

info counts what the file holds (links, connections, chunks and bytes each way, duration) at
once; info --decode and csv decode the recording with the robot's own driver: the recording is
replayed into the unchanged driver (in this process, at --speed), and every record its links
decode is counted (csv: written), with the malformed frames its links reject; export writes
what the driver publishes meanwhile as a rosbag2 (MCAP storage). replay serves the recording as
the robot, like the robot's emulator, until Ctrl-C; with --start-paused it plays once a line
(Enter) arrives on its standard input, so that the driver and its subscribers can find each
other first, however long that takes.
"""

import argparse
import collections
import csv
import dataclasses
import enum
import json
import os
import sys
import threading
import time

import yaml

from legacy_robot_common.emulator import run_emulator
from legacy_robot_common.plugin import make_replay
from legacy_robot_common.recording import FROM_ROBOT, TO_ROBOT, RecordingError, read_recording
from legacy_robot_common.replay import ReplayOptions

from .bag_export import check_bag_path
from .registry import PluginError, discover_plugins

QUIET_END = 1.0  # s without a new record after the replay's end: decoding is done
PATIENCE = 20.0  # s beyond the recording's duration before decoding gives up


def plugin_for(recording, plugins=None):
    """The installed robot plugin whose node wrote recording, or PluginError."""
    plugins = discover_plugins() if plugins is None else plugins
    for plugin in plugins.values():
        if plugin.node_name == recording.node:
            return plugin
    raise PluginError(
        f'{recording.path}: recorded by {recording.node!r}, which no installed '
        f'robot package provides'
    )


def open_replay(path, options=None, plugins=None):
    """(plugin, replay not yet started) for the recording at path."""
    recording = read_recording(path)
    plugin = plugin_for(recording, plugins)
    return plugin, make_replay(plugin, recording, options or ReplayOptions())


# ---- decoding: the recording replayed into the driver --------------------------------------
@dataclasses.dataclass
class Decoded:
    rows: list  # (recorded time ns, link, record)
    bad_frames: dict  # link → malformed frames the driver rejected
    report: list  # the replay's own report lines
    bag: object = None  # with a bag: its BagCapture (message counts per topic, bytes)
    finished: bool = True  # the replay reached the recording's end (not given up after PATIENCE)


def decode(path, speed=1.0, plugins=None, bag=None):
    """Replay the recording into its driver (in this process) → Decoded; with bag (a new
    folder), what the driver publishes is written there as a rosbag2."""
    import rclpy
    from rclpy.parameter import Parameter

    from legacy_robot_common.driver_node import make_executor
    from legacy_robot_common.middleware import check_dds_security

    from .bag_export import DISCOVERY_TIME, BagCapture

    check_dds_security()  # before any work: a ParameterError, exit 2 with its message
    # with a bag, the recording waits until the bag subscribes to the driver's topics
    options = ReplayOptions(speed=speed, delay=DISCOVERY_TIME + 1.0 if bag else 0.0)
    plugin, replay = open_replay(path, options, plugins)
    context = rclpy.Context()
    rclpy.init(args=[], context=context)
    replay.start()
    rows, node, capture = [], None, None
    try:
        node = plugin.create_node(
            namespace=f'/recording_decode_{os.getpid()}',
            context=context,
            parameter_overrides=[
                Parameter(name, value=value) for name, value in replay.parameters.items()
            ],
        )
        for client, link in zip(node.links, node.link_names, strict=False):
            _capture(client, link, replay, rows)
        # single-threaded: the bag keeps only the driver's messages by their publisher (a
        # MessageInfo callback, which rclpy 9.1's events executor cannot call)
        executor = make_executor(context, 'single' if bag else None)
        executor.add_node(node)
        if bag:
            capture = BagCapture(node, bag, lambda: _recorded_now(replay), context)
            executor.add_node(capture)
        _spin_to_end(executor, replay, lambda: len(rows) + _written(capture), speed)
        bad = {
            link: client.counters.bad_frames
            for client, link in zip(node.links, node.link_names, strict=False)
        }
        return Decoded(rows, bad, replay.report(), capture, replay.finished)
    finally:
        if node is not None:
            node.destroy_node()
        if capture is not None:
            capture.close()
            capture.destroy_node()
        replay.stop()
        rclpy.try_shutdown(context=context)


def _recorded_now(replay):
    """The recorded time of the newest chunk the replay has sent (its start before any)."""
    return max(
        [replay.recorded_time(link) for link in replay.recording.links]
        + [replay.recording.start_ns]
    )


def _capture(client, link, replay, rows):
    forward = client.on_record

    def capture(record):
        rows.append((replay.recorded_time(link), link, record))
        forward(record)

    client.on_record = capture


def _written(capture):
    return sum(capture.counts.values()) if capture is not None else 0


def _spin_to_end(executor, replay, progress, speed):
    """Spin until the replay has finished and progress() (records decoded, and messages
    written to the bag: the executor can lag far behind the link threads) stopped growing."""
    # as fast as possible, a link whose robot answers requests still waits for each request
    # of the recording to come from the driver, which polls at its own (the recorded) pace:
    # such a replay takes about the recording's length (the Pleo's 21 s) and must not be given
    # up on before that (under load the Pleo's took longer than PATIENCE alone)
    duration = replay.recording.duration / (speed or 1.0)
    deadline = time.monotonic() + duration + PATIENCE
    seen, quiet_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
        if progress() != seen:
            seen, quiet_since = progress(), time.monotonic()
        if replay.finished and time.monotonic() - quiet_since >= QUIET_END:
            return


# ---- output -------------------------------------------------------------------------------
def info_lines(recording, decoded=None):
    lines = [
        f'{recording.path}: {recording.node} {recording.driver_version}, '
        f'{recording.duration:.2f} s, {len(recording.links)} links'
    ]
    if recording.problem:
        lines.append(f'  problem: {recording.problem}')
    for name, link in recording.links.items():
        lines.append(
            f'  {name}: {len(link.connections)} connections, from robot '
            f'{link.chunk_count(FROM_ROBOT)} chunks / {link.byte_count(FROM_ROBOT)} '
            f'bytes, to robot {link.chunk_count(TO_ROBOT)} chunks / '
            f'{link.byte_count(TO_ROBOT)} bytes'
        )
        if decoded is not None:
            kinds = collections.Counter(type(r).__name__ for _, n, r in decoded.rows if n == name)
            counted = ', '.join(f'{count} {kind}' for kind, count in sorted(kinds.items()))
            lines.append(
                f'    decoded: {counted or "nothing"}; decode errors: '
                f'{decoded.bad_frames.get(name, 0)}'
            )
    if decoded is not None:
        lines += [f'  replay {line}' for line in decoded.report]
        if not decoded.finished:
            lines.append(
                f'  replay: the end of the recording was not reached; decoding gave up '
                f"{PATIENCE:.0f} s after the recording's length at this speed"
            )
    return lines


def write_csv(decoded, recording, stream):
    """One row per decoded record: seconds since the recording began, link, record type,
    its fields as JSON (long byte strings as their length)."""
    writer = csv.writer(stream)
    writer.writerow(['time_s', 'link', 'record', 'fields'])
    for stamp, link, record in decoded.rows:
        seconds = max(0, stamp - recording.start_ns) / 1e9
        writer.writerow([f'{seconds:.6f}', link, type(record).__name__, _fields(record)])


def _fields(record):
    value = dataclasses.asdict(record) if dataclasses.is_dataclass(record) else record
    return json.dumps(value, default=_plain, sort_keys=True)


def _plain(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex() if len(value) <= 32 else f'<{len(value)} bytes>'
    if isinstance(value, enum.Enum):
        return value.name
    if hasattr(value, 'tolist'):  # NumPy arrays: their shape, not their pixels
        return f'<array {getattr(value, "shape", "")}>'
    if dataclasses.is_dataclass(value):
        return dataclasses.asdict(value)
    return repr(value)


def export_lines(capture, path, recording, seconds):
    lines = [
        f'{path}: rosbag2 (mcap), {sum(capture.counts.values())} messages on '
        f'{len(capture.counts)} topics, {capture.bytes} bytes of CDR, from '
        f'{os.path.getsize(recording.path)} bytes of recording in {seconds:.1f} s'
    ]
    lines += [f'  {topic}: {count}' for topic, count in sorted(capture.counts.items())]
    lost = capture.lost
    if lost:
        lines.append(
            'incomplete: messages the driver published that never reached the bag: '
            + ', '.join(f'{topic} {count}' for topic, count in sorted(lost.items()))
        )
    return lines


def write_params(path, parameters):
    """A parameter file that points the driver at a replay (loads under any namespace)."""
    with open(path, 'w') as stream:
        yaml.safe_dump({'/**': {'ros__parameters': parameters}}, stream, sort_keys=True)


# ---- command line -------------------------------------------------------------------------
def build_parser():
    parser = argparse.ArgumentParser(prog='recording', description=__doc__.split('\n\n')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    for name, text in (
        ('info', 'links, counts, duration and decode errors'),
        ('csv', 'the decoded records as CSV'),
        ('export', "the driver's ROS messages as a rosbag2 (MCAP storage)"),
        ('replay', 'serve the recording as the robot until Ctrl-C'),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument('path', help='the recording (.mcap)')
        command.add_argument(
            '--speed',
            type=float,
            default=1.0,
            help='1 = as recorded, 2 = twice as fast, 0 = as fast as possible',
        )
        if name == 'replay':
            command.add_argument(
                '--delay',
                type=float,
                default=0.0,
                help='seconds to wait before playing (subscribers find the driver meanwhile)',
            )
            command.add_argument(
                '--start-paused',
                action='store_true',
                help='serve the links but play nothing until a line (Enter) arrives on '
                'standard input (or it ends): start the driver, wait until its subscribers '
                'have found it, then press Enter',
            )
    info = commands.choices['info']
    info.add_argument(
        '--decode',
        action='store_true',
        help='also replay the recording into its driver and count the records it '
        "decodes and the frames it rejects (takes about the recording's length "
        'at --speed 1); without it the counts come from the file alone, at once',
    )
    info.add_argument('--no-decode', action='store_true', help=argparse.SUPPRESS)  # the default
    commands.choices['csv'].add_argument('--output', '-o', help='CSV file (default: stdout)')
    commands.choices['export'].add_argument(
        '--rosbag2',
        required=True,
        metavar='FOLDER',
        help='the bag to write (a new folder, as ros2 bag record -o makes)',
    )
    replay = commands.choices['replay']
    replay.add_argument('--loop', action='store_true', help='start again after the end')
    replay.add_argument(
        '--params-out',
        metavar='YAML',
        help='write the driver parameters that point it at this replay',
    )
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        options = ReplayOptions(
            speed=args.speed,
            loop=getattr(args, 'loop', False),
            delay=getattr(args, 'delay', 0.0),
            start_paused=getattr(args, 'start_paused', False),
        )
        if args.command == 'replay':
            return _replay(args, options)
        recording = read_recording(args.path)
        plugin_for(recording)
        if args.command == 'csv' and args.output:
            _check_writable(args.output)  # before a decode that can take minutes
        bag = getattr(args, 'rosbag2', None)
        if bag:
            check_bag_path(bag)
        if args.command == 'info' and not args.decode:
            decoded = None
        else:
            started = time.monotonic()
            decoded = decode(args.path, args.speed, bag=bag)
            seconds = time.monotonic() - started
    except (RecordingError, PluginError, ValueError, OSError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    if args.command == 'info':
        print('\n'.join(info_lines(recording, decoded)))
    elif args.command == 'export':
        print('\n'.join(export_lines(decoded.bag, bag, recording, seconds)))
        if decoded.bag.lost:
            return 1
    elif args.output:
        with open(args.output, 'w', newline='') as stream:
            write_csv(decoded, recording, stream)
        print(f'{len(decoded.rows)} records written to {args.output}')
    else:
        write_csv(decoded, recording, sys.stdout)
    return 0


def _check_writable(path):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise RecordingError(f'cannot write {path}: no folder {folder}')
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise RecordingError(f'cannot write {path}: permission denied')


def _replay(args, options):
    plugin, replay = open_replay(args.path, options)

    return run_emulator(f'{plugin.title} replay', lambda: _Announced(replay, args.params_out))


class _Announced:
    """The replay as run_emulator wants it: its description names the driver parameters,
    and it says when the recording has been played to its end."""

    END = 'replay: the end of the recording'
    PLAYING = 'replay: playing'

    def __init__(self, replay, params_out=None, controls=None):
        self.replay = replay
        self.params_out = params_out
        self.controls = controls or sys.stdin  # started paused: a line here plays
        self._stopped = threading.Event()

    def start(self):
        self.replay.start()
        if self.params_out:  # the ports are known once it listens
            write_params(self.params_out, self.replay.parameters)
        if self.replay.clock.paused:
            threading.Thread(target=self._resume_on_a_line, daemon=True).start()
        threading.Thread(target=self._announce_end, daemon=True).start()

    def _resume_on_a_line(self):
        # the end of the input plays too: nothing could resume the replay after it
        self.controls.readline()
        self.replay.clock.resume()
        print(self.PLAYING, flush=True)

    def _announce_end(self):
        while not self._stopped.wait(0.1):
            if self.replay.finished:
                print(self.END, flush=True)
                return

    def stop(self):
        self._stopped.set()
        self.replay.stop()
        for line in self.replay.report():
            print(f'replay {line}', flush=True)

    @property
    def description(self):
        settings = ' '.join(
            f'-p {name}:={json.dumps(value)}'
            for name, value in sorted(self.replay.parameters.items())
        )
        paused = '\n  paused: press Enter to play' if self.replay.clock.paused else ''
        return f'{self.replay.description}\n  driver parameters: {settings}{paused}'


if __name__ == '__main__':
    sys.exit(main())
