"""The DDS settings our processes bring: what Fast DDS must read before rclpy starts it.

rmw_fastrtps (the default RMW) answers a service call only once the caller's reply reader has
been discovered, and waits for that at most the reply writer's max_blocking_time: 100 ms unless
a profile says otherwise. A client made just before its call (`ros2 service call`, rqt, a test)
on a busy machine can take longer to be discovered; the answer is then dropped ("failed to send
response (timeout)") and the caller waits forever. config/fastdds_profiles.xml raises the wait
to 1 s for every service of the process, and has Fast DDS send the participant's discovery
messages from a thread of their own, so that a new process hears the answer to its first
announcement (docs/dds.md, "First data after start-up").

Across hosts: config/fastdds_lossy_link.xml is the same file plus what a lossy link (Wi-Fi)
needs (LEGACY_ROBOTS_DDS_PROFILE=lossy, bringup --dds-profile lossy), and ROS_STATIC_PEERS
names the other hosts where multicast does not reach them (bringup --peers; static_peers()).

Fast DDS 2 (Jazzy) and 3 (Kilted) differ in how a profiles file is named and spelled
(distribution.py): each reads its own environment variable, and the lossy profile's <times>
elements have other names in 2.x and 2.x needs a throughputController where 3.x takes a flow
controller, so each file comes in two with the same settings (config/fastdds_*.xml for Fast DDS
3, config/fastdds_*_jazzy.xml for 2).
"""

import errno
import ipaddress
import os
import pathlib
import re
import socket
import sys
import threading

from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

from . import distribution
from .distribution import fastdds_major, fastdds_profiles_variable
from .params import ParameterError

PACKAGE = 'legacy_robot_common'
PROFILES_FILE = 'fastdds_profiles.xml'
# LEGACY_ROBOTS_DDS_PROFILE → the profiles file of config/ our processes load
PROFILE_VARIABLE = 'LEGACY_ROBOTS_DDS_PROFILE'
PROFILES = {'default': PROFILES_FILE, 'lossy': 'fastdds_lossy_link.xml'}
# Fast DDS major version → its own copy of a file above, written in its element names
SPELLED_FOR = {
    2: {
        PROFILES_FILE: 'fastdds_profiles_jazzy.xml',
        'fastdds_lossy_link.xml': 'fastdds_lossy_link_jazzy.xml',
    }
}
# the variables that name a profiles file: Fast DDS 3's first (each version reads one)
PROFILES_VARIABLES = tuple(distribution.PROFILES_VARIABLES.values())


def profile_choice(value=None):
    """The profile named by value, else by LEGACY_ROBOTS_DDS_PROFILE, else 'default';
    ParameterError for a name we do not ship."""
    value = value if value is not None else os.environ.get(PROFILE_VARIABLE) or 'default'
    if value not in PROFILES:
        raise ParameterError(f'{PROFILE_VARIABLE}={value!r}: must be one of {", ".join(PROFILES)}')
    return value


def profile_file(profile='default', major=None):
    """The name in config/ of profile's file for Fast DDS major (default: this one's)."""
    name = PROFILES[profile]
    return SPELLED_FOR.get(major or fastdds_major(), {}).get(name, name)


def profiles_path(profile='default'):
    """The installed profiles file of config/ for profile and this distribution's Fast DDS,
    or None (not installed)."""
    try:
        config = pathlib.Path(get_package_share_directory(PACKAGE)) / 'config'
    except PackageNotFoundError:
        return None
    path = config / profile_file(profile)
    return path if path.is_file() else None


def named_profiles_file():
    """The profiles file named in the environment (under either Fast DDS's variable), or None."""
    return next((os.environ[name] for name in PROFILES_VARIABLES if os.environ.get(name)), None)


def use_our_dds_profiles(profile=None):
    """Point Fast DDS at our profiles file (profile: see profile_choice()); call before
    rclpy.init. A profiles file the user named in the environment (under either Fast DDS's
    variable) replaces ours: named under the other version's variable only, it is named under
    this version's too, which Fast DDS reads. Returns the path set, or None. ParameterError for
    an unknown profile."""
    profile = profile_choice(profile)
    variable = fastdds_profiles_variable()
    users = named_profiles_file()
    if users:
        os.environ[variable] = os.environ.get(variable) or users
        return None
    path = profiles_path(profile)
    if path is not None:
        os.environ[variable] = str(path)
    return path


# ---- DDS security ---------------------------------------------------------------------------
# Fast DDS's build settings, per major version's header (Jazzy: 2.x, fastrtps/; Kilted: 3.x)
FASTDDS_CONFIG_HEADERS = ('include/fastdds/config.hpp', 'include/fastrtps/config.h')
_HAVE_SECURITY = re.compile(r'^#define HAVE_SECURITY (\d)', re.MULTILINE)


def fastdds_has_security(prefixes=None):
    """Whether the Fast DDS this process loads was built with DDS-Security, from its config
    header under an install prefix (AMENT_PREFIX_PATH's, then Python's): True, False, or None
    when no header says (then only trying tells)."""
    if prefixes is None:
        prefixes = [*os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep), sys.prefix]
    for prefix in filter(None, prefixes):
        for header in FASTDDS_CONFIG_HEADERS:
            path = pathlib.Path(prefix) / header
            if path.is_file():
                found = _HAVE_SECURITY.search(path.read_text(errors='replace'))
                if found:
                    return found.group(1) != '0'
    return None


def security_enforced():
    """Whether rcl will require DDS-Security: it compares both variables exactly, so 'True' or
    'enforce' leave security off (and Permissive, the default strategy, runs without it)."""
    return (
        os.environ.get('ROS_SECURITY_ENABLE') == 'true'
        and os.environ.get('ROS_SECURITY_STRATEGY') == 'Enforce'
    )


def check_dds_security():
    """ParameterError when DDS security is required (ROS_SECURITY_ENABLE=true with
    ROS_SECURITY_STRATEGY=Enforce) and this Fast DDS has none: the PyPI wheels are built without
    it, and rcl's own failure blamed the ROS arguments."""
    if security_enforced() and fastdds_has_security() is False:
        known = distribution.distribution() in distribution.DISTRIBUTIONS.values()
        name = distribution.distribution() if known else '<distro>'
        raise ParameterError(
            'ROS_SECURITY_ENABLE=true with ROS_SECURITY_STRATEGY=Enforce, but this Fast DDS is '
            'built without DDS-Security (HAVE_SECURITY 0: the ROS 2 wheels from the package '
            'index have no security plugins), so no node can start. Install ROS 2 from apt '
            f'(ros-{name}-ros-base or ros-{name}-desktop: their Fast DDS has security) and build '
            'this workspace against it, or unset ROS_SECURITY_ENABLE (docs/security.md)'
        )


# ---- discovery range ------------------------------------------------------------------------
DISCOVERY_VARIABLE = 'ROS_AUTOMATIC_DISCOVERY_RANGE'
# ROS 2's deprecated switch: set either way, it is the user's choice of range too
LOCALHOST_ONLY_VARIABLE = 'ROS_LOCALHOST_ONLY'


def use_closed_discovery():
    """Keep DDS discovery on this host unless the user chose a range (call before rclpy.init).

    ROS 2's own default is SUBNET: anyone on the robot's network could then find its nodes,
    publish cmd_vel and call enable_motors. Our processes start on LOCALHOST instead; other
    hosts are let in on purpose: ROS_STATIC_PEERS (bringup --peers) names them, or
    ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET opens discovery to the subnet. Returns a description
    of the range in force for the process settings line."""
    chosen = os.environ.get(DISCOVERY_VARIABLE)
    if not chosen and os.environ.get(LOCALHOST_ONLY_VARIABLE) is None:
        os.environ[DISCOVERY_VARIABLE] = chosen = 'LOCALHOST'
        origin = 'our default'
    else:
        origin = 'from the environment'
    peers = os.environ.get(PEERS_VARIABLE)
    return f'{chosen or "ROS_LOCALHOST_ONLY"} ({origin})' + (
        f', static peers {peers}' if peers else ''
    )


# ---- static peers ----------------------------------------------------------------------------
PEERS_VARIABLE = 'ROS_STATIC_PEERS'
_HOST_NAME = re.compile(
    r'^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9-]{1,63})*\.?$'
)
_DOTTED = re.compile(r'^[0-9.]+$')


def static_peers(texts):
    """The IPv4 addresses of peers given as addresses or host names (several in one text may
    be separated by ';' or ','). ParameterError, naming the entry, for a malformed address, a
    name that does not resolve, or an address no peer can have."""
    peers = []
    for text in texts:
        for entry in filter(None, (part.strip() for part in re.split(r'[;,\s]+', text))):
            if _DOTTED.match(entry):
                try:
                    address = ipaddress.IPv4Address(entry)
                except ValueError:
                    raise ParameterError(
                        f'peer {entry!r}: not an IPv4 address (four numbers 0-255: 192.0.2.1)'
                    ) from None
            elif ':' in entry:
                raise ParameterError(
                    f'peer {entry!r}: IPv6 peers are not supported (rmw_fastrtps discovers '
                    'over UDPv4); give the IPv4 address or a host name'
                )
            elif not _HOST_NAME.match(entry):
                raise ParameterError(f'peer {entry!r}: not a host name or IPv4 address')
            else:
                try:
                    infos = socket.getaddrinfo(entry, None, socket.AF_INET, socket.SOCK_DGRAM)
                except (socket.gaierror, UnicodeError) as exc:
                    raise ParameterError(
                        f'peer {entry!r}: host name does not resolve ({exc})'
                    ) from None
                address = ipaddress.IPv4Address(infos[0][4][0])
            if address.is_multicast or address.is_unspecified or str(address).endswith('.255'):
                raise ParameterError(f'peer {entry!r}: {address} cannot be a host')
            if str(address) not in peers:
                peers.append(str(address))
    return peers


def use_static_peers(peers):
    """Add peers (addresses) to ROS_STATIC_PEERS for this process and the DDS participant it
    will make (call before rclpy.init); entries already there stay. Returns the new value."""
    old = [p for p in re.split(r'[;,\s]+', os.environ.get(PEERS_VARIABLE, '')) if p]
    value = ';'.join(dict.fromkeys([*old, *peers]))
    os.environ[PEERS_VARIABLE] = value
    return value


PROBE_PORT = 9  # discard: a host answers "port unreachable", which proves it is there
PROBE_WAIT = 5.0  # s: the kernel gives up on an address resolution (ARP) after 3 s


def probe_peer(address, wait=PROBE_WAIT):
    """Why peer address cannot be reached from here, or None (reachable, or no answer either
    way, e.g. a firewall). One UDP datagram; waits at most `wait` seconds."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.settimeout(wait)
        # without IP_RECVERR Linux keeps a failed address resolution from a UDP socket
        probe.setsockopt(socket.IPPROTO_IP, getattr(socket, 'IP_RECVERR', 11), 1)
        try:
            probe.connect((address, PROBE_PORT))
            probe.send(b'')
            probe.recv(1)
        except TimeoutError:
            return None
        except OSError as exc:
            if exc.errno == errno.ENETUNREACH:
                return 'no route to its network from this host'
            if exc.errno == errno.EHOSTUNREACH:
                return 'host unreachable (no answer on its network)'
        return None


def warn_unreachable_peers(peers, wait=PROBE_WAIT, stream=None):
    """Probe each peer on a thread of its own and print a warning for each one that cannot be
    reached (DDS will keep trying); returns the threads (daemons)."""

    def check(address):
        reason = probe_peer(address, wait)
        if reason is not None:
            print(
                f'warning: peer {address}: {reason}; no topics will come from it until it '
                'can be reached (check the address and the network)',
                file=stream or sys.stderr,
                flush=True,
            )

    threads = [threading.Thread(target=check, args=(p,), daemon=True) for p in peers]
    for thread in threads:
        thread.start()
    return threads
