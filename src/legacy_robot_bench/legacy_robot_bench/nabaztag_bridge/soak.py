"""Nabaztag parts of the fault suite (`make soak`, legacy_robot_bench.soak)."""

import collections
import socket
import threading
import time

from legacy_robot_bench.common.bench import wait_until
from legacy_robot_bench.common.soak import FuzzTarget, RestartSpec, Row
from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import RabbitEvent
from nabaztag_bridge import choreography as chor
from nabaztag_bridge import protocol as p
from nabaztag_bridge import recording
from nabaztag_bridge.emulator import RabbitEmulator, RabbitOptions
from nabaztag_bridge.rabbits import RabbitRegistry


def reply_packets():
    """What the bridge sends a rabbit: its default replies and a program, from the registry."""
    registry = RabbitRegistry(ping_interval=5, wake_after_boot=False)
    rabbit, _ = registry.seen('0019db000001')
    packets = [registry.reply_packet(rabbit)]
    packets.append(
        p.encode_packet(
            [
                p.Block(0x03, b'\x05'),
                p.Block(0x09),
                p.Block(0x0A, b'\x00\x01 obfuscated program text'),
            ]
        )
    )
    return packets


def query_values(data):
    """sd and tc as the bridge reads them from a ping's query string (MalformedFrame → 400)."""
    text = data.decode('latin-1')
    p.decode_sd(text)
    p.decode_tc(text)


def fuzz_targets():
    wav = recording.encode_wav(recording.tone(0.05))
    dance = chor.build(
        [
            chor.Step(0, 0x01, (10,)),
            chor.Step(0, 0x07, (4, 255, 0, 0, 0, 0)),
            chor.Step(3, 0x08, (1, 9, 0)),
            chor.Step(3, 0x09, (0, 0, 255)),
        ]
    )
    return [
        # what reaches the bridge from the network: each reject must become a 4xx
        FuzzTarget(
            'Nabaztag recording upload (WAV, IMA ADPCM)',
            recording.decode_wav,
            [wav],
            max_random=2000,
        ),
        FuzzTarget(
            'Nabaztag ping sd / tc values',
            query_values,
            [b'0', b'3', b'8003', b'7fffffff', b'a0b'],
            max_random=24,
        ),
        # what reaches the emulated rabbit from a bridge (ours or another one)
        FuzzTarget('Nabaztag packet (rabbit side)', p.decode_packet, reply_packets()),
        FuzzTarget(
            'Nabaztag choreography (rabbit side)',
            lambda data: chor.parse(data, strict=False),
            [dance],
        ),
        FuzzTarget(
            'Nabaztag locate reply (rabbit side)',
            lambda data: p.parse_locate(data.decode('latin-1')),
            [p.locate_reply('127.0.0.1:8080', '127.0.0.1:8080').encode()],
        ),
        FuzzTarget(
            'Nabaztag boot bytecode wrapper',
            p.check_bytecode,
            [b'amber%08xMind' % 0, b'amber%08x' % 5 + b'12345Mind'],
        ),
    ]


def restart_spec(folder):
    """The rabbit is the client here: killed and started again, it locates the bridge anew
    (its locate event is the sign that it is back)."""
    port = free_port()
    return RestartSpec(
        [
            'nabaztag_bridge.emulator',
            '--server',
            f'127.0.0.1:{port}/vl',
            '--no-boot',
            '--spread',
            '0',
        ],
        'nabaztag_bridge.node',
        {'host': '127.0.0.1', 'port': port, 'ping_interval': 1},
        'events',
        RabbitEvent,
    )


# ---- malformed requests among normal rabbits (rclpy from here on) ---------------------------
SERIAL = b'0019db00ffff'
MALFORMED = (  # complete requests, each of them wrong in its own way
    b'GET /vl/p4.jsp?sn=zzzz&v=65808&st=1&sd=0&tc=0&h=4 HTTP/1.0\r\n\r\n',
    b'GET /vl/p4.jsp?sn=%s&v=65808&st=1&sd=xyz&tc=0&h=4 HTTP/1.0\r\n\r\n' % SERIAL,
    b'GET /vl/p4.jsp?sn=%s&v=65808&st=1&sd=0&tc=nothex&h=4 HTTP/1.0\r\n\r\n' % SERIAL,
    b'GET /vl/p4.jsp?sn=%s&v=abc HTTP/1.0\r\n\r\n' % SERIAL,
    b'GET /vl/locate.jsp HTTP/1.0\r\n\r\n',
    b'GET /no/such/thing HTTP/1.0\r\n\r\n',
    b'GET /local/../../etc/passwd HTTP/1.0\r\n\r\n',
    b'POST /vl/record.jsp?sn=%s&v=65808&h=4&m=0 HTTP/1.0\r\nContent-length: 12\r\n\r\n'
    b'not a wav!!!' % SERIAL,
    b'POST /vl/record.jsp?sn=%s&v=65808&h=4&m=0 HTTP/1.0\r\n\r\n' % SERIAL,
    b'POST /vl/record.jsp?sn=%s HTTP/1.0\r\nContent-length: 999999999\r\n\r\n' % SERIAL,
    b'\x16\x03\x01\x00\xa5garbage\r\n\r\n',
    b'GET / HTTP/1.0\r\n' + b'X: y\r\n' * 200 + b'\r\n',
    b'GET /' + b'a' * 70000 + b' HTTP/1.0\r\n\r\n',
    b'GET /vl/rfid.jsp?sn=%s&v=65808&h=4&t=notatag HTTP/1.0\r\n\r\n' % SERIAL,
    b'POST /xml/rawrequest.xml HTTP/1.0\r\nContent-length: 11\r\n\r\n<not closed',
)
NORMAL_RABBITS = 20
RECORDINGS = '/soak/recordings'
RECORDING_RABBITS = 5


def status_of(port, request, timeout=10.0):
    """Send one raw request; → the reply's status code (0: no status line came back)."""
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=timeout) as connection:
            connection.sendall(request)
            reply = b''
            while b'\r\n' not in reply:
                data = connection.recv(4096)
                if not data:
                    break
                reply += data
    except OSError:
        return 0
    parts = reply.split(b' ', 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def send_malformed(port, count, senders=4):
    """count malformed requests from senders threads; → {status: how many}."""
    statuses = collections.Counter()
    lock = threading.Lock()

    def send(first):
        for index in range(first, count, senders):
            status = status_of(port, MALFORMED[index % len(MALFORMED)])
            with lock:
                statuses[status] += 1

    threads = [threading.Thread(target=send, args=(n,)) for n in range(senders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def malformed_rows(count):
    from legacy_robot_bench.common.bench import wait_ready
    from legacy_robot_interfaces.msg import RabbitRecording

    from .bench import bridge_and_listener

    with bridge_and_listener('/soak', {RECORDINGS: RabbitRecording}, 'soak_nabaztag') as (
        port,
        bridge,
        listener,
    ):
        fleet = RabbitEmulator(
            RabbitOptions(server=f'127.0.0.1:{port}/vl', boot=False),
            count=NORMAL_RABBITS,
            spread=1.0,
        ).start()
        try:
            wait_ready(
                bridge,
                lambda: all(r.status()['pings'] >= 2 for r in fleet.rabbits),
                'the rabbits did not reach the bridge',
                timeout=60.0,
                settle=0.0,
            )
            errors_before = fleet.errors()  # refused while the bridge was starting
            for rabbit in fleet.rabbits[:RECORDING_RABBITS]:
                rabbit.record(0.5)
            statuses = send_malformed(port, count)
            wait_until(lambda: listener.counts[RECORDINGS] >= RECORDING_RABBITS, 30)
            time.sleep(2.0)  # a second copy of a recording would show now
            alive = bridge.poll() is None
            rabbit_errors = fleet.errors() - errors_before
            recordings = listener.counts[RECORDINGS]
        finally:
            fleet.stop()
    answered_4xx = sum(n for status, n in statuses.items() if 400 <= status < 500)
    others = {status: n for status, n in statuses.items() if not 400 <= status < 500}
    subject = f'Nabaztag: {count:,} malformed requests, {NORMAL_RABBITS} rabbits pinging'
    return [
        Row(
            'Nabaztag',
            subject,
            f'{answered_4xx:,} answered 4xx; other answers {others or "none"}',
            'every one 4xx',
            answered_4xx == count,
        ),
        Row(
            'Nabaztag',
            subject,
            'bridge still running' if alive else 'BRIDGE EXITED',
            'stays up',
            alive,
        ),
        Row(
            'Nabaztag',
            subject,
            f'{rabbit_errors} failed requests or refused replies',
            'normal rabbits see no errors',
            rabbit_errors == 0,
        ),
        Row(
            'Nabaztag',
            subject,
            f'{recordings} recordings published for {RECORDING_RABBITS} made',
            'each stored exactly once',
            recordings == RECORDING_RABBITS,
        ),
    ]


# ---- the mixed soak (legacy_robot_bench.mixed_soak) -----------------------------------------
MIXED_RABBITS = 500


def mixed_emulator_arguments(rate):
    """500 rabbits pinging every second (the bridge's ping_interval), told what to do on the
    emulator's console; HTTP over TCP has no line noise to add."""
    return ['--rabbits', str(MIXED_RABBITS), '--console']


def mixed_activity(ros, robot, elapsed):
    """A random rabbit clicks every second; one records every minute."""
    if ros.due(robot, 'click', 1.0):
        robot.emulator.tell(f'click {ros.random.randrange(MIXED_RABBITS)}')
    if ros.due(robot, 'record', 60.0):
        robot.emulator.tell(f'record 1 {ros.random.randrange(MIXED_RABBITS)}')
