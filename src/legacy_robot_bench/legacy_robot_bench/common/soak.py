"""The fault suite's shared parts (`make soak`); no rclpy here.

Kill / restart: a RestartSpec says how to start a robot's emulator at fixed addresses (so it
can be killed and started again where the driver looks for it), the driver pointed there,
and a topic that flows while the link is up.

Fuzzing: a FuzzTarget is one decoder as the wire (or a file) feeds it, with valid inputs
made by the robot package's own encoders. fuzz() gives it random byte strings and mutated
copies of the valid inputs; a reject is the decoder's documented exception (the client
counts it and goes on), anything else is an uncaught exception, which would end a link
thread or a build with a traceback instead of a counted, logged reject.
"""

import dataclasses
import random
import time
import traceback
from typing import Callable, Dict, List, Sequence, Tuple

from legacy_robot_common.errors import MalformedFrame

EXAMPLE_BYTES = 64  # how much of a crashing input a report shows


@dataclasses.dataclass
class FuzzTarget:
    """decode(data) raises one of rejects for bad input; a stream decoder (stream=True: a
    receiver that skips bad frames and goes on) returns how many frames it rejected instead."""

    name: str
    decode: Callable[[bytes], object]
    seeds: Sequence[bytes]  # valid inputs; half the cases mutate one of them
    rejects: Tuple[type, ...] = (MalformedFrame,)
    max_random: int = 600  # longest random input, bytes
    stream: bool = False


@dataclasses.dataclass
class FuzzResult:
    name: str
    cases: int = 0
    accepted: int = 0  # inputs decoded without an exception
    rejected: int = 0  # inputs rejected, and frames a stream rejected
    crashes: int = 0
    first_crash: str = ''  # the exception, its place, and the input
    seconds: float = 0.0


@dataclasses.dataclass
class Row:
    """One line of the fault suite's table."""

    part: str
    subject: str
    measured: str
    target: str
    ok: bool

    def cells(self):
        return (self.part, self.subject, self.measured, self.target, 'ok' if self.ok else 'MISSED')


@dataclasses.dataclass
class RestartSpec:
    emulator: List[str]  # `python -m` arguments: the emulator at fixed addresses
    driver: str  # the node's module (`python -m`)
    parameters: Dict[str, object]  # node parameters that point it at those addresses
    topic: str  # relative name of a topic that flows while connected
    message: type  # that topic's message class


@dataclasses.dataclass
class NoiseSpec:
    """A robot under link noise: its emulator (started in this process, so that its faults
    can be switched off at the end and its true state read), the driver pointed at it, the
    topic that should keep flowing, and the robot's own checks.

    drive(node, namespace) runs every 0.1 s while the noise lasts (e.g. cmd_vel);
    check(emulator, received, diagnostics) runs after the noise stopped and the link
    settled: received = {relative topic: [messages]}, diagnostics = {status name: {key:
    value}}; it returns Rows."""

    emulator: object
    driver: str
    parameters: Dict[str, object]
    topic: str
    message: type
    kept: Dict[str, type] = dataclasses.field(default_factory=dict)  # topics check() reads
    drive: Callable = None
    check: Callable = None
    no_flow_reason: str = ''  # why nothing can get through such a line, if so


def mutate(data, rng, seeds=()):
    """One to four random edits of data: bit flips, byte changes, inserts, deletes,
    truncation, a repeated slice, or a splice with another valid input."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        edit = rng.randrange(7)
        position = rng.randrange(len(out) + 1)
        if edit == 0 and out:
            out[position % len(out)] ^= 1 << rng.randrange(8)
        elif edit == 1 and out:
            out[position % len(out)] = rng.randrange(256)
        elif edit == 2:
            out[position:position] = rng.randbytes(rng.randint(1, 8))
        elif edit == 3 and out:
            del out[position : position + rng.randint(1, 16)]
        elif edit == 4:
            del out[position:]
        elif edit == 5 and out:
            start = rng.randrange(len(out))
            out[position:position] = out[start : start + rng.randint(1, 32)]
        elif edit == 6 and seeds:
            other = rng.choice(seeds)
            out = out[:position] + other[rng.randrange(len(other) + 1) :]
    return bytes(out)


def fuzz_cases(target, cases, seed):
    """The inputs of one run: even cases random, odd cases mutated seeds (repeatable)."""
    rng = random.Random(seed)
    for index in range(cases):
        if index % 2 == 0 or not target.seeds:
            yield rng.randbytes(rng.randrange(target.max_random + 1))
        else:
            yield mutate(rng.choice(target.seeds), rng, target.seeds)


def stream_rejects(items, decode_item):
    """For stream decoders: decode_item each good item of a receiver's output; → the number
    of rejects (the receiver's MalformedFrame items and decode_item's MalformedFrames)."""
    rejects = 0
    for item in items:
        if isinstance(item, MalformedFrame):
            rejects += 1
            continue
        try:
            decode_item(item)
        except MalformedFrame:
            rejects += 1
    return rejects


def fuzz(target, cases, seed=0):
    """Run cases inputs through target.decode; count accepts, rejects and crashes."""
    result = FuzzResult(target.name)
    started = time.perf_counter()
    for data in fuzz_cases(target, cases, seed):
        result.cases += 1
        try:
            outcome = target.decode(data)
            result.accepted += 1
            if target.stream:
                result.rejected += outcome
        except target.rejects:
            result.rejected += 1
        except Exception as exc:  # what the suite looks for: report, go on
            result.crashes += 1
            if not result.first_crash:
                place = traceback.extract_tb(exc.__traceback__)[-1]
                result.first_crash = (
                    f'{type(exc).__name__}: {exc} at {place.filename}:'
                    f'{place.lineno} on input {data[:EXAMPLE_BYTES].hex()}'
                    f'{"…" if len(data) > EXAMPLE_BYTES else ""}'
                )
    result.seconds = time.perf_counter() - started
    return result


def noise_arguments(rate):
    """An emulator's command-line options for line noise: rate of its bytes dropped and as
    many corrupted (every stream emulator takes them)."""
    return ['--drop-rate', str(rate), '--corrupt-rate', str(rate)]
