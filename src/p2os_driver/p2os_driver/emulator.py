"""A P2OS robot on a pseudo-terminal and on TCP (port 8101 by default), for users and tests.

    ros2 run p2os_driver p2os_emulator --model p2pb --pty

Behaves as a faithful P2OS server (docs/protocols/p2os.md §3.8, whose section numbers
the § below refer to): waits unconnected, echoes
SYNC0/1/2, starts SIPs on OPEN with motors disabled, applies the 2 s watchdog
(stop, then resume on the next command), closes on CLOSE. Options give the
AMRISim-like variants and fault injection. No rclpy here.
"""

import argparse
import dataclasses
import math
import sys
import threading
import time

from legacy_robot_common.emulator import (
    FaultInjector,
    MainFrame,
    PtyEmulatorPort,
    SendLog,
    TcpEmulatorServer,
    add_host_argument,
    report_main_frames_on_signal,
    stop_on_signal,
)
from legacy_robot_common.errors import MalformedFrame

from . import protocol as p
from .models import MODELS, laser_mount, model_key
from .simulation import Room, SharedWorld, SimulatedPioneer
from .world import WorldError, default_world_path, load_world, parse_pose

C = p.Command
PHYSICS_PERIOD = 0.02  # s
AMIGO_PLAYLIST = [('hello', 0, 9600), ('beep', 9600, 1600), ('goodbye', 11200, 8000)]
# AMRISim logs and ignores these (§4.8)
AMRISIM_IGNORED = (C.ENCODER, C.IOREQUEST, C.PLAYLIST, C.GRIPPER, C.SOUND)
# EmulatorOptions fields handed to SimulatedPioneer as they are
PHYSICS_OPTIONS = (
    'bumpers',
    'sonar_beam',
    'noise',
    'odometry_scale',
    'odometry_drift',
    'laser_ideal_spacing',
    'seed',
)


@dataclasses.dataclass
class EmulatorOptions:
    model: str = 'p2dx'
    name: str = 'emulated'
    sip_cycle: float = 0.1  # 100 ms, or 50 ms (§3.5)
    unthrottled: bool = False  # benchmarks: SIPs back to back, no cycle wait
    later_firmware_tail: bool = False  # P2OS ends the SIP after DIGOUT (§2.6)
    gripper_in_high_byte: bool = True  # P2OS order; False = ARCOS / AMRISim (§6.2 item 1)
    watchdog: float = 2.0  # s; 0 disables
    watchdog_mode: str = 'resume'  # 'resume' (real robot), 'stop', or 'warn' (AMRISim)
    room_width: float = 10.0  # m
    room_height: float = 8.0  # m
    sonar_per_cycle: int = 4
    config_command: bool = True  # False: P2OS before 1.4, which ignores CONFIG (§2.5)
    config_replies_lost: int = 0  # the first N CONFIGpacs never arrive (line noise)
    battery: float = 13.0  # V
    drop_rate: float = 0.0
    corrupt_rate: float = 0.0
    seed: int = None
    subclass: str = ''  # SYNC2 subclass text; '' = the model's own (any case works)
    firmware_version: str = ''  # '' = a P2OS CONFIGpac (ends at TRANSKI); else ARCOS fields
    gripper: bool = None  # has a gripper; None = every model but the AmigoBots
    ignored_commands: tuple = ()  # command numbers the robot ignores (AMRISIM_IGNORED)
    laser_compat: bool = False  # #35-#38 are laser commands (AMRISim's default)
    # the world (§5): a .map / map.yaml file ('' = the room above), its geometry,
    # a start pose (x mm, y mm, th rad; None = the map's RobotHome / Dock, else the origin)
    world: str = ''
    geometry: str = 'exact'  # or 'grid' (AMRISim's 20 mm cells)
    start: tuple = None
    simulator: bool = False  # answers the SIM_* and laser commands; CONFIG serial "SIM"
    bumpers: bool = True  # bumper bits on contact (real robots); AMRISim sets none
    sonar_beam: float = 0.0  # degrees; 0 = one ray per transducer (AMRISim)
    noise: bool = True  # sonar / laser noise as Stage's
    odometry_scale: float = 0.0  # odometry overstates distance by this fraction
    odometry_drift: float = 0.0  # rad of heading error per metre driven
    laser_mount: tuple = None  # x mm, y mm, th deg; None = the model table's
    laser_ideal_spacing: bool = False  # rays at start + k·inc instead of Stage's spacing
    # a client's laser life cycle (docs/p2os.md, "Restarting against AMRISim"): the laser as
    # the last client left it, on or off, settings kept (else each OPEN finds it off);
    # strict_laser refuses, counts and logs a start / end / resolution sent while it is on
    laser_outlives_client: bool = False
    strict_laser: bool = False

    def __post_init__(self):
        self.model = model_key(self.model)
        if self.model not in MODELS:
            raise ValueError(f'unknown model {self.model!r}; known: {", ".join(MODELS)}')
        if self.gripper is None:
            self.gripper = not self.model.startswith('amigo')
        self.ignored_commands = tuple(int(n) for n in self.ignored_commands)
        if self.watchdog_mode not in ('resume', 'stop', 'warn'):
            raise ValueError(
                f'watchdog_mode must be resume, stop or warn, not {self.watchdog_mode!r}'
            )
        if not 0.01 <= self.sip_cycle <= 1.0:
            raise ValueError('sip_cycle must be within 0.01..1 s')
        if self.world:
            self.simulator = True
        if not 0 <= self.sonar_beam <= 180:
            raise ValueError('sonar_beam must be within 0..180 degrees')

    @classmethod
    def amrisim(cls, **overrides):
        """AMRISim as §4.8 describes it: name AMRISim, a watchdog that only warns,
        ARCOS gripper byte order, unsupported commands ignored, #35-#37 read as laser commands."""
        values = dict(
            model='p3dx',
            name='AMRISim',
            watchdog_mode='warn',
            gripper_in_high_byte=False,
            later_firmware_tail=True,
            firmware_version='S.0',
            gripper=False,
            ignored_commands=AMRISIM_IGNORED,
            laser_compat=True,
            simulator=True,
            bumpers=False,
            sonar_per_cycle=32,
        )
        values.update(overrides)
        return cls(**values)


class P2osEmulator:
    """One emulated robot. shared: a SharedWorld the robot joins (a Fleet's); its physics is
    then the Fleet's to run, and the start pose the Fleet's to check."""

    def __init__(self, options=None, shared=None):
        self.options = options or EmulatorOptions()
        self.model = MODELS[self.options.model]
        o = self.options
        self.world = shared.world if shared is not None else open_world(o)
        start = o.start if o.start is not None else self.world.start
        if shared is None:
            check_start(self.world, start, self.model.radius)
        mount = o.laser_mount if o.laser_mount is not None else laser_mount(self.model)
        physics = {name: getattr(o, name) for name in PHYSICS_OPTIONS}
        physics.update(
            battery=o.battery,
            sonar_per_cycle=o.sonar_per_cycle,
            start=start,
            laser_mount=(mount[0], mount[1], math.radians(mount[2])),
        )
        if shared is None:
            self.robot = SimulatedPioneer(self.model, self.world, **physics)
        else:
            self.robot = shared.add(self.model, **physics)
        self._own_physics = shared is None
        self.faults = FaultInjector(
            self.options.drop_rate, self.options.corrupt_rate, self.options.seed
        )
        self.tcp = None
        self.pty = None
        self.watchdog_trips = 0
        self.sessions = 0
        self.laser_commands = 0  # #35-#38 taken as laser commands (laser_compat)
        self.sim_laser_commands = 0  # #230-#233 taken (a simulator)
        self.bad_sim_commands = 0  # SIM_SET_POSE / laser commands ignored as unusable
        self.laser_reconfigured_while_on = 0  # refused under strict_laser
        self.config_replies_lost = 0  # CONFIGpacs lost so far (options.config_replies_lost)
        self.sent = SendLog()  # when each SIP cycle went out (benchmarks)
        self._commands = []
        self._commands_lock = threading.Lock()
        self._last_command = time.monotonic()
        self._last_advance = None
        self._physics_stop = threading.Event()
        self._physics = None

    # ---- transports ------------------------------------------------------------
    def start_tcp(self, host='127.0.0.1', port=0):
        self.tcp = TcpEmulatorServer(
            lambda s, stop: _Session(self, s, stop, True).run(), host, port, name='p2os-emulator'
        )
        port = self.tcp.start()
        self._start_physics()
        return port

    def start_pty(self):
        self.pty = PtyEmulatorPort(
            lambda s, stop: _Session(self, s, stop, False).run(), name='p2os-emulator'
        )
        device = self.pty.start()
        self._start_physics()
        return device

    def _start_physics(self):
        """The robot moves whether or not a client is connected (it coasts to a stop after
        CLOSE)."""
        if self._physics is None and self._own_physics:
            self._physics = threading.Thread(
                target=self._run_physics, daemon=True, name='p2os-emulator-physics'
            )
            self._physics.start()

    def _run_physics(self):
        while not self._physics_stop.wait(PHYSICS_PERIOD):
            self.advance()

    def start(self):
        """For the plugin: a TCP robot on a free port."""
        self.start_tcp()
        return self

    @property
    def cycle(self):
        """Seconds between SIP cycles (0 when unthrottled)."""
        return 0.0 if self.options.unthrottled else self.options.sip_cycle

    @property
    def parameters(self):
        return {'port': f'tcp://127.0.0.1:{self.tcp.port}'}

    @property
    def description(self):
        return f'P2OS {self.model.subclass} on tcp://127.0.0.1:{self.tcp.port}'

    def drop_clients(self):
        """Fault: the TCP connection breaks (the robot keeps its state)."""
        if self.tcp:
            self.tcp.drop_clients()

    def stop(self):
        for transport in (self.tcp, self.pty):
            if transport is not None:
                transport.stop()
        self._physics_stop.set()
        if self._physics is not None:
            self._physics.join(2.0)

    # ---- what tests look at ----------------------------------------------------
    def received_commands(self):
        """[(monotonic time, command number, argument)] of every valid command packet."""
        with self._commands_lock:
            return list(self._commands)

    def clear_commands(self):
        with self._commands_lock:
            self._commands.clear()

    def _record(self, number, argument):
        with self._commands_lock:
            self._commands.append((time.monotonic(), number, argument))
            del self._commands[:-10000]

    # ---- shared robot clock and watchdog -----------------------------------------
    def advance(self):
        """Run the physics up to now."""
        now = time.monotonic()
        with self.robot.lock:
            if self._last_advance is not None:
                self._check_watchdog(now)
                self.robot.step(min(0.5, now - self._last_advance))
            self._last_advance = now

    def _check_watchdog(self, now):
        o = self.options
        if not o.watchdog or o.watchdog_mode == 'warn' or self.robot.halted:
            return
        if self.robot.enabled and now - self._last_command > o.watchdog:
            self.robot.halted = True  # stop; the setpoints are kept
            self.watchdog_trips += 1

    def command_arrived(self, number, argument):
        self._record(number, argument)
        self._last_command = time.monotonic()
        with self.robot.lock:
            if self.robot.halted:
                self.robot.halted = False
                if self.options.watchdog_mode == 'stop':
                    self.robot.stop()


def open_world(options):
    """The options' world: its .map / map.yaml file, else the room."""
    if options.world:
        return load_world(options.world, options.geometry)
    return Room(options.room_width * 1000, options.room_height * 1000)


def check_start(world, start, radius, robot=''):
    """WorldError when a robot of this radius at start would touch a wall."""
    if world.contact(start[0], start[1], radius) is not None:
        who = f'robot {robot}: ' if robot else ''
        raise WorldError(
            f'{who}the start pose ({start[0]:.0f} mm, {start[1]:.0f} mm) is inside or touching '
            f'a wall of {world.name}; give another with --start'
            + (' or --robot NAME=x,y,th' if robot else '')
        )


class Fleet:
    """Several emulated robots in one world, as AMRISim runs them (`-r p3dx:r1 -r p3dx:r2`):
    each robot on its own TCP port counting up from the first, each robot's sonar, laser and
    motion meeting the others, and one physics thread stepping them all.

    robots: [(name, start pose (x mm, y mm, th rad) or None)]; a robot without a start pose
    gets the first free place spread out from the map's home (AMRISim puts each further robot
    1 m lower in y; here the nearest place, that way first, that touches no wall or robot).
    """

    def __init__(self, options, robots):
        names = [name for name, _ in robots]
        if len(set(names)) != len(names):
            raise WorldError(f'robot names must differ: {", ".join(names)}')
        self.options = options
        self.shared = SharedWorld(open_world(options))
        radius = MODELS[options.model].radius
        starts = fleet_starts(self.shared.world, robots, radius)
        self.emulators = {
            name: P2osEmulator(dataclasses.replace(options, name=name, start=start), self.shared)
            for name, start in zip(names, starts, strict=True)
        }
        self._physics_stop = threading.Event()
        self._physics = None

    def start_tcp(self, host='127.0.0.1', port=8101):
        """Listen for every robot, on port, port + 1, ... (0: any free ports); {name: port}."""
        ports = {}
        for i, (name, emulator) in enumerate(self.emulators.items()):
            ports[name] = emulator.start_tcp(host, port + i if port else 0)
        if self._physics is None:
            self._physics = threading.Thread(
                target=self._run_physics, daemon=True, name='p2os-fleet-physics'
            )
            self._physics.start()
        return ports

    def _run_physics(self):
        while not self._physics_stop.wait(PHYSICS_PERIOD):
            self.advance()

    def advance(self):
        """Every robot's physics up to now, in one cycle."""
        for emulator in self.emulators.values():
            emulator.advance()

    def stop(self):
        """Every robot; once (each robot's holder may ask)."""
        if self._physics_stop.is_set():
            return
        self._physics_stop.set()
        if self._physics is not None:
            self._physics.join(2.0)
        for emulator in self.emulators.values():
            emulator.stop()


def fleet_starts(world, robots, radius):
    """Start poses for [(name, pose or None)] robots of this radius: the given ones checked
    (no wall, no overlap; WorldError naming the robot), the others placed in free spots."""
    placed = []  # (name, pose)
    for name, start in robots:
        if start is None:
            continue
        check_start(world, start, radius, name)
        for other, pose in placed:
            if math.hypot(pose[0] - start[0], pose[1] - start[1]) < 2 * radius:
                raise WorldError(
                    f'robot {name}: its start pose ({start[0]:.0f} mm, {start[1]:.0f} mm) '
                    f'overlaps robot {other}; give another with --robot {name}=x,y,th'
                )
        placed.append((name, start))
    spots = _free_spots(world, radius, [pose for _, pose in placed])
    starts = []
    for name, start in robots:
        if start is None:
            try:
                start = next(spots)
            except StopIteration:
                raise WorldError(
                    f'robot {name}: no free place near the home of {world.name}'
                ) from None
        starts.append(start)
    return starts


def _free_spots(world, radius, taken, rings=20):
    """Places spread out from the world's home (its heading kept), nearest first and straight
    below it (-y, AMRISim's direction) first among equals: touching no wall and no place
    taken, each a robot's width plus a margin from the others."""
    hx, hy, hth = world.start
    spacing = 2 * radius + 200.0
    taken = list(taken)
    grid = [(i, j) for i in range(-rings, rings + 1) for j in range(-rings, rings + 1)]
    grid.sort(key=lambda c: (math.hypot(*c), c[0] != 0, c[1] > 0, abs(c[0]), c[0]))
    for i, j in grid:
        x, y = hx + i * spacing, hy + j * spacing
        if world.contact(x, y, radius + 50.0) is not None:
            continue
        if any(math.hypot(x - tx, y - ty) < spacing for tx, ty, _ in taken):
            continue
        taken.append((x, y, hth))
        yield (x, y, hth)


class _Session:
    """One client connection: the P2OS state machine and the SIP cycle."""

    def __init__(self, emulator, stream, stop, closes_connection):
        self.emulator = emulator
        self.robot = emulator.robot
        self.stream = stream
        self.stop = stop
        self.closes_connection = closes_connection  # TCP: CLOSE ends the connection
        self.receiver = p.PacketReceiver(max_count=p.P2OS_MAX_COUNT)
        self.sync_step = 0
        self.connected = False
        self.streams = {}  # packet type → 'once' or 'continuous'
        self.getaux_wanted = 0
        self.send_config = self.send_playlist = False
        self.simstat = 0  # 0 off, 1 once, 2 before every SIP

    def run(self):
        self.emulator.sessions += 1
        next_cycle = time.monotonic()
        while not self.stop.is_set():
            wait = max(0.0, next_cycle - time.monotonic()) if self.connected else 0.2
            for item in self.receiver.feed(self.stream.read(4096, wait)):
                if isinstance(item, bytes) and not self._handle(item):
                    return
            if self.connected and time.monotonic() >= next_cycle:
                self._cycle()
                # a late cycle is not made up with a burst: the robot just sends the next one
                next_cycle = max(next_cycle + self.emulator.cycle, time.monotonic())

    def _send(self, body):
        self.stream.write(self.emulator.faults.apply(p.build_packet(body)))

    # ---- commands ----------------------------------------------------------------
    def _handle(self, body):
        """Apply one command packet; False when the connection should close."""
        try:
            number, argument = p.decode_command(body)
        except MalformedFrame:
            if not (self.connected and body and body[0] == C.SIM_SET_POSE):
                return True  # P2OS ignores what it cannot read
            number, argument = C.SIM_SET_POSE, None
        if not self.connected:
            self._handle_sync(number)
            return True
        self.emulator.command_arrived(number, argument)
        options = self.emulator.options
        if number in options.ignored_commands:
            return True
        if options.simulator and self._simulator_command(number, argument, body):
            return True
        if options.laser_compat and number in p.SIMULATOR_LASER_COMMANDS:
            self.emulator.laser_commands += 1
            return True
        if number == C.CLOSE:
            self._reset_robot()
            self.connected, self.sync_step, self.streams = False, 0, {}
            return not self.closes_connection
        with self.robot.lock:
            self._apply(number, argument)
        return True

    def _reset_robot(self):
        """The robot as a new client finds it; the laser too unless it outlives clients."""
        with self.robot.lock:
            laser = self.robot.laser
            self.robot.disconnect()
            if self.emulator.options.laser_outlives_client:
                self.robot.laser = laser

    def _refuse_laser_reconfiguration(self, number, old):
        """strict_laser: True (counted, logged) for a scan setting sent while the laser runs."""
        settings = {p.LASER_START, p.LASER_END, p.LASER_RESOLUTION}
        if old:
            settings |= {C.GRIPPERVAL, C.GRIPREQUEST, C.OLD_LRF_CFG_INC}
        strict = self.emulator.options.strict_laser
        if not (strict and number in settings and self.robot.laser.packet):
            return False
        self.emulator.laser_reconfigured_while_on += 1
        count = self.emulator.laser_reconfigured_while_on
        if count <= 10 or count % 100 == 0:
            print(
                f'p2os_emulator: laser command #{int(number)} refused: the laser is on; turn it '
                f'off (#230 0) before changing its scan ({count} so far)',
                file=sys.stderr,
                flush=True,
            )
        return True

    def _simulator_command(self, number, argument, body):
        """SIM_* and laser commands (§4.2, §4.7); True when number was one. A command with
        an unusable argument is counted, logged and ignored."""
        options, r = self.emulator.options, self.robot
        old = options.laser_compat and number in (*p.SIMULATOR_LASER_COMMANDS, C.OLD_LRF_CFG_INC)
        if not old and number not in (
            C.SIM_SET_POSE,
            C.SIM_RESET,
            C.SIM_STAT,
            p.LASER_ENABLE,
            p.LASER_START,
            p.LASER_END,
            p.LASER_RESOLUTION,
        ):
            return False
        value = argument if isinstance(argument, int) else 0
        if self._refuse_laser_reconfiguration(number, old):
            return True
        try:
            with r.lock:
                if number == C.SIM_SET_POSE:
                    x, y, th = p.decode_sim_set_pose(body)
                    if not r.set_true_pose(float(x), float(y), math.radians(th)):
                        raise ValueError(f'pose ({x}, {y}, {th}) is off the map or in a wall')
                elif number == C.SIM_RESET:
                    r.reset_simulation()
                elif number == C.SIM_STAT:
                    self.simstat = value if value in (1, 2) else 0
                elif number in (C.ADSEL, p.LASER_ENABLE):
                    r.laser.packet = p.laser_enable_value(number, value)
                elif number in (C.GRIPPERVAL, p.LASER_START):
                    r.laser.start = float(_angle(value))
                elif number in (C.GRIPREQUEST, p.LASER_END):
                    r.laser.end = float(_angle(value))
                else:  # resolution in hundredths of a degree
                    if not 0 < abs(value) <= 18000:
                        raise ValueError(f'laser resolution {value}/100 degrees')
                    r.laser.increment = abs(value) / 100.0
            if old:
                self.emulator.laser_commands += 1
            elif number not in (C.SIM_SET_POSE, C.SIM_RESET, C.SIM_STAT):
                self.emulator.sim_laser_commands += 1
        except (ValueError, MalformedFrame) as exc:
            self.emulator.bad_sim_commands += 1
            if self.emulator.bad_sim_commands <= 10 or self.emulator.bad_sim_commands % 100 == 0:
                print(
                    f'p2os_emulator: command #{int(number)} ignored: {exc} '
                    f'({self.emulator.bad_sim_commands} so far)',
                    file=sys.stderr,
                    flush=True,
                )
        return True

    def _handle_sync(self, number):
        if number not in (0, 1, 2):
            return  # unconnected P2OS only answers SYNCs
        if self.sync_step == 3 and number == C.OPEN:
            self.connected = True
            self._reset_robot()  # motors start disabled (§3.1)
            with self.robot.lock:
                self.robot.sonar_enabled = bool(self.robot.model.sonar)
            self.emulator.command_arrived(number, None)
            return
        self.sync_step = self.sync_step + 1 if number == self.sync_step else int(number == 0)
        if number == 2 and self.sync_step == 3:
            options = self.emulator.options
            self._send(
                p.encode_sync2_reply(
                    options.name, 'Pioneer', options.subclass or self.robot.model.subclass
                )
            )
        else:
            self._send(bytes([number]))

    def _apply(self, number, arg):
        r = self.robot
        value = arg if isinstance(arg, int) else 0
        simple = {
            C.ENABLE: lambda: setattr(r, 'enabled', bool(value)),
            C.SETA: lambda: r.set_acceleration(value),
            C.SETRA: lambda: r.set_acceleration(value, rotational=True),
            C.SETV: lambda: r.set_max(value),
            C.SETRV: lambda: r.set_max(value, rotational=True),
            C.SETO: r.set_odometry_origin,
            C.MOVE: lambda: r.move(value),
            C.ROTATE: lambda: r.set_rotation(value),
            C.RVEL: lambda: r.set_rotation(value),
            C.VEL: lambda: r.set_velocity(value),
            C.HEAD: lambda: r.head(value),
            C.DHEAD: lambda: r.head(value, relative=True),
            C.DCHEAD: lambda: r.head(value, relative=True),
            C.VEL2: lambda: r.set_wheels(*p.split_two_bytes(value)),
            C.STOP: r.stop,
            C.E_STOP: r.emergency_stop,
            C.SONAR: lambda: setattr(r, 'sonar_enabled', bool(value) and bool(r.model.sonar)),
            C.DIGOUT: lambda: r.set_digital_outputs(*(b & 0xFF for b in p.split_two_bytes(value))),
            C.ADSEL: lambda: setattr(
                r, 'analog_port', value if 1 <= value <= 5 else r.analog_port
            ),
            C.GRIPPER: lambda: r.gripper.command(value),
            C.GRIPPERVAL: lambda: r.gripper.value(value),
            C.BUMP_STALL: lambda: setattr(r, 'bump_stall', value),
            C.SOUND: lambda: setattr(r, 'sound', value),
            C.SAY: lambda: r.tunes.append(bytes(arg or b'')),
            C.TTY2: lambda: r.aux_buffer.extend(arg or b''),  # a loop-back plug on AUX
            C.BATTEST: lambda: setattr(r, 'battery', value / 10.0),
        }
        if number in simple:
            simple[number]()
        elif number in (C.ENCODER, C.GRIPREQUEST, C.IOREQUEST):
            self._set_stream(number, value)
        elif number == C.GETAUX:
            self.getaux_wanted = max(0, min(200, value))
            if value == 0:
                r.aux_buffer.clear()
        elif number == C.CONFIG:
            self.send_config = self.emulator.options.config_command
        elif number == C.PLAYLIST:
            self.send_playlist = True

    def _set_stream(self, number, value):
        kind = {
            C.ENCODER: p.PacketType.ENCODER,
            C.GRIPREQUEST: p.PacketType.GRIPPER,
            C.IOREQUEST: p.PacketType.IO,
        }[number]
        if value <= 0:
            self.streams.pop(kind, None)
        else:
            self.streams[kind] = 'once' if value == 1 else 'continuous'

    # ---- the server cycle ----------------------------------------------------------
    def _cycle(self):
        with self.robot.lock:
            packets = [self._simstat()] if self.simstat else []
            if self.simstat == 1:
                self.simstat = 0
            packets.append(self._sip())
            packets += self._laser_packets()
            for kind, mode in list(self.streams.items()):
                packets.append(self._stream_packet(kind))
                if mode == 'once':
                    del self.streams[kind]
            if self.getaux_wanted:
                data = self.robot.take_aux(self.getaux_wanted)
                if data is not None:
                    packets.append(p.encode_seraux(data))
                    self.getaux_wanted = 0
            if self.send_config:
                self.send_config = False
                if self.emulator.config_replies_lost < self.emulator.options.config_replies_lost:
                    self.emulator.config_replies_lost += 1
                else:
                    last = (
                        'firmware_version'
                        if self.emulator.options.firmware_version
                        else 'trans_ki'
                    )
                    packets.append(p.encode_config(self._config_values(), last))
            if self.send_playlist:
                amigo = self.robot.model.subclass.startswith('amigo')
                packets.append(p.encode_playlist(AMIGO_PLAYLIST if amigo else []))
                self.send_playlist = False
        # one write per cycle: the robot sends its packets back to back
        self.emulator.sent.mark()
        self.stream.write(
            self.emulator.faults.apply(MainFrame(b''.join(p.build_packet(b) for b in packets)))
        )

    def _sip(self):
        return sip_body(self.robot, self.emulator.options)

    def _laser_packets(self):
        """The whole current scan after the SIP, in packets of 32 readings (§4.3)."""
        r = self.robot
        if not r.laser.packet:
            return []
        moved = r.laser.moved
        ranges, reflect = r.laser_scan()
        ox, oy, oth = r.odometry
        return p.encode_laser_packets(
            r.laser.packet, ranges, reflect, (ox, oy, math.degrees(oth)), int(moved)
        )

    def _simstat(self):
        x, y, th = self.robot.pose
        cycle = int(self.emulator.options.sip_cycle * 1000)
        return p.encode_simstat(
            p.SimStat(
                sim_interval=cycle,
                real_interval=cycle,
                last_interval=cycle,
                true_x=int(x),
                true_y=int(y),
                true_th=int(round(math.degrees(th))),
            )
        )

    def _stream_packet(self, kind):
        r = self.robot
        if kind == p.PacketType.ENCODER:
            return p.encode_encoders(*(_int32(int(t)) for t in r.encoders))
        if kind == p.PacketType.GRIPPER:
            gripper_type = 2 if self.emulator.options.gripper else 0  # 2 = General I/O
            return p.encode_gripper(
                p.GripperPacket(gripper_type, r.gripper.packet_byte(), r.gripper.grasp_time)
            )
        return p.encode_io(
            p.IoPacket(
                bytes([r.digital_inputs()]),
                bytes([r.digital_outputs]),
                [int(r.analog_value(port) * 2047) for port in range(1, 6)],
            )
        )

    def _config_values(self):
        # SIPCYCLE is one byte of milliseconds: cycles over 255 ms are reported as 255
        m, o = self.robot.model, self.emulator.options
        return {
            'robot_type': 'Pioneer',
            'subtype': m.subclass,
            'serial_number': 'SIM' if o.simulator else 'EMU0001',
            'rot_vel_top': 360,
            'trans_vel_top': int(m.max_velocity),
            'rot_acc_top': 300,
            'trans_acc_top': 1000,
            'pwm_max': 500,
            'name': o.name,
            'sip_cycle': min(255, int(o.sip_cycle * 1000)),
            'host_baud': 0,
            'aux1_baud': 0,
            'gripper': 2 if o.gripper else 0,
            'front_sonar': int(bool(m.sonar)),
            'rear_sonar': int(len(m.sonar) > 8),
            'low_battery': 110,
            'rev_count': 16570,
            'watchdog': int(o.watchdog * 1000),
            'stall_value': 300,
            'stall_count': 200,
            'rot_vel_max': 100,
            'trans_vel_max': int(m.max_velocity),
            'rot_acc': 100,
            'rot_decel': 100,
            'trans_acc': 300,
            'trans_decel': 300,
            'rot_kp': 40,
            'rot_kv': 20,
            'rot_ki': 0,
            'trans_kp': 40,
            'trans_kv': 20,
            'trans_ki': 0,
            'has_gyro': 0,
            'firmware_version': o.firmware_version,
        }


def sip_body(robot, options):
    """The standard SIP body for the robot's state now (new sonar readings are consumed)."""
    r, m = robot, robot.model
    left, right = r.wheel_velocities()
    ox, oy, oth = r.odometry
    front, rear = r.bumper_bits
    stall = int(r.stalled)
    tail = b''
    if options.later_firmware_tail:
        tail = p.encode_sip_tail(
            battery_x10=int(r.battery * 10),
            charge_state=0,
            rotational_velocity_x10=int(math.degrees(r.w) * 10),
        )
    sip = p.StandardSip(
        moving=r.moving,
        x=int(round(ox / m.dist_conv)) & 0xFFFF,
        y=int(round(oy / m.dist_conv)) & 0xFFFF,
        theta=_int16(round(oth / m.angle_conv)),
        left_velocity=_int16(round(left / m.vel_conv)),
        right_velocity=_int16(round(right / m.vel_conv)),
        battery_decivolts=max(0, min(255, int(r.battery * 10))),
        stall_bumpers=(stall | rear) | (stall | front) << 8,
        control=_int16(round(r.heading_target / m.angle_conv)),
        flags=int(r.enabled) | int(r.sonar_enabled) << 1,
        compass=int(math.degrees(r.pose[2]) % 360 // 2),
        sonar=[(i, min(0xFFFF, round(mm / m.range_conv))) for i, mm in r.next_sonar_readings()],
        analog_port=r.analog_port,
        gripper_state=r.gripper.sip_byte() if options.gripper else 0,
        analog=int(r.analog_value(r.analog_port) * 255),
        digital_inputs=r.digital_inputs(),
        digital_outputs=r.digital_outputs,
        extra=tail,
    )
    return p.encode_sip(sip, options.gripper_in_high_byte)


def world_summary(world):
    """One line: the file, what is solid, the start pose, skipped lines."""
    text = f'{world.name}: {len(world.segments)} segments, {len(world.boxes)} cells'
    x, y, th = world.start
    text += f', start ({x:.0f} mm, {y:.0f} mm, {math.degrees(th):.0f}°)'
    armap = getattr(world, 'armap', None)
    if armap is not None and armap.skipped:
        text += (
            f'; {armap.skipped} malformed lines skipped (e.g. line {armap.skipped_examples[0]})'
        )
    return text


def _angle(value):
    if not -360 <= value <= 360:
        raise ValueError(f'laser angle {value} degrees')
    return value


def _int16(value):
    return (int(value) + 0x8000) % 0x10000 - 0x8000


def _int32(value):
    return (value + 0x80000000) % 0x100000000 - 0x80000000


# ---- command line ----------------------------------------------------------------
WORLD_ARGUMENTS = (  # (flag, argparse options) of the world group
    (
        '--world',
        dict(
            default='',
            help='an ARIA .map or a ROS map.yaml to drive in; "default" = the office floor '
            'shipped with the package. Makes the robot a simulator (laser, SIMSTAT, SIM_SET_POSE)',
        ),
    ),
    ('--start', dict(default='', help='start pose x,y,th: mm, mm, degrees (default: RobotHome)')),
    (
        '--geometry',
        dict(
            choices=('exact', 'grid'),
            default='exact',
            help="exact: lines as drawn; grid: AMRISim's 20 mm cells (walls up to 20 mm short)",
        ),
    ),
    (
        '--robot',
        dict(
            action='append',
            default=[],
            metavar='NAME[=x,y,th]',
            help="one more robot in the same world (AMRISim's -r), with its start pose in mm, "
            'mm, degrees (default: a free place near home); may repeat; the robots listen on '
            '--port, --port + 1, ...',
        ),
    ),
    ('--simulator', dict(action='store_true', help='SIM_* and laser commands in --room too')),
    ('--no-bumpers', dict(action='store_true', help='no bumper bits on contact (as AMRISim)')),
    (
        '--sonar-beam',
        dict(type=float, default=0.0, help='sonar beam, degrees (rays 6° apart); 0 = one ray'),
    ),
    ('--no-noise', dict(action='store_true', help='exact sonar and laser ranges')),
    (
        '--odometry-scale',
        dict(type=float, default=0.0, help='odometry overstates distance by this fraction'),
    ),
    (
        '--odometry-drift',
        dict(type=float, default=0.0, help='odometry heading drift, degrees per metre driven'),
    ),
    ('--laser-mount', dict(default='', help="laser x,y,th: mm, mm, degrees (default: model's)")),
    (
        '--laser-ideal-spacing',
        dict(action='store_true', help="rays at start + k·increment, not Stage's fov / count"),
    ),
    (
        '--laser-outlives-client',
        dict(action='store_true', help='the laser stays on and set up when its client goes'),
    ),
    (
        '--strict-laser',
        dict(action='store_true', help='refuse (count, log) a scan change while the laser is on'),
    ),
)


def build_parser():
    parser = argparse.ArgumentParser(prog='p2os_emulator', description=__doc__.split('\n\n')[0])
    parser.add_argument(
        '--model',
        default=None,
        type=model_key,
        choices=sorted(MODELS),
        help='robot model (SYNC2 subclass, factors, sonar); default p2dx (p3dx with --amrisim)',
    )
    parser.add_argument('--name', default='emulated', help='robot name in the SYNC2 reply')
    add_host_argument(parser)
    parser.add_argument('--port', type=int, default=8101, help='TCP port (0 = any free port)')
    parser.add_argument('--no-tcp', action='store_true', help='do not listen on TCP')
    parser.add_argument('--pty', action='store_true', help='also serve a pseudo-terminal')
    parser.add_argument(
        '--sip-cycle', type=float, default=0.1, help='SIP period in s (0.1 or 0.05)'
    )
    parser.add_argument(
        '--unthrottled', action='store_true', help='send SIP cycles back to back (benchmarks)'
    )
    parser.add_argument(
        '--later-firmware-tail',
        action='store_true',
        help='append the ARCOS SIP tail (battery x10, charge state, rot. velocity)',
    )
    parser.add_argument(
        '--arcos-gripper-order',
        action='store_true',
        help='gripper state in the low byte of the SIP field (ARCOS / AMRISim)',
    )
    parser.add_argument(
        '--no-config-command', action='store_true', help='ignore CONFIG, as P2OS before 1.4 does'
    )
    parser.add_argument('--watchdog', type=float, default=2.0, help='watchdog in s (0 = off)')
    parser.add_argument('--watchdog-mode', choices=('resume', 'stop', 'warn'), default='resume')
    parser.add_argument(
        '--room', default='10x8', help='room size in metres, WIDTHxHEIGHT (without --world)'
    )
    world = parser.add_argument_group('world (docs/protocols/p2os.md §5)')
    for flag, options in WORLD_ARGUMENTS:
        world.add_argument(flag, **options)
    FaultInjector.add_arguments(parser)
    parser.add_argument(
        '--subclass',
        default='',
        help="SYNC2 subclass to announce instead of the model's (e.g. P3DX-SH, "
        'p3dx-sh-lms1xx, or an unknown one such as box)',
    )
    parser.add_argument(
        '--firmware-version', default='', help='send an ARCOS CONFIGpac with this firmware version'
    )
    parser.add_argument('--no-gripper', action='store_true', help='a robot without a gripper')
    parser.add_argument(
        '--ignore-commands',
        default='',
        help='comma-separated command numbers the robot ignores, e.g. 19,37,40,91',
    )
    parser.add_argument(
        '--laser-compat',
        action='store_true',
        help='take #35-#37 as laser commands, as AMRISim does by default',
    )
    parser.add_argument(
        '--amrisim',
        action='store_true',
        help='play AMRISim: name AMRISim, watchdog only warns, ARCOS gripper order, '
        'unsupported commands ignored, #35-#37 as laser commands (docs/protocols/p2os.md §4.8)',
    )
    return parser


def options_from_args(args):
    try:
        width, height = (float(v) for v in args.room.lower().split('x'))
    except ValueError:
        raise ValueError(f'--room must look like 10x8, not {args.room!r}') from None
    try:
        ignored = tuple(int(n) for n in args.ignore_commands.split(',') if n.strip())
    except ValueError:
        raise ValueError(
            f'--ignore-commands takes numbers like 19,37,40, not {args.ignore_commands!r}'
        ) from None
    world = default_world_path() if args.world == 'default' else args.world
    start = parse_pose(args.start) if args.start else None
    mount = None
    if args.laser_mount:
        x, y, th = parse_pose(args.laser_mount)
        mount = (x, y, math.degrees(th))
    values = dict(
        world=world,
        start=start,
        geometry=args.geometry,
        simulator=args.simulator or bool(world),
        bumpers=not args.no_bumpers,
        sonar_beam=args.sonar_beam,
        noise=not args.no_noise,
        odometry_scale=args.odometry_scale,
        odometry_drift=math.radians(args.odometry_drift),
        laser_mount=mount,
        laser_ideal_spacing=args.laser_ideal_spacing,
        laser_outlives_client=args.laser_outlives_client,
        strict_laser=args.strict_laser,
        model=args.model,
        sip_cycle=args.sip_cycle,
        unthrottled=args.unthrottled,
        config_command=not args.no_config_command,
        watchdog=args.watchdog,
        room_width=width,
        room_height=height,
        **FaultInjector.options(args),
        subclass=args.subclass,
    )
    if args.model is None:
        del values['model']  # the default of the plain robot or of the preset
    # each variant option given on the command line overrides the preset
    chosen = {
        'name': (args.name, 'emulated'),
        'later_firmware_tail': (args.later_firmware_tail, False),
        'gripper_in_high_byte': (not args.arcos_gripper_order, True),
        'watchdog_mode': (args.watchdog_mode, 'resume'),
        'firmware_version': (args.firmware_version, ''),
        'gripper': (False if args.no_gripper else None, None),
        'ignored_commands': (ignored, ()),
        'laser_compat': (args.laser_compat, False),
    }
    if args.amrisim:
        values['bumpers'] = False
        values['simulator'] = True
        values.update({k: v for k, (v, default) in chosen.items() if v != default})
        return EmulatorOptions.amrisim(**values)
    values.update({k: v for k, (v, _) in chosen.items()})
    return EmulatorOptions(**values)


def parse_robots(values):
    """--robot NAME[=x,y,th] values → [(name, start pose or None)]."""
    robots = []
    for value in values:
        name, _, pose = value.partition('=')
        if not name.strip():
            raise WorldError(f'--robot takes NAME or NAME=x,y,th, not {value!r}')
        robots.append((name.strip(), parse_pose(pose) if pose else None))
    return robots


def main_fleet(args):
    """Several robots in one world (--robot): one process, one port each."""
    if args.no_tcp or args.pty or args.start:
        print(
            'error: --robot serves TCP only and takes each start pose as NAME=x,y,th',
            file=sys.stderr,
        )
        return 2
    stop = stop_on_signal()
    try:
        fleet = Fleet(options_from_args(args), parse_robots(args.robot))
        if fleet.options.world:
            print(f'P2OS emulator world: {world_summary(fleet.shared.world)}', flush=True)
        ports = fleet.start_tcp(args.host, args.port)
    except (ValueError, OSError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    for name, port in ports.items():
        x, y, th = fleet.emulators[name].robot.initial_pose
        print(
            f'P2OS emulator {name} ({fleet.options.model}) listening on tcp://{args.host}:{port}'
            f', start ({x:.0f} mm, {y:.0f} mm, {math.degrees(th):.0f}°)',
            flush=True,
        )
    stop.wait()
    fleet.stop()
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.robot:
        return main_fleet(args)
    if args.no_tcp and not args.pty:
        print('error: nothing to serve: --no-tcp needs --pty', file=sys.stderr)
        return 2
    stop = stop_on_signal()
    try:
        emulator = P2osEmulator(options_from_args(args))
        if emulator.options.world:
            print(f'P2OS emulator world: {world_summary(emulator.world)}', flush=True)
        report_main_frames_on_signal(emulator)
        if not args.no_tcp:
            port = emulator.start_tcp(args.host, args.port)
            print(
                f'P2OS emulator ({emulator.options.model}) listening on tcp://{args.host}:{port}',
                flush=True,
            )
        if args.pty:
            print(
                f'P2OS emulator ({emulator.options.model}) serial device: {emulator.start_pty()}',
                flush=True,
            )
    except (ValueError, OSError) as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    stop.wait()
    emulator.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
