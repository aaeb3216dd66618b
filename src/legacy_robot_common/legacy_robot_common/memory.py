"""How many malloc arenas a robot process keeps: two, unless the user says otherwise.

glibc gives a thread that meets a busy arena an arena of its own, up to 8 per core. A driver
process has dozens of threads (DDS, links, recorders, the executor), and memory one thread frees
is reused only by threads of the same arena. In the mixed soak (all robots in one bringup for
hours) bringup's 17 arenas grew by about 10 MB in half an hour while the bytes in use stayed
flat: free space, scattered where the next allocation could not use it. Two arenas keep that
free space where it is reused (README, Fault suite).

What free space remains sits between live blocks, where free() never gives it back; glibc's
malloc_trim does (whole free pages, in every arena), so the spin loops call MallocTrim.tick().

Large buffers (a recorder's 1 MB MCAP chunk, its compressed copy) are mmapped and handed back
on free() -- until glibc's dynamic threshold, raised by the first such free(), moves them into
the heap, where they leave holes and up to twice their size of untrimmed top. Fixed thresholds
keep them out of the heap (fix_malloc_thresholds).
"""

import ctypes
import os
import time

M_ARENA_MAX = -8  # mallopt's parameter numbers (glibc malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
ARENAS = 2
ENVIRONMENT = 'MALLOC_ARENA_MAX'
THRESHOLD = 128 * 1024  # bytes: glibc's own starting value for both, kept from moving
THRESHOLD_VARIABLES = {
    M_MMAP_THRESHOLD: 'MALLOC_MMAP_THRESHOLD_',
    M_TRIM_THRESHOLD: 'MALLOC_TRIM_THRESHOLD_',
}


def configure_malloc():
    """Two arenas and fixed thresholds; call before rclpy starts its threads."""
    limit_malloc_arenas()
    fix_malloc_thresholds()


def limit_malloc_arenas(arenas=ARENAS):
    """Cap the process's malloc arenas; call before rclpy starts its threads.

    A MALLOC_ARENA_MAX in the environment is the user's choice, and glibc has applied it
    already: it is left alone. Returns the cap set here, or None (user's setting, or a C
    library without glibc's mallopt).
    """
    if ENVIRONMENT in os.environ:
        return None
    mallopt = getattr(ctypes.CDLL(None), 'mallopt', None)
    if mallopt is None or mallopt(M_ARENA_MAX, arenas) != 1:
        return None
    return arenas


def fix_malloc_thresholds(threshold=THRESHOLD):
    """Blocks of threshold bytes or more get pages of their own, given back on free(), and a
    heap top of more than threshold free bytes is given back too: setting the two values
    turns off glibc's raising of them. A value the user set in the environment (glibc's
    MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_) is left alone. Returns the parameters
    set here (names as in THRESHOLD_VARIABLES)."""
    mallopt = getattr(ctypes.CDLL(None), 'mallopt', None)
    if mallopt is None:
        return []
    return [
        THRESHOLD_VARIABLES[parameter]
        for parameter in (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD)
        if THRESHOLD_VARIABLES[parameter] not in os.environ and mallopt(parameter, threshold) == 1
    ]


TRIM_VARIABLE = 'LEGACY_ROBOTS_MALLOC_TRIM'
TRIM_PERIOD = 60.0  # s: a trim took 0.3 - 4.6 ms here; the growth it undoes takes minutes


def trim_period():
    """Seconds between trims from LEGACY_ROBOTS_MALLOC_TRIM (0: never), default 60;
    ParameterError (a user error: exit 2 with its message) for anything else."""
    text = os.environ.get(TRIM_VARIABLE, '').strip()
    if not text:
        return TRIM_PERIOD
    try:
        period = float(text)
    except ValueError:
        period = -1.0
    if not period >= 0 or period == float('inf'):
        # imported here: params imports rclpy, whose threads would take arenas before the cap
        from .params import ParameterError

        raise ParameterError(
            f'{TRIM_VARIABLE}={text!r}: must be seconds between malloc trims, 0 for never'
        )
    return period


class MallocTrim:
    """Gives malloc's free pages back to the system every period seconds, from a spin loop.

    tick() is called after each spin_once; it trims when the period has passed (monotonic
    clock), so it costs one clock read otherwise. Without glibc's malloc_trim it never trims.
    """

    def __init__(self, period=None, clock=time.monotonic):
        self.period = trim_period() if period is None else period
        self._malloc_trim = getattr(ctypes.CDLL(None), 'malloc_trim', None)
        self._clock = clock
        self._due = clock() + self.period
        self.trims = 0

    @property
    def enabled(self):
        return self._malloc_trim is not None and self.period > 0

    def tick(self):
        """Trim if the period has passed; True when it did."""
        if not self.enabled or self._clock() < self._due:
            return False
        self._malloc_trim(0)
        self._due = self._clock() + self.period
        self.trims += 1
        return True
