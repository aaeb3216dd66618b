"""Point the ROS 2 wheels' CMake exports at this interpreter.

The message wheels were built in a container whose Python lives under
/opt/python/cp311-cp311; their exported CMake files name its include dir and
site-packages, and CMake refuses to configure an interface package until those
paths exist. This rewrites them, in place and idempotently, to the include dir
and site-packages of the interpreter running this script.

Usage: python fix_wheel_cmake_paths.py VENV_DIR
"""

import pathlib
import sys
import sysconfig

BUILD_PYTHON = '/opt/python/cp311-cp311'
REPLACEMENTS = (
    (BUILD_PYTHON + '/include/python3.11', sysconfig.get_paths()['include']),
    (BUILD_PYTHON + '/lib/python3.11/site-packages', sysconfig.get_paths()['purelib']),
)


def fix_file(path):
    text = path.read_text()
    fixed = text
    for old, new in REPLACEMENTS:
        fixed = fixed.replace(old, new)
    if fixed != text:
        path.write_text(fixed)
        return True
    return False


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    share = pathlib.Path(argv[1]) / 'share'
    if not share.is_dir():
        print(f'no {share}: is {argv[1]} the virtual environment?', file=sys.stderr)
        return 1
    changed = sum(fix_file(p) for p in share.rglob('*.cmake'))
    leftover = [p for p in share.rglob('*.cmake') if BUILD_PYTHON in p.read_text()]
    for path in leftover:
        print(f'unhandled {BUILD_PYTHON} path left in {path}', file=sys.stderr)
    print(f'fix_wheel_cmake_paths: {changed} CMake files rewritten')
    return 1 if leftover else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
