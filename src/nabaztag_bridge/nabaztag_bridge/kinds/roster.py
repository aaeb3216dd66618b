"""Every rabbit the bridge speaks to: the ones the rabbits file declares, and the violet rabbits
that call (today's behaviour when no file names any). select() is what the services and rules
use; states() what the rabbits topic and the diagnostics show.

The rabbits file (parameter rabbits_file), YAML:

    rabbits:
      - serial: 0013d3a1b2c3      # a violet rabbit: by serial (its MAC), as it pings
      - name: kitchen             # a ServerlessNabaztag rabbit: its HTTP API at address
        kind: serverless
        address: 192.168.1.20     # host[:port]
        mac: 0013d3a1b2c4         # optional: recognised when it boots from the bridge
        password: secret          # optional (HTTP Basic; user: "nabaztag" unless given)
      - name: living
        kind: pynab
        address: 127.0.0.1:10543  # its nabd
"""

import dataclasses
import re
import time

import yaml

from legacy_robot_common.errors import MalformedFrame

from .. import protocol as p
from ..rabbits import UnknownRabbit
from .violet import VioletLink, state_of

NAME_PATTERN = re.compile(r'[A-Za-z0-9_-]{1,32}')
ENTRY_KEYS = {'serial', 'name', 'kind', 'address', 'mac', 'password', 'user'}


class RabbitsFileError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Entry:
    """One declared rabbit. id: its name on topics and services (name, else serial)."""

    id: str
    kind: str
    address: str = ''
    mac: str = ''
    password: str = dataclasses.field(default='', repr=False)  # never in a log line
    user: str = ''

    @property
    def host(self):
        return split_address(self.address, 0)[0]


def split_address(address, default_port):
    """'host[:port]' or '[v6]:port' → (host, port)."""
    match = re.fullmatch(r'\[([^\]]+)\](?::(\d+))?|([^:]+)(?::(\d+))?|([0-9a-fA-F:]+)', address)
    if not match:
        raise RabbitsFileError(f'address {address!r} is not host[:port]')
    host = match.group(1) or match.group(3) or match.group(5)
    port = match.group(2) or match.group(4)
    return host, int(port) if port else default_port


def load_entries(text, kinds):
    """The rabbits file's text → [Entry]; RabbitsFileError naming the entry at fault."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise RabbitsFileError(f'not YAML: {exc}') from None
    rows = data.get('rabbits') if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise RabbitsFileError('expected a list under "rabbits:"')
    entries, seen = [], set()
    for number, row in enumerate(rows, 1):
        try:
            entry = _entry(row, kinds)
        except RabbitsFileError as exc:
            raise RabbitsFileError(f'rabbit {number}: {exc}') from None
        if entry.id in seen:
            raise RabbitsFileError(f'rabbit {number}: {entry.id!r} is declared twice')
        seen.add(entry.id)
        entries.append(entry)
    return entries


def _entry(row, kinds):
    if not isinstance(row, dict):
        raise RabbitsFileError('expected a mapping (serial or name, kind, address, ...)')
    unknown = set(row) - ENTRY_KEYS
    if unknown:
        raise RabbitsFileError(f'unknown key(s) {", ".join(sorted(map(str, unknown)))}')
    fields = {key: str(value) for key, value in row.items() if value is not None}
    kind = fields.get('kind', 'violet')
    if kind not in kinds:
        raise RabbitsFileError(f'kind {kind!r} is not one of {", ".join(kinds)}')
    try:
        serial = p.normalize_serial(fields['serial']) if 'serial' in fields else ''
        mac = p.normalize_serial(fields['mac']) if 'mac' in fields else ''
    except MalformedFrame as exc:
        raise RabbitsFileError(str(exc)) from None
    name = fields.get('name', '')
    if name and not NAME_PATTERN.fullmatch(name):
        raise RabbitsFileError(f'name {name!r}: 1-32 letters, digits, "-" or "_"')
    if kind == 'violet':
        if not serial or name:
            raise RabbitsFileError('a violet rabbit is declared by its serial (no name)')
    elif not (name or serial):
        raise RabbitsFileError('give a serial or a name')
    if kind != 'violet' and not fields.get('address'):
        raise RabbitsFileError(f'a {kind} rabbit needs its address (host[:port])')
    if fields.get('address'):
        split_address(fields['address'], 0)
    return Entry(
        name or serial,
        kind,
        fields.get('address', ''),
        mac or (serial if kind != 'violet' else ''),
        fields.get('password', ''),
        fields.get('user', ''),
    )


class Roster:
    """links: the declared rabbits' links (any kind but violet); violet_serials: the declared
    violet rabbits (empty: every violet rabbit that calls is served)."""

    def __init__(self, registry, links=(), violet_serials=()):
        self.registry = registry
        self.links = {link.serial: link for link in links}
        self.violet_serials = tuple(violet_serials)
        self._violet = {}  # serial → VioletLink, made when first asked for

    def start(self):
        for link in self.links.values():
            link.start()

    def stop(self):
        for link in self.links.values():
            link.stop()

    def select(self, serial):
        """The links a command addresses: one by serial or name, or all for ''; UnknownRabbit
        when that is none (a command that would reach nobody is not a success)."""
        if serial:
            link = self.links.get(serial)
            if link is not None:
                return [link]
            try:
                key = p.normalize_serial(serial)
            except MalformedFrame as exc:
                raise UnknownRabbit(f'no rabbit is declared as {serial!r}, and {exc}') from None
            self.registry.select(key)  # UnknownRabbit before its first call
            return [self._violet_link(key)]
        links = list(self.links.values())
        links += [self._violet_link(view.serial) for view in self.registry.snapshot()]
        if not links:
            raise UnknownRabbit(
                'no rabbit is declared or has called the bridge yet: the command would reach '
                'nobody'
            )
        return links

    def _violet_link(self, serial):
        link = self._violet.get(serial)
        if link is None:
            link = self._violet[serial] = VioletLink(serial, self.registry)
        return link

    def states(self, views=None):
        """Every rabbit's RabbitState: declared links, then the violet rabbits (views: a
        registry snapshot, if the caller has one)."""
        now = time.time()
        views = self.registry.snapshot() if views is None else views
        states = [link.state() for link in self.links.values()]
        states += [state_of(view, now) for view in views]
        called = {view.serial for view in views}
        states += [
            VioletLink(serial, self.registry).state()
            for serial in self.violet_serials
            if serial not in called
        ]
        return states

    def link_at(self, address, kind):
        """The declared link of that kind whose address's host is address (None if none)."""
        for link in self.links.values():
            if link.kind == kind and link.accepts(address):
                return link
        return None
