"""Hosts made of network namespaces on this machine, joined by a link the test controls.

    with Network(['robot', 'desk'], link='veth') as net:     # or link='tun' (impairments)
        robot = net.start('robot', ['python', '-m', ...], env=net.ros_env('robot'))
        net.impair(loss=0.05, delay=0.02, jitter=0.01)        # tun only
        net.cut(True)                                         # both kinds

Host i has the documentation address 192.0.2.<i+1>/24 (RFC 5737: nothing leaves the machine).
'veth': a veth pair between two hosts (the clean wired case; a cut takes the robot's end down).
'tun': one TUN device per host and link_emulator.py, a process forwarding between them that
applies loss, delay ± jitter, multicast drop and cuts (this kernel has no netem), for any
number of hosts. Each host also gets a /dev/shm of its own (a directory of the machine's,
bind-mounted for its processes), so Fast DDS cannot take its shared-memory transport to another
"host" and every byte between hosts crosses the link, while processes on one host share it.

Output(process.stdout) reads a process's JSON lines on a thread and waits for one (the
two-host tests' and hosts_bench's processes in the hosts).

Everything made (namespaces, their devices, the forwarder, the processes started) is removed by
close(), which the context manager and the pytest fixtures always call; namespaces left by a run
that was killed are removed by the next one (names carry the creating process's id).
"""

import contextlib
import fcntl
import json
import os
import pathlib
import secrets
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

PREFIX = 'lrh-'  # namespaces: lrh-<pid>-<random>-<host>; devices: lrh<random><i>
SUBNET = '192.0.2.{}'
SHM = '/dev/shm'  # each host's /dev/shm is a directory in the machine's
TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def unavailable():
    """Why the hosts cannot be made here, or None."""
    if os.geteuid() != 0:
        return 'needs root (network namespaces)'
    if shutil.which('ip') is None:
        return "needs iproute2's ip"
    if not os.path.isdir(SHM):
        return f'needs {SHM}'
    if shutil.which('unshare') is None or shutil.which('mount') is None:
        return 'needs unshare and mount (util-linux)'
    if not os.path.exists('/dev/net/tun'):
        return 'needs /dev/net/tun'
    return None


def ip(*args, check=True):
    return subprocess.run(['ip', *args], check=check, capture_output=True, text=True)


def remove_stale():
    """Remove our namespaces whose creating process is gone (a run that was killed)."""
    listing = ip('netns', 'list', check=False).stdout.split()
    for name in listing:
        if not name.startswith(PREFIX):
            continue
        pid = name[len(PREFIX) :].split('-', 1)[0]
        if pid.isdigit() and not os.path.exists(f'/proc/{pid}'):
            ip('netns', 'delete', name, check=False)
    for path in pathlib.Path(SHM).glob(f'{PREFIX}*'):
        pid = path.name[len(PREFIX) :].split('-', 1)[0]
        if pid.isdigit() and not os.path.exists(f'/proc/{pid}'):
            shutil.rmtree(path, ignore_errors=True)


class Host:
    def __init__(self, name, namespace, address, device):
        self.name = name
        self.namespace = namespace
        self.address = address
        self.device = device

        self.shm = None  # this host's /dev/shm: a directory of the machine's /dev/shm

    def command(self, argv):
        """argv run in this host's network namespace with this host's /dev/shm."""
        script = 'mount --bind "$0" /dev/shm && exec "$@"'
        return [
            'ip', 'netns', 'exec', self.namespace,
            'unshare', '--mount', '--propagation', 'private',
            'sh', '-c', script, self.shm, *argv,
        ]  # fmt: skip


class Network:
    def __init__(self, names, link='veth', seed=None):
        if link not in ('veth', 'tun'):
            raise ValueError(f'link must be veth or tun, not {link!r}')
        if link == 'veth' and len(names) != 2:
            raise ValueError('a veth pair joins two hosts; use link="tun" for more')
        self.link = link
        self.seed = seed
        tag = secrets.token_hex(3)
        self.hosts = {
            name: Host(
                name, f'{PREFIX}{os.getpid()}-{tag}-{name}', SUBNET.format(i + 1), f'lrh{tag}{i}'
            )
            for i, name in enumerate(names)
        }
        self.processes = []
        self.forwarder = None

    # ---- making and removing ---------------------------------------------------
    def __enter__(self):
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def open(self):
        remove_stale()
        for host in self.hosts.values():
            host.shm = tempfile.mkdtemp(prefix=f'{host.namespace}-', dir=SHM)
            ip('netns', 'add', host.namespace)
            self._in(host, 'ip', 'link', 'set', 'lo', 'up')
            # IPv4 only: nothing but our traffic on the link
            self._in(host, 'sh', '-c', 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6')
        if self.link == 'veth':
            a, b = self.hosts.values()
            ip('link', 'add', a.device, 'netns', a.namespace, 'type', 'veth',
               'peer', 'name', b.device, 'netns', b.namespace)  # fmt: skip
        else:
            self._start_forwarder()
        for host in self.hosts.values():
            self._in(host, 'ip', 'addr', 'add', f'{host.address}/24', 'dev', host.device)
            self._in(host, 'ip', 'link', 'set', host.device, 'up')
            self._in(host, 'ip', 'route', 'add', '224.0.0.0/4', 'dev', host.device)

    def _in(self, host, *argv):
        subprocess.run(
            ['ip', 'netns', 'exec', host.namespace, *argv],
            check=True,
            capture_output=True,
            text=True,
        )

    def _start_forwarder(self):
        fds = []
        try:
            for host in self.hosts.values():
                fd = os.open('/dev/net/tun', os.O_RDWR)
                fds.append(fd)
                request = struct.pack('16sH', host.device.encode(), IFF_TUN | IFF_NO_PI)
                fcntl.ioctl(fd, TUNSETIFF, request)
                ip('link', 'set', host.device, 'netns', host.namespace)
            ports = [f'{fd}:{h.address}' for fd, h in zip(fds, self.hosts.values(), strict=True)]
            seed = [] if self.seed is None else [f'--seed={self.seed}']
            self.forwarder = subprocess.Popen(
                [sys.executable, '-m', 'legacy_robot_bench.hosts.link_emulator', *seed, *ports],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                pass_fds=fds,
                start_new_session=True,
            )
        finally:
            for fd in fds:
                os.close(fd)  # the forwarder holds them now
        self._answer()  # ready

    def close(self):
        for process in reversed(self.processes):
            stop(process)
        self.processes.clear()
        if self.forwarder is not None:
            with contextlib.suppress(OSError):
                self.forwarder.stdin.close()  # it ends when its control pipe closes
            stop(self.forwarder)
            self.forwarder = None
        for host in self.hosts.values():
            ip('netns', 'delete', host.namespace, check=False)  # takes its devices along
            if host.shm is not None:
                shutil.rmtree(host.shm, ignore_errors=True)

    # ---- running things ---------------------------------------------------------
    def ros_env(self, name, peers=None, base=None, **extra):
        """The environment for a ROS process on host `name`: discovery across the subnet
        (conftest.py keeps the tests' own processes on LOCALHOST), ROS_STATIC_PEERS when
        peers (host names of this network) are given."""
        env = dict(os.environ if base is None else base)
        env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'SUBNET'
        env.pop('ROS_STATIC_PEERS', None)
        if peers:
            env['ROS_STATIC_PEERS'] = ';'.join(self.hosts[p].address for p in peers)
        env.update(extra)
        return env

    def popen(self, name, argv, **kwargs):
        """Start argv on host `name` (subprocess.Popen arguments); stopped at close()."""
        kwargs.setdefault('start_new_session', True)
        process = subprocess.Popen(self.hosts[name].command(argv), **kwargs)
        self.processes.append(process)
        return process

    def run(self, name, argv, **kwargs):
        """Run argv on host `name` to completion (subprocess.run arguments)."""
        return subprocess.run(self.hosts[name].command(argv), **kwargs)

    def address(self, name):
        return self.hosts[name].address

    # ---- the link -----------------------------------------------------------------
    def _answer(self):
        line = self.forwarder.stdout.readline()
        if not line:
            raise RuntimeError('the link emulator has stopped')
        answer = json.loads(line)
        if not answer.get('ok'):
            raise ValueError(answer.get('error'))
        return answer

    def _control(self, **settings):
        if self.forwarder is None:
            raise RuntimeError('impairments need link="tun"')
        self.forwarder.stdin.write(json.dumps(settings) + '\n')
        self.forwarder.stdin.flush()
        return self._answer()

    def impair(self, loss=0.0, delay=0.0, jitter=0.0, drop_multicast=False):
        """Loss (0..1), delay ± jitter (s), multicast dropped: from now on, both directions."""
        self._control(loss=loss, delay=delay, jitter=jitter, drop_multicast=drop_multicast)

    def cut(self, cut=True):
        """Take the link away (True) or give it back (False)."""
        if self.link == 'veth':
            host = next(iter(self.hosts.values()))
            self._in(host, 'ip', 'link', 'set', host.device, 'down' if cut else 'up')
            if not cut:  # routes through a device go with it
                self._in(host, 'ip', 'route', 'replace', '224.0.0.0/4', 'dev', host.device)
        else:
            self._control(cut=cut)

    def stats(self):
        """The forwarder's packet counters (link='tun')."""
        return self._control(stats=True)


class Output:
    """A process's stdout JSON lines (and other lines), read on a thread as they come."""

    def __init__(self, stream):
        self.records = []
        self.text = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream):
        for line in stream:
            with self._changed:
                try:
                    self.records.append(json.loads(line))
                except ValueError:
                    self.text.append(line.rstrip('\n'))
                self._changed.notify_all()

    def wait(self, predicate, timeout):
        """The first record (from the start) for which predicate holds, or None."""
        return self._wait(self.records, predicate, timeout)

    def wait_text(self, predicate, timeout):
        """The first other line (from the start) for which predicate holds, or None."""
        return self._wait(self.text, predicate, timeout)

    def _wait(self, items, predicate, timeout):
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for item in items:
                    if predicate(item):
                        return item
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._changed.wait(left)

    def after(self, t, key):
        return [r for r in list(self.records) if key in r and r.get('t', r.get(key)) > t]


def stop(process, timeout=10.0):
    """SIGINT, then SIGKILL, to a process started in a session of its own (and its children)."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
