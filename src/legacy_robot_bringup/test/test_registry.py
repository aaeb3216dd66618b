import pytest

from legacy_robot_bringup.registry import PluginError, discover_plugins, load_plugin, select
from legacy_robot_common.driver_node import DriverNode
from legacy_robot_common.plugin import ByName, resolve


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


def test_a_plugin_names_what_breaks_the_naming_convention_only():
    plugin = load_plugin('tick_robot:SILENT_PLUGIN')
    assert (plugin.node_name, plugin.executable) == ('tick_driver', 'tick_driver')
    assert (plugin.emulator_executable, plugin.config_file) == ('tick_emulator', 'tick.yaml')
    p2os = discover_plugins()['p2os']
    assert (p2os.node_name, p2os.executable) == ('p2os_driver', 'p2os_driver')
    assert (p2os.emulator_executable, p2os.config_file) == ('p2os_emulator', 'p2os.yaml')


def test_each_installed_robot_names_a_driver_node_of_its_own_package():
    for plugin in discover_plugins().values():
        assert isinstance(plugin.create_node, ByName), plugin.name  # not imported: no circle
        node_class = resolve(plugin.create_node.spec)
        assert issubclass(node_class, DriverNode), plugin.create_node.spec
        assert node_class.__module__ == f'{plugin.package}.node', plugin.create_node.spec
