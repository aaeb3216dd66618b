"""AMX, the Pawn compiler's output (docs/protocols/pleo.md §2.8): only checked, never changed.

Header: int32 size, uint16 magic 0xF1E0 (32-bit cells), uint8 file_version,
uint8 amx_version, int16 flags, int16 defsize, then int32 cod, dat, hea, stp, ...
The file holds header + code + data, so ``hea`` equals the file size.
"""

import dataclasses
import struct

from .errors import MalformedResource

HEADER = struct.Struct('<iHBBhhiiiii')
MAGIC = 0xF1E0
PLEO_FILE_VERSIONS = (8, 9, 10)  # Pawn 3.x; PrbDK's pawncc33 writes 10
PAWN4_FILE_VERSION = 11
HEADER_TABLES = 56  # where the (empty) tables of a stand-in start: right after the header


@dataclasses.dataclass(frozen=True)
class AmxInfo:
    size: int
    file_version: int
    amx_version: int
    flags: int
    header_size: int
    code_size: int
    data_size: int
    stack_top: int


def check(data):
    """→ (AmxInfo, warnings). Raises MalformedResource when it is not an AMX file at all."""
    if len(data) < HEADER.size:
        raise MalformedResource(f'AMX file of {len(data)} bytes is shorter than its header')
    size, magic, file_version, amx_version, flags, _, cod, dat, hea, stp, _ = HEADER.unpack_from(
        data
    )
    if magic != MAGIC:
        raise MalformedResource(
            f'not a 32-bit Pawn AMX file (magic 0x{magic:04X}, expected 0x{MAGIC:04X})'
        )
    if size != len(data) or not HEADER.size <= cod <= dat <= hea:
        raise MalformedResource(
            f'AMX header says {size} bytes (code at {cod}, data at {dat}, '
            f'heap at {hea}) but the file has {len(data)}'
        )
    warnings = []
    if hea != len(data):
        warnings.append(f'AMX heap start {hea} is not the file size {len(data)}')
    if file_version == PAWN4_FILE_VERSION:
        warnings.append(
            'AMX file version 11 is Pawn 4 output; the Pleo runs Pawn 3.x '
            '(file version 10 or lower)'
        )
    elif file_version not in PLEO_FILE_VERSIONS:
        warnings.append(f'AMX file version {file_version} is not one the Pleo is known to run')
    return AmxInfo(
        size, file_version, amx_version, flags, cod, dat - cod, hea - dat, stp
    ), warnings


def stand_in(code_size, data_size, header_size=56, file_version=10, stack=256):
    """A stand-in AMX for building and inspecting URFs without a Pawn compiler: a valid
    header (magic, versions, overlay flag, sizes, empty tables) around zeroed code and data.
    The Pleo could not run it."""
    size = header_size + code_size + data_size
    head = HEADER.pack(
        size,
        MAGIC,
        file_version,
        file_version,
        1,
        8,
        header_size,
        header_size + code_size,
        size,
        size + stack,
        -1,
    )
    head += struct.pack('<6i', *([HEADER_TABLES] * 6))  # all six tables empty
    return head + bytes(header_size - len(head)) + bytes(code_size + data_size)
