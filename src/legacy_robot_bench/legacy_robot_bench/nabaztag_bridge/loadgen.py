"""Load on an HTTP server from programs written in C, for the bridge's benchmark: the
open-loop rabbit fleet (rabbit_load.c, built here with the C compiler) and ApacheBench
(`ab`, Debian apache2-utils) for the closed loop. A Python client saturates a core at about
1,500 requests/s, long before the server does, so neither load comes from Python.

Every connection-per-request run leaves thousands of sockets in TIME_WAIT for a minute;
measured among them, loopback figures can drop tenfold, so each run waits for them to drain.
"""

import hashlib
import json
import pathlib
import re
import shutil
import subprocess
import time

SOURCE = pathlib.Path(__file__).with_name('rabbit_load.c')
TIME_WAIT_LEFT = 500  # sockets in TIME_WAIT a measurement may start among
TIME_WAIT_PATIENCE = 75.0  # s (TIME_WAIT lasts 60 s on Linux)


class LoadError(RuntimeError):
    pass


def build_rabbit_load(folder):
    """Compile rabbit_load.c into folder once per source version → the program's path."""
    compiler = shutil.which('cc') or shutil.which('gcc')
    if compiler is None:
        raise LoadError(
            'no C compiler (cc/gcc) to build the rabbit load generator: apt-get install gcc'
        )
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    program = pathlib.Path(folder) / f'rabbit_load-{digest}'
    if not program.exists():
        program.parent.mkdir(parents=True, exist_ok=True)
        built = subprocess.run(
            [compiler, '-O2', '-o', str(program), str(SOURCE)], capture_output=True, text=True
        )
        if built.returncode:
            raise LoadError(f'building {SOURCE.name} failed: {built.stderr.strip()}')
    return program


def time_wait_sockets():
    listing = subprocess.run(
        ['ss', '-tanH', 'state', 'time-wait'], capture_output=True, text=True
    ).stdout
    return listing.count('\n')


def drain_time_wait(limit=TIME_WAIT_LEFT, patience=TIME_WAIT_PATIENCE):
    """Wait until at most limit sockets are in TIME_WAIT → how many are left."""
    deadline = time.monotonic() + patience
    while (left := time_wait_sockets()) > limit and time.monotonic() < deadline:
        time.sleep(1.0)
    return left


def open_loop(program, port, rabbits, interval, seconds):
    """rabbit_load's JSON: rabbits pinging every interval s, measured for seconds."""
    done = subprocess.run(
        [str(program), '127.0.0.1', str(port), str(rabbits), str(interval), str(seconds)],
        capture_output=True,
        text=True,
        timeout=interval + seconds + 60,
    )
    if done.returncode:
        raise LoadError(f'rabbit_load failed: {done.stderr.strip()}')
    return json.loads(done.stdout)


def apache_bench(url, concurrency, requests):
    """ab -c concurrency -n requests url → {'rate', 'failed', 'non_2xx', 'p99_ms'}."""
    if shutil.which('ab') is None:
        raise LoadError(
            'ApacheBench (ab) is not installed: apt-get install apache2-utils '
            '(make bench installs it)'
        )
    done = subprocess.run(
        ['ab', '-q', '-r', '-c', str(concurrency), '-n', str(requests), url],
        capture_output=True,
        text=True,
        timeout=600,
    )
    text = done.stdout

    def field(pattern, default=None):
        found = re.search(pattern, text, re.MULTILINE)
        if found is None and default is None:
            raise LoadError(f'ab gave no {pattern!r}: {done.stderr.strip() or text[-300:]}')
        return float(found.group(1)) if found else default

    return {
        'rate': field(r'^Requests per second:\s+([\d.]+)'),
        'failed': int(field(r'^Failed requests:\s+(\d+)')),
        'non_2xx': int(field(r'^Non-2xx responses:\s+(\d+)', 0)),
        'p99_ms': field(r'^\s+99%\s+(\d+)'),
    }
