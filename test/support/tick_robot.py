"""A tiny line-protocol robot used as test input for the shared layers and bring-up.

Wire format: the robot sends "TICK <n> <value>\\n" lines at `rate` Hz; the
client may send "RESET\\n" (n restarts at 0) and "BYE\\n" (goodbye on stop).
It has the same four layers as a real robot package, in one file.
"""

import threading

from std_msgs.msg import UInt32

from legacy_robot_common.client import ReconnectingClient
from legacy_robot_common.driver_node import DriverNode
from legacy_robot_common.emulator import FaultInjector, TcpEmulatorServer
from legacy_robot_common.errors import MalformedFrame
from legacy_robot_common.params import declare
from legacy_robot_common.plugin import DemoTopic, RobotPlugin
from legacy_robot_common.streams import SocketStream


# ---- protocol ------------------------------------------------------------------
def encode_tick(n, value):
    return f'TICK {n} {value}\n'.encode()


def decode_tick(line):
    parts = line.split()
    if len(parts) != 3 or parts[0] != b'TICK':
        raise MalformedFrame(f'not a TICK line: {line[:40]!r}')
    try:
        return int(parts[1]), int(parts[2])
    except ValueError:
        raise MalformedFrame(f'bad numbers in {line[:40]!r}') from None


# ---- client --------------------------------------------------------------------
class TickClient(ReconnectingClient):
    def __init__(self, host, port, **kwargs):
        super().__init__('tick', lambda: SocketStream.connect(host, port), **kwargs)

    def run_session(self, link):
        self.mark_connected()
        while True:
            line = link.read_until(b'\n', max_length=100)
            try:
                self.deliver(decode_tick(line))
            except MalformedFrame as exc:
                self.reject(exc)

    def close_session(self, link):
        link.write(b'BYE\n')


# ---- emulator ------------------------------------------------------------------
class TickEmulator:
    def __init__(self, rate=50.0, port=0, garbage_every=0, silent=False):
        self.rate = rate
        self.garbage_every = garbage_every
        self.faults = FaultInjector()
        self.faults.silent = silent
        self.received = []
        self._lock = threading.Lock()
        self.server = TcpEmulatorServer(self._serve, port=port, name='tick-emulator')

    def start(self):
        self.server.start()
        return self

    @property
    def parameters(self):
        return {'host': '127.0.0.1', 'port': self.server.port}

    @property
    def description(self):
        return f'tcp 127.0.0.1:{self.server.port}'

    def _serve(self, stream, stop):
        n = 0
        while not stop.is_set():
            for line in stream.read(1024, timeout=1.0 / self.rate).splitlines():
                with self._lock:
                    self.received.append(line)
                if line == b'RESET':
                    n = 0
            n += 1
            frame = encode_tick(n, n * 10)
            if self.garbage_every and n % self.garbage_every == 0:
                frame = b'GARBAGE\n'
            stream.write(self.faults.apply(frame))

    def stop(self):
        self.server.stop()


# ---- node ----------------------------------------------------------------------
class TickNode(DriverNode):
    def __init__(self, **kwargs):
        super().__init__('tick_driver', hardware_id='tick robot', **kwargs)
        host = declare(self, 'host', '127.0.0.1', 'robot host name or address')
        port = declare(self, 'port', 9000, 'robot TCP port', minimum=1, maximum=65535)
        timeout = declare(
            self, 'read_timeout', 1.0, 'seconds of silence before reconnecting', minimum=0.01
        )
        self.pub = self.create_publisher(UInt32, 'ticks', 10)
        self.attach_client(TickClient(host, port, read_timeout=timeout, logger=self.get_logger()))
        self.begin()

    def handle_record(self, record):
        n, _value = record
        self.pub.publish(UInt32(data=n))


class TickDemoScript:
    def __init__(self):
        self.values = []

    def on_message(self, topic, msg):
        self.values.append(msg.data)

    def summary_lines(self):
        return [f'counted {len(self.values)} ticks']

    def write_artifacts(self, folder):
        from legacy_robot_common.artifacts import save_lines

        return [save_lines(folder / 'ticks.txt', self.values)]


PLUGIN = RobotPlugin(
    name='tick',
    package='tick_robot',
    node_name='tick_driver',
    create_node=TickNode,
    start_emulator=lambda: TickEmulator().start(),
    emulator_arguments=('--port', '9000'),
    sim_parameters={'port': 9000},
    demo_topics=(DemoTopic('ticks', UInt32, lambda m: f'n={m.data}'),),
    make_demo_script=TickDemoScript,
)

# The same robot with an emulator that never says anything: the demo must fail.
SILENT_PLUGIN = RobotPlugin(
    name='silent',
    package='tick_robot',
    node_name='tick_driver',
    emulator_executable='tick_emulator',
    config_file='tick.yaml',
    create_node=TickNode,
    start_emulator=lambda: TickEmulator(silent=True).start(),
    demo_topics=(DemoTopic('ticks', UInt32),),
)
