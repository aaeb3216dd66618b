"""P2OS wire format: framing, checksum, command encoding, server packet decoding.

Pure functions and one small receiver state machine; no I/O, no rclpy. Section
numbers refer to ../shared/specs/p2os.md. Malformed input raises MalformedFrame.
"""
import dataclasses
import enum
import struct
from typing import List, Optional, Tuple

from legacy_robot_common.errors import MalformedFrame

HEADER = b'\xfa\xfb'
P2OS_MAX_COUNT = 200     # P2OS ignores larger packets (§2.1)
LATER_MAX_COUNT = 249    # later firmware (Pioneer LX) allows up to 249 (§2.1)

ARG_INT = 0x3B           # positive integer follows (uint16 LE)
ARG_NEGATIVE_INT = 0x1B  # magnitude follows; the sign is the type byte's
ARG_STRING = 0x2B        # length byte, then the characters


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
    E_STOP = 55
    SOUND = 90
    PLAYLIST = 91


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


# ---- framing (§2.1, §2.3) ---------------------------------------------------------
def checksum(body):
    """Sum of big-endian byte pairs mod 2^16; an odd last byte is XORed into the low byte."""
    total = 0
    even = len(body) - len(body) % 2
    for i in range(0, even, 2):
        total = (total + ((body[i] << 8) | body[i + 1])) & 0xFFFF
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
            body = bytes(self._buffer[3:1 + count])
            received = (self._buffer[1 + count] << 8) | self._buffer[2 + count]
            if received != checksum(body):
                out.append(MalformedFrame(f'bad checksum on packet type 0x{body[0]:02x}'))
                del self._buffer[:2]
                continue
            del self._buffer[:3 + count]
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
    """Server side: (command number, None | int | bytes). Extra trailing bytes are ignored (§3.8)."""
    if not body:
        raise MalformedFrame('empty command packet')
    number = body[0]
    if len(body) < 2:
        return number, None
    kind = body[1]
    if kind in (ARG_INT, ARG_NEGATIVE_INT):
        if len(body) < 4:
            return number, None  # e.g. SETO sent as 07 3B by old drivers (§5.1 item 4)
        magnitude = struct.unpack_from('<H', body, 2)[0]
        return number, magnitude if kind == ARG_INT else -magnitude
    if kind == ARG_STRING:
        if len(body) < 3:
            raise MalformedFrame(f'command {number}: string argument without a length')
        length = body[2]
        if len(body) < 3 + length:
            raise MalformedFrame(f'command {number}: string says {length} bytes, has {len(body) - 3}')
        return number, bytes(body[3:3 + length])
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
    x: int                 # 15-bit encoder-integrated position (× DistConvFactor → mm)
    y: int
    theta: int             # int16, 4096 per turn
    left_velocity: int     # × VelConvFactor → mm/s
    right_velocity: int
    battery_decivolts: int
    stall_bumpers: int     # low byte: left stall + rear bumpers; high byte: right stall + front
    control: int
    flags: int
    compass: int
    sonar: List[Tuple[int, int]]   # (transducer number, raw range) of new readings only
    analog_port: int
    gripper_state: int
    analog: int
    digital_inputs: int
    digital_outputs: int
    extra: bytes = b''     # later-firmware tail, undecoded

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
        return ([bool(front_bits & (2 << i)) for i in range(front_count)],
                [bool(rear_bits & (2 << i)) for i in range(rear_count)])


_SIP_HEAD = struct.Struct('<BHHhhhBHhHBB')   # type … sonar count (20 bytes)


def decode_sip(body, gripper_in_high_byte=True):
    """Standard SIP body (type 0x32/0x33 + data) → StandardSip.

    gripper_in_high_byte: the P2OS layout of the 16-bit field after the sonar
    readings (high = gripper state, low = analog port); False for the ARCOS /
    AMRISim order (§5.1 item 1).
    """
    if len(body) < _SIP_HEAD.size + 5:
        raise MalformedFrame(f'SIP of {len(body)} bytes is too short')
    (kind, x, y, theta, left, right, battery, stall, control, flags, compass,
     sonar_count) = _SIP_HEAD.unpack_from(body)
    if kind not in (PacketType.SIP_STOPPED, PacketType.SIP_MOVING):
        raise MalformedFrame(f'packet type 0x{kind:02x} is not a standard SIP')
    end_of_sonar = _SIP_HEAD.size + 3 * sonar_count
    if len(body) < end_of_sonar + 5:
        raise MalformedFrame(f'SIP announces {sonar_count} sonar readings but has {len(body)} bytes')
    sonar = [(body[i], struct.unpack_from('<H', body, i + 1)[0])
             for i in range(_SIP_HEAD.size, end_of_sonar, 3)]
    first, second, analog, digin, digout = body[end_of_sonar:end_of_sonar + 5]
    gripper, anport = (second, first) if gripper_in_high_byte else (first, second)
    return StandardSip(kind == PacketType.SIP_MOVING, x & 0x7FFF, y & 0x7FFF, theta, left, right,
                       battery, stall, control, flags, compass, sonar, anport, gripper, analog,
                       digin, digout, bytes(body[end_of_sonar + 5:]))


def decode_encoders(body):
    """ENCODERpac (0x90) → (left, right) raw counts, int32 little-endian each (§2.9)."""
    if len(body) < 9 or body[0] != PacketType.ENCODER:
        raise MalformedFrame(f'not an ENCODERpac ({len(body)} bytes)')
    return struct.unpack_from('<ii', body, 1)


@dataclasses.dataclass
class GripperPacket:
    gripper_type: int   # 0 none, 1 User I/O, 2 General I/O
    state: int
    grasp_time: int


def decode_gripper(body):
    """GRIPPERpac (0xE0): HasGripper, state byte, grasp time (seed 001 Table 9)."""
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
