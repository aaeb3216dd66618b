"""The malloc arena cap and the periodic trim, in fresh processes: glibc's arenas counted
from malloc_info, the pages a trim gives back from /proc/self/statm."""

import os
import subprocess
import sys
import textwrap

import pytest

from legacy_robot_common.driver_node import run_node
from legacy_robot_common.memory import (
    ARENAS,
    ENVIRONMENT,
    TRIM_PERIOD,
    TRIM_VARIABLE,
    MallocTrim,
    trim_period,
)
from legacy_robot_common.params import ParameterError

# Eight threads allocate at once; then glibc's own report (malloc_info's XML) is counted.
THREADS_ALLOCATING = textwrap.dedent("""
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
""")


def run(mode, **environment):
    env = {k: v for k, v in os.environ.items() if k != ENVIRONMENT}
    env.update(environment)
    done = subprocess.run(
        [sys.executable, '-c', THREADS_ALLOCATING, mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = dict(line.split(' ', 1) for line in done.stdout.splitlines())
    return lines['cap'], int(lines['arenas'])


@pytest.fixture(scope='module')
def glibc():
    """The arenas of the same process without the cap (these machines run glibc)."""
    return run('none')[1]


def test_threads_get_arenas_of_their_own_without_the_cap(glibc):
    assert glibc > ARENAS  # what the cap is for: about one arena per thread


def test_the_cap_holds_the_process_to_two_arenas(glibc):
    cap, arenas = run('cap')
    assert cap == str(ARENAS)
    assert arenas <= ARENAS


def test_a_users_malloc_arena_max_is_left_alone(glibc):
    cap, arenas = run('cap', **{ENVIRONMENT: '4'})
    assert cap == 'None'
    assert ARENAS < arenas <= 4


# 4,000 blocks of 16 KB (past pymalloc and below mmap's threshold: in the heap), every tenth
# kept alive: free() leaves the 56 MB between them resident; MallocTrim.tick() gives it back.
FRAGMENTED_HEAP = textwrap.dedent("""
    import os
    from legacy_robot_common.memory import MallocTrim
    def resident_mb():
        with open('/proc/self/statm') as statm:
            return int(statm.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2**20
    now = [0.0]
    trim = MallocTrim(period=60, clock=lambda: now[0])
    blocks = [bytearray(b'x') * 16384 for _ in range(4000)]
    kept = blocks[::10]
    del blocks
    before = resident_mb()
    now[0] = 59.0
    early = trim.tick()
    now[0] = 60.0
    print(early, trim.tick(), before, resident_mb(), len(kept))
""")


def test_a_trim_gives_free_pages_between_live_blocks_back():
    done = subprocess.run(
        [sys.executable, '-c', FRAGMENTED_HEAP],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    early, trimmed, before, after, kept = done.stdout.split()
    assert (early, trimmed, kept) == ('False', 'True', '400')
    assert float(before) - float(after) > 40, done.stdout  # of the 56 MB freed


def test_trims_come_once_a_period_and_never_with_period_0():
    now = [100.0]
    trim = MallocTrim(period=60, clock=lambda: now[0])
    ticks = []
    for now[0] in (100.0, 159.9, 160.0, 160.5, 219.9, 220.0):
        ticks.append(trim.tick())
    assert ticks == [False, False, True, False, False, True] and trim.trims == 2
    never = MallocTrim(period=0, clock=lambda: now[0])
    now[0] = 1e9
    assert not never.enabled and not never.tick() and never.trims == 0


def test_the_trim_period_is_chosen_by_an_environment_variable(monkeypatch):
    monkeypatch.delenv(TRIM_VARIABLE, raising=False)
    assert trim_period() == TRIM_PERIOD == 60
    monkeypatch.setenv(TRIM_VARIABLE, ' 5 ')
    assert trim_period() == 5
    monkeypatch.setenv(TRIM_VARIABLE, '0')
    assert trim_period() == 0 and not MallocTrim().enabled
    for bad in ('often', '-1', 'nan', 'inf'):
        monkeypatch.setenv(TRIM_VARIABLE, bad)
        with pytest.raises(ParameterError, match='seconds between malloc trims'):
            trim_period()


def test_a_bad_trim_period_stops_a_driver_with_exit_2_before_its_node(monkeypatch, capfd):
    monkeypatch.setenv(TRIM_VARIABLE, 'often')
    created = []
    assert run_node(lambda: created.append('node')) == 2
    assert created == [] and f"{TRIM_VARIABLE}='often'" in capfd.readouterr().err


# A 4 MB block is mmapped; its free() raises glibc's dynamic threshold to 4 MB, so without fixed
# thresholds the 2 MB blocks that follow come from the heap (mallinfo2's hblks: mmapped blocks
# in use) and, freed, stay resident as untrimmed top (up to twice the raised threshold).
LARGE_BUFFERS = textwrap.dedent("""
    import ctypes, os, sys
    from legacy_robot_common.memory import fix_malloc_thresholds
    print('set', ','.join(fix_malloc_thresholds()) if sys.argv[1] == 'fix' else '-')
    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            'arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', 'usmblks', 'fsmblks',
            'uordblks', 'fordblks', 'keepcost')]
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallinfo2.restype = MallInfo2
    libc.free(libc.malloc(4 << 20))
    before = libc.mallinfo2()
    blocks = [libc.malloc(2 << 20) for _ in range(3)]
    for block in blocks:
        ctypes.memset(block, 1, 2 << 20)           # resident
    print('mmapped', libc.mallinfo2().hblks - before.hblks)
    for block in blocks:
        libc.free(block)
    print('kept_free_mb', (libc.mallinfo2().fordblks - before.fordblks) / 2**20)
""")


def large_buffers(mode, **environment):
    env = dict(os.environ, **environment)
    done = subprocess.run(
        [sys.executable, '-c', LARGE_BUFFERS, mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return dict(line.split(' ', 1) for line in done.stdout.splitlines())


def test_without_fixed_thresholds_large_buffers_move_into_the_heap():
    glibc = large_buffers('none')
    assert glibc['mmapped'] == '0' and float(glibc['kept_free_mb']) >= 4, glibc


def test_fixed_thresholds_keep_large_buffers_out_of_the_heap():
    fixed = large_buffers('fix')
    assert fixed['set'] == 'MALLOC_MMAP_THRESHOLD_,MALLOC_TRIM_THRESHOLD_'
    assert fixed['mmapped'] == '3' and float(fixed['kept_free_mb']) < 0.5, fixed


def test_a_users_malloc_thresholds_are_left_alone():
    users = large_buffers('fix', MALLOC_MMAP_THRESHOLD_='8388608')
    assert users['set'] == 'MALLOC_TRIM_THRESHOLD_'
    assert users['mmapped'] == '0', users  # 2 MB is below the user's 8 MB threshold
