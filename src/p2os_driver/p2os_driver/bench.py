"""P2OS benchmark: prints one table, writes bench-output/p2os.json.

    make bench        (or: ros2 run p2os_driver p2os_bench --seconds 20)

Measures on this machine:
  * SIP decode rate: framing + checksum + decode of emulator SIPs (4 sonar readings each);
  * driver CPU: the p2os_driver process (its own OS process, DDS included) at the real
    robot's rate, 10 Hz SIP + 10 Hz ENCODERpac, as % of one core, while this process
    subscribes to odom, sonar and encoders;
  * cmd_vel → wire: a Twist published in this process until the emulator reads the
    VEL packet from its socket (p50 / p99 / max).
"""
import argparse
import json
import os
import pathlib
import platform
import signal
import subprocess
import sys
import threading
import time

import rclpy
from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor

from legacy_robot_interfaces.msg import EncoderCounts, SonarArray

from . import protocol as p
from .emulator import P2osEmulator, sip_body

TARGETS = {'sip_decode_per_s': ('>=', 100_000), 'driver_cpu_percent': ('<=', 2.0),
           'cmd_vel_to_wire_p99_ms': ('<=', 5.0)}


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
        for body in receiver.feed(data[offset:offset + 4096]):
            p.decode_sip(body)
            decoded += 1
    return decoded / (time.perf_counter() - started)


def cpu_seconds(pid):
    """User + system CPU time of a process (Linux /proc)."""
    fields = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def start_driver(port, *parameters):
    args = [sys.executable, '-m', 'p2os_driver.node', '--ros-args', '-r', '__ns:=/bench',
            '-p', f'port:=tcp://127.0.0.1:{port}', '-p', 'enable_motors_on_start:=true']
    for parameter in parameters:
        args += ['-p', parameter]
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_until(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def driver_cpu(seconds):
    """CPU of the driver process while this process subscribes to its main topics."""
    emulator = P2osEmulator()
    port = emulator.start_tcp()
    driver = start_driver(port, 'encoder_stream:=true')
    rclpy.init()
    node = rclpy.create_node('p2os_bench_listener')
    received = {'odom': 0, 'sonar': 0, 'encoders': 0}
    for kind, topic in ((Odometry, 'odom'), (SonarArray, 'sonar'), (EncoderCounts, 'encoders')):
        node.create_subscription(kind, f'/bench/{topic}',
                                 lambda _m, t=topic: received.__setitem__(t, received[t] + 1), 10)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        if not wait_until(lambda: emulator.robot.enabled and all(received.values()), 30):
            raise RuntimeError('driver did not connect: ' + (driver.stderr.read() if driver.poll() else ''))
        time.sleep(2.0)   # let DDS discovery and start-up settle
        before, started = cpu_seconds(driver.pid), time.monotonic()
        time.sleep(seconds)
        return 100.0 * (cpu_seconds(driver.pid) - before) / (time.monotonic() - started)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown()
        _stop(driver)
        emulator.stop()


def cmd_vel_latency(samples):
    emulator = P2osEmulator()
    port = emulator.start_tcp()
    driver = start_driver(port, 'max_linear_speed:=2.2', 'cmd_vel_timeout:=0.0')
    rclpy.init()
    node = rclpy.create_node('p2os_bench')
    publisher = node.create_publisher(Twist, '/bench/cmd_vel', 10)
    try:
        if not wait_until(lambda: emulator.robot.enabled and publisher.get_subscription_count(), 30):
            raise RuntimeError('driver did not connect')
        time.sleep(1.0)
        sent = {}
        for i in range(samples):
            speed = 100 + i          # a unique VEL argument per sample (mm/s)
            msg = Twist()
            msg.linear.x = speed / 1000.0
            sent[speed] = time.monotonic()
            publisher.publish(msg)
            time.sleep(0.02)
        time.sleep(0.3)
        latencies = sorted(received - sent[argument] for received, number, argument
                           in emulator.received_commands()
                           if number == p.Command.VEL and argument in sent)
    finally:
        node.destroy_node()
        rclpy.shutdown()
        _stop(driver)
        emulator.stop()
    if not latencies:
        raise RuntimeError('no cmd_vel reached the robot')
    pick = lambda q: 1000 * latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return {'p50': pick(0.5), 'p99': pick(0.99), 'max': 1000 * latencies[-1],
            'samples': len(latencies)}


def _stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


def verdict(name, value):
    op, target = TARGETS[name]
    ok = value >= target if op == '>=' else value <= target
    return f'{op} {target:g}', 'ok' if ok else 'MISSED'


def main(argv=None):
    parser = argparse.ArgumentParser(prog='p2os_bench', description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=20.0, help='CPU measurement time')
    parser.add_argument('--samples', type=int, default=500, choices=range(10, 2001), metavar='10..2000',
                        help='cmd_vel latency samples')
    parser.add_argument('--output', default='bench-output', help='folder for p2os.json')
    args = parser.parse_args(argv)
    results = {'sip_decode_per_s': sip_decode_rate(),
               'driver_cpu_percent': driver_cpu(args.seconds)}
    latency = cmd_vel_latency(args.samples)
    results['cmd_vel_to_wire_p50_ms'] = latency['p50']
    results['cmd_vel_to_wire_p99_ms'] = latency['p99']
    results['cmd_vel_to_wire_max_ms'] = latency['max']
    machine = f'{platform.node()} {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}'
    rows = [('SIP decode rate (per s)', f'{results["sip_decode_per_s"]:,.0f}', *verdict('sip_decode_per_s', results['sip_decode_per_s'])),
            ('driver CPU, 10 Hz SIP + 10 Hz encoders, 3 subscribers (% of a core)', f'{results["driver_cpu_percent"]:.2f}', *verdict('driver_cpu_percent', results['driver_cpu_percent'])),
            ('cmd_vel -> wire p50 (ms)', f'{latency["p50"]:.2f}', '', ''),
            ('cmd_vel -> wire p99 (ms)', f'{latency["p99"]:.2f}', *verdict('cmd_vel_to_wire_p99_ms', latency['p99'])),
            ('cmd_vel -> wire max (ms)', f'{latency["max"]:.2f}', '', '')]
    print(f'P2OS benchmark on {machine}')
    print(f'{"measure":<66} {"value":>12} {"target":>10}  result')
    for name, value, target, result in rows:
        print(f'{name:<66} {value:>12} {target:>10}  {result}')
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    (output / 'p2os.json').write_text(json.dumps({'machine': machine, 'results': results,
                                                 'cmd_vel_samples': latency['samples'],
                                                 'targets': TARGETS}, indent=2))
    print(f'written: {output / "p2os.json"}')
    return 0 if all(r[3] != 'MISSED' for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
