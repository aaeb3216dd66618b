"""urf_builder: build Pleo projects (.upf) into URF files, and read URF files back.

    urf_builder [options] project.upf [build|clean|rebuild]
    urf_builder inspect|verify file.urf
    urf_builder [inspect] file.usf|file.umf|file.ucf|file.amx
    urf_builder extract file.urf --output DIR [--wav]
    urf_builder --ros-args ...        (the ROS 2 node: a build service)

Exit codes: 0 done, 1 the build or check failed, 2 bad command line.
"""

import argparse
import sys

from . import urf_inspect
from .pdk import urf
from .pdk.errors import BuildError, MalformedResource
from .pdk.project import LINE_ENDINGS, BuildSettings, build_project

PROJECT_COMMANDS = ('build', 'clean', 'rebuild')
FILE_COMMANDS = ('inspect', 'verify', 'extract')
RESOURCE_EXTENSIONS = tuple(urf_inspect.FILE_GROUPS)  # single resources: inspect only


def parser():
    p = argparse.ArgumentParser(
        prog='urf_builder',
        description='Build a Pleo project (.upf) into a URF resource file '
        'the way the Pleo Development Kit does, byte for byte; or inspect, verify and extract '
        'an existing .urf.',
        epilog='"rebuild" cleans, then builds. Exit codes: 0 done, '
        '1 build or check failed, 2 bad command line.',
    )
    p.add_argument(
        'target',
        metavar='FILE',
        help='project.upf (build, clean, rebuild), '
        'file.urf (inspect, verify, extract), or one resource file .usf, .umf, '
        '.ucf, .amx (inspect)',
    )
    p.add_argument(
        'command',
        nargs='?',
        help='build (default for .upf), clean, rebuild; '
        'inspect (default for .urf), verify, extract',
    )
    p.add_argument(
        '-x',
        '--exclusive',
        action='store_true',
        help='clean removes only the built .ucf and .amx files',
    )
    p.add_argument(
        '-p',
        '--preprocess',
        action='store_true',
        help='only update the enumeration .xml and .inc files',
    )
    p.add_argument(
        '-s',
        '--noscriptrebuild',
        action='store_true',
        help='do not recompile scripts whose .amx is newer than the source',
    )
    p.add_argument(
        '-b',
        '--block',
        action='store_true',
        help='block compiling (not supported: the block tool is not available)',
    )
    p.add_argument('-c', '--color', action='store_true', help='accepted for compatibility')
    p.add_argument(
        '--pawn',
        metavar='TEMPLATE',
        help='compiler command template (%%i source, %%o output, %%I includes); '
        "default: the UPF's <options><tools><pawn>",
    )
    p.add_argument(
        '--pawncc',
        metavar='PATH',
        help='Pawn compiler executable to use in the template instead of its first word',
    )
    p.add_argument(
        '--amx-dir',
        metavar='DIR',
        help='prebuilt <script name>.amx files to use instead of compiling',
    )
    p.add_argument(
        '--build-time',
        type=int,
        metavar='SECONDS',
        help='the build time stored in the URF (default: $SOURCE_DATE_EPOCH, '
        'else now) for reproducible builds',
    )
    p.add_argument(
        '--line-endings',
        choices=sorted(LINE_ENDINGS),
        default='crlf',
        help='of the generated include/*.inc and *.xml files (default crlf, as the '
        'PDK writes them)',
    )
    p.add_argument('--output', '-o', metavar='DIR', help='extract: where to write the files')
    p.add_argument('--wav', action='store_true', help='extract: also write sounds as WAV')
    p.add_argument('--quiet', '-q', action='store_true', help='print only errors and the result')
    p.add_argument(
        '--progress',
        action='store_true',
        help='show progress on stderr (default: when stderr is a terminal)',
    )
    return p


def progress_printer(enabled):
    def show(done, total, what):
        if enabled and total:
            end = '\n' if done == total else ''
            sys.stderr.write(f'\r[{done:>3}/{total}] {what[:60]:<60}{end}')
            sys.stderr.flush()

    return show


def run_project(args, command):
    if args.block:
        raise BuildError(
            "block compiling (-b) needs the PDK's block tool, which is not "
            'available; build without -b'
        )
    settings = BuildSettings(
        action=command,
        build_time=args.build_time,
        pawn_template=args.pawn,
        pawn_executable=args.pawncc,
        amx_dir=args.amx_dir,
        exclusive_clean=args.exclusive,
        preprocess_only=args.preprocess,
        skip_fresh_scripts=args.noscriptrebuild,
        line_ending=LINE_ENDINGS[args.line_endings],
        log=(lambda line: None) if args.quiet else print,
        progress=progress_printer(args.progress or sys.stderr.isatty()),
    )
    result = build_project(args.target, settings)
    if result.urf_path:
        print(f'{result.urf_path}: {result.size} bytes, Adler-32 {result.checksum:08X}')
    return 0


def run_file(args, command):
    try:
        with open(args.target, 'rb') as handle:
            data = handle.read()
    except OSError as exc:
        raise BuildError(f'cannot read {args.target}: {exc.strerror}') from None
    if args.target.lower().endswith(RESOURCE_EXTENSIONS):
        print('\n'.join(urf_inspect.resource_listing(args.target, data)))
        return 0
    parsed = urf.parse(data)
    if command == 'inspect':
        print('\n'.join(urf_inspect.listing(args.target, parsed)))
        return 0
    if command == 'verify':
        found = urf_inspect.problems(parsed)
        for problem in found:
            print(f'{args.target}: {problem}')
        print(f'{args.target}: {"BAD" if found else "ok"} ({len(parsed.entries)} resources)')
        return 1 if found else 0
    if not args.output:
        raise UsageError('extract needs --output DIR')
    for path in urf_inspect.extract(parsed, args.output, args.wav):
        print(path)
    return 0


class UsageError(Exception):
    pass


def choose_command(args):
    is_urf = args.target.lower().endswith('.urf')
    is_resource = args.target.lower().endswith(RESOURCE_EXTENSIONS)
    command = args.command or ('inspect' if is_urf or is_resource else 'build')
    if command not in PROJECT_COMMANDS + FILE_COMMANDS:
        raise UsageError(
            f"unknown command '{command}': use one of "
            f'{", ".join(PROJECT_COMMANDS + FILE_COMMANDS)}'
        )
    if is_resource:
        if command != 'inspect':
            raise UsageError(f"a single resource file can only be inspected, not '{command}'")
        return command
    if (command in FILE_COMMANDS) != is_urf:
        wanted = 'a .urf file' if command in FILE_COMMANDS else 'a .upf project'
        raise UsageError(f"'{command}' works on {wanted}, not {args.target}")
    return command


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if '--ros-args' in argv:
        from .builder_node import main as node_main

        return node_main(argv)
    args = parser().parse_args(argv)
    try:
        command = choose_command(args)
        if command in PROJECT_COMMANDS:
            return run_project(args, command)
        return run_file(args, command)
    except UsageError as exc:
        print(f'urf_builder: error: {exc}', file=sys.stderr)
        return 2
    except (BuildError, MalformedResource) as exc:
        print(f'urf_builder: error: {exc}', file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
