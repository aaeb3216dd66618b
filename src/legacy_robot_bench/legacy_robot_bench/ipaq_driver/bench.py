"""iPaq benchmark: prints one table, writes bench-output/ipaq.json.

    make bench        (or: ros2 run ipaq_driver ipaq_bench --seconds 20)

Measures on this machine:
  * tracking decode rate: stream decoding (framing, un-stuffing, checksum, record) of
    emulator tracking packets, bitmaps excluded;
  * driver CPU: the ipaq_driver process (its own OS process, DDS included) while the
    emulator tracks the ball at the CMUcam1's 17 Hz and the driver polls at 10 Hz, as %
    of one core, with this process subscribed to tracking, odom and range; in the same run,
    wire -> subscriber latency of the tracking results;
  * tracking results per second reaching this process with the emulator unthrottled
    (results back to back), and that rate over the CMUcam1's 17 per second;
  * recording: driver CPU at 17 Hz tracking without and with record_path.
"""

import argparse
import contextlib
import sys
import time

from nav_msgs.msg import Odometry
from sensor_msgs.msg import Range

from ipaq_driver import protocol as p
from ipaq_driver.emulator import EmulatorOptions, IpaqEmulator
from legacy_robot_bench.common.bench import (
    cpu_and_recorder_percent,
    cpu_percent,
    driver_against,
    driver_summary,
    floors,
    record_parameter,
    recording_overhead,
    report,
    wait_ready,
)
from legacy_robot_bench.common.floor import capture_shape
from legacy_robot_interfaces.msg import TrackingResult
from legacy_robot_interfaces.srv import ColorTracking

NAMESPACE = '/bench'
TRACKING = f'{NAMESPACE}/tracking'
CPU_TOPICS = {TRACKING: TrackingResult, f'{NAMESPACE}/odom': Odometry, f'{NAMESPACE}/range': Range}
REAL_TRACKING_RATE = 17.0  # per s: the CMUcam1's colour tracking
RED_BALL = dict(r_min=180, r_max=240, g_min=16, g_max=90, b_min=16, b_max=110)


def tracking_decode_rate(count=200_000):
    """Packets per second through StreamDecoder, fed in 4 KiB chunks as a socket delivers them."""
    packets = [
        p.encode_tracking(
            p.TrackingPacket(128 + i % 50, 120, 1 + i % 80, 1 + i % 143, 10, 12, i % 256, 200)
        )
        for i in range(1000)
    ]
    data = b''.join(packets) * (count // len(packets))
    decoder, decoded = p.StreamDecoder(), 0
    started = time.perf_counter()
    for offset in range(0, len(data), 4096):
        decoded += len(decoder.feed(data[offset : offset + 4096]))
    return decoded / (time.perf_counter() - started)


@contextlib.contextmanager
def _tracking_driver(topics, unthrottled=False, parameters=None):
    """Emulator + driver + listener, the driver tracking the red ball; yields (emulator,
    driver, listener) once tracking results reach this process."""
    emulator = IpaqEmulator(
        EmulatorOptions(
            control_port=0,
            frame_dump_port=0,
            tracking_port=0,
            tracking_rate=REAL_TRACKING_RATE,
            unthrottled=unthrottled,
        )
    ).start()
    with driver_against(
        emulator,
        'ipaq_driver.node',
        NAMESPACE,
        {**emulator.parameters, **(parameters or {})},
        topics,
        'ipaq_bench_listener',
    ) as (driver, listener):
        service = listener.node.create_client(ColorTracking, f'{NAMESPACE}/start_color_tracking')
        wait_ready(driver, service.service_is_ready, 'driver did not start', settle=0.0)
        replies = [service.call_async(ColorTracking.Request(**RED_BALL))]

        def tracking():
            # the service is up before the control link (later still with record_path set,
            # whose file opens first): 'ipaq-control: not connected' until then, so ask again
            last = replies[-1]
            if last.done() and not last.result().success:
                replies.append(service.call_async(ColorTracking.Request(**RED_BALL)))
                return False
            return last.done() and all(listener.counts.values())

        wait_ready(driver, tracking, 'no tracking results reached this process')
        listener.forget_receipts()
        yield emulator, driver, listener


def driver_cpu(seconds):
    """CPU of the driver process at 17 Hz tracking, measured from outside; topic rates and
    the tracking latency from the wire over the same run."""
    with _tracking_driver(CPU_TOPICS) as (emulator, driver, listener):
        start = dict(listener.counts)
        started = time.monotonic()
        cpu = cpu_percent(driver.pid, seconds)
        elapsed = time.monotonic() - started
        rates = {
            topic.rsplit('/', 1)[1]: (listener.counts[topic] - start[topic]) / elapsed
            for topic in CPU_TOPICS
        }
        wire = listener.wire_latency(TRACKING, emulator.sent)
        return cpu, rates, wire, capture_shape(listener.node, 'ipaq_driver', NAMESPACE)


def recording_cpu(seconds, record_path):
    """(driver CPU, its recorder thread's CPU) at 17 Hz tracking + 10 Hz poll, recording to
    record_path or not."""
    with _tracking_driver(CPU_TOPICS, parameters=record_parameter(record_path)) as (_, driver, _):
        return cpu_and_recorder_percent(driver.pid, seconds)


def unthrottled_rate(seconds):
    """Tracking results per second here while the emulator sends them back to back."""
    with _tracking_driver({TRACKING: TrackingResult}, unthrottled=True) as (_, _, listener):
        return listener.rate(TRACKING, seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='ipaq_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='CPU measurement time')
    parser.add_argument('--output', default='bench-output', help='folder for ipaq.json')
    args = parser.parse_args(argv)
    decode = tracking_decode_rate()
    cpu, rates, wire, shape = driver_cpu(args.seconds)
    measured_floors = floors(shape, CPU_TOPICS, args.seconds)
    unthrottled = unthrottled_rate(args.seconds)
    rows = [
        ('tracking packet decode rate (per s)', decode, f'{decode:,.0f}', ('>=', 50_000)),
        (
            'driver CPU, 17 Hz tracking + 10 Hz poll, 3 subscribers (% of a core)',
            cpu,
            f'{cpu:.2f}',
            None,
        ),
    ]
    rows += [
        (f'  {topic} received (per s)', rate, f'{rate:.1f}', None) for topic, rate in rates.items()
    ]
    half = args.seconds / 2
    recording = recording_overhead(lambda path: recording_cpu(half, path), half)
    summary = driver_summary(
        'CMUcam tracking',
        REAL_TRACKING_RATE,
        decode,
        unthrottled,
        cpu,
        wire,
        measured_floors,
        recording,
    )
    return report('iPaq benchmark', rows, args.output, 'ipaq', summary=summary)


if __name__ == '__main__':
    sys.exit(main())
