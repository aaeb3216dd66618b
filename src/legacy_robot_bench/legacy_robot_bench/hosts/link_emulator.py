"""A network between hosts made of network namespaces: a hub that forwards IPv4 packets between
one TUN device per host and applies what a real link does to them (the kernel here has no netem).

Run as its own process (a test's Python threads must not delay packets) by network.py, with
the TUN file descriptors passed in: `python -m legacy_robot_bench.hosts.link_emulator
FD:ADDRESS ...`. It reads settings
as JSON lines on stdin and answers each with one JSON line on stdout once they apply:

    {"loss": 0.05, "delay": 0.02, "jitter": 0.01, "drop_multicast": true, "cut": false}
    {"stats": true}       → the counters so far

loss: probability that a packet is lost (each IP fragment on its own, as on a radio link);
delay ± jitter: seconds each packet waits, uniform in [delay - jitter, delay + jitter], so
packets can overtake each other as with netem's jitter; drop_multicast: multicast and broadcast
never arrive (many Wi-Fi access points); cut: nothing arrives (the link is gone). A unicast
packet goes to the host with its destination address; multicast and broadcast to every other
host. At most QUEUE_LIMIT packets wait at a time: more are dropped (a full queue) and counted.
"""

import heapq
import itertools
import json
import os
import random
import select
import signal
import sys
import time

QUEUE_LIMIT = 20000  # packets waiting for their delay: ~30 MB of 1,500-byte packets
READ_BURST = 256  # packets read from one device before looking at the others
MAX_PACKET = 65536


def destination(packet):
    """(kind, IPv4 destination bytes) of an IP packet: kind 'unicast', 'multicast' or None
    (not IPv4: IPv6 neighbour discovery and the like are not forwarded)."""
    if len(packet) < 20 or packet[0] >> 4 != 4:
        return None, b''
    address = bytes(packet[16:20])
    if 224 <= address[0] <= 239 or address[3] == 255:
        return 'multicast', address
    return 'unicast', address


class Settings:
    FIELDS = {'loss': float, 'delay': float, 'jitter': float, 'drop_multicast': bool, 'cut': bool}

    def __init__(self):
        self.loss = 0.0
        self.delay = 0.0
        self.jitter = 0.0
        self.drop_multicast = False
        self.cut = False

    def update(self, values):
        for key, value in values.items():
            if key not in self.FIELDS:
                raise ValueError(f'unknown setting {key!r}')
            setattr(self, key, self.FIELDS[key](value))
        if not 0.0 <= self.loss <= 1.0 or self.delay < 0 or not 0 <= self.jitter <= self.delay:
            raise ValueError('need 0 <= loss <= 1 and 0 <= jitter <= delay')


class Hub:
    def __init__(self, ports, seed=None):
        """ports: [(fd, IPv4 address bytes)], one per host."""
        self.ports = ports
        self.by_address = {address: fd for fd, address in ports}
        self.settings = Settings()
        self.random = random.Random(seed)
        self.queue = []  # (due, sequence, fd, packet)
        self.sequence = itertools.count()
        self.counts = dict.fromkeys(
            ('received', 'forwarded', 'lost', 'cut', 'multicast_dropped', 'overflow', 'other'), 0
        )

    def receive(self, fd, packet, now):
        counts = self.counts
        counts['received'] += 1
        kind, address = destination(packet)
        if kind is None:
            counts['other'] += 1
            return
        if kind == 'multicast':
            if self.settings.drop_multicast:
                counts['multicast_dropped'] += 1
                return
            targets = [out for out, _ in self.ports if out != fd]
        else:
            target = self.by_address.get(address)
            if target is None:
                counts['other'] += 1
                return
            targets = [target]
        for target in targets:
            self._send_later(target, packet, now)

    def _send_later(self, fd, packet, now):
        s = self.settings
        if s.cut:
            self.counts['cut'] += 1
            return
        if s.loss and self.random.random() < s.loss:
            self.counts['lost'] += 1
            return
        if len(self.queue) >= QUEUE_LIMIT:
            self.counts['overflow'] += 1
            return
        wait = s.delay + (self.random.uniform(-s.jitter, s.jitter) if s.jitter else 0.0)
        if wait <= 0:
            self._write(fd, packet)
        else:
            heapq.heappush(self.queue, (now + wait, next(self.sequence), fd, packet))

    def _write(self, fd, packet):
        try:
            os.write(fd, packet)
            self.counts['forwarded'] += 1
        except OSError:  # the host's device went down (a veth-style cut, or the end)
            self.counts['other'] += 1

    def release(self, now):
        """Send every packet whose time has come; the seconds until the next one, or None."""
        queue = self.queue
        while queue and queue[0][0] <= now:
            _, _, fd, packet = heapq.heappop(queue)
            if self.settings.cut:
                self.counts['cut'] += 1  # a cut also takes what is on the way
            else:
                self._write(fd, packet)
        return max(0.0, queue[0][0] - now) if queue else None


def command(hub, line):
    request = json.loads(line)
    if request.pop('stats', False):
        return {'ok': True, **hub.counts, 'queued': len(hub.queue)}
    hub.settings.update(request)
    return {'ok': True}


def serve(hub, control_in, control_out):
    fds = [fd for fd, _ in hub.ports]
    for fd in fds:
        os.set_blocking(fd, False)
    control = control_in.fileno()
    pending = b''
    while True:
        timeout = hub.release(time.monotonic())
        readable, _, _ = select.select([control, *fds], [], [], timeout)
        now = time.monotonic()
        for fd in readable:
            if fd == control:
                data = os.read(control, 65536)
                if not data:
                    return  # our parent has gone: the hosts go with it
                pending += data
                while b'\n' in pending:
                    line, pending = pending.split(b'\n', 1)
                    try:
                        answer = command(hub, line)
                    except (ValueError, TypeError) as exc:
                        answer = {'ok': False, 'error': str(exc)}
                    control_out.write(json.dumps(answer) + '\n')
                    control_out.flush()
                continue
            for _ in range(READ_BURST):
                try:
                    packet = os.read(fd, MAX_PACKET)
                except BlockingIOError:
                    break
                except OSError:  # the device is gone
                    fds.remove(fd)
                    break
                hub.receive(fd, packet, now)


def parse_port(text):
    fd, _, address = text.partition(':')
    return int(fd), bytes(int(part) for part in address.split('.'))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # stopped by its owner: no traceback
    seed = None
    if argv and argv[0].startswith('--seed='):
        seed = int(argv.pop(0).split('=', 1)[1])
    hub = Hub([parse_port(arg) for arg in argv], seed)
    sys.stdout.write(json.dumps({'ok': True, 'ready': True}) + '\n')
    sys.stdout.flush()
    serve(hub, sys.stdin, sys.stdout)


if __name__ == '__main__':
    main()
