"""Reading URF files back: the listing, the checks and the extraction behind
``urf_builder inspect|verify|extract`` (none of the PDK tools could read a URF)."""

import datetime
import os

from .pdk import amx, ucf, umf, urf, usf
from .pdk.errors import MalformedResource

PARSERS = {
    urf.SOUNDS: usf.parse,
    urf.MOTIONS: umf.parse,
    urf.COMMANDS: ucf.parse,
    urf.SCRIPTS: lambda data: amx.check(data)[0],
}
GROUP_NAMES = {
    urf.SOUNDS: 'sound',
    urf.MOTIONS: 'motion',
    urf.COMMANDS: 'command',
    urf.SCRIPTS: 'script',
    urf.PROPERTIES: 'property',
}


def describe(group, data):
    """One line about a resource's content."""
    if group is urf.PROPERTIES:
        return f'value {urf.property_value(data)}'
    parsed = PARSERS[group](data)
    if group is urf.SOUNDS:
        kind = 'ADPCM' if parsed.compression == usf.ADPCM else 'PCM 8-bit'
        return f'{kind} {parsed.rate} Hz, {parsed.seconds:.2f} s' + (
            '' if parsed.pitch else ', no pitch shift'
        )
    if group is urf.MOTIONS:
        return (
            f'UMF3 {len(parsed.joints)} joints, {len(parsed.vectors)} vectors, '
            f'{parsed.end_time} frames ({parsed.end_time * parsed.timebase_ms / 1000:.2f} s)'
        )
    if group is urf.COMMANDS:
        return f'UCF4 {len(parsed.entries)} entries'
    return (
        f'AMX v{parsed.file_version} header {parsed.header_size}, code {parsed.code_size}, '
        f'data {parsed.data_size}'
    )


def listing(path, parsed):
    built = datetime.datetime.fromtimestamp(parsed.build_time, datetime.timezone.utc)
    lines = [
        f'{path}: {parsed.size + 8} bytes, built {built:%Y-%m-%d %H:%M:%S} UTC '
        f'({parsed.build_time}), version {parsed.version}, Adler-32 '
        f'{parsed.checksum:08X} {"ok" if parsed.checksum_ok else "WRONG"}',
        f'{"type":<9}{"id":<8}{"name":<33}{"offset":>9}{"length":>9}  content',
    ]
    for entry in parsed.entries:
        try:
            content = describe(entry.group, entry.data)
        except MalformedResource as exc:
            content = f'BAD: {exc}'
        lines.append(
            f'{GROUP_NAMES[entry.group]:<9}0x{entry.id:04X}  {entry.name:<33}'
            f'{entry.offset:>#9x}{entry.length:>9}  {content}'
        )
    return lines


# single resource files, by their extension
FILE_GROUPS = {f'.{group.extension}': group for group in PARSERS}


def resource_listing(path, data):
    """A single .usf/.umf/.ucf/.amx file: the summary line, then its content in detail."""
    group = FILE_GROUPS[os.path.splitext(path)[1].lower()]
    lines = [f'{path}: {len(data)} bytes, {GROUP_NAMES[group]}: {describe(group, data)}']
    parsed = PARSERS[group](data)
    if group is urf.SOUNDS:
        lines.append(
            f'name {parsed.name!r}, {parsed.channels} channel(s), {parsed.bits} bits, '
            f'loop count {parsed.loop_count}, {len(parsed.body)} data bytes'
        )
    elif group is urf.MOTIONS:
        lines.append(
            f'name {parsed.name!r}, joints {" ".join(parsed.joints)}, time base '
            f'{parsed.timebase_ms} ms'
        )
        lines.append(f'{"joint":<7}{"start":>6}{"goal":>6}{"velocity":>9}{"position":>9}')
        lines += [
            f'{joint:<7}{start:>6}{goal:>6}{velocity:>9}{position:>9}'
            for joint, start, goal, velocity, position in parsed.vectors
        ]
    elif group is urf.COMMANDS:
        lines.append(f'name {parsed.name!r}, property count {parsed.property_count}')
        for number, entry in enumerate(parsed.entries):
            lines.append(
                f'entry {number}: '
                + ', '.join(
                    f'property {prop} {TYPE_NAMES.get(kind, kind)} {value}'
                    for prop, kind, value in entry
                )
            )
    return lines


TYPE_NAMES = {ucf.VALUE: 'value', ucf.MINIMUM: 'min', ucf.MAXIMUM: 'max'}


def problems(parsed):
    """Everything wrong with a parsed URF, as messages (empty: the file is good)."""
    found = [] if parsed.checksum_ok else ['the Adler-32 checksum does not match']
    for entry in parsed.entries:
        if entry.group is urf.PROPERTIES:
            continue
        try:
            PARSERS[entry.group](entry.data)
        except MalformedResource as exc:
            found.append(f'{GROUP_NAMES[entry.group]} 0x{entry.id:04X} {entry.name}: {exc}')
    if parsed.size + 8 > urf.SIZE_LIMIT:
        found.append(f"{parsed.size + 8} bytes is more than the Pleo's {urf.SIZE_LIMIT}")
    return found


def extract(parsed, folder, as_wav=False):
    """Write every resource to folder as <name>.<ext> (sounds also as .wav) → paths."""
    os.makedirs(folder, exist_ok=True)
    paths, properties = [], []
    for entry in parsed.entries:
        if entry.group is urf.PROPERTIES:
            properties.append(f'{entry.name},{entry.id},{urf.property_value(entry.data)}')
            continue
        name = entry.name or f'{entry.id:04x}'
        paths.append(_write(folder, f'{name}.{entry.group.extension}', entry.data))
        if as_wav and entry.group is urf.SOUNDS:
            paths.append(_write(folder, f'{name}.wav', usf.to_wav(usf.parse(entry.data))))
    if properties:
        paths.append(
            _write(
                folder,
                'user_properties.csv',
                '\n'.join(['name,id,value'] + properties).encode() + b'\n',
            )
        )
    return paths


def _write(folder, name, data):
    path = os.path.join(folder, os.path.basename(name))
    with open(path, 'wb') as handle:
        handle.write(data)
    return path
