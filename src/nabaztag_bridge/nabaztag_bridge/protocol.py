"""The ping-era Nabaztag/tag protocol as bytes and text (docs/protocols/nabaztag.md §3-4).

Packets and their blocks, the message-program text and its obfuscation, the
ping query (sd events, tc state), locate replies and the bytecode wrapper. No
sockets, no threads: decoders raise MalformedFrame, builders raise ValueError.
Choreographies are in choreography.py, recordings in recording.py.
"""

import dataclasses
import functools
import re

from legacy_robot_common.errors import MalformedFrame

PACKET_START = 0x7F
PACKET_END = 0xFF
MAX_BLOCK_TYPE = 10  # ping-era bytecode: any other type invalidates the packet
BLOCK_PING_INTERVAL = 0x03
BLOCK_AMBIENT = 0x04
BLOCK_REBOOT = 0x09
BLOCK_MESSAGE = 0x0A

IDLE_ID = 0x7FFFFFFF  # message program ID: wake up / go idle
SLEEP_ID = 0x7FFFFFFE  # message program ID: go to sleep
BOOTED_TC = 0  # tc of the first ping after boot
EAR_POSITIONS = 17  # absolute positions 0..16 (mod 17)
SLEEP_EAR_POSITION = 8
SERVICE_SLOTS = 8
AMBIENT_HEADER = b'\x7f\xff\xff\xff'
OBFUSCATION_SEED = 35  # P[-1]; the bytecode's key 0x47 = 2 * 35 + 1
OBFUSCATION_OFFSET = 0x2F
DEFAULT_PING_INTERVAL = 10  # s, before any ping-interval block
MU_SIZE_CAP = 300_000  # bytes the rabbit keeps of an MU / CH resource
MC_SIZE_CAP = 40_000

# Ambient service slot types (1 + Violet's service number) and their value ranges.
SERVICES = {
    'weather': 1,
    'stock_market': 2,
    'traffic': 3,
    'mail': 6,
    'air_quality': 7,
    'taichi': 14,
}

# Message-program commands the last ping bytecode knows (nabaztag.md §4.6); the resource
# commands name a URL, the first three of which are downloaded before playing.
PRELOADED_COMMANDS = {'MU': MU_SIZE_CAP, 'CH': MU_SIZE_CAP, 'MC': MC_SIZE_CAP}
STREAM_COMMANDS = ('ST', 'MS', 'SP')
PROGRAM_COMMANDS = (
    ('ID', 'CL', 'PL', 'MW', 'IS', 'IE', 'IC') + tuple(PRELOADED_COMMANDS) + STREAM_COMMANDS
)

SERIAL_PATTERN = re.compile(r'[0-9a-f]{12}')
# sd and tc: int(text, 16) alone would also take '0x', '_', '-' and spaces
HEX_PATTERN = re.compile(r'[0-9a-fA-F]{1,8}')
RFID_PATTERN = re.compile(r'[0-9a-f]{16}')


# ---- packets ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Block:
    type: int
    data: bytes = b''


def encode_packet(blocks, trailing_newline=False):
    """7F, then type + 3-byte big-endian length + data per block, then FF (and 0A)."""
    if not blocks:
        raise ValueError('a packet needs at least one block: the rabbit ignores 7F FF')
    out = bytearray([PACKET_START])
    for block in blocks:
        if not 0 <= block.type <= MAX_BLOCK_TYPE:
            raise ValueError(f'block type {block.type} is not 0..{MAX_BLOCK_TYPE}')
        if len(block.data) >= 1 << 24:
            raise ValueError(f'block of {len(block.data)} bytes does not fit a 3-byte length')
        out.append(block.type)
        out += len(block.data).to_bytes(3, 'big') + block.data
    out.append(PACKET_END)
    if trailing_newline:
        out.append(0x0A)
    return bytes(out)


def decode_packet(data):
    """Blocks of a packet, by the rabbit's rules: types above 10, a missing FF or no
    block at all invalidate the whole packet. Bytes after FF are ignored."""
    data = bytes(data)
    if not data or data[0] != PACKET_START:
        raise MalformedFrame('a packet starts with 7F')
    blocks, pos = [], 1
    while True:
        if pos >= len(data):
            raise MalformedFrame('packet without its FF terminator')
        block_type = data[pos]
        if block_type == PACKET_END:
            break
        if block_type > MAX_BLOCK_TYPE:
            raise MalformedFrame(
                f'block type {block_type} (> {MAX_BLOCK_TYPE}) invalidates the packet'
            )
        if pos + 4 > len(data):
            raise MalformedFrame('packet ends inside a block header')
        end = pos + 4 + int.from_bytes(data[pos + 1 : pos + 4], 'big')
        if end > len(data):
            raise MalformedFrame(f'block type {block_type} runs past the end of the packet')
        blocks.append(Block(block_type, data[pos + 4 : end]))
        pos = end
    if not blocks:
        raise MalformedFrame('an empty packet (7F FF) is invalid for the rabbit')
    return blocks


def ping_interval_block(seconds):
    if not 1 <= seconds <= 255:
        raise ValueError(f'ping interval {seconds} s is not 1..255')
    return Block(BLOCK_PING_INTERVAL, bytes([seconds]))


def reboot_block():
    return Block(BLOCK_REBOOT)


@dataclasses.dataclass(frozen=True)
class Ambient:
    """The old-format ambient block: service slots (type, value), ears, nose blinks."""

    services: tuple = ()  # up to 8 (type, value) pairs
    ears: tuple = (0, 0)  # motor 0, motor 1
    nose_blinks: int = 0  # 0, 1 or 2 (messages waiting)


def ambient_block(ambient):
    """7FFFFFFF, 8 slots, ear 0, ear 1, optional blink bytes, 00 (23..25 bytes)."""
    if len(ambient.services) > SERVICE_SLOTS:
        raise ValueError(f'{len(ambient.services)} services; the rabbit has {SERVICE_SLOTS} slots')
    if ambient.nose_blinks not in (0, 1, 2):
        raise ValueError(f'nose blinks {ambient.nose_blinks} is not 0, 1 or 2')
    slots = bytearray(2 * SERVICE_SLOTS)
    for index, (service_type, value) in enumerate(ambient.services):
        slots[2 * index : 2 * index + 2] = _bytes('service slot', service_type, value)
    blink = b'\x05' * ambient.nose_blinks
    return Block(
        BLOCK_AMBIENT,
        AMBIENT_HEADER + bytes(slots) + _bytes('ears', *ambient.ears) + blink + b'\x00',
    )


def decode_ambient(data):
    """Old-format ambient data → Ambient (the rabbit reads the ears at 20/21)."""
    if len(data) < 22:
        raise MalformedFrame(f'ambient block of {len(data)} bytes; the old format has ≥ 22')
    services = tuple((data[i], data[i + 1]) for i in range(4, 20, 2) if data[i])
    first = len(data) > 22 and data[22] != 0
    second = first and len(data) > 23 and data[23] != 0
    return Ambient(services, (data[20], data[21]), int(first) + int(second))


def _bytes(what, *values):
    if not all(0 <= v <= 255 for v in values):
        raise ValueError(f'{what} {values} must be bytes 0..255')
    return bytes(values)


# ---- message programs ------------------------------------------------------------------
def _build_inverses():
    return {odd: pow(odd, -1, 256) for odd in range(1, 256, 2)}


_INVERSE = _build_inverses()


def obfuscate(plain):
    """E[i] = 0x2F + P[i] * inverse(2 P[i-1] + 1) mod 256, P[-1] = 35."""
    out, previous = bytearray(), OBFUSCATION_SEED
    for byte in plain:
        out.append((OBFUSCATION_OFFSET + byte * _INVERSE[(2 * previous + 1) & 0xFF]) & 0xFF)
        previous = byte
    return bytes(out)


def deobfuscate(coded):
    """P[i] = (E[i] - 0x2F) * (2 P[i-1] + 1) mod 256, P[-1] = 35 (what the rabbit does)."""
    out, previous = bytearray(), OBFUSCATION_SEED
    for byte in coded:
        previous = ((byte - OBFUSCATION_OFFSET) * (2 * previous + 1)) & 0xFF
        out.append(previous)
    return bytes(out)


def message_block(text, first_byte=0):
    """Program text → block 0x0A: one clear byte the rabbit skips, then the obfuscated text."""
    return Block(BLOCK_MESSAGE, bytes([first_byte]) + obfuscate(text.encode('latin-1')))


def message_text(data):
    if not data:
        raise MalformedFrame('empty message block')
    return deobfuscate(data[1:]).decode('latin-1')


@dataclasses.dataclass(frozen=True)
class Program:
    id: int
    commands: tuple = ()  # (KEY, value) pairs after the ID line, in order


def program_text(program):
    lines = [f'ID {program.id}'] + [f'{key} {value}'.rstrip() for key, value in program.commands]
    return '\n'.join(lines) + '\n'


def parse_program(text):
    """Program text → Program, checked the way a user needs it checked: known commands,
    a decimal ID first, decimal CL, palette 0..7. Raises MalformedFrame."""
    program_id, commands = None, []
    for line in text.replace('\r', '').split('\n'):
        if not line.strip():
            continue
        key, _, value = line.strip().partition(' ')
        value = value.strip()
        if key not in PROGRAM_COMMANDS:
            raise MalformedFrame(
                f'unknown program command {key!r} (known: {", ".join(PROGRAM_COMMANDS)})'
            )
        if key == 'ID':
            program_id = _decimal('ID', value, 0, 0xFFFFFFFF)
            continue
        if key == 'CL':
            _decimal('CL', value, 0, 0x07FFFFFF)
        elif key == 'PL':
            _decimal('PL', value, 0, 7)
        elif key in PRELOADED_COMMANDS or key in STREAM_COMMANDS:
            if not value:
                raise MalformedFrame(f'{key} needs a URL')
        commands.append((key, value))
    if program_id is None:
        raise MalformedFrame('a program starts with an ID line')
    return Program(program_id, tuple(commands))


def _decimal(key, value, low, high):
    if not value.isdigit() or not low <= int(value) <= high:
        raise MalformedFrame(
            f'{key} {value!r}: a decimal number {low}..{high} (the rabbit reads decimal only)'
        )
    return int(value)


def check_ears(ears):
    """ValueError unless both ear positions are 0..16 (what the services accept)."""
    if not all(0 <= ear < EAR_POSITIONS for ear in ears):
        raise ValueError(f'ear positions {tuple(ears)} must be 0..{EAR_POSITIONS - 1}')


def palette_colour(slot, red, green, blue):
    """The CL value: palette slot in the top byte, RGB in the low 24 bits (decimal on the wire)."""
    if not 0 <= slot <= 7:
        raise ValueError(f'palette slot {slot} is not 0..7')
    return (slot << 24) | int.from_bytes(_bytes('colour', red, green, blue), 'big')


def resolve_url(url, broadcast_prefix):
    """What the rabbit fetches: a leading 'broadcast' becomes the locate reply's broad value."""
    if url.startswith('broadcast'):
        return broadcast_prefix + url[len('broadcast') :]
    return url


# ---- the ping query --------------------------------------------------------------------
# Every ping decodes its serial, sd and tc; a rabbit sends the same texts ping after ping, so
# they are decoded once each (bounded caches; refusals raise and are not kept).
PING_TEXTS_CACHED = 8192


@dataclasses.dataclass(frozen=True)
class SdEvent:
    kind: str  # ping, double_click, end_of_message, click,
    # click_while_playing, ears_moved, unknown
    ears: tuple = ()
    value: int = 0


SD_KINDS = {
    0: 'ping',
    1: 'double_click',
    2: 'end_of_message',
    3: 'click',
    5: 'click_while_playing',
}
SD_VALUES = {kind: value for value, kind in SD_KINDS.items()}
EARS_EVENT = 0x8000


@functools.lru_cache(maxsize=PING_TEXTS_CACHED)
def decode_sd(text):
    """The sd query value (hex) → SdEvent; 0x8000 + (ear0 << 8) + ear1 is a hand ear move."""
    value = _hex('sd', text)
    if value in SD_KINDS:
        return SdEvent(SD_KINDS[value], value=value)
    if EARS_EVENT <= value <= 0xFFFF:
        ears = ((value - EARS_EVENT) >> 8, value & 0xFF)
        return SdEvent('ears_moved', tuple(e % EAR_POSITIONS for e in ears), value)
    return SdEvent('unknown', value=value)


def encode_sd(kind, ears=()):
    if kind == 'ears_moved':
        return format(EARS_EVENT + (ears[0] << 8) + ears[1], 'x')
    return format(SD_VALUES[kind], 'x')


@functools.lru_cache(maxsize=PING_TEXTS_CACHED)
def decode_tc(text):
    return _hex('tc', text)


def state_from_tc(tc):
    if tc == BOOTED_TC:
        return 'booting'
    return {IDLE_ID: 'idle', SLEEP_ID: 'asleep'}.get(tc, 'playing')


@functools.lru_cache(maxsize=PING_TEXTS_CACHED)
def normalize_serial(text):
    """A rabbit serial (its MAC): 12 lower-case hex digits; colons are dropped."""
    serial = (text or '').replace(':', '').lower()
    if not SERIAL_PATTERN.fullmatch(serial):
        raise MalformedFrame(f'serial {text!r} is not 12 hex digits')
    return serial


def normalize_rfid(text):
    tag = (text or '').replace(':', '').lower()
    if not RFID_PATTERN.fullmatch(tag):
        raise MalformedFrame(f'RFID id {text!r} is not 16 hex digits')
    return tag


def _hex(name, text):
    if not HEX_PATTERN.fullmatch(text):
        raise MalformedFrame(f'{name}={text!r} is not a hex number')
    return int(text, 16)


# ---- locate and bytecode ---------------------------------------------------------------
def locate_reply(ping, broad):
    return f'ping {ping}\nbroad {broad}\n'


def parse_locate(text):
    """key value lines (\\r stripped); the ping bytecode needs both ping and broad."""
    values = {}
    for line in text.replace('\r', '').split('\n'):
        key, _, value = line.partition(' ')
        if key:
            values[key] = value
    if not values.get('ping') or not values.get('broad'):
        raise MalformedFrame('locate reply without both ping and broad')
    return values


BYTECODE_HEAD = re.compile(rb'amber([0-9a-fA-F]{8})')
PING_BYTECODE_MARK = b'/vl/p4.jsp'


def check_bytecode(data):
    """'amber' + 8 hex digits N + N bytes + 'Mind' → N; MalformedFrame otherwise."""
    head = BYTECODE_HEAD.match(data)
    if not head:
        raise MalformedFrame('not a bytecode: it does not start with amber + 8 hex digits')
    size = int(head.group(1), 16)
    if len(data) != 13 + size + 4 or data[13 + size :] != b'Mind':
        raise MalformedFrame(
            f'not a bytecode: {size} payload bytes announced, '
            f'{len(data) - 17} found, or no Mind trailer'
        )
    return size


def wrap_bytecode(payload):
    return b'amber' + format(len(payload), '08x').encode() + payload + b'Mind'
