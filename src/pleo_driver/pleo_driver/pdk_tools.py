"""The PDK's converters as commands of their own, each a thin entry point over the
codec the build uses (no second implementation):

    wav2usf [--frequency HZ] [--adpcm] [--no-pitch] [-o OUT.usf] sound.wav
    csv2umf [--enums DIR] [-o OUT.umf] motion.csv
    csv2ucf [--enums DIR] [-I DIR ...] [-o OUT.ucf] command.csv

Exit codes: 0 written, 1 the input cannot be converted (the message says why), 2 bad
command line.
"""

import argparse
import os
import sys

from .pdk import project, ucf, umf, usf
from .pdk.errors import BuildError, MalformedResource


def _parser(tool, what, extension):
    parser = argparse.ArgumentParser(
        prog=tool,
        description=f"Convert {what} the way the Pleo Development Kit's {tool} "
        'does, byte for byte (the same code urf_builder builds projects with).',
        epilog='Exit codes: 0 written, 1 the input cannot be converted, 2 bad command line.',
    )
    parser.add_argument('input', help=f'the {what} to convert')
    parser.add_argument(
        '-o', '--output', help=f"where to write (default: the input's name with .{extension})"
    )
    parser.add_argument('-q', '--quiet', action='store_true', help='print only errors')
    return parser


def _allow_missing_option(parser, what):
    parser.add_argument(
        '--allow-missing',
        action='store_true',
        help=f'write the file even when {what} cannot be found (the PDK wrote '
        'it, leaving them out); otherwise that is an error (exit 1)',
    )


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a whole number') from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f'must be positive, not {value}')
    return value


def _enum_option(parser):
    parser.add_argument(
        '--enums',
        default='.',
        metavar='DIR',
        help="folder with the project's sounds.xml, motions.xml and "
        'commands.xml (urf_builder writes them there); default: here',
    )


def _run(tool, args, extension, convert, settings=''):
    """Read args.input, convert(bytes) → (output bytes, log lines, what is missing), write,
    report. Something missing from the output (a sound cue, a property) is an error, exit 1
    and no file, unless --allow-missing."""
    target = args.output or f'{os.path.splitext(args.input)[0]}.{extension}'
    try:
        source = project.read_bytes(args.input)  # its error names the file
    except BuildError as exc:
        print(f'{tool}: error: {exc}', file=sys.stderr)
        return 1
    try:
        data, lines, missing = convert(source)
        if missing and not getattr(args, 'allow_missing', False):
            for problem in missing:
                print(f'{tool}: error: {args.input}: {problem}', file=sys.stderr)
            print(f'{tool}: nothing written: {MISSING_HINTS[tool]}', file=sys.stderr)
            return 1
        project.write_atomic(target, data)
    except (BuildError, MalformedResource, OSError) as exc:
        print(f'{tool}: error: {args.input}: {exc}', file=sys.stderr)
        return 1
    if not args.quiet:
        print(f'Converting {args.input} to {target}{settings}')  # the PDK's log line
        for line in lines:
            print(line)
        print(f'{target}: {len(data)} bytes')
    return 0


MISSING_HINTS = {
    'csv2umf': 'give --enums DIR, the project folder with sounds.xml and commands.xml '
    '(urf_builder PROJECT.upf -p writes them), or --allow-missing',
    'csv2ucf': 'give --enums DIR (the project folder) and -I DIR (the include folder with '
    'pleo/properties.inc), or --allow-missing',
}


def wav2usf_main(argv=None):
    parser = _parser('wav2usf', 'a WAV sound (8/16-bit, mono/stereo)', 'usf')
    parser.add_argument(
        '--frequency',
        type=_positive_int,
        default=usf.DEFAULT_RATE,
        help=f'output samples/s (default {usf.DEFAULT_RATE})',
    )
    parser.add_argument('--adpcm', action='store_true', help='IMA ADPCM instead of 8-bit PCM')
    parser.add_argument('--no-pitch', action='store_true', help='set the "no pitch shift" flag')
    args = parser.parse_args(argv)
    options = usf.SoundOptions(adpcm=args.adpcm, pitch=not args.no_pitch, frequency=args.frequency)
    return _run(
        'wav2usf',
        args,
        'usf',
        lambda data: (usf.wav_to_usf(data, usf.sound_name(args.input), options), [], []),
        f' {usf.options_text(options)}',
    )


def csv2umf_main(argv=None):
    parser = _parser('csv2umf', "a motion CSV (the 3ds Max exporter's format)", 'umf')
    _enum_option(parser)
    _allow_missing_option(parser, 'a sound the motion cues')
    args = parser.parse_args(argv)

    def convert(data):
        ids = project.read_enum_ids(args.enums)
        sound_ids = {**ids['sound'], **ids['command']}  # a command name wins, as in the PDK
        output, lines = umf.csv_to_umf(
            project.decode_text(data), umf.motion_name(args.input), sound_ids
        )
        return output, lines, [line for line in lines if line.startswith('missing sound')]

    return _run('csv2umf', args, 'umf', convert, ', UMF3 format')


def csv2ucf_main(argv=None):
    parser = _parser('csv2ucf', 'a command CSV', 'ucf')
    _enum_option(parser)
    parser.add_argument(
        '-I',
        '--include',
        action='append',
        default=[],
        metavar='DIR',
        help='include folder holding pleo/properties.inc and the other kit '
        'headers, and user_properties.inc (repeatable; default: DIR/include '
        'of --enums)',
    )
    _allow_missing_option(parser, 'a property or value the command names')
    args = parser.parse_args(argv)

    def convert(data):
        lookups, warning = project.command_lookups(
            args.include or [os.path.join(args.enums, 'include')],
            project.read_enum_ids(args.enums),
        )
        output, missing, line = ucf.csv_to_ucf(
            project.decode_text(data), ucf.command_name(args.input), lookups
        )
        notes = [f'warning: {warning}'] if warning else []
        problems = [f'missing properties: {", ".join(missing)}'] if missing else []
        return output, notes + [f'warning: {p}' for p in problems] + [line], problems

    return _run('csv2ucf', args, 'ucf', convert)
