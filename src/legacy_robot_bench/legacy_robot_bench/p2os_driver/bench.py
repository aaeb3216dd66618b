"""P2OS benchmark: prints one table, writes bench-output/p2os.json.

    make bench        (or: ros2 run p2os_driver p2os_bench --seconds 20)

Measures on this machine:
  * SIP decode rate: framing + checksum + decode of emulator SIPs (4 sonar readings each);
  * odom messages per second reaching this process with the emulator unthrottled (SIP
    cycles back to back), and that rate over the real robot's fastest, 20 Hz (50 ms cycle);
  * driver CPU: the p2os_driver process (its own OS process, DDS included) at the real
    robot's default rate, 10 Hz SIP + 10 Hz ENCODERpac, as % of one core, while this
    process subscribes to odom, sonar and encoders; in the same run, wire -> subscriber
    latency of odom (emulator write to arrival here);
  * cmd_vel → wire: a Twist published in this process until the emulator reads the
    VEL packet from its socket (p50 / p99 / max);
  * recording: driver CPU at the fastest SIP cycle (20 Hz) without and with record_path.
"""

import argparse
import sys
import time

from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry

from legacy_robot_bench.common.bench import (
    cpu_and_recorder_percent,
    cpu_percent,
    driver_against,
    driver_summary,
    floors,
    percentile,
    record_parameter,
    recording_overhead,
    report,
    wait_ready,
)
from legacy_robot_bench.common.floor import capture_shape
from legacy_robot_interfaces.msg import EncoderCounts, SonarArray
from p2os_driver import protocol as p
from p2os_driver.emulator import EmulatorOptions, P2osEmulator, sip_body

NAMESPACE = '/bench'
ODOM = f'{NAMESPACE}/odom'
CPU_TOPICS = {
    ODOM: Odometry,
    f'{NAMESPACE}/sonar': SonarArray,
    f'{NAMESPACE}/encoders': EncoderCounts,
}
REAL_SIP_RATE = 20.0  # per s: the 50 ms server cycle, the fastest a Pioneer 2 sends


def sip_decode_rate(count=200_000):
    emulator = P2osEmulator()
    emulator.robot.enabled = emulator.robot.sonar_enabled = True
    emulator.robot.set_velocity(500)
    packets = []
    for _ in range(1000):
        emulator.robot.step(0.1)
        packets.append(p.build_packet(sip_body(emulator.robot, emulator.options)))
    data = b''.join(packets) * (count // len(packets))
    receiver, decoded = p.PacketReceiver(), 0
    started = time.perf_counter()
    for offset in range(0, len(data), 4096):
        for body in receiver.feed(data[offset : offset + 4096]):
            p.decode_sip(body)
            decoded += 1
    return decoded / (time.perf_counter() - started)


def _driver(emulator, topics=None, **parameters):
    """The driver against the emulator on TCP, motors on, with a listener in this process."""
    port = emulator.start_tcp()
    return driver_against(
        emulator,
        'p2os_driver.node',
        NAMESPACE,
        {'port': f'tcp://127.0.0.1:{port}', 'enable_motors_on_start': True, **parameters},
        topics,
        'p2os_bench_listener',
    )


def driver_cpu(seconds):
    """CPU of the driver process while this process subscribes to its main topics, and the
    odom latency from the wire over the same run."""
    emulator = P2osEmulator()
    with _driver(emulator, CPU_TOPICS, encoder_stream=True) as (driver, listener):
        wait_ready(
            driver,
            lambda: emulator.robot.enabled and all(listener.counts.values()),
            'driver did not connect',
        )
        listener.forget_receipts()
        cpu = cpu_percent(driver.pid, seconds)
        wire = listener.wire_latency(ODOM, emulator.sent)
        return cpu, wire, capture_shape(listener.node, 'p2os_driver', NAMESPACE)


def recording_cpu(seconds, record_path):
    """(driver CPU, its recorder thread's CPU) at the real robot's fastest SIP cycle,
    recording to record_path or not."""
    emulator = P2osEmulator(EmulatorOptions(sip_cycle=1.0 / REAL_SIP_RATE))
    with _driver(emulator, CPU_TOPICS, encoder_stream=True, **record_parameter(record_path)) as (
        driver,
        listener,
    ):
        wait_ready(
            driver,
            lambda: emulator.robot.enabled and all(listener.counts.values()),
            'driver did not connect',
        )
        return cpu_and_recorder_percent(driver.pid, seconds)


def unthrottled_rate(seconds):
    """odom messages per second here while the emulator sends SIPs back to back."""
    emulator = P2osEmulator(EmulatorOptions(unthrottled=True))
    with _driver(emulator, {ODOM: Odometry}) as (driver, listener):
        wait_ready(driver, lambda: listener.counts[ODOM], 'driver did not connect')
        return listener.rate(ODOM, seconds)


def cmd_vel_latency(samples):
    emulator = P2osEmulator()
    with _driver(emulator, max_linear_speed=2.2, cmd_vel_timeout=0.0) as (driver, listener):
        publisher = listener.node.create_publisher(Twist, f'{NAMESPACE}/cmd_vel', 10)
        wait_ready(
            driver,
            lambda: emulator.robot.enabled and publisher.get_subscription_count(),
            'driver did not connect',
            settle=1.0,
        )
        sent = {}
        for i in range(samples):
            speed = 100 + i  # a unique VEL argument per sample (mm/s)
            msg = Twist()
            msg.linear.x = speed / 1000.0
            sent[speed] = time.monotonic()
            publisher.publish(msg)
            time.sleep(0.02)
        time.sleep(0.3)
        latencies = sorted(
            received - sent[argument]
            for received, number, argument in emulator.received_commands()
            if number == p.Command.VEL and argument in sent
        )
    if not latencies:
        raise RuntimeError('no cmd_vel reached the robot')
    return {
        'p50': 1000 * percentile(latencies, 0.5),
        'p99': 1000 * percentile(latencies, 0.99),
        'max': 1000 * latencies[-1],
        'samples': len(latencies),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(prog='p2os_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='CPU measurement time')
    parser.add_argument(
        '--samples',
        type=int,
        default=500,
        choices=range(10, 2001),
        metavar='10..2000',
        help='cmd_vel latency samples',
    )
    parser.add_argument('--output', default='bench-output', help='folder for p2os.json')
    args = parser.parse_args(argv)
    decode = sip_decode_rate()
    cpu, wire, shape = driver_cpu(args.seconds)
    measured_floors = floors(shape, CPU_TOPICS, args.seconds)
    unthrottled = unthrottled_rate(args.seconds)
    latency = cmd_vel_latency(args.samples)
    half = args.seconds / 2
    recording = recording_overhead(lambda path: recording_cpu(half, path), half)
    rows = [
        ('SIP decode rate (per s)', decode, f'{decode:,.0f}', ('>=', 100_000)),
        (
            'driver CPU, 10 Hz SIP + 10 Hz encoders, 3 subscribers (% of a core)',
            cpu,
            f'{cpu:.2f}',
            None,
        ),
        ('cmd_vel -> wire p50 (ms)', latency['p50'], f'{latency["p50"]:.2f}', None),
        ('cmd_vel -> wire p99 (ms)', latency['p99'], f'{latency["p99"]:.2f}', ('<=', 5.0)),
        ('cmd_vel -> wire max (ms)', latency['max'], f'{latency["max"]:.2f}', None),
    ]
    summary = driver_summary(
        'P2OS SIP', REAL_SIP_RATE, decode, unthrottled, cpu, wire, measured_floors, recording
    )
    return report(
        'P2OS benchmark',
        rows,
        args.output,
        'p2os',
        {'cmd_vel_samples': latency['samples']},
        summary,
    )


if __name__ == '__main__':
    sys.exit(main())
