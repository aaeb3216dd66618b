"""Find the installed robot packages (entry points) and any extra plugins named by the user."""

import dataclasses
import re
from importlib import metadata

from legacy_robot_common.plugin import ENTRY_POINT_GROUP, RobotPlugin, resolve


class PluginError(ValueError):
    """A robot plugin that cannot be loaded or is not a RobotPlugin."""


def load_plugin(spec):
    """'package.module:ATTRIBUTE' → RobotPlugin."""
    module_name, _, attribute = spec.partition(':')
    if not module_name or not attribute:
        raise PluginError(f'plugin {spec!r} must look like package.module:ATTRIBUTE')
    try:
        plugin = resolve(spec)
    except (ImportError, AttributeError) as exc:
        raise PluginError(f'cannot load plugin {spec!r}: {exc}') from exc
    if not isinstance(plugin, RobotPlugin):
        raise PluginError(f'{spec!r} is a {type(plugin).__name__}, not a RobotPlugin')
    return plugin


def discover_plugins(extra=()):
    """All robots installed in this environment, plus extra 'module:ATTR' plugins; by name."""
    plugins = {}
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        plugins[entry.name] = load_plugin(entry.value)
    for spec in extra:
        plugin = load_plugin(spec)
        plugins[plugin.name] = plugin
    return plugins


def select(plugins, names):
    """The plugins named (all when names is empty), or PluginError naming the unknown ones.

    "p2os:r1" is an instance of a robot kind with a name of its own (its namespace, its
    recording's name): the kind's plugin under that name, so two of a kind can run together."""
    if not names:
        return list(plugins.values())
    kinds = [name.partition(':')[0] for name in names]
    unknown = [kind for kind in kinds if kind not in plugins]
    if unknown:
        known = ', '.join(sorted(plugins)) or 'none installed'
        raise PluginError(f'unknown robot(s): {", ".join(unknown)} (known: {known})')
    chosen = [_instance(plugins[kind], name) for kind, name in zip(kinds, names, strict=False)]
    taken = [plugin.name for plugin in chosen]
    repeated = sorted({name for name in taken if taken.count(name) > 1})
    if repeated:
        raise PluginError(
            f'robot name(s) {", ".join(repeated)} given twice: name each robot of '
            'a kind, e.g. p2os:r1 p2os:r2'
        )
    return chosen


def _instance(plugin, spec):
    kind, colon, name = spec.partition(':')
    if not colon:
        return plugin
    if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', name):
        raise PluginError(
            f'{spec!r}: a robot name must be a ROS name token (letters, digits, _; '
            'not starting with a digit)'
        )
    return dataclasses.replace(plugin, name=name)
