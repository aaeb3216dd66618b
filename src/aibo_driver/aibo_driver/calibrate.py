"""aibo_calibrate: find a dog's YUV10 packing by comparing a YUV10 frame with a JPEG of the
same scene.

    aibo_calibrate --host 192.168.0.20 [--port 21001] [--top 8]

The packing is not documented (spec §2.4: "calibrate against JPEG"). Keep the dog and the scene
still: it grabs one YUV10 frame and one JPEG, decodes the YUV10 frame in every variant the spec
leaves open (layout, bit order, which 5 bits are Y, chroma order, the 5 → 8-bit scaling of Y and
of chroma, colour matrix), ranks them by their mean error against the JPEG and prints the
parameter lines of the best one, to paste into the driver's parameter file.

Exit codes: 0 ranked, 1 no frames from the dog (the message says which), 2 bad command line.
"""

import argparse
import itertools
import queue
import sys
import time

import numpy as np

from . import protocol as p
from .client import CameraFrame, Settings, TelemetryClient

# every value each open question of spec §2.4 can take
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
    args = parser.parse_args(argv)
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
