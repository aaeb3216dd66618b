"""URF, the Ugobe Resource File the Pleo loads (docs/protocols/pleo.md §2.2).

64-byte header (UGRF, 1, build time, version, the offsets of five indices,
SIZE), then the groups sounds, motions, commands, scripts, properties (each
starting on a 512-byte boundary, resources 4-aligned, in ID order, padding is
ASCII '0'), then the indices, padding to 8 and the ADLR trailer: an Adler-32
seeded with 0 over everything before it.
"""

import dataclasses
import struct
import zlib
from typing import List, Tuple

from .errors import MalformedResource

MAGIC = b'UGRF'
FORMAT = 1
SIZE_LIMIT = 0x37B000  # 3,649,536 bytes
HEADER_SIZE = 64
GROUP_ALIGN = 512
RESOURCE_ALIGN = 4
END_ALIGN = 8
PAD = b'0'
ENTRY = struct.Struct('<II32s')
GAP_OFFSET = 0xFFFFFFFF
NAME_SIZE = 32


@dataclasses.dataclass(frozen=True)
class Group:
    signature: bytes
    base: int
    extension: str


SOUNDS = Group(b'UGSF', 0x1000, 'usf')
MOTIONS = Group(b'UGMF', 0x2000, 'umf')
COMMANDS = Group(b'UGCF', 0x3000, 'ucf')
SCRIPTS = Group(b' AMX', 0x4000, 'amx')
PROPERTIES = Group(b'PROP', 0x5000, 'prop')
GROUPS = (SOUNDS, MOTIONS, COMMANDS, SCRIPTS, PROPERTIES)


@dataclasses.dataclass(frozen=True)
class Item:
    """One resource in a URF: its ID, name (stem) and bytes (a property: 4-byte value)."""

    id: int
    name: str
    data: bytes


@dataclasses.dataclass
class Layout:
    """Where write() put things, for the builder's log lines."""

    placed: List[Tuple[Group, Item, int]] = dataclasses.field(default_factory=list)
    indices: List[Tuple[Group, int]] = dataclasses.field(default_factory=list)
    size: int = 0
    checksum: int = 0


def adler32(data):
    """The PDK's checksum: Adler-32 with the initial value 0 instead of 1."""
    return zlib.adler32(data, 0) & 0xFFFFFFFF


def _pad(buffer, alignment):
    buffer += PAD * (-len(buffer) % alignment)


def property_item(property_id, name, value):
    return Item(property_id, name, struct.pack('<i', value))


def property_value(data):
    """A user property's stored 4 bytes → its signed value."""
    return struct.unpack('<i', data)[0]


def write(groups, build_time, version):
    """groups: {Group: [Item]} → (URF bytes, Layout). IDs must be unique per group."""
    buffer = bytearray(HEADER_SIZE)
    layout = Layout()
    toc = {}
    for group in GROUPS:
        _pad(buffer, GROUP_ALIGN)
        entries = {}
        for item in sorted(groups.get(group, ()), key=lambda i: i.id):
            if group is not PROPERTIES:
                _pad(buffer, RESOURCE_ALIGN)
            length = len(item.name) if group is PROPERTIES else len(item.data)
            entries[item.id] = (len(buffer), length, item.name)
            layout.placed.append((group, item, len(buffer)))
            buffer += item.data
        toc[group] = _with_gaps(group, entries)
    _pad(buffer, GROUP_ALIGN)
    offsets = []
    for group in GROUPS:
        offsets.append(len(buffer))
        layout.indices.append((group, len(buffer)))
        buffer += group.signature + struct.pack('<I', ENTRY.size * len(toc[group]))
        for offset, length, name in toc[group]:
            buffer += ENTRY.pack(offset, length, name.encode('latin-1')[:NAME_SIZE])
    _pad(buffer, END_ALIGN)
    size = len(buffer)
    struct.pack_into(
        '<4sIII', buffer, 0, MAGIC, FORMAT, build_time & 0xFFFFFFFF, version & 0xFFFFFFFF
    )
    for index, (group, offset) in enumerate(zip(GROUPS, offsets, strict=False)):
        struct.pack_into('<4sI', buffer, 16 + 8 * index, group.signature, offset)
    struct.pack_into('<4sI', buffer, 56, b'SIZE', size)
    layout.size, layout.checksum = size, adler32(buffer)
    buffer += b'ADLR' + struct.pack('<I', layout.checksum)
    return bytes(buffer), layout


def _with_gaps(group, entries):
    """TOC entry k is ID base + k: missing IDs get (0xFFFFFFFF, 0, '')."""
    if not entries:
        return []
    return [
        entries.get(group.base + k, (GAP_OFFSET, 0, ''))
        for k in range(max(entries) - group.base + 1)
    ]


@dataclasses.dataclass(frozen=True)
class Entry:
    group: Group
    id: int
    name: str
    offset: int
    length: int
    data: bytes


@dataclasses.dataclass(frozen=True)
class Urf:
    build_time: int
    version: int
    size: int
    checksum: int
    checksum_ok: bool
    entries: List[Entry]  # gaps left out

    def of(self, group):
        return [e for e in self.entries if e.group is group]


def parse(data):
    """URF bytes → Urf. Raises MalformedResource for anything that does not add up."""
    data = bytes(data)
    if len(data) < HEADER_SIZE + 8 or data[:4] != MAGIC:
        raise MalformedResource('not a URF file (no UGRF header)')
    _, form, build_time, version = struct.unpack_from('<4sIII', data)
    if form != FORMAT:
        raise MalformedResource(f'URF format {form}; only format 1 is known')
    tag, size = struct.unpack_from('<4sI', data, 56)
    if tag != b'SIZE' or size + 8 != len(data) or data[size : size + 4] != b'ADLR':
        raise MalformedResource(
            f'URF SIZE field {size} does not match the file '
            f'({len(data)} bytes, ADLR trailer expected at SIZE)'
        )
    checksum = struct.unpack_from('<I', data, size + 4)[0]
    entries = []
    for index, group in enumerate(GROUPS):
        signature, offset = struct.unpack_from('<4sI', data, 16 + 8 * index)
        if signature != group.signature:
            raise MalformedResource(
                f'URF index {index} is {signature!r}, expected {group.signature!r}'
            )
        entries += _read_index(data, group, offset, size)
    return Urf(build_time, version, size, checksum, adler32(data[:size]) == checksum, entries)


def _read_index(data, group, offset, size):
    if offset + 8 > size or data[offset : offset + 4] != group.signature:
        raise MalformedResource(f'URF index {group.signature!r} not found at 0x{offset:X}')
    length = struct.unpack_from('<I', data, offset + 4)[0]
    if length % ENTRY.size or offset + 8 + length > size:
        raise MalformedResource(
            f'URF index {group.signature!r} length {length} is not whole entries inside the file'
        )
    entries = []
    for k in range(length // ENTRY.size):
        start, item_length, raw_name = ENTRY.unpack_from(data, offset + 8 + k * ENTRY.size)
        if start == GAP_OFFSET:
            continue
        stored = 4 if group is PROPERTIES else item_length  # a property's length is its name's
        if start + stored > size:
            raise MalformedResource(f'URF entry {group.base + k:#06x} points outside the file')
        entries.append(
            Entry(
                group,
                group.base + k,
                raw_name.split(b'\0')[0].decode('latin-1'),
                start,
                item_length,
                data[start : start + stored],
            )
        )
    return entries
