"""P2OS wire format: framing, checksum, command encoding, server packet decoding.

Pure functions and one small receiver state machine; no I/O, no rclpy. Section
numbers (§) refer to docs/protocols/p2os.md. Malformed input raises MalformedFrame.
"""

import dataclasses
import enum
import math
import struct
from typing import List, Optional, Tuple

from legacy_robot_common.errors import MalformedFrame

HEADER = b'\xfa\xfb'
P2OS_MAX_COUNT = 200  # P2OS ignores larger packets (§2.1)
LATER_MAX_COUNT = 249  # later firmware (Pioneer LX) allows up to 249 (§2.1)

ARG_INT = 0x3B  # positive integer follows (uint16 LE)
ARG_NEGATIVE_INT = 0x1B  # magnitude follows; the sign is the type byte's
ARG_STRING = 0x2B  # length byte, then the characters


class Command(enum.IntEnum):
    """Client command numbers (§2.5)."""

    SYNC0 = PULSE = 0
    SYNC1 = OPEN = 1
    SYNC2 = CLOSE = 2
    POLLING = 3
    ENABLE = 4
    SETA = 5
    SETV = 6
    SETO = 7
    MOVE = 8
    ROTATE = 9
    SETRV = 10
    VEL = 11
    HEAD = 12
    DHEAD = 13
    SAY = 15
    CONFIG = 18
    ENCODER = 19
    RVEL = 21
    DCHEAD = 22
    SETRA = 23
    JOYINFO = 17
    SETRVDIR = 20
    SONAR = 28
    STOP = 29
    DIGOUT = 30
    VEL2 = 32
    GRIPPER = 33
    ADSEL = 35
    GRIPPERVAL = 36
    GRIPREQUEST = 37
    IOREQUEST = 40
    PTUPOS = 41
    TTY2 = 42
    GETAUX = 43
    BUMP_STALL = 44
    TCM2 = 45
    DOCK = 46
    JOYDRIVE = 47
    HOSTBAUD = 50
    AUX1BAUD = 51
    AUX2BAUD = 52
    E_STOP = 55
    E_STALL = 56
    GYRO = 58
    STEP = 64
    TTY3 = 66
    GETAUX2 = 67
    ARM_INFO = 70
    ARM_STATUS = 71
    ARM_INIT = 72
    ARM_CHECK = 73
    ARM_POWER = 74
    ARM_HOME = 75
    ARM_PARK = 76
    ARM_POS = 77
    ARM_SPEED = 78
    ARM_STOP = 79
    ARM_AUTOPARK = 80
    ARM_GRIPPARK = 81
    ROTKP = 82
    ROTKV = 83
    ROTKI = 84
    TRANSKP = 85
    TRANSKV = 86
    TRANSKI = 87
    REVCOUNT = 88
    SOUND = 90
    PLAYLIST = 91
    SOUNDTOG = 92
    OLD_LRF_CFG_INC = 38  # AMRISim's SRISim laser commands reuse 35-37 too (§4.2)
    SIM_SET_POSE = 224
    SIM_RESET = 225
    SIM_LRF_ENABLE = 230
    SIM_LRF_SET_FOV_START = 231
    SIM_LRF_SET_FOV_END = 232
    SIM_LRF_SET_RES = 233
    SIM_CTRL = 236
    SIM_STAT = 237
    SIM_MESSAGE = 238
    SIM_EXIT = 239
    BATTEST = 250


# Simulators announce themselves by the SYNC2 robot name (§4.1) ...
SIMULATOR_NAMES = ('AMRISim', 'MobileSim')
# ... and AMRISim reads these three as its old SICK-laser commands unless started with
# --no-srisim-laser-compat (#35 starts laser packets, #37 changes the laser's field of view).
SIMULATOR_LASER_COMMANDS = (Command.ADSEL, Command.GRIPPERVAL, Command.GRIPREQUEST)
# ... and with --no-srisim-laser-compat only these (§4.2)
LASER_ENABLE, LASER_START, LASER_END, LASER_RESOLUTION = (
    Command.SIM_LRF_ENABLE,
    Command.SIM_LRF_SET_FOV_START,
    Command.SIM_LRF_SET_FOV_END,
    Command.SIM_LRF_SET_RES,
)
LASER_READINGS_PER_PACKET = 32


class PacketType(enum.IntEnum):
    """Server packet type bytes (§2.6-2.13)."""

    CONFIG = 0x20
    SIP_STOPPED = 0x32
    SIP_MOVING = 0x33
    ENCODER = 0x90
    SERAUX = 0xB0
    PLAYLIST = 0xD0
    GRIPPER = 0xE0
    IO = 0xF0
    LASER_POSE = 0x60  # simulated laser readings with the odometric pose (§4.3)
    LASER_EXTENDED = 0x61  # simulated laser readings with reflectance (what ARIA asks for)
    SIMSTAT = 0x62


# ---- framing (§2.1, §2.3) ---------------------------------------------------------
def checksum(body):
    """Sum of big-endian byte pairs mod 2^16; an odd last byte is XORed into the low byte."""
    # the sum mod 2^16 of all pairs at once is the running sum mod 2^16, without a Python loop
    total = sum(struct.unpack_from(f'>{len(body) // 2}H', body)) & 0xFFFF
    if len(body) % 2:
        total ^= body[-1]
    return total


def build_packet(body):
    """Command or type byte + data → complete packet with header, count and checksum."""
    if not body:
        raise ValueError('a packet needs at least its command or type byte')
    if len(body) + 2 > LATER_MAX_COUNT:
        raise ValueError(f'packet body of {len(body)} bytes is too long')
    return HEADER + bytes([len(body) + 2]) + bytes(body) + struct.pack('>H', checksum(body))


class PacketReceiver:
    """Reassembles packets from arbitrary chunks; hunts for FA FB after any bad byte.

    feed() returns the bodies (type byte + data, checksum removed) of complete
    valid packets, and a MalformedFrame for each rejected one, in arrival order.
    """

    def __init__(self, max_count=LATER_MAX_COUNT):
        self.max_count = max_count
        self._buffer = bytearray()

    def feed(self, data) -> List[object]:
        self._buffer += data
        out = []
        while True:
            start = self._buffer.find(HEADER)
            if start < 0:
                # keep a trailing FA: it may be the first half of the next header
                skipped = len(self._buffer) - (1 if self._buffer.endswith(b'\xfa') else 0)
                if skipped:
                    out.append(MalformedFrame(f'{skipped} bytes outside any packet'))
                    del self._buffer[:skipped]
                return out
            if start:
                out.append(MalformedFrame(f'{start} bytes before a packet header'))
                del self._buffer[:start]
            if len(self._buffer) < 3:
                return out
            count = self._buffer[2]
            if count < 3 or count > self.max_count:
                out.append(MalformedFrame(f'impossible byte count {count}'))
                del self._buffer[:2]
                continue
            if len(self._buffer) < 3 + count:
                return out
            body = bytes(self._buffer[3 : 1 + count])
            received = (self._buffer[1 + count] << 8) | self._buffer[2 + count]
            if received != checksum(body):
                out.append(MalformedFrame(f'bad checksum on packet type 0x{body[0]:02x}'))
                del self._buffer[:2]
                continue
            del self._buffer[: 3 + count]
            out.append(body)


# ---- commands (§2.2, §2.5) -----------------------------------------------------
def encode_command(number, argument=None):
    """A command packet: no argument, an int (-65535..65535) or a string (bytes or str)."""
    body = bytes([int(number)])
    if argument is not None:
        body += _encode_argument(argument)
    return build_packet(body)


def _encode_argument(argument):
    if isinstance(argument, bool) or not isinstance(argument, (int, bytes, bytearray, str)):
        raise TypeError(f'unsupported argument {argument!r}')
    if isinstance(argument, int):
        if not -0xFFFF <= argument <= 0xFFFF:
            raise ValueError(f'integer argument {argument} does not fit in 16 bits')
        kind = ARG_INT if argument >= 0 else ARG_NEGATIVE_INT
        return bytes([kind]) + struct.pack('<H', abs(argument))
    text = argument.encode('latin-1') if isinstance(argument, str) else bytes(argument)
    if len(text) > 196:
        raise ValueError(f'string argument of {len(text)} bytes is too long (196 at most)')
    return bytes([ARG_STRING, len(text)]) + text


# Commands the robot answers (SYNC1/OPEN, SYNC2/CLOSE echo or start the SIPs; CONFIG gets a
# CONFIG SIP). SYNC0 is too, but its packet is the PULSE's, which the robot does not answer.
ANSWERED_COMMANDS = frozenset({Command.SYNC1, Command.SYNC2, Command.CONFIG})


def is_handshake_request(data):
    """True for a client write that is one command packet the robot answers (replay holds
    the recorded SIP stream there until the driver sends it)."""
    return (
        len(data) >= 6
        and data[:2] == HEADER
        and data[2] == len(data) - 3
        and data[3] in ANSWERED_COMMANDS
    )


def encode_two_bytes(number, high, low):
    """Commands carrying two signed bytes (VEL2: high = left, low = right; DIGOUT; PTUPOS).

    Sent as ARIA does: the signed 16-bit value (high << 8 | low) as an int argument.
    """
    for label, value in (('high', high), ('low', low)):
        if not -128 <= value <= 255:
            raise ValueError(f'{label} byte {value} is out of range')
    value = struct.unpack('<h', bytes([low & 0xFF, high & 0xFF]))[0]
    return encode_command(number, value)


def decode_command(body) -> Tuple[int, Optional[object]]:
    """Server side: (command number, None | int | bytes). Extra trailing bytes are ignored
    (§3.8)."""
    if not body:
        raise MalformedFrame('empty command packet')
    number = body[0]
    if len(body) < 2:
        return number, None
    kind = body[1]
    if kind in (ARG_INT, ARG_NEGATIVE_INT):
        if len(body) < 4:
            return number, None  # e.g. SETO sent as 07 3B by old drivers (§6.2 item 4)
        magnitude = struct.unpack_from('<H', body, 2)[0]
        return number, magnitude if kind == ARG_INT else -magnitude
    if kind == ARG_STRING:
        if len(body) < 3:
            raise MalformedFrame(f'command {number}: string argument without a length')
        length = body[2]
        if len(body) < 3 + length:
            raise MalformedFrame(
                f'command {number}: string says {length} bytes, has {len(body) - 3}'
            )
        return number, bytes(body[3 : 3 + length])
    raise MalformedFrame(f'command {number}: unknown argument type 0x{kind:02x}')


def split_two_bytes(value):
    """Server side of encode_two_bytes: signed int → (high, low) as signed bytes."""
    raw = struct.pack('<h', max(-32768, min(32767, value)))
    low, high = struct.unpack('<bb', raw)
    return high, low


# ---- server packets (§2.6, §2.9-2.11, §3.1) ------------------------------------
@dataclasses.dataclass
class StandardSip:
    """Standard motor SIP in raw robot units (conversion happens in the node)."""

    moving: bool
    x: int  # 15-bit encoder-integrated position (× DistConvFactor → mm)
    y: int
    theta: int  # int16, 4096 per turn
    left_velocity: int  # × VelConvFactor → mm/s
    right_velocity: int
    battery_decivolts: int
    stall_bumpers: int  # low byte: left stall + rear bumpers; high byte: right stall + front
    control: int
    flags: int
    compass: int
    sonar: List[Tuple[int, int]]  # (transducer number, raw range) of new readings only
    analog_port: int
    gripper_state: int
    analog: int
    digital_inputs: int
    digital_outputs: int
    extra: bytes = b''  # later-firmware tail as received
    tail: dict = dataclasses.field(default_factory=dict)  # its decoded fields (SIP_TAIL_FIELDS)

    @property
    def motors_enabled(self):
        return bool(self.flags & 0x01)

    @property
    def sonar_enabled(self):
        return bool(self.flags & 0x02)

    @property
    def left_stall(self):
        return bool(self.stall_bumpers & 0x0001)

    @property
    def right_stall(self):
        return bool(self.stall_bumpers & 0x0100)

    def bumpers(self, front_count=5, rear_count=5):
        """(front, rear) switch states, index 0 = bit 1 of its byte."""
        rear_bits, front_bits = self.stall_bumpers & 0xFF, self.stall_bumpers >> 8
        return (
            [bool(front_bits & (2 << i)) for i in range(front_count)],
            [bool(rear_bits & (2 << i)) for i in range(rear_count)],
        )


_SIP_HEAD = struct.Struct('<BHHhhhBHhHBB')  # type … sonar count (20 bytes)

# Later-firmware fields after DIGOUT, each parsed only if its bytes are there (§2.6).
SIP_TAIL_FIELDS = (
    ('battery_x10', 'H'),
    ('charge_state', 'B'),
    ('rotational_velocity_x10', 'h'),
    ('fault_flags', 'H'),
    ('lateral_velocity', 'h'),
    ('temperature', 'b'),
    ('state_of_charge', 'B'),
    ('controller_time', 'I'),
    ('flags3', 'I'),
)


def decode_sip(body, gripper_in_high_byte=True):
    """Standard SIP body (type 0x32/0x33 + data) → StandardSip.

    gripper_in_high_byte: the P2OS layout of the 16-bit field after the sonar
    readings (high = gripper state, low = analog port); False for the ARCOS /
    AMRISim order (§6.2 item 1).
    """
    if len(body) < _SIP_HEAD.size + 5:
        raise MalformedFrame(f'SIP of {len(body)} bytes is too short')
    (kind, x, y, theta, left, right, battery, stall, control, flags, compass, sonar_count) = (
        _SIP_HEAD.unpack_from(body)
    )
    if kind not in (PacketType.SIP_STOPPED, PacketType.SIP_MOVING):
        raise MalformedFrame(f'packet type 0x{kind:02x} is not a standard SIP')
    end_of_sonar = _SIP_HEAD.size + 3 * sonar_count
    if len(body) < end_of_sonar + 5:
        raise MalformedFrame(
            f'SIP announces {sonar_count} sonar readings but has {len(body)} bytes'
        )
    sonar = [
        (body[i], struct.unpack_from('<H', body, i + 1)[0])
        for i in range(_SIP_HEAD.size, end_of_sonar, 3)
    ]
    first, second, analog, digin, digout = body[end_of_sonar : end_of_sonar + 5]
    gripper, anport = (second, first) if gripper_in_high_byte else (first, second)
    extra = bytes(body[end_of_sonar + 5 :])
    return StandardSip(
        kind == PacketType.SIP_MOVING,
        x & 0x7FFF,
        y & 0x7FFF,
        theta,
        left,
        right,
        battery,
        stall,
        control,
        flags,
        compass,
        sonar,
        anport,
        gripper,
        analog,
        digin,
        digout,
        extra,
        decode_sip_tail(extra),
    )


def decode_sip_tail(extra):
    """The optional later-firmware fields present in extra, in order; partial fields are
    ignored."""
    values, offset = {}, 0
    for name, code in SIP_TAIL_FIELDS:
        size = struct.calcsize('<' + code)
        if offset + size > len(extra):
            break
        values[name] = struct.unpack_from('<' + code, extra, offset)[0]
        offset += size
    return values


def encode_sip(sip, gripper_in_high_byte=True):
    """Server side: StandardSip → packet body (sip.extra is appended as the tail)."""
    kind = PacketType.SIP_MOVING if sip.moving else PacketType.SIP_STOPPED
    body = bytearray(
        _SIP_HEAD.pack(
            kind,
            sip.x & 0xFFFF,
            sip.y & 0xFFFF,
            sip.theta,
            sip.left_velocity,
            sip.right_velocity,
            sip.battery_decivolts,
            sip.stall_bumpers,
            sip.control,
            sip.flags,
            sip.compass,
            len(sip.sonar),
        )
    )
    for number, value in sip.sonar:
        body += struct.pack('<BH', number, value)
    pair = (
        (sip.analog_port, sip.gripper_state)
        if gripper_in_high_byte
        else (sip.gripper_state, sip.analog_port)
    )
    body += bytes([*pair, sip.analog, sip.digital_inputs, sip.digital_outputs]) + sip.extra
    return bytes(body)


def encode_sip_tail(**values):
    """Server side: later-firmware tail bytes for the named fields (earlier ones default to 0)."""
    unknown = set(values) - {name for name, _ in SIP_TAIL_FIELDS}
    if unknown:
        raise ValueError(f'unknown SIP tail fields: {sorted(unknown)}')
    last = max((i for i, (name, _) in enumerate(SIP_TAIL_FIELDS) if name in values), default=-1)
    return b''.join(
        struct.pack('<' + code, values.get(name, 0)) for name, code in SIP_TAIL_FIELDS[: last + 1]
    )


def decode_encoders(body):
    """ENCODERpac (0x90) → (left, right) raw counts, int32 little-endian each (§2.9)."""
    if len(body) < 9 or body[0] != PacketType.ENCODER:
        raise MalformedFrame(f'not an ENCODERpac ({len(body)} bytes)')
    return struct.unpack_from('<ii', body, 1)


@dataclasses.dataclass
class GripperPacket:
    gripper_type: int  # 0 none, 1 User I/O, 2 General I/O
    state: int
    grasp_time: int


def decode_gripper(body):
    """GRIPPERpac (0xE0): HasGripper, state byte, grasp time (§2.11)."""
    if len(body) < 4 or body[0] != PacketType.GRIPPER:
        raise MalformedFrame(f'not a GRIPPERpac ({len(body)} bytes)')
    return GripperPacket(body[1], body[2], body[3])


def decode_seraux(body):
    """SERAUXpac (0xB0): the AUX serial bytes (§2.10)."""
    if not body or body[0] != PacketType.SERAUX:
        raise MalformedFrame('not a SERAUXpac')
    return bytes(body[1:])


def decode_sync2_reply(body):
    """SYNC2 echo → (name, class, subclass): three NUL-terminated strings (§3.1)."""
    if not body or body[0] != Command.SYNC2:
        raise MalformedFrame('not a SYNC2 reply')
    parts = bytes(body[1:]).split(b'\x00')
    if len(parts) < 4:
        raise MalformedFrame(f'SYNC2 reply has {len(parts) - 1} of 3 NUL-terminated strings')
    return tuple(p.decode('latin-1') for p in parts[:3])


def encode_encoders(left, right):
    return bytes([PacketType.ENCODER]) + struct.pack('<ii', left, right)


def encode_gripper(packet):
    return bytes([PacketType.GRIPPER, packet.gripper_type, packet.state, packet.grasp_time])


def encode_seraux(data):
    return bytes([PacketType.SERAUX]) + bytes(data)


def encode_sync2_reply(name, robot_class, subclass):
    return bytes([Command.SYNC2]) + b''.join(
        s.encode('latin-1') + b'\x00' for s in (name, robot_class, subclass)
    )


# ---- gripper state bytes (§2.11) -------------------------------------------------
@dataclasses.dataclass
class GripperReading:
    """Both state tables turned into one shape; None where a table says nothing."""

    paddles: str  # 'open', 'closed', 'between' or 'unknown'
    paddles_moving: bool
    lift: str  # 'up', 'down', 'between' or 'unknown'
    lift_moving: bool
    gripper_error: bool = False
    lift_error: bool = False
    inner_beam_broken: Optional[bool] = None
    outer_beam_broken: Optional[bool] = None
    left_paddle_contact: Optional[bool] = None
    right_paddle_contact: Optional[bool] = None


def _limits(first_set, second_set, first, second):
    if first_set and second_set:
        return 'unknown'
    return first if first_set else second if second_set else 'between'


def read_sip_gripper_byte(state):
    """Gripper byte of the standard SIP, GRIP16 Table 4 (bit = 1 means the condition holds)."""
    return GripperReading(
        paddles=_limits(state & 0x01, state & 0x02, 'open', 'closed'),
        paddles_moving=bool(state & 0x04),
        gripper_error=bool(state & 0x08),
        lift=_limits(state & 0x10, state & 0x20, 'up', 'down'),
        lift_moving=bool(state & 0x40),
        lift_error=bool(state & 0x80),
    )


def read_gripper_packet_byte(state):
    """GRIPPERpac state byte, PB49 Table 10 (limit, beam and contact bits are active low).

    The lift limit bit only says "at a limit" (0) or "between" (1), not which one;
    paddles not open with both contact switches made count as closed.
    """
    contact = not state & 0x10 and not state & 0x20
    return GripperReading(
        paddles='open' if not state & 0x01 else 'closed' if contact else 'between',
        paddles_moving=bool(state & 0x80),
        lift='unknown' if not state & 0x02 else 'between',
        lift_moving=bool(state & 0x40),
        outer_beam_broken=not state & 0x04,
        inner_beam_broken=not state & 0x08,
        left_paddle_contact=not state & 0x10,
        right_paddle_contact=not state & 0x20,
    )


# ---- CONFIGpac (§2.8) ------------------------------------------------------------
# (field, kind): 's' NUL-terminated string, 'B' byte, 'h'/'H' 2-byte int. The AROS 1.8 list
# up to has_gyro, then ARCOS fields up to the firmware version;
# P2OS 1.x sends a shorter packet, so absent fields read as 0 / '' (as ARIA does).
CONFIG_FIELDS = (
    ('robot_type', 's'),
    ('subtype', 's'),
    ('serial_number', 's'),
    ('four_motors', 'B'),
    ('rot_vel_top', 'h'),
    ('trans_vel_top', 'h'),
    ('rot_acc_top', 'h'),
    ('trans_acc_top', 'h'),
    ('pwm_max', 'h'),
    ('name', 's'),
    ('sip_cycle', 'B'),
    ('host_baud', 'B'),
    ('aux1_baud', 'B'),
    ('gripper', 'h'),
    ('front_sonar', 'h'),
    ('rear_sonar', 'B'),
    ('low_battery', 'h'),
    ('rev_count', 'h'),
    ('watchdog', 'h'),
    ('p2mpacs', 'B'),
    ('stall_value', 'h'),
    ('stall_count', 'h'),
    ('joy_vel', 'h'),
    ('joy_rvel', 'h'),
    ('rot_vel_max', 'h'),
    ('trans_vel_max', 'h'),
    ('rot_acc', 'h'),
    ('rot_decel', 'h'),
    ('rot_kp', 'h'),
    ('rot_kv', 'h'),
    ('rot_ki', 'h'),
    ('trans_acc', 'h'),
    ('trans_decel', 'h'),
    ('trans_kp', 'h'),
    ('trans_kv', 'h'),
    ('trans_ki', 'h'),
    ('front_bumps', 'B'),
    ('rear_bumps', 'B'),
    ('charger', 'B'),
    ('sonar_cycle', 'B'),
    ('autobaud', 'B'),
    ('has_gyro', 'B'),
    # ARCOS (Pioneer 3) goes on; ARIA reads these next [AriaCoda ArRobotConfigPacketReader]
    ('drift_factor', 'h'),
    ('aux2_baud', 'B'),
    ('aux3_baud', 'B'),
    ('ticks_mm', 'H'),
    ('shutdown_voltage', 'H'),
    ('firmware_version', 's'),
)
CONFIG_FIELD_NAMES = [name for name, _ in CONFIG_FIELDS]


@dataclasses.dataclass
class ConfigPacket:
    values: dict  # every CONFIG_FIELDS name; absent fields hold 0 or ''
    fields_present: int  # how many fields the robot actually sent
    extra: bytes = b''  # bytes after the last known field (later firmware)

    def sent(self, name):
        """True when the robot's packet reached field name (older firmware sends fewer)."""
        return CONFIG_FIELD_NAMES.index(name) < self.fields_present


def decode_config(body):
    """CONFIGpac (0x20) → ConfigPacket, leniently: a short packet is normal (P2OS 1.x)."""
    if not body or body[0] != PacketType.CONFIG:
        raise MalformedFrame('not a CONFIGpac')
    values = {name: '' if kind == 's' else 0 for name, kind in CONFIG_FIELDS}
    offset, present = 1, 0
    for name, kind in CONFIG_FIELDS:
        value, offset = _read_config_field(body, offset, kind)
        if value is None:
            break  # the packet ends here; everything after reads as absent
        values[name] = value
        present += 1
    return ConfigPacket(values, present, bytes(body[offset:]))


def _read_config_field(body, offset, kind):
    if kind == 's':
        end = body.find(b'\x00', offset)
        if end < 0:
            return None, offset
        return bytes(body[offset:end]).decode('latin-1'), end + 1
    size = 1 if kind == 'B' else 2
    if offset + size > len(body):
        return None, offset
    return struct.unpack_from('<' + kind, body, offset)[0], offset + size


def encode_config(values, last_field='trans_ki'):
    """Server side: CONFIGpac body with the fields up to last_field (missing values 0 / '')."""
    body = bytearray([PacketType.CONFIG])
    for name, kind in CONFIG_FIELDS[: CONFIG_FIELD_NAMES.index(last_field) + 1]:
        value = values.get(name, '' if kind == 's' else 0)
        body += (
            (value.encode('latin-1') + b'\x00') if kind == 's' else struct.pack('<' + kind, value)
        )
    return bytes(body)


# ---- IOpac (§2.12) and PLAYLISTpac (§2.13) ----------------------------------------
@dataclasses.dataclass
class IoPacket:
    digital_inputs: bytes
    digital_outputs: bytes
    analog: List[int]  # raw A/D values (PeopleBot: 0-2047 = 0-5 V)


def decode_io(body):
    """IOpac (0xF0): count + digital input bytes, count + output bytes, count + uint16 A/D
    values."""
    if not body or body[0] != PacketType.IO:
        raise MalformedFrame('not an IOpac')
    groups, offset = [], 1
    for width in (1, 1, 2):
        if offset >= len(body):
            raise MalformedFrame(f'IOpac ends before group {len(groups) + 1} of 3')
        count = body[offset]
        end = offset + 1 + count * width
        if end > len(body):
            raise MalformedFrame(
                f'IOpac group {len(groups) + 1} announces {count} values, '
                f'has {(len(body) - offset - 1) // width}'
            )
        groups.append(bytes(body[offset + 1 : end]))
        offset = end
    analog = list(struct.unpack(f'<{len(groups[2]) // 2}H', groups[2]))
    return IoPacket(groups[0], groups[1], analog)


def encode_io(packet):
    return (
        bytes([PacketType.IO, len(packet.digital_inputs)])
        + packet.digital_inputs
        + bytes([len(packet.digital_outputs)])
        + packet.digital_outputs
        + bytes([len(packet.analog)])
        + struct.pack(f'<{len(packet.analog)}H', *packet.analog)
    )


PLAYLIST_ENTRY = struct.Struct('<16sii')  # name, position, length (§2.13)


def decode_playlist(body):
    """PLAYLISTpac (0xD0) → [(name, position, length)].

    Assumed layout (no document shows the head, only the 24-byte entries, §6.4): a count
    byte, then that many entries. P2OS's 25 NUL bytes therefore read as empty.
    """
    if len(body) < 2 or body[0] != PacketType.PLAYLIST:
        raise MalformedFrame('not a PLAYLISTpac')
    count = body[1]
    if len(body) < 2 + count * PLAYLIST_ENTRY.size:
        raise MalformedFrame(f'PLAYLISTpac announces {count} sounds, has {len(body) - 2} bytes')
    entries = []
    for i in range(count):
        name, position, length = PLAYLIST_ENTRY.unpack_from(body, 2 + i * PLAYLIST_ENTRY.size)
        entries.append((name.split(b'\x00')[0].decode('latin-1'), position, length))
    return entries


def encode_playlist(entries):
    """Server side; an empty list gives the P2OS answer (25 NUL bytes)."""
    if not entries:
        return bytes([PacketType.PLAYLIST]) + bytes(25)
    return bytes([PacketType.PLAYLIST, len(entries)]) + b''.join(
        PLAYLIST_ENTRY.pack(name.encode('latin-1')[:16], position, length)
        for name, position, length in entries
    )


def unwrap_15bit(previous, current):
    """Signed change between two 15-bit positions, with roll-over (ARIA method, §3.7).

    No large-delta rejection: a fast robot's real motion is never dropped.
    """
    delta = (current & 0x7FFF) - (previous & 0x7FFF)
    if delta > 0x1000:
        delta -= 0x8000
    elif delta < -0x1000:
        delta += 0x8000
    return delta


def unwrap_heading(previous, current):
    """Signed change between two int16 headings of 4096 units per turn, in (-2048, 2048]."""
    delta = (current - previous) % 4096
    return delta - 4096 if delta > 2048 else delta


# ---- simulator packets (§4.3, §4.6) --------------------------------------------------
@dataclasses.dataclass
class LaserPacket:
    """One 0x60 / 0x61 packet: readings first .. first + len(ranges) - 1 of a scan of total."""

    kind: int  # PacketType.LASER_POSE or LASER_EXTENDED
    total: int
    first: int
    ranges: List[int]  # mm
    reflectance: List[int] = dataclasses.field(default_factory=list)  # 0x61 only
    pose: Optional[Tuple[int, int, int]] = None  # 0x60 only: x mm, y mm, th deg (odometry)
    laser_index: int = 0  # 0x61 trailer
    flags: int = 0  # 0x61 trailer; bit 0: the first packet after a SIM_SET_POSE

    @property
    def complete(self):
        """The scan's last packet (ARIA's test)."""
        return self.first + len(self.ranges) >= self.total


def encode_laser_packets(kind, ranges, reflectance=None, pose=(0, 0, 0), flags=0):
    """Server side: a whole scan → packet bodies of at most 32 readings (first = 0, 32, ...).
    flags go into the first 0x61 packet only."""
    kind = PacketType(kind)
    if kind not in (PacketType.LASER_POSE, PacketType.LASER_EXTENDED):
        raise ValueError(f'0x{int(kind):02x} is not a laser packet type')
    ranges = [max(0, min(0xFFFF, int(r))) for r in _as_list(ranges)]
    if reflectance is None:
        reflectance = [0] * len(ranges)
    reflectance = [max(0, min(255, int(v))) for v in _as_list(reflectance)]
    if kind == PacketType.LASER_EXTENDED and len(reflectance) != len(ranges):
        raise ValueError(f'{len(ranges)} ranges but {len(reflectance)} reflectance values')
    total, bodies = len(ranges), []
    for first in range(0, total, LASER_READINGS_PER_PACKET):
        part = ranges[first : first + LASER_READINGS_PER_PACKET]
        body = bytearray([kind])
        if kind == PacketType.LASER_POSE:
            body += struct.pack('<hhh', *(_int16(v) for v in pose))
        body += struct.pack('<HHB', total, first, len(part))
        if kind == PacketType.LASER_POSE:
            body += struct.pack(f'<{len(part)}H', *part)
        else:
            # each reading: range, reflectance and two zero bytes, all packed in one call
            values = reflectance[first : first + len(part)]
            body += struct.pack('<' + 'HBxx' * len(part), *_interleave(part, values))
            body += bytes([0, flags & 0xFF if first == 0 else 0])
        bodies.append(bytes(body))
    return bodies


def _as_list(values):
    """Python numbers of a list, tuple or NumPy array (whose own tolist is the fast way out)."""
    return values.tolist() if hasattr(values, 'tolist') else list(values)


def _interleave(a, b):
    """[a0, b0, a1, b1, ...]"""
    merged = [0] * (2 * len(a))
    merged[::2], merged[1::2] = a, b
    return merged


def decode_laser(body):
    """0x60 / 0x61 body → LaserPacket; MalformedFrame for a count the bytes do not hold."""
    if not body or body[0] not in (PacketType.LASER_POSE, PacketType.LASER_EXTENDED):
        raise MalformedFrame('not a simulated laser packet')
    kind, offset, pose = body[0], 1, None
    if kind == PacketType.LASER_POSE:
        if len(body) < 7:
            raise MalformedFrame(f'laser packet 0x60 of {len(body)} bytes has no pose')
        pose = struct.unpack_from('<hhh', body, 1)
        offset = 7
    if len(body) < offset + 5:
        raise MalformedFrame(f'laser packet 0x{kind:02x} of {len(body)} bytes has no counts')
    total, first, count = struct.unpack_from('<HHB', body, offset)
    offset += 5
    width = 2 if kind == PacketType.LASER_POSE else 5
    if count > LASER_READINGS_PER_PACKET or first + count > total:
        raise MalformedFrame(f'laser packet: {count} readings from {first} of a scan of {total}')
    if len(body) < offset + count * width:
        raise MalformedFrame(
            f'laser packet announces {count} readings, holds {(len(body) - offset) // width}'
        )
    if kind == PacketType.LASER_POSE:
        ranges = list(struct.unpack_from(f'<{count}H', body, offset))
        return LaserPacket(kind, total, first, ranges, pose=pose)
    items = [struct.unpack_from('<HB', body, offset + 5 * i) for i in range(count)]
    end = offset + 5 * count
    index = body[end] if len(body) > end else 0
    flags = body[end + 1] if len(body) > end + 1 else 0
    return LaserPacket(
        kind,
        total,
        first,
        [r for r, _ in items],
        [v for _, v in items],
        laser_index=index,
        flags=flags,
    )


class LaserAssembler:
    """Packets → whole scans, as ARIA reassembles them (§4.5), but strict: a packet whose
    first is not where the scan stands, or whose total changes mid-scan, drops the partial scan
    (counted in .dropped); a packet with first = 0 always starts a new scan."""

    def __init__(self):
        self.dropped = 0  # partial scans thrown away
        self._scan = None

    def add(self, packet):
        """A complete LaserPacket-like scan (one LaserPacket holding all readings) or None."""
        scan = self._scan
        if packet.first == 0:
            if scan is not None:
                self.dropped += 1
            scan = LaserPacket(
                packet.kind, packet.total, 0, [], [], packet.pose, packet.laser_index, packet.flags
            )
        elif scan is None or packet.first != len(scan.ranges) or packet.total != scan.total:
            if scan is not None:
                self.dropped += 1
            self._scan = None
            return None
        scan.ranges += packet.ranges
        scan.reflectance += packet.reflectance
        if packet.complete:
            self._scan = None
            return scan
        self._scan = scan
        return None


@dataclasses.dataclass
class SimStat:
    """SIMSTAT 0x62 (§4.6): the simulator's true pose and clocks."""

    flags: int = 0
    sim_interval: int = 100  # ms
    real_interval: int = 100
    last_interval: int = 100
    true_x: int = 0  # mm
    true_y: int = 0
    true_z: int = 0
    true_th: int = 0  # degrees
    latitude: int = 0  # × 1e7 (as sent)
    longitude: int = 0
    altitude: int = 0  # × 100
    dop: int = -1  # × 100; -1 = no georeference
    odom_error: Tuple[int, int, int] = (0, 0, 0)  # × 1e7


_SIMSTAT = struct.Struct('<IHHHiiiiiiii3i')


def encode_simstat(stat):
    return bytes([PacketType.SIMSTAT, 0, 0]) + _SIMSTAT.pack(
        stat.flags,
        stat.sim_interval,
        stat.real_interval,
        stat.last_interval,
        stat.true_x,
        stat.true_y,
        stat.true_z,
        stat.true_th,
        stat.latitude,
        stat.longitude,
        stat.altitude,
        stat.dop,
        *stat.odom_error,
    )


def decode_simstat(body):
    """0x62 → SimStat: two strings (skipped), then the fields AMRISim sends (all GPS words)."""
    if not body or body[0] != PacketType.SIMSTAT:
        raise MalformedFrame('not a SIMSTAT packet')
    offset = 1
    for _ in range(2):
        end = body.find(b'\x00', offset)
        if end < 0:
            raise MalformedFrame('SIMSTAT: unterminated string')
        offset = end + 1
    if len(body) < offset + _SIMSTAT.size:
        raise MalformedFrame(f'SIMSTAT of {len(body)} bytes is too short')
    values = _SIMSTAT.unpack_from(body, offset)
    return SimStat(*values[:12], tuple(values[12:]))


def encode_sim_set_pose(x_mm, y_mm, th_deg):
    """SIM_SET_POSE (224): an ignored type byte, then int32 x, y (mm) and th (degrees)."""
    values = [int(round(v)) for v in (x_mm, y_mm, th_deg)]
    if not all(-(2**31) <= v < 2**31 for v in values):
        raise ValueError(f'pose {values} does not fit in int32')
    return build_packet(bytes([Command.SIM_SET_POSE, ARG_INT]) + struct.pack('<iii', *values))


def decode_sim_set_pose(body):
    """Server side: a SIM_SET_POSE body → (x mm, y mm, th deg)."""
    if len(body) < 14 or body[0] != Command.SIM_SET_POSE:
        raise MalformedFrame(f'SIM_SET_POSE of {len(body)} bytes: 14 needed')
    return struct.unpack_from('<iii', body, 2)


def laser_angles(start, end, increment, ideal=False):
    """(first ray's angle, step between rays, ray count), degrees in the laser frame, of the scan
    a simulator sends for the configured start / end / increment (§4.2, §4.4).

    Stage (AMRISim): a fan symmetric about the laser heading, fov = |abs(end + 360) -
    abs(start + 360)|, ceil(ceil(fov) / increment) + 1 rays spaced fov / count (181 rays of
    0.9945° for -90..90 by 1°). ideal: rays at start + k·increment up to end. A scan with
    end < start goes the other way (negative step)."""
    fov = abs(abs(end + 360) - abs(start + 360))
    if increment <= 0:
        return 0.0, 0.0, 0
    if ideal:
        count = int(fov / increment + 1e-9) + 1
        first, step = min(start, end), increment
    else:
        count = math.ceil(math.ceil(fov) / increment) + 1
        first, step = -fov / 2, fov / count
    if end < start:
        first, step = first + step * (count - 1), -step
    return first, step, count


def laser_enable_value(number, argument):
    """The packet type a laser-enable command asks for (0 = off): #230 takes 1 → 0x60,
    2 → 0x61; the old #35 takes 2 → 0x61 and any other non-zero value → 0x60 (§4.2)."""
    value = abs(argument) if number == Command.ADSEL else argument
    if not value:
        return 0
    if number == Command.SIM_LRF_ENABLE and value not in (1, 2):
        raise ValueError(f'laser enable value {value}: 0, 1 or 2')
    return PacketType.LASER_EXTENDED if value == 2 else PacketType.LASER_POSE


def _int16(value):
    return (int(round(value)) + 0x8000) % 0x10000 - 0x8000
