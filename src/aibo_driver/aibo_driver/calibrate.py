"""aibo_calibrate: find a dog's YUV10 packing (a YUV10 frame against a JPEG), or its gait speeds.

    aibo_calibrate --host 192.168.0.20 [--port 21001] [--top 8]
    aibo_calibrate --gait --host 192.168.0.20 [--rcode-port 21002] [--distance-mm 1000]
                   [--turn-deg 360] [--walked-mm N --turned-deg N]

Gait (--gait): the references give no stride figures (docs/protocols/aibo.md §6.2), so the driver's
normal_speed, slow_speed, normal_turn_rate and slow_turn_rate are estimates. This stands the
dog up, then walks --distance-mm with each gait and turns --turn-deg with each, timing each
action from its line to the dog's `Wait` reaching 0, and prints the parameter lines. The dog
times what it believes it walked: measure the floor with a tape after the normal walk and
give --walked-mm (and --turned-deg after the normal turn) to scale by what it really did.

The packing is not documented (docs/protocols/aibo.md §3.6). Keep the dog and the scene
still: it grabs one YUV10 frame and one JPEG, decodes the YUV10 frame in every variant the page
leaves open (layout, bit order, which 5 bits are Y, chroma order, the 5 → 8-bit scaling of Y and
of chroma, colour matrix), ranks them by their mean error against the JPEG and prints the
parameter lines of the best one, to paste into the driver's parameter file.

Exit codes: 0 ranked (measured), 1 no frames or no answer from the dog (the message says
which), 2 bad command line.
"""

import argparse
import itertools
import math
import queue
import sys
import time

import numpy as np

from . import protocol as p
from . import rcode
from .client import CameraFrame, PollValues, RcodeClient, Settings, TelemetryClient

# every value each open question of docs/protocols/aibo.md §3.6 can take
CHOICES = {
    'layout': ('interleaved', 'planar'),
    'bit_order': ('msb', 'lsb'),
    'y_bits': ('high', 'low'),
    'chroma_first': ('U', 'V'),
    'five_to_eight': p.FIVE_TO_EIGHT,
    'chroma_five_to_eight': p.FIVE_TO_EIGHT,
    'matrix': ('sony', 'bt601'),
}


def variants():
    for values in itertools.product(*CHOICES.values()):
        yield p.Yuv10Format(**dict(zip(CHOICES, values, strict=False)))


def rank(yuv10, reference_rgb):
    """[(mean absolute error per channel value, Yuv10Format)], best first."""
    reference = np.asarray(reference_rgb, dtype=np.int16)
    scored = [
        (float(np.abs(p.Yuv10Decoder(fmt).decode(yuv10).astype(np.int16) - reference).mean()), fmt)
        for fmt in variants()
    ]
    return sorted(scored, key=lambda pair: pair[0])


def parameter_lines(fmt):
    return [f'    yuv10_{name}: {getattr(fmt, name)}' for name in CHOICES]


def grab(settings, timeout):
    """(YUV10 bytes, JPEG bytes) from a connected dog; TimeoutError naming what did not come."""
    records = queue.SimpleQueue()
    client = TelemetryClient(settings)
    client.on_record = records.put
    client.start()
    try:
        yuv10 = _first(records, timeout, lambda r: r.yuv10, 'YUV10 frame')
        client.set_camera('jpeg')
        jpeg = _first(records, timeout, lambda r: r.jpeg, 'JPEG')
    finally:
        client.stop()
    return yuv10, jpeg


def _first(records, timeout, field, what):
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            record = records.get(timeout=remaining)
        except queue.Empty:
            break
        if isinstance(record, CameraFrame) and field(record):
            return field(record)
    raise TimeoutError(
        f'no {what} within {timeout:.0f} s (is the dog connected, RCodePlus or '
        f'LifePlus 2.51+ running, and the camera free?)'
    )


# ---- gait speeds --------------------------------------------------------------------------
GAIT_TRIALS = (  # (parameter, line maker, what it moves)
    ('normal_speed', lambda a: rcode.walk(0, a.distance_mm, 'normal'), 'walk'),
    ('slow_speed', lambda a: rcode.walk(0, a.distance_mm, 'slow'), 'walk'),
    ('normal_turn_rate', lambda a: rcode.turn(a.turn_deg, 'normal'), 'turn'),
    ('slow_turn_rate', lambda a: rcode.turn(a.turn_deg, 'slow'), 'turn'),
)


class GaitTimer:
    """Times actions on a connected dog: a line, then PRINT polls of Wait until it reads 0."""

    def __init__(self, settings, poll_period):
        self.records = queue.SimpleQueue()
        self.client = RcodeClient(settings, polls=[(rcode.Poll('W0', ('Wait',)), poll_period)])
        self.client.on_record = self.records.put

    def __enter__(self):
        self.client.start()
        return self

    def __exit__(self, *_exc):
        self.client.stop()

    def run(self, line, timeout):
        """Seconds from the line's reply to the first poll sent after it that reads Wait 0."""
        done = queue.SimpleQueue()
        deadline = time.monotonic() + timeout
        while not self.client.connected:
            if time.monotonic() > deadline:
                raise TimeoutError('no RCODE connection (is RCodePlus running?)')
            time.sleep(0.05)
        self.client.play(line, done.put)
        reply = done.get(timeout=timeout)
        if isinstance(reply, Exception) or reply.error:
            why = reply if isinstance(reply, Exception) else reply.error
            raise TimeoutError(f'the dog did not take {line}: {why}')
        started = time.monotonic()
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                record = self.records.get(timeout=remaining)
            except queue.Empty:
                break
            if isinstance(record, PollValues) and record.polled_at > started:
                if record.values['Wait'] == 0:
                    return record.polled_at - started
        raise TimeoutError(f'Wait did not reach 0 within {timeout:.0f} s of {line}')


def measure_gait(settings, args):
    """{parameter: (value, seconds)} from timing each trial; what was measured on the floor
    scales both gaits alike (they slip alike)."""
    walk = args.distance_mm / 1000.0
    turn = math.radians(args.turn_deg)
    scale = {
        'walk': args.walked_mm / args.distance_mm if args.walked_mm else 1.0,
        'turn': args.turned_deg / args.turn_deg if args.turned_deg else 1.0,
    }
    results = {}
    with GaitTimer(settings, args.poll_period) as timer:
        timer.run(rcode.action_line('stand'), args.timeout)  # no posture change in the trials
        for name, make_line, kind in GAIT_TRIALS:
            seconds = timer.run(make_line(args), args.timeout * 15)  # a slow metre: ~30 s
            told = walk if kind == 'walk' else turn
            results[name] = (told * scale[kind] / seconds, seconds)
    return results


def gait_main(args, parser):
    try:
        settings = Settings(host=args.host, rcode_port=args.rcode_port)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        results = measure_gait(settings, args)
    except TimeoutError as exc:
        print(f'aibo_calibrate: error: {exc}', file=sys.stderr)
        return 1
    print(f'{"parameter":<18} {"seconds":>8} {"value":>8}')
    for name, (value, seconds) in results.items():
        print(f'{name:<18} {seconds:8.2f} {value:8.4f}')
    print('\npaste under /**/aibo_driver: ros__parameters: in your parameter file:')
    for name, (value, _) in results.items():
        print(f'    {name}: {value:.4f}')
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='aibo_calibrate',
        description=__doc__.split('\n\n')[0],
        epilog='Exit codes: 0 ranked, 1 no frames, 2 bad command line.',
    )
    parser.add_argument('--host', default='localhost', help="the dog's address")
    parser.add_argument('--port', type=int, default=21001, help='telemetry port')
    parser.add_argument(
        '--version-size-prefix',
        action='store_true',
        help='the version reply has a size prefix (driver parameter of that name)',
    )
    parser.add_argument(
        '--timeout', type=float, default=20.0, help='seconds to wait for each frame'
    )
    parser.add_argument('--top', type=int, default=8, help='how many variants to list')
    gait = parser.add_argument_group('gait speeds (--gait)')
    gait.add_argument('--gait', action='store_true', help='time the gaits over RCODE instead')
    gait.add_argument('--rcode-port', type=int, default=21002, help='RCODE port')
    gait.add_argument('--distance-mm', type=int, default=1000, help='each walk (100..32767)')
    gait.add_argument('--turn-deg', type=int, default=360, help='each turn (10..3600)')
    gait.add_argument('--walked-mm', type=float, default=0.0, help='measured: the normal walk')
    gait.add_argument('--turned-deg', type=float, default=0.0, help='measured: the normal turn')
    gait.add_argument('--poll-period', type=float, default=0.1, help='s between Wait polls')
    args = parser.parse_args(argv)
    if args.gait:
        if not 100 <= args.distance_mm <= rcode.MAX_WALK_MM or not 10 <= args.turn_deg <= 3600:
            parser.error('--distance-mm must be within 100..32767 and --turn-deg 10..3600')
        if args.walked_mm < 0 or args.turned_deg < 0 or not 0.01 <= args.poll_period <= 1.0:
            parser.error('measured values must be >= 0 and --poll-period within 0.01..1')
        return gait_main(args, parser)
    try:
        settings = Settings(
            host=args.host,
            telemetry_port=args.port,
            audio=False,
            color_rate=0.0,
            voice_rate=0.0,
            semantic_rate=0.0,
            decode_jpeg=True,
            version_size_prefix=args.version_size_prefix,
        )
    except ValueError as exc:
        parser.error(str(exc))
    try:
        yuv10, jpeg = grab(settings, args.timeout)
    except TimeoutError as exc:
        print(f'aibo_calibrate: error: {exc}', file=sys.stderr)
        return 1
    ranked = rank(yuv10, p.decode_jpeg(jpeg))
    names = list(CHOICES)
    print(f'{"rank":>4} {"error":>7}  ' + ' '.join(f'{n:<{max(len(n), 11)}}' for n in names))
    for place, (error, fmt) in enumerate(ranked[: args.top], 1):
        print(
            f'{place:>4} {error:7.2f}  '
            + ' '.join(f'{str(getattr(fmt, n)):<{max(len(n), 11)}}' for n in names)
        )
    best_error, best = ranked[0]
    runner_up = ranked[1][0]
    print(
        f'\nbest: mean error {best_error:.2f} per channel value (next {runner_up:.2f}); '
        'paste under /**/aibo_driver: ros__parameters: in your parameter file:'
    )
    print('\n'.join(parameter_lines(best)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
