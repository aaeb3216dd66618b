"""How many malloc arenas a robot process keeps: two, unless the user says otherwise.

glibc gives a thread that meets a busy arena an arena of its own, up to 8 per core. A driver
process has dozens of threads (DDS, links, recorders, the executor), and memory one thread frees
is reused only by threads of the same arena. In the mixed soak (all robots in one bringup for
hours) bringup's 17 arenas grew by about 10 MB in half an hour while the bytes in use stayed
flat: free space, scattered where the next allocation could not use it. Two arenas keep that
free space where it is reused (README, Fault suite).
"""
import ctypes
import os

M_ARENA_MAX = -8       # mallopt's parameter number (glibc malloc.h)
ARENAS = 2
ENVIRONMENT = 'MALLOC_ARENA_MAX'


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
