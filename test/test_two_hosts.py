"""A robot on one host, the desk on another: hosts made of network namespaces
(legacy_robot_bench.hosts.network), joined by a veth pair or by the userspace link emulator
(loss, delay, multicast drop, cuts).

The link emulator's and the peer checks' unit tests run anywhere; the rest needs root and `ip`
and skips, saying so, elsewhere. Processes inside the hosts discover across the subnet
(ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET: conftest.py's LOCALHOST would keep them apart) in a ROS
domain of their own (the hosts are private networks: no other test's traffic reaches them).
"""

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree

import pytest
import rclpy
from helpers import (
    ROOT,
    SUPPORT,
    env_with_support,
    run_module,
    skip_where_the_events_executor_cannot_run_drivers,
    wait_for,
)
from rclpy.parameter import Parameter
from rclpy.qos import ReliabilityPolicy

from aibo_driver.node import AiboNode
from ipaq_driver.node import IpaqNode
from legacy_robot_bench.hosts import network as two_hosts
from legacy_robot_bench.hosts.link_emulator import Hub
from legacy_robot_common import middleware
from legacy_robot_common.middleware import ParameterError, probe_peer, static_peers
from legacy_robot_common.topics import image_qos

UNAVAILABLE = two_hosts.unavailable()
needs_hosts = pytest.mark.skipif(UNAVAILABLE is not None, reason=f'two-host tests: {UNAVAILABLE}')
BRINGUP = [sys.executable, '-m', 'legacy_robot_bringup.compose']
DOMAIN = '42'  # inside the namespaces only
STARTUP = 60.0  # s: a bringup and its discovery across the link, on a loaded 2-core machine


# ---- the link emulator, without root --------------------------------------------------------
def packet(destination, size=60):
    """A minimal IPv4 header to 'destination' (dotted), padded to size bytes."""
    header = bytes([0x45, 0, 0, size, 0, 0, 0, 0, 64, 17, 0, 0, 192, 0, 2, 1])
    return header + bytes(int(part) for part in destination.split('.')) + bytes(size - 20)


@pytest.fixture
def hub():
    """A Hub between two hosts whose devices are pipes: (hub, {address: read end})."""
    pipes = {address: os.pipe() for address in ('192.0.2.1', '192.0.2.2')}
    ports = [(w, bytes(int(p) for p in a.split('.'))) for a, (_, w) in pipes.items()]
    yield Hub(ports, seed=1), {a: r for a, (r, _) in pipes.items()}
    for r, w in pipes.values():
        os.close(r)
        os.close(w)


def arrived(fd):
    os.set_blocking(fd, False)
    try:
        return len(os.read(fd, 1 << 20))
    except BlockingIOError:
        return 0


def test_link_emulator_routes_unicast_and_multicast(hub):
    hub, out = hub
    from_1 = hub.ports[0][0]
    hub.receive(from_1, packet('192.0.2.2'), 0.0)
    hub.receive(from_1, packet('239.255.0.1'), 0.0)  # DDS discovery's multicast group
    assert arrived(out['192.0.2.2']) == 120 and arrived(out['192.0.2.1']) == 0
    hub.settings.update({'drop_multicast': True})
    hub.receive(from_1, packet('239.255.0.1'), 0.0)
    hub.receive(from_1, packet('192.0.2.2'), 0.0)
    assert arrived(out['192.0.2.2']) == 60
    assert hub.counts['multicast_dropped'] == 1


def test_link_emulator_delays_loses_and_cuts(hub):
    hub, out = hub
    hub.settings.update({'delay': 0.02, 'jitter': 0.01})
    for i in range(100):
        hub.receive(hub.ports[0][0], packet('192.0.2.2'), i * 0.001)
    assert hub.release(0.0095) is not None and arrived(out['192.0.2.2']) == 0
    assert hub.release(0.2) is None and arrived(out['192.0.2.2']) == 6000
    hub.settings.update({'delay': 0.0, 'jitter': 0.0, 'loss': 0.2})
    for _ in range(1000):
        hub.receive(hub.ports[0][0], packet('192.0.2.2'), 1.0)
    assert 150 < hub.counts['lost'] < 250
    hub.settings.update({'loss': 0.0, 'cut': True})
    hub.receive(hub.ports[0][0], packet('192.0.2.2'), 2.0)
    assert hub.counts['cut'] == 1
    with pytest.raises(ValueError, match='jitter'):
        hub.settings.update({'delay': 0.01, 'jitter': 0.02})


def test_without_root_or_ip_the_hosts_say_why(monkeypatch):
    monkeypatch.setattr(two_hosts.os, 'geteuid', lambda: 1000)
    assert two_hosts.unavailable() == 'needs root (network namespaces)'
    monkeypatch.setattr(two_hosts.os, 'geteuid', lambda: 0)
    monkeypatch.setattr(two_hosts.shutil, 'which', lambda name: None)
    assert two_hosts.unavailable() == "needs iproute2's ip"


# ---- static peers: checks that need no network ----------------------------------------------
def test_static_peers_accepts_addresses_and_names():
    assert static_peers(['192.0.2.1', '192.0.2.2;192.0.2.1', 'localhost']) == [
        '192.0.2.1',
        '192.0.2.2',
        '127.0.0.1',
    ]


@pytest.mark.parametrize(
    'peer, message',
    [
        ('192.0.2.300', 'not an IPv4 address'),
        ('192.0.2', 'not an IPv4 address'),
        ('robot_1!', 'not a host name'),
        ('no-such-host.invalid', 'does not resolve'),
        ('fe80::1', 'IPv6'),
        ('239.255.0.1', 'cannot be a host'),
    ],
)
def test_static_peers_rejects_bad_entries(peer, message):
    with pytest.raises(ParameterError, match=message):
        static_peers([peer])


@pytest.mark.parametrize(
    'environment, in_force',
    [
        ({}, 'LOCALHOST (our default)'),
        ({'ROS_AUTOMATIC_DISCOVERY_RANGE': ''}, 'LOCALHOST (our default)'),
        ({'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'}, 'SUBNET (from the environment)'),
        ({'ROS_LOCALHOST_ONLY': '0'}, 'ROS_LOCALHOST_ONLY (from the environment)'),
        ({'ROS_STATIC_PEERS': '192.0.2.2'}, 'LOCALHOST (our default), static peers 192.0.2.2'),
    ],
)
def test_discovery_stays_on_this_host_unless_the_user_chose(monkeypatch, environment, in_force):
    for name in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'ROS_LOCALHOST_ONLY', 'ROS_STATIC_PEERS'):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert middleware.use_closed_discovery() == in_force
    expected = environment.get('ROS_AUTOMATIC_DISCOVERY_RANGE') or (
        None if 'ROS_LOCALHOST_ONLY' in environment else 'LOCALHOST'
    )
    assert os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE') == expected


def test_bringup_peers_typo_is_a_usage_error():
    result = run_module('legacy_robot_bringup.compose', 'p2os', '--sim', '--peers', '192.0.2.300')
    assert result.returncode == 2, result.stderr
    assert "error: --peers: peer '192.0.2.300': not an IPv4 address" in result.stderr


def test_unknown_dds_profile_is_a_usage_error():
    env = {**env_with_support(), 'LEGACY_ROBOTS_DDS_PROFILE': 'wifi'}
    result = subprocess.run(
        [sys.executable, '-m', 'p2os_driver.node'], env=env, capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert "LEGACY_ROBOTS_DDS_PROFILE='wifi': must be one of default, lossy" in result.stderr


# ---- our profiles, as this distribution's Fast DDS reads them -----------------------------------
FAST_DDS_RUN = (
    'from legacy_robot_common.middleware import use_our_dds_profiles; use_our_dds_profiles(); '
    'import rclpy; rclpy.init(); rclpy.create_node("profile_probe").destroy_node(); '
    'rclpy.shutdown()'
)


def fast_dds_output(**env):
    """stdout + stderr of a process that loads our profiles and starts a participant (Fast DDS
    logs its errors on stdout), with env's variables."""
    base = env_with_support()
    for name in middleware.PROFILES_VARIABLES:
        base.pop(name, None)
    base.update(env)
    result = subprocess.run(
        [sys.executable, '-c', FAST_DDS_RUN], env=base, capture_output=True, text=True,
        timeout=60, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


@pytest.mark.parametrize('profile', sorted(middleware.PROFILES))
def test_fast_dds_here_loads_each_of_our_profiles_without_complaint(profile):
    """Jazzy's Fast DDS 2.14 read neither file: it reads FASTRTPS_DEFAULT_PROFILES_FILE only
    (Fast DDS 3: FASTDDS_...), and it fails a profile with 3.x's <times> element names
    (heartbeat_period), which drops the whole file: the images never crossed a lossy link."""
    assert 'XMLPARSER' not in fast_dds_output(LEGACY_ROBOTS_DDS_PROFILE=profile)


# Fast DDS 3.0 renamed these elements of a writer's and a reader's <times>
RENAMED_IN_FAST_DDS_3 = {
    'heartbeatPeriod': 'heartbeat_period',
    'nackResponseDelay': 'nack_response_delay',
    'heartbeatResponseDelay': 'heartbeat_response_delay',
}


# how each version is told to send discovery from a flow controller's thread (Fast DDS 3: any
# flow controller, named for the builtin writers; Fast DDS 2: a throughputController)
DISCOVERY_THREAD = {
    'flow_controller_descriptor_list',
    'flow_controller_name',
    'throughputController',
}
NAMESPACE = '{http://www.eprosima.com}'


def profile_settings(path):
    """Every element of a profiles file as (tag in Fast DDS 3's names, attributes, text), but
    the DISCOVERY_THREAD settings (spelled apart on purpose) and elements that held only them."""

    def settings(element):
        tag = element.tag.removeprefix(NAMESPACE)
        if tag in DISCOVERY_THREAD:
            return []
        inside = [setting for child in element for setting in settings(child)]
        if len(element) and not inside:
            return []
        own = (RENAMED_IN_FAST_DDS_3.get(tag, tag), element.attrib, (element.text or '').strip())
        return [own, *inside]

    return settings(ElementTree.parse(path).getroot())


def default_participant_rtps(path):
    """The <rtps> of path's default participant profile."""
    for participant in ElementTree.parse(path).getroot().iter(f'{NAMESPACE}participant'):
        if participant.get('is_default_profile') == 'true':
            return participant.find(f'{NAMESPACE}rtps')
    raise AssertionError(f'{path}: no default participant profile')


def test_the_default_profile_sends_discovery_from_a_flow_controllers_thread():
    """So that a new process hears the answer to its first announcement (docs/dds.md); how much
    sooner its first message arrives is first_data_bench's to say, not a test's."""
    config = ROOT / 'src' / 'legacy_robot_common' / 'config'
    rtps = default_participant_rtps(config / middleware.profile_file('default', 3))
    names = [
        name.text
        for name in rtps.iterfind(f'{NAMESPACE}flow_controller_descriptor_list/*/{NAMESPACE}name')
    ]
    assert rtps.findtext(f'{NAMESPACE}builtin/{NAMESPACE}flow_controller_name') in names
    rtps = default_participant_rtps(config / middleware.profile_file('default', 2))
    throughput = rtps.find(f'{NAMESPACE}throughputController')
    # Fast DDS 2 takes a throughputController as "asynchronous" unless its bytes are 2^32 - 1
    # or its period 0; this many bytes per period is no limit at all
    assert 10**9 <= int(throughput.findtext(f'{NAMESPACE}bytesPerPeriod')) < 2**32 - 1
    assert int(throughput.findtext(f'{NAMESPACE}periodMillisecs')) > 0


@pytest.mark.parametrize('profile', sorted(middleware.PROFILES))
def test_each_fast_dds_versions_file_of_a_profile_holds_the_same_settings(profile):
    config = ROOT / 'src' / 'legacy_robot_common' / 'config'
    spelled = [config / middleware.profile_file(profile, major) for major in (2, 3)]
    assert profile_settings(spelled[0]) == profile_settings(spelled[1]), spelled


@pytest.mark.parametrize('variable', middleware.PROFILES_VARIABLES)
def test_a_users_profiles_file_under_either_name_is_the_one_fast_dds_reads(tmp_path, variable):
    """The variable we set is one this Fast DDS reads: a broken file of the user's, under
    either version's name, is read and complained about (and ours is not loaded)."""
    broken = tmp_path / 'broken.xml'
    broken.write_text(
        '<dds xmlns="http://www.eprosima.com"><profiles><no_such_tag/></profiles></dds>'
    )
    output = fast_dds_output(**{variable: str(broken)})
    assert 'XMLPARSER' in output and str(broken) in output, output


# ---- two hosts --------------------------------------------------------------------------------
@pytest.fixture
def network(request):
    """network(names, link) → a started two_hosts.Network, removed after the test."""
    made = []

    def make(names=('robot', 'desk'), link='veth'):
        net = two_hosts.Network(list(names), link=link)
        made.append(net)
        net.open()
        return net

    yield make
    for net in made:
        net.close()


def start(net, host, argv, peers=None, **env):
    process = net.popen(
        host,
        argv,
        env=net.ros_env(host, peers=peers, base=env_with_support(), ROS_DOMAIN_ID=DOMAIN, **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    errors = []
    threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True).start()
    return process, two_hosts.Output(process.stdout), errors


def desk(net, *args, peers=None):
    return start(net, 'desk', [sys.executable, str(SUPPORT / 'desk_client.py'), *args], peers)


def our_namespaces():
    listing = subprocess.run(['ip', 'netns', 'list'], capture_output=True, text=True).stdout
    return {line.split()[0] for line in listing.splitlines() if line.startswith(two_hosts.PREFIX)}


@needs_hosts
def test_hosts_are_removed_after_a_failure_and_after_a_crashed_run():
    with pytest.raises(RuntimeError, match='a test failed'):
        with two_hosts.Network(['robot', 'desk'], link='tun') as net:
            made = {host.namespace for host in net.hosts.values()}
            assert made <= our_namespaces()
            raise RuntimeError('a test failed')
    assert not made & our_namespaces()
    assert net.forwarder is None and not any(os.path.exists(h.shm) for h in net.hosts.values())
    stale = f'{two_hosts.PREFIX}4194304999-dead00-robot'  # no such process id
    subprocess.run(['ip', 'netns', 'add', stale], check=True)
    two_hosts.remove_stale()
    assert stale not in our_namespaces()


@needs_hosts
def test_static_peers_discover_without_multicast(network):
    """Multicast dropped (as by many Wi-Fi access points): with --peers on the robot and
    ROS_STATIC_PEERS on the desk, topics, a service call and cmd_vel cross, also where the
    robot's discovery range is ours, this host only."""
    net = network(link='tun')
    net.impair(drop_multicast=True)
    robot = [*BRINGUP, 'p2os', '--sim', '--peers', '192.0.2.2']
    # the robot's range left to us (this host): --peers lets the desk in all the same
    _, _, robot_errors = start(net, 'robot', robot, ROS_AUTOMATIC_DISCOVERY_RANGE='')
    _, seen, _ = desk(
        net, '--topics', 'odom', 'sonar', 'battery', '--trigger', 'enable_motors', '--drive',
        '0.2', peers=['robot'],
    )  # fmt: skip
    answer = seen.wait(lambda r: r.get('service') == 'enable_motors' and r['success'], STARTUP)
    assert answer, (seen.records[-3:], seen.text)
    moving = seen.wait(lambda r: r.get('vx', 0) > 0.1, 20)
    assert moving, ('cmd_vel did not drive the robot', seen.records[-3:], robot_errors[-5:])
    for topic in ('odom', 'sonar', 'battery'):
        assert seen.wait(lambda r, t=topic: r.get('first') == t, 10), topic
    assert net.stats()['multicast_dropped'] > 0


OUTSIDER_WAIT = 5.0  # s: on one subnet discovery takes well under a second


@needs_hosts
def test_a_robot_started_with_defaults_cannot_be_found_from_another_host(network):
    """ROS 2's discovery range is the subnet unless set; ours is this host. An outsider on the
    robot's subnet (discovering the subnet) finds no topic, cannot call enable_motors, and its
    cmd_vel moves nothing, while a node on the robot's own host sees odom."""
    net = network()
    unset = {'ROS_AUTOMATIC_DISCOVERY_RANGE': ''}
    _, _, robot_errors = start(net, 'robot', [*BRINGUP, 'p2os', '--sim'], **unset)
    _, outsider, _ = desk(net, '--topics', 'odom', '--trigger', 'enable_motors', '--drive', '0.3')
    _, local, _ = start(
        net,
        'robot',
        [sys.executable, str(SUPPORT / 'desk_client.py'), '--topics', 'odom'],
        **unset,
    )
    assert local.wait(lambda r: r.get('first') == 'odom', STARTUP), robot_errors[-5:]
    assert not outsider.wait(lambda r: True, OUTSIDER_WAIT), outsider.records[:3]
    assert not [r for r in local.records if abs(r.get('vx', 0)) > 0.01], local.records[-3:]
    assert [line for line in robot_errors if 'DDS discovery LOCALHOST (our default)' in line]


RELAY_PORT = 8765


def drive_through_foxglove(net, *options):
    """bringup p2os on the robot host with its Foxglove relay on the robot's address (the
    README's way of opening the live view) and options; foxglove_desk.py on the desk host
    calls enable_motors and publishes cmd_vel. What the desk reported, and bringup's stderr."""
    argv = [*BRINGUP, 'p2os', '--sim', '--namespace', 'p2os', '--foxglove', str(RELAY_PORT)]
    argv += ['--foxglove-address', net.address('robot'), *options]
    robot, robot_out, robot_errors = start(net, 'robot', argv)
    url = f'ws://{net.address("robot")}:{RELAY_PORT}'
    assert robot_out.wait_text(lambda line: 'foxglove: ws://' in line, STARTUP), robot_errors
    desk = [sys.executable, str(SUPPORT / 'foxglove_desk.py'), url]
    result = net.run(
        'desk', desk, env=env_with_support(), capture_output=True, text=True, timeout=120
    )
    two_hosts.stop(robot)
    assert result.returncode == 0, (result.stderr[-2000:], robot_errors[-5:])
    return json.loads(result.stdout.splitlines()[-1]), robot_errors


MOTORS_ON_AT_START = """/**/p2os_driver:
  ros__parameters:
    enable_motors_on_start: true
"""


@needs_hosts
def test_the_live_view_opened_to_the_network_lets_no_one_drive_unless_allowed(network, tmp_path):
    """Issue 54: through a relay on 0.0.0.0 a desk drove the Pioneer 1.33 m and switched its
    motors on. Beyond loopback a client now publishes and calls only what the options allow,
    is told which option, and the refusal is logged on the robot's host. (The motors are on from
    the start in the first run, so standing still there is cmd_vel's refusal, not the motors.)"""
    net = network()
    motors_on = tmp_path / 'motors_on.yaml'
    motors_on.write_text(MOTORS_ON_AT_START)
    nothing, robot_errors = drive_through_foxglove(net, '--params-file', str(motors_on))
    assert nothing['motors'], nothing
    assert 'not allowed beyond loopback (bringup --foxglove-services' in nothing['call']
    for option in ('--foxglove-services', '--foxglove-publish'):
        assert any(option in status for status in nothing['statuses']), nothing
    assert abs(nothing['moved']) < 0.01, nothing
    for refused in ('may not call /p2os/enable_motors', 'may not publish on /p2os/cmd_vel'):
        assert [line for line in robot_errors if refused in line], robot_errors[-5:]
    assert not [line for line in robot_errors if 'no TLS and no authentication' in line]
    both, robot_errors = drive_through_foxglove(
        net, '--foxglove-services', '/p2os/enable_.*', '--foxglove-publish', '.*/cmd_vel'
    )
    assert both['call'] == 'answered' and not both['statuses'], both
    assert both['motors'] and both['moved'] > 0.2, both  # off at start: the call switched them on
    assert [line for line in robot_errors if 'no TLS and no authentication' in line]


def sockets(net, host):
    """(protocol, address, port, owner pids) of every listening TCP and bound UDP socket on
    host (IPv4 and IPv6), from ss in that host's namespace."""
    result = net.run(host, ['ss', '-ltunpH'], capture_output=True, text=True, check=True)
    found = []
    for line in result.stdout.splitlines():
        fields = line.split()
        address, _, port = fields[4].rpartition(':')
        pids = frozenset(int(pid) for pid in re.findall(r'pid=(\d+)', line))
        found.append((fields[0], address.strip('[]'), int(port), pids))
    return found


def process_tree(pid):
    """pid and every process below it (the hosts share this machine's process ids)."""
    children = {}
    for stat in pathlib.Path('/proc').glob('[0-9]*/stat'):
        try:
            fields = stat.read_text().rpartition(')')[2].split()
        except OSError:  # ended meanwhile
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = set(), [pid]
    while todo:
        tree.add(todo[-1])
        todo.extend(children.get(todo.pop(), ()))
    return tree


def loads_fast_dds(pid):
    maps = pathlib.Path(f'/proc/{pid}/maps').read_text()
    return 'libfastrtps.so' in maps or 'libfastdds.so' in maps  # Fast DDS 2 (Jazzy) or 3


def dds_port(port, domain, ephemeral):
    """Whether a UDP port is one Fast DDS binds: the domain's RTPS ports (7400 + 250 domain:
    + 0 discovery multicast, + 10 + 2i and + 11 + 2i participant i's unicast), the unique
    network flow ports from 7000 (the rmw's ros_discovery_info reader takes one per process)
    or an ephemeral port (its sending sockets)."""
    base = 7400 + 250 * domain
    return (
        port == base
        or (port >= base + 10 and port < base + 250)
        or 7000 <= port < 7400
        or ephemeral[0] <= port <= ephemeral[1]
    )


def answers(net, host, address, port):
    """Whether a TCP connection from host to address:port is accepted."""
    probe = f'import socket; socket.create_connection(({address!r}, {port}), timeout=3)'
    return net.run(host, [sys.executable, '-c', probe], capture_output=True).returncode == 0


@needs_hosts
def test_a_robot_host_shows_the_network_only_the_ports_asked_for(network):
    """All five robots on their emulators with the live view opened to the network: every
    socket on the robot host is bringup's; every emulator port and the rabbits' server (its
    rabbit is the emulator's) listen on loopback; the UDP sockets are DDS's (its ports, in
    processes that load Fast DDS: no code of ours binds UDP); to another host only the relay,
    the one TCP port asked for, answers."""
    net = network()
    robot = net.address('robot')
    argv = [*BRINGUP, 'aibo', 'p2os', 'nabaztag', 'pleo', 'ipaq', '--sim', '--foxglove']
    argv += [str(RELAY_PORT), '--foxglove-address', '0.0.0.0']  # the README's way
    bringup, robot_out, robot_errors = start(net, 'robot', argv)
    assert robot_out.wait_text(lambda line: line.startswith('running:'), STARTUP), robot_errors
    found = sockets(net, 'robot')
    ours = process_tree(bringup.pid)
    assert all(pids and pids <= ours for *_, pids in found), (found, ours)
    tcp = {(address, port) for kind, address, port, _ in found if kind == 'tcp'}
    loopback = {(a, p) for a, p in tcp if a in ('127.0.0.1', '::1')}
    assert tcp - loopback == {('0.0.0.0', RELAY_PORT)}, tcp
    assert len(loopback) >= 6, loopback  # AIBO, P2OS, the iPaq's three, the rabbits' server
    ranges = ['cat', '/proc/sys/net/ipv4/ip_local_port_range']  # this namespace's
    ephemeral = [int(p) for p in net.run('robot', ranges, capture_output=True).stdout.split()]
    udp = [(port, pids) for kind, _, port, pids in found if kind == 'udp']
    not_dds = [
        (port, pids)
        for port, pids in udp
        if not (all(map(loads_fast_dds, pids)) and dds_port(port, int(DOMAIN), ephemeral))
    ]
    assert udp and not not_dds, udp
    reached = {port for _, port in tcp if answers(net, 'desk', robot, port)}
    assert reached == {RELAY_PORT}, reached


# every refusal of http_outsider.py's requests and held connections, by kind; paths: the 11 that
# reach a file or a flat folder's name with dots or a NUL (the others are no route, or a
# literal name that is not there)
REFUSALS = {
    'refused_paths': 11,
    'refused_heads': 1,
    'refused_bodies': 3,
    'refused_connections': 236,
    'unknown_serials': 1,
    'refused_xml': 1,
    'refused_hooks': 2,
}
# a ServerlessNabaztag rabbit the bridge is told of, at an address no host has: hooks from any
# other address are refused
SERVERLESS_RABBITS = 'rabbits:\n  - {name: kitchen, kind: serverless, address: 192.0.2.200}\n'
RABBIT = '0019db9c2a11'  # the outsider's and the fresh rabbit's serial (http_outsider.py)
SECRET = 'a file beside the media root'
FRESH_PING = """
import socket, sys, time
start = time.monotonic()
ping = f'GET /vl/p4.jsp?sn={sys.argv[2]}&v=65808&st=1&sd=0&tc=7fffffff&h=4 HTTP/1.0'
with socket.create_connection((sys.argv[1], 8080), timeout=5) as c:
    c.sendall(ping.encode() + b'\\r\\n\\r\\n')
    reply = c.recv(100)
print(reply.split(b' ')[1].decode(), time.monotonic() - start)
"""


@needs_hosts
def test_the_nabaztag_server_holds_up_to_an_outsider_on_its_network(network, tmp_path):
    """The bridge as a rabbit owner runs it (0.0.0.0:8080, allowed_serials set), attacked
    from another host: every traversal form is refused and reads nothing, oversized headers and
    bodies are refused, an unknown rabbit and the XML API without a token get 403, and 300
    half-open connections leave a fresh rabbit's ping answered within a second; hooks posted as a
    declared ServerlessNabaztag rabbit's get 403 from any other address. Nothing is
    written outside the media root and the speech cache (a folder of its own here), and the
    diagnostics count each kind of refusal."""
    media, cache = tmp_path / 'media', tmp_path / 'cache'
    media.mkdir()
    (media / 'hello.mp3').write_bytes(b'ID3 a sound')
    (tmp_path / 'secret.txt').write_text(SECRET)
    (media / 'link.txt').symlink_to(tmp_path / 'secret.txt')
    (tmp_path / 'rabbits.yaml').write_text(SERVERLESS_RABBITS)
    before = set(tmp_path.rglob('*'))
    net = network()
    bridge = [sys.executable, '-m', 'nabaztag_bridge.node', '--ros-args', '-p']
    bridge += [f'media_root:={media}', '-p', f'allowed_serials:={RABBIT}']
    bridge += ['-p', f'tts_cache_dir:={cache}']
    bridge += ['-p', f'rabbits_file:={tmp_path / "rabbits.yaml"}']
    _, _, bridge_errors = start(net, 'robot', bridge)
    assert wait_for(lambda: any('rabbits call' in line for line in bridge_errors), STARTUP)
    address = net.address('robot')
    outsider = net.popen(
        'desk',
        [sys.executable, str(SUPPORT / 'http_outsider.py'), address, '8080', '--hold', '300'],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    replies = two_hosts.Output(outsider.stdout)
    held = replies.wait(lambda r: 'held' in r, STARTUP)
    assert held == {'held': 64, 'closed': 236}, held  # max_connections_per_address
    fresh = net.run(
        'robot',
        [sys.executable, '-c', FRESH_PING, address, RABBIT],
        capture_output=True,
        text=True,
    )
    status, seconds = fresh.stdout.split()
    assert status == '200' and float(seconds) < 1.0, (fresh.stdout, fresh.stderr)
    outsider.stdin.close()
    statuses = {r['name']: r['status'] for r in replies.records if 'name' in r}
    expected = {'40 kB header': 431, '20 MB body': 413, 'unknown serial': 403}
    expected.update({'recording over its limit': 413, 'chunked body': 413})
    expected['xml api without token'] = 403
    expected.update({'click hook from an outsider': 403, 'rfid hook from an outsider': 403})
    for name, status in statuses.items():
        assert 400 <= status < 500 and status == expected.get(name, status), (name, status)
    assert len(statuses) == 27 and not [r for r in replies.records if SECRET in r.get('body', '')]
    written = [path for path in tmp_path.rglob('*') if path not in before]
    assert all({media, cache} & set(path.parents) or path == cache for path in written), written
    reader = [
        sys.executable,
        str(SUPPORT / 'diagnostics_reader.py'),
        'nabaztag_bridge: http server',
    ]
    env = net.ros_env('robot', base=env_with_support(), ROS_DOMAIN_ID=DOMAIN)
    read = net.run('robot', reader, env=env, capture_output=True, text=True, cwd=ROOT)
    counted = json.loads(read.stdout or '{}')
    refusals = {name: int(counted.get(name, -1)) for name in REFUSALS}
    assert refusals == REFUSALS, (refusals, read.stderr[-2000:])
    assert int(counted['rabbits known']) == 1  # the fresh rabbit alone


@needs_hosts
def test_unreachable_peers_are_named_at_start(network):
    """A peer on the subnet that does not answer (no ARP reply), and one with no route."""
    net = network()
    result = net.run(
        'robot',
        [*BRINGUP, 'p2os', '--sim', '--duration', '5', '--peers', '192.0.2.9', '198.51.100.7'],
        env=net.ros_env('robot', base=env_with_support(), ROS_DOMAIN_ID=DOMAIN),
        capture_output=True,
        text=True,
        timeout=STARTUP,
    )
    assert result.returncode == 0, result.stderr
    assert 'static peers: ROS_STATIC_PEERS=192.0.2.9;198.51.100.7' in result.stdout
    assert 'warning: peer 192.0.2.9: host unreachable' in result.stderr
    assert 'warning: peer 198.51.100.7: no route to its network' in result.stderr
    assert probe_peer('127.0.0.1', 1.0) is None  # refused: the host is there


@needs_hosts
def test_images_cross_a_lossy_link_with_the_lossy_profile(network):
    """5 % loss, 20 ± 10 ms: with the lossy-link profile on both ends the AIBO's 76 KB images
    get through (DDS fragments under the MTU; only lost fragments are resent). With Fast DDS's
    defaults (one 64 KB datagram per image, ~50 IP fragments) hardly one in ten seconds did:
    see the benchmark. Fast DDS reads the profile without complaint (it logs on stdout)."""
    net = network(link='tun')
    net.impair(loss=0.05, delay=0.02, jitter=0.01)
    argv = [*BRINGUP, 'aibo', '--sim', '--dds-profile', 'lossy']
    _, robot_out, robot_errors = start(net, 'robot', argv)
    _, seen, desk_errors = desk(net, '--profile', 'lossy', '--topics', 'camera/image_raw')
    assert seen.wait(lambda r: r.get('tenth') == 'camera/image_raw', STARTUP), robot_errors[-5:]
    assert net.stats()['lost'] > 0
    for lines in (robot_out.text, robot_errors, seen.text, desk_errors):
        assert not [line for line in lines if 'XML' in line], lines


CUT = 5.0  # s: the link is away this long
SPEED = 0.3  # m/s
TIMEOUT = 0.5  # s: cmd_vel_timeout


@needs_hosts
@pytest.mark.parametrize(
    'robot, executor, desk_fate',
    [
        ('p2os', 'events', 'stays'),
        ('p2os', 'single', 'killed'),
        ('ipaq', 'events', 'killed'),
        ('ipaq', 'single', 'stays'),
    ],
)
def test_robot_stops_when_the_link_goes_and_drives_again_after(
    network, robot, executor, desk_fate
):
    """The desk sends cmd_vel at 10 Hz; the link is cut for CUT s. From the emulator's true
    state: the robot is told to stop within cmd_vel_timeout of the last cmd_vel that reached
    its host (plus one control period), stays stopped; after the link returns the desk sees
    odometry again and drives it again, nothing restarted on the robot's host. In half the
    cases the desk's process is killed during the cut (a desk that vanished) and a new one
    starts when the link returns (each executor, each robot once)."""
    skip_where_the_events_executor_cannot_run_drivers(executor)
    net = network(link='veth')
    ros = ['-p', f'cmd_vel_timeout:={TIMEOUT}']
    if robot == 'p2os':
        ros += ['-p', 'enable_motors_on_start:=true']
    robot_process, truth, _ = start(
        net, 'robot', [sys.executable, str(SUPPORT / 'robot_host.py'), robot, '--', *ros],
        LEGACY_ROBOTS_EXECUTOR=executor,
    )  # fmt: skip
    desk_process, seen, _ = desk(net, '--drive', str(SPEED))
    moving = truth.wait(lambda r: r.get('v', 0) > 0.8 * SPEED, STARTUP)
    assert moving, (truth.text, seen.text)
    net.cut(True)
    cut_at = time.monotonic()
    if desk_fate == 'killed':
        os.killpg(desk_process.pid, signal.SIGKILL)  # its session: the process is the client
    time.sleep(CUT)  # the link is away for this long whatever happens meanwhile
    stopped = truth.after(cut_at, 'v')
    net.cut(False)
    back_at = time.monotonic()
    if desk_fate == 'killed':
        _, seen, _ = desk(net, '--drive', str(SPEED))
    last_command = max(r['cmd_vel'] for r in stopped)
    told_to_stop = next(r['t'] for r in stopped if r['t'] > last_command and r['setpoint'] == 0)
    standstill = next(r for r in stopped if r['t'] > last_command and r['v'] == 0)
    at_last_command = max(
        (r for r in truth.records if 't' in r and r['t'] <= last_command), key=lambda r: r['t']
    )
    assert told_to_stop - last_command <= TIMEOUT + 0.25  # + the driver's check period
    assert all(r['v'] == 0 for r in stopped if r['t'] >= standstill['t'])  # and stays stopped
    distance = standstill['x'] - at_last_command['x']
    odom_back = seen.wait(lambda r: r.get('odom', 0) > back_at, STARTUP)
    assert odom_back, 'the desk saw no odometry after the link came back'
    driving = truth.wait(lambda r: r.get('t', 0) > back_at and r['v'] > 0.8 * SPEED, STARTUP)
    assert driving, 'the desk could not drive the robot again'
    assert robot_process.poll() is None
    print(
        f'{robot} on {executor}, desk {desk_fate}: told to stop '
        f'{told_to_stop - last_command:.2f} s after the last cmd_vel, {distance:.2f} m beyond '
        f'it; odometry back {odom_back["odom"] - back_at:.2f} s after the link, driving again '
        f'after {driving["t"] - back_at:.2f} s'
    )


@needs_hosts
def test_two_robots_of_a_kind_on_two_hosts_do_not_collide(network):
    """Two `bringup p2os --sim` on two hosts, namespaces r1 and r2, as seen from a third: each
    topic has one publisher, no frame has two parents, and every frame but the simulated world's
    root (`map`) is its robot's."""
    net = network(['r1', 'r2', 'desk'], link='tun')
    for name in ('r1', 'r2'):
        start(net, name, [*BRINGUP, 'p2os', '--sim', '--namespace', name])
    _, seen, _ = desk(net, '--topics', '/r1/odom', '/r2/odom', '--tf', '--graph')
    graph = seen.wait(lambda r: 'graph' in r, STARTUP)
    assert graph, seen.text
    for name in ('r1', 'r2'):
        assert graph['graph'][f'/{name}/odom'] == 1
    everyones = {'/tf', '/tf_static', '/diagnostics', '/rosout', '/parameter_events'}
    shared = [t for t, n in graph['graph'].items() if n > 1 and t not in everyones]
    assert not shared, shared
    published = {t for t, n in graph['graph'].items() if n > 0} - everyones
    assert all(t.startswith(('/r1/', '/r2/')) for t in published), graph
    for name in ('r1', 'r2'):
        pair = [f'{name}/odom', f'{name}/base_link']
        assert seen.wait(lambda r, p=pair: r.get('tf') == p, 20), seen.records
        assert seen.wait(lambda r, n=name: r.get('static') and r['tf'][0] == f'{n}/base_link', 5)
    frames = [tuple(r['tf']) for r in seen.records if 'tf' in r]
    children = [child for _, child in frames]
    assert len(children) == len(set(children)), frames  # no frame has two parents
    assert all(child.split('/')[0] in ('r1', 'r2') for child in children), frames
    # a simulated world's root (`map`, each robot's map → odom at its start pose) is the one
    # frame both may name, and only as a parent
    parents = {parent for parent, _ in frames}
    assert all(p.split('/')[0] in ('r1', 'r2') or p == 'map' for p in parents), frames


# ---- image_qos ------------------------------------------------------------------------------
def test_image_qos_profiles():
    reliable, best_effort = image_qos('reliable', 2), image_qos('best_effort', 2)
    assert (reliable.reliability, reliable.depth) == (ReliabilityPolicy.RELIABLE, 2)
    assert (best_effort.reliability, best_effort.depth) == (ReliabilityPolicy.BEST_EFFORT, 1)


@pytest.mark.parametrize('node_class', [AiboNode, IpaqNode], ids=['aibo', 'ipaq'])
def test_image_qos_is_checked(node_class):
    rclpy.init()
    try:
        with pytest.raises(ParameterError, match="'image_qos' is 'fast'"):
            node_class(parameter_overrides=[Parameter('image_qos', value='fast')])
    finally:
        rclpy.shutdown()
