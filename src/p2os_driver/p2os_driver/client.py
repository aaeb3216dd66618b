"""P2OS client: connect over serial or TCP, handshake, keep alive, decode, say goodbye.

No rclpy here. Records handed to ``on_record`` are the decoded packets of
protocol.py plus Connected (once per session) and Encoders / AuxBytes.
The node asks for what it wants in robot terms (``drive(mm_s, rad_s)``, ``set_sonar(on)``,
``gripper(command)``, ...); the packets are built here. Section numbers (§) refer to
docs/protocols/p2os.md.
"""

import collections
import dataclasses
import math
import threading
import time
from typing import Optional, Tuple

from legacy_robot_common.client import ReconnectingClient
from legacy_robot_common.errors import ConnectionLost, LinkTimeout, MalformedFrame
from legacy_robot_common.streams import SerialStream, SocketStream
from legacy_robot_common.velocity import VelocityWatchdog

from . import protocol as p
from .models import MODELS, RobotModel, closest_models, find_model, model_key, wheel_units

# The Player / ROS order of bauds to try on a serial port (§3.1).
DEFAULT_BAUD_CYCLE = (9600, 38400, 19200, 115200, 57600)
MIN_WAIT = 0.002  # s; shortest read wait of the connected loop
SIP_TYPES = (p.PacketType.SIP_STOPPED, p.PacketType.SIP_MOVING)
C = p.Command
T = p.PacketType
# the packet streams by their parameter / wanted-state name: request command, reply packet type
STREAMS = {
    'encoder': (C.ENCODER, T.ENCODER),
    'gripper': (C.GRIPREQUEST, T.GRIPPER),
    'io': (C.IOREQUEST, T.IO),
}
# BUMP_STALL #44's argument: which bumpers stall the motors (§2.5)
BUMP_STALL_VALUES = {0: 'off', 1: 'front', 2: 'rear', 3: 'either'}
GRIPPER_COMMANDS = (1, 2, 3, 4, 5, 6, 7, 8, 15, 16, 17)  # GRIPPER #33 (§2.11)
GRIPPER_WITH_VALUE = (16, 17)  # GRIPPERVAL must follow at once
AUX_OUT_MAX, AUX_IN_MAX = 196, 200  # TTY2 bytes per command, GETAUX bytes per reply
SAY_MAX_TONES = 20
ACCELERATIONS = {  # Settings.accelerations key → command; decelerations are negative (§2.5)
    'linear_acceleration': (C.SETA, 1),
    'linear_deceleration': (C.SETA, -1),
    'angular_acceleration': (C.SETRA, 1),
    'angular_deceleration': (C.SETRA, -1),
}


class HandshakeFailed(ConnectionLost):
    """The robot did not complete SYNC0 → SYNC1 → SYNC2 (the session restarts)."""


class CommandRefused(ValueError):
    """Not sent: this robot would misread the command (a simulator's laser commands, §4.2)."""


@dataclasses.dataclass
class Settings:
    port: str = '/dev/ttyS0'  # device path, pyserial URL, or tcp://host:port
    baud: int = 9600
    baud_cycle: Tuple[int, ...] = ()  # bauds to try in turn on a silent serial port
    read_timeout: float = 2.0  # seconds without a SIP before the link counts as lost
    close_wait: float = 1.0  # s the goodbye waits for the robot to close a TCP link
    pulse_interval: float = 0.5  # PULSE when nothing was sent for this long (watchdog 2 s)
    sync_timeout: float = 1.0  # wait for each SYNC echo (ARIA: 1000 ms)
    sync_retry: float = 0.25  # bytes but no valid echo this long: damaged, SYNC0 again
    sync_attempts: int = 4  # SYNC sequences tried per connection before reconnecting
    resync_wait: float = 2.5  # after CLOSE to a robot still sending SIPs: outlast its watchdog
    config_timeout: float = 1.0  # wait for the CONFIGpac after OPEN
    config_retry: float = 0.25  # ask again for a CONFIGpac lost on the line this soon
    gripper_in_high_byte: bool = True  # SIP gripper/ANPORT order (§6.2 item 1)
    model: str = ''  # force a model instead of the SYNC2 subclass
    factor_overrides: Optional[dict] = None  # models.FACTOR_NAMES → value; <= 0 keeps the model's
    wheel_mode: bool = False  # drive() sends VEL2 wheel speeds instead of VEL + RVEL
    simulator: str = 'auto'  # auto (by the SYNC2 name), true or false
    simulator_laser_compat: bool = True  # a simulator reads #35-#37 as laser commands
    # sent after OPEN: ACCELERATIONS key → mm/s² or rad/s² (0 keeps the robot's)
    accelerations: Optional[dict] = None
    bump_stall: int = -1  # BUMP_STALL_VALUES key sent after OPEN; -1 keeps the robot's
    motion_timeout: float = 0.5  # s without drive() before the stop; 0 = never (run time too)
    repeat_period: float = 0.5  # s between resends of the motion command (not of the stop)
    # the simulated laser (§4.2): auto = on a simulator; its start, end, increment in degrees
    laser: str = 'auto'
    laser_scan: Tuple[float, float, float] = (-90.0, 90.0, 1.0)

    def __post_init__(self):
        if self.model and model_key(self.model) not in MODELS:
            raise ValueError(
                f'unknown robot model {self.model!r}; known: '
                f'{", ".join(m.subclass for m in MODELS.values())}'
            )
        if self.port.startswith('tcp://'):
            host_port(self.port)  # fail early on a bad address
        if self.simulator not in ('auto', 'true', 'false'):
            raise ValueError(f'simulator must be auto, true or false, not {self.simulator!r}')
        if self.laser not in ('auto', 'true', 'false'):
            raise ValueError(f'laser must be auto, true or false, not {self.laser!r}')
        start, end, increment = self.laser_scan
        if not (-180 <= start <= 180 and -180 <= end <= 180 and 0.01 <= increment <= 180):
            raise ValueError(
                f'laser scan {start}..{end} by {increment}: angles within ±180°, '
                'increment 0.01..180°'
            )
        if self.bump_stall != -1 and self.bump_stall not in BUMP_STALL_VALUES:
            raise ValueError(f'bump_stall must be -1 or one of 0..3, not {self.bump_stall}')


def unknown_model_text(subclass, fallback):
    """What an unknown SYNC2 subclass costs and how to fix it (log and diagnostics say this)."""
    return (
        f'unknown robot subclass {subclass!r}: odometry and sonar use the {fallback.subclass} '
        f'factors and are wrong unless the robot has them; set the model parameter '
        f'(closest known: {", ".join(closest_models(subclass))})'
    )


def host_port(url):
    """'tcp://host:port' → (host, port); ValueError with the reason otherwise."""
    host, _, port = url[len('tcp://') :].rpartition(':')
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f'bad TCP address {url!r}: expected tcp://host:port, e.g. tcp://localhost:8101'
        )
    return host.strip('[]'), int(port)


@dataclasses.dataclass
class Identity:
    name: str
    robot_class: str
    subclass: str
    model: RobotModel
    known_model: bool
    transport: str


@dataclasses.dataclass
class Connected:
    """First record of every session."""

    identity: Identity
    config: Optional[p.ConfigPacket]


@dataclasses.dataclass
class LinkLost:
    """The session ended with the link lost (the node aborts a running position move)."""

    reason: str


@dataclasses.dataclass
class Encoders:
    left: int
    right: int


@dataclasses.dataclass
class AuxBytes:
    data: bytes


class P2osClient(ReconnectingClient):
    """One P2OS robot.

    ``startup_state()`` (set by the node; runs in the link thread once per session) says what
    to ask for after OPEN: {'motors': bool, 'sonar': bool, 'encoder' / 'gripper' / 'io':
    bool}; a key left out is not sent. Commands (any thread) raise ConnectionLost when not
    connected, CommandRefused / ValueError for what must not or cannot be sent, and return
    the name of the last command sent (for the caller's messages).
    """

    def __init__(self, settings, **kwargs):
        super().__init__('p2os', self._open, read_timeout=settings.read_timeout, **kwargs)
        self.settings = settings
        self.startup_state = dict
        self.identity = None
        self.config = None
        self.ignored_packets = 0
        self.last_sip_time = None
        self.laser_assembler = p.LaserAssembler()  # .dropped: partial scans thrown away
        self.laser_on = False  # this session turned the simulated laser on
        self._bauds = settings.baud_cycle or (settings.baud,)
        self._baud_index = 0
        self._last_write = 0.0
        self._receiver = p.PacketReceiver()
        self._bodies = collections.deque()  # valid packet bodies not yet consumed
        self._waiters = {}
        self._waiter_lock = threading.Lock()
        # motion: resent every repeat_period, the stop once after motion_timeout (see below)
        self.motion = VelocityWatchdog(
            self._send_velocity,
            self._motion_stopped,
            timeout=settings.motion_timeout,
            repeat_period=settings.repeat_period,
        )

    # ---- connecting --------------------------------------------------------
    @property
    def is_tcp(self):
        return self.settings.port.startswith('tcp://')

    @property
    def baud(self):
        return None if self.is_tcp else self._bauds[self._baud_index]

    def _open(self):
        if self.is_tcp:
            return SocketStream.connect(*host_port(self.settings.port))
        return SerialStream(self.settings.port, self.baud)

    def run_session(self, link):
        self._receiver = p.PacketReceiver()
        self._bodies.clear()
        self.config = None
        self.laser_on = False
        try:
            name, robot_class, subclass = self._handshake(link)
        except HandshakeFailed:
            self._next_baud()
            raise
        self.identity = self._identify(name, robot_class, subclass)
        self.owe_goodbye()  # from OPEN on, the robot runs for us: a stop must CLOSE it
        self._write(link, p.encode_command(p.Command.OPEN))
        self._write(link, p.encode_command(p.Command.PULSE))
        self.config = self._request_config(link)
        for packet in self._startup_packets(self.startup_state()):
            self._write(link, packet)
        self.last_sip_time = time.monotonic()
        self.mark_connected(f'{name} ({robot_class} {subclass}) on {self.identity.transport}')
        self.deliver(Connected(self.identity, self.config))
        try:
            self._read_loop(link)
        except (ConnectionLost, TimeoutError) as exc:
            if isinstance(exc, LinkTimeout):
                self._laser_off_on_a_silent_link(link)
            self.deliver(LinkLost(str(exc)))  # a running move or turn aborts
            raise
        finally:
            self._fail_waiters(ConnectionLost('link lost'))

    def _startup_packets(self, state):
        """After OPEN + PULSE + CONFIG, in the ROS p2os order (§3.3)."""
        packets = []
        if 'sonar' in state:
            packets.append(p.encode_command(C.SONAR, int(state['sonar'])))
        for name, value in (self.settings.accelerations or {}).items():
            if value > 0:
                number, sign = ACCELERATIONS[name]
                scaled = value if number == C.SETA else math.degrees(value)
                packets.append(p.encode_command(number, sign * int(round(scaled))))
        if self.settings.bump_stall >= 0:
            packets.append(p.encode_command(C.BUMP_STALL, self.settings.bump_stall))
        for kind, (number, _) in STREAMS.items():
            if state.get(kind) and not self.refusal(number):
                packets.append(p.encode_command(number, 2))
        if 'motors' in state:
            packets.append(p.encode_command(C.ENABLE, int(state['motors'])))
        if self.is_simulator:
            packets.append(p.encode_command(C.SIM_STAT, 2))  # the true pose before every SIP
        if self.laser_wanted:
            packets += self._laser_packets()
        return packets

    def _laser_packets(self):
        """The simulated laser on (§4.2): #231-#233 and #230 with 2 (0x61 packets), which
        AMRISim takes with or without its SRISim compatibility (#35-#38). Off first (#230 0):
        the scan is never reconfigured while it runs, whatever an earlier client left on;
        on AMRISim, which closes the laser when a client goes, the off is a no-op
        (docs/p2os.md, "Restarting against AMRISim")."""
        self.laser_on = True
        start, end, increment = self.settings.laser_scan
        return [
            p.encode_command(p.LASER_ENABLE, 0),
            p.encode_command(p.LASER_START, int(round(start))),
            p.encode_command(p.LASER_END, int(round(end))),
            p.encode_command(p.LASER_RESOLUTION, int(round(increment * 100))),
            p.encode_command(p.LASER_ENABLE, 2),
        ]

    @property
    def laser_wanted(self):
        """The laser is asked for: laser true, or auto and the robot is a simulator."""
        if self.settings.laser == 'auto':
            return self.is_simulator
        return self.settings.laser == 'true'

    # ---- simulators (§4) ---------------------------------------------------------
    @property
    def is_simulator(self):
        """auto: a robot named AMRISim or MobileSim, or one whose CONFIGpac serial number is
        "SIM" (what ARIA looks at, §4.1)."""
        if self.settings.simulator == 'auto':
            named = self.identity is not None and self.identity.name in p.SIMULATOR_NAMES
            serial = self.config is not None and self.config.values['serial_number'] == 'SIM'
            return named or serial
        return self.settings.simulator == 'true'

    def refusal(self, number):
        """Why a command must not be sent to this robot, or None."""
        if (
            number in p.SIMULATOR_LASER_COMMANDS
            and self.settings.simulator_laser_compat
            and self.is_simulator
        ):
            return (
                f'{C(number).name} (#{int(number)}) not sent: the simulator reads #35-#37 as '
                'laser commands; start AMRISim with --no-srisim-laser-compat and set '
                'simulator_laser_compat:=false'
            )
        return None

    def _next_baud(self):
        if len(self._bauds) > 1:
            self._baud_index = (self._baud_index + 1) % len(self._bauds)
            self.logger.info(f'p2os: next attempt at {self.baud} baud')

    def _handshake(self, link):
        """SYNC0 → SYNC1 → SYNC2, each echo checked; the SYNC2 identification (§3.1, §3.2)."""
        for _attempt in range(self.settings.sync_attempts):
            step = 0
            while step < 3:
                self._write(link, p.encode_command(step))
                reply = self._next_sync_echo(link)
                if reply is None:
                    break  # no echo: start a new attempt
                if reply[0] == step:
                    step += 1
                    continue
                if reply[0] in SIP_TYPES or reply[0] not in (0, 1, 2):
                    self._close_stale_connection(link)
                break  # out of sequence: restart at SYNC0
            else:
                return p.decode_sync2_reply(reply)
        where = self.settings.port if self.is_tcp else f'{self.settings.port} at {self.baud} baud'
        raise HandshakeFailed(
            f'no SYNC handshake with {where} after {self.settings.sync_attempts} attempts'
        )

    def _next_sync_echo(self, link):
        """The next valid packet within sync_timeout, or None. A line that brought bytes but no
        valid packet within sync_retry damaged the echo: None then, and the handshake starts
        again at once, so noise costs a retry, not the whole second; a silent robot (slow to
        wake, unplugged) still gets all of sync_timeout."""
        first = min(self.settings.sync_retry, self.settings.sync_timeout)
        bytes_before = self.counters.bytes_in
        reply = self._next_body(link, first)
        if reply is not None or self.counters.bytes_in != bytes_before:
            return reply
        return self._next_body(link, self.settings.sync_timeout - first)

    def _close_stale_connection(self, link):
        """The robot still serves an earlier client: CLOSE, then outlast its watchdog (§3.2)."""
        self.logger.warning(
            'p2os: robot is still sending SIPs from an earlier connection; '
            'closing it and waiting before a new SYNC'
        )
        self._write(link, p.encode_command(p.Command.CLOSE))
        link.discard_input(
            quiet_time=self.settings.resync_wait, max_time=2 * self.settings.resync_wait
        )
        self._receiver = p.PacketReceiver()
        self._bodies.clear()

    def _request_config(self, link):
        """CONFIG, asked again every config_retry s until config_timeout: a CONFIGpac lost or
        damaged on a noisy line costs one retry, not the whole wait and the robot's config
        (the mixed soak's finding: one P2OS reconnect took 1.1 s and came back without it)."""
        deadline = time.monotonic() + self.settings.config_timeout
        while (remaining := deadline - time.monotonic()) > 0:
            self._write(link, p.encode_command(p.Command.CONFIG))
            body = self._next_config_body(link, min(remaining, self.settings.config_retry))
            if body is None:
                continue
            try:
                return p.decode_config(body)
            except MalformedFrame as exc:
                self.reject(exc, 'CONFIGpac')  # counted and logged; asked again
        self.logger.info('p2os: no CONFIGpac (robots before P2OS 1.4 have none)')
        return None

    def _next_config_body(self, link, timeout):
        """The next CONFIGpac body within timeout (SIPs meanwhile are skipped), or None."""
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            body = self._next_body(link, remaining)
            if body is not None and body[0] == p.PacketType.CONFIG:
                return body
        return None

    def _identify(self, name, robot_class, subclass):
        model, known = find_model(self.settings.model or subclass)
        if not known:
            self.logger.error(f'p2os: {unknown_model_text(subclass, model)}')
        model = model.with_overrides(**(self.settings.factor_overrides or {}))
        transport = self.settings.port if self.is_tcp else f'{self.settings.port}@{self.baud}'
        return Identity(name, robot_class, subclass, model, known, transport)

    def _next_body(self, link, timeout):
        """The next valid packet body, or None when timeout passes without one."""
        deadline = time.monotonic() + timeout
        while True:
            if self._bodies:
                return self._bodies.popleft()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                data = link.read(remaining)
            except LinkTimeout:
                return None
            self._queue(data)

    # ---- connected ---------------------------------------------------------
    def _read_loop(self, link):
        while True:
            try:  # wake for data or the next deadline; silence is judged below
                self._queue(link.read(self._next_deadline()))
            except LinkTimeout:
                pass
            while self._bodies:
                self._dispatch(self._bodies.popleft())
            now = time.monotonic()
            if now - self.last_sip_time > self.settings.read_timeout:
                raise LinkTimeout(f'no SIP for {self.settings.read_timeout:.1f} s')
            self.motion.poll(now)
            if now - self._last_write >= self.settings.pulse_interval:
                self._write(link, p.encode_command(p.Command.PULSE))

    # ---- motion: resend, and stop when the commands stop ------------------------
    def drive(self, mm_s, rad_s):
        """Drive at mm_s forward and rad_s counter-clockwise: sent now, resent every
        repeat_period, stopped after motion_timeout without a new call (self.motion, a
        VelocityWatchdog: its timeout may change at run time; timeouts counts the stops)."""
        self.motion.command((mm_s, rad_s))

    def _send_velocity(self, velocity):
        self.send(self._velocity_packet(*velocity))

    def _velocity_packet(self, mm_s, rad_s):
        if self.settings.wheel_mode:
            model = self.identity.model if self.identity else MODELS['p2dx']
            return p.encode_two_bytes(C.VEL2, *wheel_units(model, mm_s, rad_s))
        return p.encode_command(C.VEL, int(round(mm_s))) + p.encode_command(
            C.RVEL, int(round(math.degrees(rad_s)))
        )

    def _motion_stopped(self):
        """The motion command expired: the stop once (from then on PULSE keeps the link
        alive, §3.5)."""
        self.send(self._velocity_packet(0.0, 0.0))
        self.log.info(
            'motion-timeout',
            f'p2os: no motion command for {self.motion.timeout:.2f} s: robot stopped',
        )

    def _next_deadline(self):
        """Seconds until the loop must act without data: SIP timeout, pulse, motion."""
        now = time.monotonic()
        deadlines = [
            self.last_sip_time + self.settings.read_timeout,
            self._last_write + self.settings.pulse_interval,
        ]
        motion = self.motion.next_deadline()
        if motion is not None:
            deadlines.append(motion)
        return min(max(MIN_WAIT, min(deadlines) - now), self.settings.read_timeout)

    def _queue(self, data):
        for item in self._receiver.feed(data):
            if isinstance(item, MalformedFrame):
                self.reject(item, 'packet')
            else:
                self._bodies.append(item)

    def _dispatch(self, body):
        kind = body[0]
        try:
            record = self._decode(kind, body)
        except MalformedFrame as exc:
            self.reject(exc, 'packet')
            return
        if record is None:
            self.ignored_packets += 1
            self.log.info('ignored-type', f'p2os: packet type 0x{kind:02x} not handled (ignored)')
            return
        if kind in SIP_TYPES:
            self.last_sip_time = time.monotonic()
        if kind == p.PacketType.CONFIG:
            self.config = record
        if kind in (T.LASER_POSE, T.LASER_EXTENDED):
            record = self.laser_assembler.add(record)  # a whole scan, or None until then
            if record is None:
                return
        self._resolve_waiters(kind, record)
        self.deliver(record)

    # the one place a packet type becomes a record: packet type → decoder(client, body)
    DECODERS = {
        T.SIP_STOPPED: lambda c, b: p.decode_sip(b, c.settings.gripper_in_high_byte),
        T.SIP_MOVING: lambda c, b: p.decode_sip(b, c.settings.gripper_in_high_byte),
        T.ENCODER: lambda c, b: Encoders(*p.decode_encoders(b)),
        T.GRIPPER: lambda c, b: p.decode_gripper(b),
        T.IO: lambda c, b: p.decode_io(b),
        T.SERAUX: lambda c, b: AuxBytes(p.decode_seraux(b)),
        T.PLAYLIST: lambda c, b: p.decode_playlist(b),
        T.CONFIG: lambda c, b: p.decode_config(b),
        T.LASER_POSE: lambda c, b: p.decode_laser(b),
        T.LASER_EXTENDED: lambda c, b: p.decode_laser(b),
        T.SIMSTAT: lambda c, b: p.decode_simstat(b),
    }

    def _decode(self, kind, body):
        decoder = self.DECODERS.get(kind)
        return decoder(self, body) if decoder else None

    # ---- commands in robot terms (any thread) ------------------------------
    def stop_motion(self, emergency=False):
        """STOP (or E_STOP); the motion command is forgotten, so no resend undoes it."""
        self.motion.clear()
        return self.command(C.E_STOP if emergency else C.STOP)

    def move(self, mm, top_mm_s):
        """MOVE: the robot drives mm (signed 16-bit) at up to top_mm_s (SETV) on its own
        position control. The velocity command is forgotten first, so neither its resend
        nor its watchdog stop lands in the middle of the move. Translation and rotation are
        separate on the robot (MOVE leaves a running HEAD or RVEL going), so RVEL 0 goes
        first: the move drives straight."""
        packets = (
            p.encode_command(C.RVEL, 0)
            + p.encode_command(C.SETV, top_mm_s)
            + p.encode_command(C.MOVE, mm)
        )
        self.motion.clear()
        self.send(packets)
        return C.MOVE.name

    def turn(self, degrees, top_deg_s, relative):
        """HEAD (absolute, odometry frame) or DHEAD (relative, counter-clockwise +) in whole
        degrees at up to top_deg_s (SETRV); the velocity command is forgotten as for move(),
        and VEL 0 goes first (a running MOVE or VEL would go on): the turn is on the spot."""
        number = C.DHEAD if relative else C.HEAD
        packets = (
            p.encode_command(C.VEL, 0)
            + p.encode_command(C.SETRV, top_deg_s)
            + p.encode_command(number, degrees)
        )
        self.motion.clear()
        self.send(packets)
        return number.name

    def set_top_speeds(self, mm_s, deg_s):
        """SETV and SETRV: the top speeds of position moves (restored after each goal)."""
        self.send(p.encode_command(C.SETV, mm_s) + p.encode_command(C.SETRV, deg_s))

    def set_true_pose(self, x_mm, y_mm, th_deg):
        """SIM_SET_POSE (§4.7): move a simulated robot (its odometry stays); ValueError for a
        pose that does not fit the packet."""
        data = p.encode_sim_set_pose(x_mm, y_mm, th_deg)
        self.send(data)
        return 'SIM_SET_POSE'

    def enable_motors(self, on):
        return self.command(C.ENABLE, int(on))

    def set_sonar(self, on):
        return self.command(C.SONAR, int(on))

    def reset_odometry(self):
        """SETO: the robot's own pose to zero."""
        return self.command(C.SETO)

    def stop_stream(self, kind):
        """Stop one packet stream (a STREAMS key)."""
        return self.command(STREAMS[kind][0], 0)

    def request_stream(self, kind, resolve):
        """Start one packet stream; resolve(first packet) as for request(). Returns the name
        of the packet type awaited."""
        number, reply_type = STREAMS[kind]
        return self.request(p.encode_command(number, 2), reply_type, resolve, number)

    def play_sound(self, number):
        return self.command(C.SOUND, number)

    def set_bump_stall(self, which):
        """Which bumpers stall the motors: a BUMP_STALL_VALUES key."""
        if which not in BUMP_STALL_VALUES:
            meanings = ', '.join(f'{v} {text}' for v, text in BUMP_STALL_VALUES.items())
            raise ValueError(f'bump_stall takes {meanings}; not {which}')
        return self.command(C.BUMP_STALL, which)

    def select_analog_port(self, port):
        return self.command(C.ADSEL, port)

    def gripper(self, command, value=0):
        """A GRIPPER command (§2.11); 16 and 17 take value, sent at once after it."""
        if command not in GRIPPER_COMMANDS:
            raise ValueError(f'unknown gripper command {command}')
        name = self.command(C.GRIPPER, command)
        if command in GRIPPER_WITH_VALUE:
            name = self.command(C.GRIPPERVAL, value)
        return name

    def digital_output(self, mask, values):
        """Set the digital outputs selected by mask to values (bit per output)."""
        self.send(p.encode_two_bytes(C.DIGOUT, mask, values))
        return C.DIGOUT.name

    def say(self, durations, tones):
        """Play tones (durations in 20 ms units) on the robot's buzzer."""
        if len(durations) != len(tones) or len(tones) > SAY_MAX_TONES:
            raise ValueError(f'need equal numbers of durations and tones, at most {SAY_MAX_TONES}')
        return self.command(
            C.SAY, bytes(b for pair in zip(durations, tones, strict=True) for b in pair)
        )

    def aux_write(self, data):
        """Write bytes out of the AUX serial port (TTY2)."""
        return self.command(C.TTY2, data)

    def aux_flush(self):
        """Empty the robot's AUX input buffer (GETAUX 0)."""
        return self.command(C.GETAUX, 0)

    def request_aux(self, count, resolve):
        """Read count bytes from the AUX port; resolve(AuxBytes) as for request()."""
        return self.request(p.encode_command(C.GETAUX, count), T.SERAUX, resolve)

    def request_playlist(self, resolve):
        """The robot's sound playlist; resolve(list of (name, position, length))."""
        return self.request(p.encode_command(C.PLAYLIST, 0), T.PLAYLIST, resolve)

    def request_io(self, resolve):
        """One IOpac; resolve(IoPacket)."""
        return self.request(p.encode_command(C.IOREQUEST, 1), T.IO, resolve)

    def command(self, number, argument=None):
        """Send one command now; returns its name. ConnectionLost when not connected,
        CommandRefused when this robot must not get it."""
        refusal = self.refusal(number)
        if refusal:
            raise CommandRefused(refusal)
        self.send(p.encode_command(number, argument))
        return C(number).name

    def send(self, data):
        super().send(data)
        self._last_write = time.monotonic()

    def request(self, packet, reply_type, resolve, number=None):
        """Send packet; resolve(record) runs (link thread) when a reply_type packet arrives.
        number: the command, refused (CommandRefused) when this robot must not get it.
        Returns the name of the packet type awaited."""
        refusal = number is not None and self.refusal(number)
        if refusal:
            raise CommandRefused(refusal)
        with self._waiter_lock:
            self._waiters.setdefault(reply_type, []).append(resolve)
        try:
            self.send(packet)
        except ConnectionLost:
            with self._waiter_lock:
                self._waiters[reply_type].remove(resolve)
            raise
        return reply_type.name

    def _resolve_waiters(self, kind, record):
        with self._waiter_lock:
            waiting = self._waiters.pop(kind, [])
        for resolve in waiting:
            resolve(record)

    def _fail_waiters(self, error):
        with self._waiter_lock:
            waiters, self._waiters = self._waiters, {}
        for resolve in (r for group in waiters.values() for r in group):
            resolve(error)

    def _write(self, link, packet):
        link.write(packet)
        self._last_write = time.monotonic()

    def _laser_off_on_a_silent_link(self, link):
        """The robot went silent but the link is still open: the laser off, if it can still be
        said, so the simulator is not left scanning for no one (best effort)."""
        if not self.laser_on:
            return
        try:
            self._write(link, p.encode_command(p.LASER_ENABLE, 0))
            self.laser_on = False
        except (ConnectionLost, OSError) as exc:
            self.logger.info(f'p2os: laser off not delivered, the link is gone: {exc}')

    def close_session(self, link):
        """Stop and disconnect the robot cleanly (§3.4), the laser first if this session
        turned it on (left as it was found); drained by the base class."""
        if self.laser_on:
            link.write(p.encode_command(p.LASER_ENABLE, 0))
            self.laser_on = False
        for number, argument in (
            (p.Command.SONAR, 0),
            (p.Command.STOP, None),
            (p.Command.ENABLE, 0),
            (p.Command.CLOSE, None),
        ):
            link.write(p.encode_command(number, argument))
        if self.is_tcp:
            self._await_robot_close(link)

    def _await_robot_close(self, link):
        """TCP: read (and drop) until the robot closes after CLOSE, at most close_wait s.
        Closing first with its SIPs unread resets the connection, and AMRISim, which writes
        the next SIP before it reads, then loses the goodbye, laser off included."""
        deadline = time.monotonic() + self.settings.close_wait
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                link.stream.read(65536, remaining)
            except ConnectionLost:
                return
