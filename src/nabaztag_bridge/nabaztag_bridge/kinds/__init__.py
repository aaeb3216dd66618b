"""Rabbit kinds: each a module with a RabbitLink subclass (base.py says how one plugs in).

KINDS maps a kind's name in the rabbits file to the function that builds a declared rabbit's
link: (roster.Entry, on_event, LinkOptions) → RabbitLink. violet rabbits are not built from
the file: they call the bridge, and the roster makes their links from the registry.
"""

import dataclasses

from .pynab import PynabLink
from .serverless import ServerlessLink
from .serverless_hooks import ServerlessHooks


@dataclasses.dataclass(frozen=True)
class LinkOptions:
    rabbit_timeout: float = 3.0  # s: a command to a rabbit that does not answer fails then
    status_period: float = 10.0  # s between reads of a rabbit's state where it has to be asked
    log: object = None  # (key, text) → a rate-limited warning


def _serverless(entry, on_event, options):
    return ServerlessLink(
        entry, on_event, options.rabbit_timeout, options.status_period, options.log
    )


def _pynab(entry, on_event, options):
    return PynabLink(entry, on_event, options.rabbit_timeout, options.log)


KINDS = {
    'violet': None,
    'serverless': _serverless,
    'pynab': _pynab,
}


def make_links(entries, on_event, options):
    """The links of the declared rabbits that are not violet."""
    return [KINDS[e.kind](e, on_event, options) for e in entries if KINDS[e.kind] is not None]


def served_by_http(roster, vl_dir):
    """What the bridge's HTTP server serves the declared rabbits beyond Violet's routes (the
    serverless rabbits' boot and hooks), or None when no declared rabbit needs it."""
    if any(link.kind == 'serverless' for link in roster.links.values()):
        return ServerlessHooks(roster, vl_dir)
    return None
