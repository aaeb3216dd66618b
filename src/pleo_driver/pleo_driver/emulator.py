"""A Pleo on a pseudo-terminal: the USB serial monitor with its prompt, joints that move at
their speeds within their limits, sensor and joint dumps, a battery that runs down, log
lines, and the motions and sounds of a loaded URF (docs/protocols/pleo.md §3.7).

    pleo_emulator [--urf build/sample.urf] [--dump-rate 10] [--echo] ...

It prints the device path a driver should open (port:=<path>).
"""

import argparse
import dataclasses
import os
import random
import sys
import tempfile
import threading
import time
from typing import Optional

from legacy_robot_common.emulator import (
    FaultInjector,
    MainFrame,
    PtyEmulatorPort,
    SendLog,
    run_emulator,
)
from legacy_robot_common.errors import ConnectionLost

from . import protocol as p
from .pdk import umf, urf, usf
from .sample import build_sample_project

FIRMWARE = p.log_line('INFO', 'nxp', '7361 - Nov 15 2007 21:34:25')
NEUTRAL = (0, 45, 0, 45, 0, -30, 0, -30, 0, 0, 0, 0, 0, 40)
TICK = 0.02


@dataclasses.dataclass
class EmulatorOptions:
    urf_path: Optional[str] = None
    link: Optional[str] = None  # also reachable through this symlink (fixed path for launch)
    dump_rate: float = 10.0  # sensor + joint dump lines per second; 0 = none
    unthrottled: bool = False  # benchmarks: dumps back to back (dump_rate ignored)
    echo: bool = True  # echo each command line before the answer
    unknown_speed: float = 60.0  # deg/s for joints whose speed the table leaves open
    battery: int = 87
    battery_drain: float = 0.05  # battery points per second
    touch_every: float = 0.0  # s between simulated head touches; 0 = none
    drop_rate: float = 0.0
    corrupt_rate: float = 0.0
    seed: Optional[int] = None


class PleoState:
    """What the Pleo is doing: joint angles and targets, sensors, battery, playback."""

    def __init__(self, options):
        self.options = options
        self.angles = [float(a) for a in NEUTRAL]
        self.targets = list(self.angles)
        self.speeds = [j.speed or options.unknown_speed for j in p.JOINTS]
        self.sensors = [0] * p.SENSOR_COUNT
        self.sensors[2] = options.battery
        self.sensors[18] = 1  # SD card present
        self.sensors[21] = 60  # ambient light
        self.sensors[32] = 1  # USB connected
        self.battery = float(options.battery)
        self.app_loaded = True
        self.motion_speed = self.sound_speed = self.sound_volume = 100
        self.motions, self.sounds, self.sound_names = {}, {}, {}
        self.playing = []  # (start time, motion, cued sound vectors)
        self.log_types = set()
        self.events = []  # log lines waiting to be printed
        self.lock = threading.Lock()

    def load_urf(self, path):
        with open(path, 'rb') as handle:
            parsed = urf.parse(handle.read())
        self.motions = {e.name: umf.parse(e.data) for e in parsed.of(urf.MOTIONS)}
        self.sounds = {e.name: usf.parse(e.data) for e in parsed.of(urf.SOUNDS)}
        self.sound_names = {e.id: e.name for e in parsed.of(urf.SOUNDS)}

    def step(self, dt, now):
        with self.lock:
            self._run_motions(now)
            for index, _joint in enumerate(p.JOINTS):
                gap = self.targets[index] - self.angles[index]
                move = (
                    self.speeds[index] * dt * (self.motion_speed / 100.0 if self.playing else 1.0)
                )
                self.angles[index] += max(-move, min(move, gap))
            self.battery = max(0.0, self.battery - self.options.battery_drain * dt)
            self.sensors[2] = int(self.battery)

    def _run_motions(self, now):
        still = []
        for started, motion, cued in self.playing:
            frame = (
                (now - started) * 1000.0 * self.motion_speed / 100.0 / max(motion.timebase_ms, 1)
            )
            for index, (joint, start, _, _, position) in enumerate(motion.vectors):
                if start > frame:
                    continue
                if joint in UMF_TO_MONITOR:
                    self._aim(UMF_TO_MONITOR[joint], position)
                elif joint == 'SD' and index not in cued:  # a sound cue: once
                    cued.add(index)
                    name = self.sound_names.get(position, f'#{position}')
                    self.events.append(p.log_line('INFO', 'sound', f'{name} playing (cue)'))
            if frame <= motion.end_time:
                still.append((started, motion, cued))
            else:
                self.events.append(p.log_line('INFO', 'motion', f'{motion.name} done'))
        self.playing = still

    def _aim(self, index, degrees):
        joint = p.JOINTS[index]
        low, high = joint.low, joint.high
        self.targets[index] = float(max(low, min(high, degrees)))

    def set_joint(self, index, degrees):
        with self.lock:
            self._aim(index, degrees)

    def neutral(self):
        with self.lock:
            self.targets = [float(a) for a in NEUTRAL]
            self.playing = []

    def dumps(self):
        with self.lock:
            joints = p.JointDump(tuple(int(round(a)) for a in self.angles))
            sensors = p.SensorDump(tuple(self.sensors))
        return f'{p.dump_line(sensors)}\r\n', f'{p.dump_line(joints)}\r\n'


# csv2umf joint keys → monitor joint IDs (the head's eyes/mouth key is EY; JW the jaw)
UMF_TO_MONITOR = {
    'RS': 0,
    'RE': 1,
    'LS': 2,
    'LE': 3,
    'LH': 4,
    'LK': 5,
    'RH': 6,
    'RK': 7,
    'TO': 8,
    'TH': 9,
    'TV': 10,
    'NH': 11,
    'NV': 12,
    'HD': 13,
    'EY': 13,
}


class MonitorSession:
    """One conversation on the pty: read command lines, answer, print dumps and log lines."""

    def __init__(self, emulator, stream, stop):
        self.emulator, self.state = emulator, emulator.state
        self.stream, self.stop = stream, stop
        self.buffer = bytearray()
        self.next_dump = time.monotonic()

    def run(self):
        self._write(f'\r\n{FIRMWARE}\r\n')
        wait = 0.0 if self.emulator.options.unthrottled else TICK
        while not self.stop.is_set():
            data = self.stream.read(4096, wait)
            if data:
                self.buffer += data
                self._lines()
            self._periodic()

    def _lines(self):
        while b'\n' in self.buffer:
            end = self.buffer.index(b'\n')
            line = bytes(self.buffer[:end]).rstrip(b'\r').decode('latin-1')
            del self.buffer[: end + 1]
            self.emulator.received.append(line)
            answer = self.emulator.answer(line)
            echo = f'{line}\r\n' if self.emulator.options.echo and line else ''
            self._write(
                echo + ''.join(f'{text}\r\n' for text in answer) + p.PROMPT.decode(p.ENCODING)
            )

    def _periodic(self):
        now = time.monotonic()
        with self.state.lock:
            events, self.state.events = self.state.events, []
        for event in events:
            self._write(f'{event}\r\n')
        period = self.emulator.dump_period
        if self.emulator.dumping and period is not None and now >= self.next_dump:
            self.next_dump = now + period
            self.emulator.sent.mark()
            self._write(''.join(self.state.dumps()), main=True)

    def _write(self, text, main=False):
        data = text.encode('latin-1')
        try:
            self.stream.write(self.emulator.faults.apply(MainFrame(data) if main else data))
        except ConnectionLost:
            self.stop.set()


class PleoEmulator:
    def __init__(self, options=None):
        self.options = options or EmulatorOptions()
        self.state = PleoState(self.options)
        if self.options.urf_path:
            self.state.load_urf(self.options.urf_path)
        self.faults = FaultInjector(
            self.options.drop_rate, self.options.corrupt_rate, self.options.seed
        )
        self.received = []  # every command line, for tests
        self.sent = SendLog()  # when each pair of dump lines went out (benchmarks)
        self.dumping = self.options.dump_rate > 0 or self.options.unthrottled
        self.port = None
        self._stop = threading.Event()
        self._physics = None
        self._random = random.Random(self.options.seed)

    def start(self):
        self.port = PtyEmulatorPort(
            lambda stream, stop: MonitorSession(self, stream, stop).run(), 'pleo-emulator'
        )
        self.port.start()
        if self.options.link:
            _replace_symlink(self.options.link, self.device_path)
        self._physics = threading.Thread(
            target=self._run_physics, daemon=True, name='pleo-physics'
        )
        self._physics.start()
        return self

    @property
    def device_path(self):
        return self.port.device_path

    @property
    def dump_period(self):
        """Seconds between dump pairs: 0 when unthrottled, None without a dump rate."""
        if self.options.unthrottled:
            return 0.0
        return 1.0 / self.options.dump_rate if self.options.dump_rate else None

    @property
    def parameters(self):
        return {'port': self.device_path}

    @property
    def description(self):
        loaded = (
            f', {len(self.state.motions)} motions and {len(self.state.sounds)} sounds '
            f'from {self.options.urf_path}'
            if self.options.urf_path
            else ''
        )
        return f'Pleo monitor on {self.device_path} (port:={self.device_path}){loaded}'

    def stop(self):
        self._stop.set()
        if self.port is not None:
            self.port.stop()
        if self.options.link and os.path.islink(self.options.link):
            os.remove(self.options.link)
        if self._physics is not None:
            self._physics.join(2.0)

    def _run_physics(self):
        last = time.monotonic()
        next_touch = last + (self.options.touch_every or float('inf'))
        while not self._stop.wait(TICK):
            now = time.monotonic()
            self.state.step(now - last, now)
            last = now
            if now >= next_touch:
                next_touch = now + self.options.touch_every
                self.touch('head', 0.4)

    def touch(self, sensor='head', seconds=0.3):
        """Press a touch sensor for a while (the dumps show it; a log line says so)."""
        index = p.SENSOR_LABELS.index(sensor)
        with self.state.lock:
            self.state.sensors[index] = 1
            self.state.events.append(p.log_line('INFO', 'sensor', f'{sensor} touched'))
        threading.Timer(seconds, self._release, (index,)).start()

    def _release(self, index):
        with self.state.lock:
            self.state.sensors[index] = 0

    # ---- commands ------------------------------------------------------------------------
    def answer(self, line):
        words = line.split()
        if not words:
            return []
        verb = ' '.join(words[:2]).upper()
        handler = COMMANDS.get(verb) or COMMANDS.get(words[0].upper())
        if handler is None:
            return [f"Unknown command '{line.strip()}'. Type 'help' for a list."]
        arguments = words[2:] if verb in COMMANDS else words[1:]
        try:
            return handler(self, arguments)
        except (ValueError, IndexError) as exc:
            return [f'error: {exc}']

    def _help(self, _):
        return ['Commands: ' + ', '.join(sorted(k.lower() for k in COMMANDS))]

    def _app_unload(self, _):
        self.state.app_loaded = False
        return ['application unloaded']

    def _app_load(self, args):
        name = args[0]
        if not name.lower().startswith('a:'):
            return [
                'error: load applications from the SD card (a:<name>); '
                'never write to internal memory'
            ]
        self.state.app_loaded = True
        return [f'application {name[2:]} loaded']

    def _joint_neutral(self, _):
        self.state.neutral()
        return ['joints to neutral']

    def _aim_joint(self, args):
        """(joint, degrees) of a JOINT ANGLE / MOVE, aimed; ValueError when out of range."""
        joint = p.find_joint(args[0])
        degrees = int(args[1])
        if not joint.allows(degrees):
            raise ValueError(f'joint {joint.id} angle {degrees} out of range')
        self.state.set_joint(joint.id, degrees)
        return joint, degrees

    def _joint_angle(self, args):
        joint, degrees = self._aim_joint(args)
        wait_ms = int(args[2]) if len(args) > 2 else 5000
        deadline = time.monotonic() + wait_ms / 1000.0
        while time.monotonic() < deadline and abs(self.state.angles[joint.id] - degrees) > 1:
            time.sleep(TICK)
        return [f'joint {joint.id} at {int(round(self.state.angles[joint.id]))}']

    def _joint_move(self, args):
        joint, degrees = self._aim_joint(args)
        return [f'joint {joint.id} moving to {degrees}']

    def _motion_play(self, args):
        name = args[0]
        motion = self.state.motions.get(name.split(':')[-1].rsplit('.', 1)[0])
        if motion is None:
            return [f'error: no motion named {name}']
        with self.state.lock:
            self.state.playing.append((time.monotonic(), motion, set()))
            self.state.events.append(p.log_line('INFO', 'motion', f'{motion.name} playing'))
        return [f'playing motion {motion.name}']

    def _sound_play(self, args):
        sound = self.state.sounds.get(args[0].split(':')[-1].rsplit('.', 1)[0])
        if sound is None:
            return [f'error: no sound named {args[0]}']
        with self.state.lock:
            self.state.events.append(
                p.log_line('INFO', 'sound', f'{sound.name} playing ({sound.seconds:.2f} s)')
            )
            self.state.sensors[28] = 1
        return [f'playing sound {sound.name}']

    def _percent(attribute):
        def set_percent(self, args):
            value = int(args[0])
            if not 0 <= value <= 1000:
                raise ValueError(f'{value} is not 0..1000')
            setattr(self.state, attribute, value)
            return [f'{attribute.replace("_", " ")} {value}%']

        return set_percent

    def _stats_power(self, _):
        level = self.state.sensors[2]
        return [
            f'Battery sensor value = {level} (voltage {6.0 + 1.4 * level / 100:.2f} V)',
            'Battery temperature = 31 C',
        ]

    def _pkt_send(self, args):
        packet = ' '.join(args)
        if packet == '?' and 'nxp' in self.state.log_types:
            with self.state.lock:
                self.state.events.append(FIRMWARE)
        return [f'packet sent: {packet}']

    def _log_enable(self, args):
        self.state.log_types.add(args[0].lower())
        return [f'log {args[0]} enabled']

    def _log_disable(self, args):
        self.state.log_types.discard(args[0].lower())
        return [f'log {args[0]} disabled']

    def _dump(self, args):
        """The emulator's own switch for the dump lines (the real command is not known)."""
        self.dumping = args[0].lower() == 'on'
        return [f'dumps {"on" if self.dumping else "off"}']


COMMANDS = {
    'HELP': PleoEmulator._help,
    'APP UNLOAD': PleoEmulator._app_unload,
    'APP LOAD': PleoEmulator._app_load,
    'JOINT NEUTRAL': PleoEmulator._joint_neutral,
    'JOINT ANGLE': PleoEmulator._joint_angle,
    'JOINT MOVE': PleoEmulator._joint_move,
    'MOTION PLAY': PleoEmulator._motion_play,
    'MOTION SPEED': PleoEmulator._percent('motion_speed'),
    'SOUND PLAY': PleoEmulator._sound_play,
    'SOUND SPEED': PleoEmulator._percent('sound_speed'),
    'SOUND VOLUME': PleoEmulator._percent('sound_volume'),
    'STATS POWER': PleoEmulator._stats_power,
    'PKT SEND': PleoEmulator._pkt_send,
    'LOG ENABLE': PleoEmulator._log_enable,
    'LOG DISABLE': PleoEmulator._log_disable,
    'DUMP': PleoEmulator._dump,
}


def _replace_symlink(link, target):
    temporary = f'{link}.{os.getpid()}'
    os.symlink(target, temporary)
    os.replace(temporary, link)


def build_parser():
    parser = argparse.ArgumentParser(
        prog='pleo_emulator',
        description='A Pleo USB serial monitor on a pseudo-terminal (prints its device path).',
    )
    parser.add_argument('--urf', help='a URF whose motions and sounds the Pleo can play')
    parser.add_argument(
        '--sample', action='store_true', help='build the bundled sample project and load its URF'
    )
    parser.add_argument('--link', help='also make the pty reachable at this path (a symlink)')
    parser.add_argument(
        '--dump-rate',
        type=float,
        default=10.0,
        help='sensor and joint dump lines per second (0: none)',
    )
    parser.add_argument(
        '--unthrottled', action='store_true', help='dump lines back to back (benchmarks)'
    )
    parser.add_argument('--no-echo', action='store_true', help='do not echo command lines')
    parser.add_argument(
        '--unknown-speed',
        type=float,
        default=60.0,
        help='deg/s of the joints whose speed is not known (hips, neck)',
    )
    parser.add_argument('--battery', type=int, default=87, help='battery value at start')
    parser.add_argument(
        '--touch-every',
        type=float,
        default=0.0,
        help='touch the head every this many seconds (0: never)',
    )
    FaultInjector.add_arguments(parser, None, None, None)  # no help lines, as before
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='pleo-emulator-') as folder:
        urf_path = build_sample_project(folder).urf_path if args.sample else args.urf
        return _run(args, urf_path)


def _run(args, urf_path):
    options = EmulatorOptions(
        urf_path=urf_path,
        link=args.link,
        dump_rate=args.dump_rate,
        unthrottled=args.unthrottled,
        echo=not args.no_echo,
        unknown_speed=args.unknown_speed,
        battery=args.battery,
        touch_every=args.touch_every,
        **FaultInjector.options(args),
    )
    return run_emulator('pleo_emulator', lambda: PleoEmulator(options))


if __name__ == '__main__':
    sys.exit(main())
