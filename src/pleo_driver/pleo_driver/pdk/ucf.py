"""UCF, the Pleo's command file, and csv2ucf's conversion from CSV (docs/protocols/pleo.md §2.6).

A command is a table: each row an entry, each column a property (``mood``,
``motion``, ``age_min``, ...) and each cell a value or an enum name. Each entry
becomes (property id, type, value) triples: type 1 = exact value, 2 = minimum
(``_min`` columns), 3 = maximum (``_max``).
"""

import csv
import dataclasses
import io
import os
import struct
from typing import Dict, List

from .errors import BuildError, MalformedResource
from .py2 import dict_order

MAGIC = b'UGCF'
VERSION = 4
HEADER = struct.Struct('<4sh32shh')
TRIPLE = struct.Struct('<hhh')
VALUE, MINIMUM, MAXIMUM = 1, 2, 3
SUFFIXES = (('_min', MINIMUM), ('_max', MAXIMUM))
XML_ENUMS = ('motion', 'sound', 'command')


@dataclasses.dataclass
class Lookups:
    """What csv2ucf resolves names against.

    properties: property name (``property_motion``) → id, from pleo/properties.inc and
    user_properties.inc; pawn_enums: enum name (``mood_name``) → {entry: value};
    resources: 'motion'/'sound'/'command' → {resource name: id} (the XML enums).
    """

    properties: Dict[str, int]
    pawn_enums: Dict[str, Dict[str, int]]
    resources: Dict[str, Dict[str, int]]


def command_name(path):
    return os.path.basename(path).replace('.csv', '').replace('_cmd', '')


def _column(name):
    for suffix, kind in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], kind
    return name, VALUE


def _resolve_value(column, cell, lookups):
    if column in XML_ENUMS:
        if cell in lookups.resources.get(column, {}):
            return lookups.resources[column][cell]
    enum = lookups.pawn_enums.get(f'{column}_name', {})
    for candidate in (cell, f'{column}_{cell}'):
        if candidate in enum:
            return enum[candidate]
    try:
        return int(cell)
    except ValueError:
        return None


def read_rows(text):
    """CSV text → entries as csv2ucf sees them: [(stripped column, stripped cell)] per row.

    Columns come in the order a Python 2 dict iterates them (DictReader's row,
    then the dict of stripped names built from it); rows whose last column is
    missing are skipped.
    """
    reader = csv.reader(io.StringIO(text.replace('\r\n', '\n').replace('\r', '\n')))
    names = next(reader, None)
    if not names:
        raise BuildError('command CSV has no column names')
    entries = []
    for row in reader:
        if not row or len(row) < len(names):
            continue
        cells = dict(zip(names, row, strict=False))
        stripped = {}
        for name in dict_order(list(cells)):
            stripped[name.strip()] = cells[name].strip()
        entries.append([(name, stripped[name]) for name in dict_order(list(stripped))])
    return entries


def csv_to_ucf(text, name, lookups):
    """Command CSV text → (UCF bytes, missing "column=value" names, log line)."""
    entries = read_rows(text)
    if not entries:
        raise BuildError('No valid data to save')
    body, missing, count = [], [], 0
    for entry in entries:
        count = 0
        for column, cell in entry:
            base, kind = _column(column)
            property_id = lookups.properties.get(f'property_{base}')
            value = _resolve_value(base, cell, lookups)
            if property_id is None or value is None:
                missing.append(f'{column}={cell}')
                continue
            body.append(TRIPLE.pack(property_id, kind, value))
            count += 1
    head = HEADER.pack(MAGIC, VERSION, name.encode('latin-1')[:32], count, len(entries))
    log = f'done writing ucf file; property count={count}, record count={len(entries)}'
    return head + b''.join(body), missing, log


@dataclasses.dataclass(frozen=True)
class Ucf:
    name: str
    property_count: int
    entries: List[List[tuple]]  # per entry: (property id, type, value)


def parse(data):
    """UCF bytes → entries. The header's property count is that of the last entry only,
    so the triples are split into entries of that size; a remainder goes to the last."""
    if len(data) < HEADER.size or data[:4] != MAGIC:
        raise MalformedResource('not a UCF file (no UGCF header)')
    _, version, name, property_count, entry_count = HEADER.unpack_from(data)
    if version != VERSION:
        raise MalformedResource(f'UCF version {version}; only version 4 is known')
    body = data[HEADER.size :]
    if len(body) % TRIPLE.size or property_count < 0 or entry_count < 0:
        raise MalformedResource(f'UCF body of {len(body)} bytes is not whole triples')
    triples = [TRIPLE.unpack_from(body, offset) for offset in range(0, len(body), TRIPLE.size)]
    size = max(property_count, 1)
    entries = [triples[i : i + size] for i in range(0, len(triples), size)]
    return Ucf(name.rstrip(b'\0').decode('latin-1'), property_count, entries)
