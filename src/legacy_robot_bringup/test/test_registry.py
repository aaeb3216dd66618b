import pytest

from legacy_robot_bringup.registry import PluginError, discover_plugins, load_plugin, select


def test_load_plugin_by_module_and_attribute():
    plugin = load_plugin('tick_robot:PLUGIN')
    assert plugin.name == 'tick' and plugin.node_name == 'tick_driver'


@pytest.mark.parametrize(
    'spec, message',
    [
        ('tick_robot', 'must look like package.module:ATTRIBUTE'),
        ('tick_robot:NOPE', "cannot load plugin 'tick_robot:NOPE'"),
        ('tick_robot:TickNode', 'is a type, not a RobotPlugin'),
    ],
)
def test_bad_plugin_specs_are_explained(spec, message):
    with pytest.raises(PluginError, match=message):
        load_plugin(spec)


def test_extra_plugins_join_the_installed_ones():
    plugins = discover_plugins(['tick_robot:PLUGIN', 'tick_robot:SILENT_PLUGIN'])
    assert {'tick', 'silent'} <= set(plugins)
    assert [p.name for p in select(plugins, ['silent', 'tick'])] == ['silent', 'tick']
