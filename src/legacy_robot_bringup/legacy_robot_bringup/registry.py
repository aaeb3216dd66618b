"""Find the installed robot packages (entry points) and any extra plugins named by the user."""
import importlib
from importlib import metadata

from legacy_robot_common.plugin import ENTRY_POINT_GROUP, RobotPlugin


class PluginError(ValueError):
    """A robot plugin that cannot be loaded or is not a RobotPlugin."""


def load_plugin(spec):
    """'package.module:ATTRIBUTE' → RobotPlugin."""
    module_name, _, attribute = spec.partition(':')
    if not module_name or not attribute:
        raise PluginError(f'plugin {spec!r} must look like package.module:ATTRIBUTE')
    try:
        plugin = getattr(importlib.import_module(module_name), attribute)
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
    """The plugins named (all when names is empty), or PluginError naming the unknown ones."""
    if not names:
        return list(plugins.values())
    unknown = [n for n in names if n not in plugins]
    if unknown:
        known = ', '.join(sorted(plugins)) or 'none installed'
        raise PluginError(f'unknown robot(s): {", ".join(unknown)} (known: {known})')
    return [plugins[n] for n in names]
