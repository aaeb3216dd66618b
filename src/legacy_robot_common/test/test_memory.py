"""The malloc arena cap, in fresh processes: glibc's arenas counted from malloc_info."""
import os
import subprocess
import sys
import textwrap

import pytest

from legacy_robot_common.memory import ARENAS, ENVIRONMENT

# Eight threads allocate at once; then glibc's own report (malloc_info's XML) is counted.
THREADS_ALLOCATING = textwrap.dedent('''
    import ctypes, os, sys, tempfile, threading
    from legacy_robot_common.memory import limit_malloc_arenas
    print('cap', limit_malloc_arenas() if sys.argv[1] == 'cap' else 'not called')
    start = threading.Barrier(8)
    def allocate():
        start.wait()
        kept = [bytearray(4096) for _ in range(200)]   # past pymalloc: plain malloc
    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    path = tempfile.mktemp()
    stream = libc.fopen(path.encode(), b'w')
    libc.malloc_info(0, ctypes.c_void_p(stream))
    libc.fclose(ctypes.c_void_p(stream))
    print('arenas', open(path).read().count('<heap nr='))
    os.remove(path)
''')


def run(mode, **environment):
    env = {k: v for k, v in os.environ.items() if k != ENVIRONMENT}
    env.update(environment)
    done = subprocess.run([sys.executable, '-c', THREADS_ALLOCATING, mode], env=env,
                          capture_output=True, text=True, timeout=60, check=True)
    lines = dict(line.split(' ', 1) for line in done.stdout.splitlines())
    return lines['cap'], int(lines['arenas'])


@pytest.fixture(scope='module')
def glibc():
    """The arenas of the same process without the cap (these machines run glibc)."""
    return run('none')[1]


def test_threads_get_arenas_of_their_own_without_the_cap(glibc):
    assert glibc > ARENAS          # what the cap is for: about one arena per thread


def test_the_cap_holds_the_process_to_two_arenas(glibc):
    cap, arenas = run('cap')
    assert cap == str(ARENAS)
    assert arenas <= ARENAS


def test_a_users_malloc_arena_max_is_left_alone(glibc):
    cap, arenas = run('cap', **{ENVIRONMENT: '4'})
    assert cap == 'None'
    assert ARENAS < arenas <= 4
