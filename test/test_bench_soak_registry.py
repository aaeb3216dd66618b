"""`make bench` and `make soak` take their robots from the plugins (one registry): a robot
package names its label, quick benchmark arguments and its own soak parts there."""

import importlib

from legacy_robot_bench.bench import BENCHMARKS, ROBOTS, TOOLS
from legacy_robot_bench.soak import COMMON_PARTS, robot_parts
from legacy_robot_bringup.registry import discover_plugins

PLUGINS = discover_plugins()


def test_the_benchmark_runs_every_installed_robot_and_only_those():
    assert [robot.name for robot in ROBOTS] == list(PLUGINS)
    assert [b.name for b in BENCHMARKS] == list(PLUGINS) + [tool.name for tool in TOOLS]
    for tool in TOOLS:  # the Foxglove relay and bag export's costs
        assert callable(importlib.import_module(tool.module).main)
    for robot in ROBOTS:
        plugin = PLUGINS[robot.name]
        assert (robot.label, robot.package, robot.quick) == (
            plugin.label,
            plugin.package,
            plugin.bench_quick_arguments,
        )
        assert callable(importlib.import_module(f'legacy_robot_bench.{robot.package}.bench').main)


def test_each_robot_names_resolvable_soak_parts_with_distinct_names_and_options():
    parts = robot_parts()
    names = [part.name for _, part in parts]
    options = [part.option for _, part in parts]
    assert len(set(names)) == len(names) and not set(names) & set(COMMON_PARTS)
    assert len(set(options)) == len(options)
    assert {robot for robot, _ in parts} == {'aibo', 'p2os', 'nabaztag'}
    for _, part in parts:
        module, _, function = part.function.partition(':')
        assert callable(getattr(importlib.import_module(module), function)), part.function
    for plugin in PLUGINS.values():
        assert importlib.import_module(f'legacy_robot_bench.{plugin.package}.soak').fuzz_targets()
