"""Point the ROS 2 wheels' CMake exports at this interpreter.

The message wheels were built in a container whose Python lives under
/opt/python/cp311-cp311; their exported CMake files name its include dir and
site-packages, and CMake refuses to configure an interface package until those
paths exist. This rewrites them, in place and idempotently, to the include dir
and site-packages of the interpreter running this script, and NumPy's C headers
(numpy/_core/include in NumPy 2, with which they were built) to where this
interpreter's NumPy keeps them (numpy/core/include in Ubuntu 24.04's NumPy 1.26).

Usage: python fix_wheel_cmake_paths.py VENV_DIR
"""

import importlib.util
import pathlib
import sys
import sysconfig

BUILD_PYTHON = '/opt/python/cp311-cp311'
SITE_PACKAGES = sysconfig.get_paths()['purelib']
REPLACEMENTS = (
    (BUILD_PYTHON + '/include/python3.11', sysconfig.get_paths()['include']),
    (BUILD_PYTHON + '/lib/python3.11/site-packages', SITE_PACKAGES),
)
NUMPY_2_HEADERS = SITE_PACKAGES + '/numpy/_core/include'


def numpy_headers():
    """Where this interpreter's NumPy keeps its C headers, without importing it."""
    spec = importlib.util.find_spec('numpy')
    if spec is None:
        return NUMPY_2_HEADERS
    package = pathlib.Path(spec.origin).parent
    # NumPy 1.26 has a numpy/_core too, without the headers
    headers = package / '_core' / 'include'
    return str(headers if headers.is_dir() else package / 'core' / 'include')


def fix_file(path):
    text = path.read_text()
    fixed = text
    for old, new in (*REPLACEMENTS, (NUMPY_2_HEADERS, numpy_headers())):
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
