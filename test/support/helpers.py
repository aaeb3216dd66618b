"""Helpers for the end-to-end tests: run repository entry points as real processes."""

import contextlib
import os
import pathlib
import subprocess
import sys
import threading
import time

from legacy_robot_bench.common.bench import wait_until

ROOT = pathlib.Path(__file__).resolve().parents[2]
SUPPORT = ROOT / 'test' / 'support'


def env_with_support():
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(SUPPORT), env.get('PYTHONPATH', '')])
    env['PYTHONUNBUFFERED'] = '1'
    return env


def run_module(module, *args, timeout=60):
    """Run `python -m module args` to completion; returns CompletedProcess (text)."""
    return subprocess.run(
        [sys.executable, '-m', module, *args],
        env=env_with_support(),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def start_module(module, *args, env=None, stdin=None):
    """Start `python -m module args` (env: env_with_support() unless given), pipes for both
    output streams (stdin: subprocess.PIPE to write to it; by default this process's)."""
    return subprocess.Popen(
        [sys.executable, '-m', module, *args],
        env=env or env_with_support(),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def wait_for(predicate, timeout=5.0, poll=0.01):
    """Poll predicate until it is true or timeout passes; returns its last value."""
    return wait_until(predicate, timeout, poll)


@contextlib.contextmanager
def listening_node(name):
    """(node, executor) in a ROS context of their own, for a test that watches other processes."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.node import Node

    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node(name, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def spin_until(executor, predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not predicate():
        executor.spin_once(timeout_sec=0.05)
    return predicate()


class Lines:
    """A process's stdout lines (or stream's, one of its pipes), read on a thread (its pipe
    never fills); arrived[i] is when lines[i] was read, by CLOCK_MONOTONIC."""

    def __init__(self, process, stream=None):
        self.lines = []
        self.arrived = []
        threading.Thread(target=self._read, args=(stream or process.stdout,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            self.arrived.append(time.monotonic())  # first: every line has its time
            self.lines.append(line.rstrip('\n'))

    def has(self, text):
        return any(text in line for line in self.lines)

    def find(self, pattern):
        """The first match of a compiled regular expression in a line, or None."""
        for line in list(self.lines):
            if match := pattern.search(line):
                return match
        return None


def skip_where_the_events_executor_cannot_run_drivers(kind):
    """Jazzy's events executor cannot answer async services, so the drivers run on the single
    executor there and a test of them on 'events' has nothing to test (docs/distributions.md)."""
    import pytest

    from legacy_robot_common.distribution import events_executor_gap

    gap = events_executor_gap()
    if kind == 'events' and gap:
        pytest.skip(f'{gap}: on this distribution the drivers use the single executor')
