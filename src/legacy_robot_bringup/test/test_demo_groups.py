"""Which robots the demo hands a package's write_group_artifacts: two or more of one package,
run on emulators (a replayed robot shares no world), with their demo scripts by name."""

import dataclasses

from legacy_robot_bringup.demo import group_writers
from legacy_robot_bringup.registry import discover_plugins, select


def kept(scripts, folder):
    return [folder], sorted(scripts)


def robots(*specs):
    tick = discover_plugins(['tick_robot:PLUGIN'])['tick']
    plugins = {'tick': dataclasses.replace(tick, write_group_artifacts=kept)}
    return select(plugins, list(specs))


def test_a_package_with_two_robots_gets_one_call_with_both_scripts():
    chosen = robots('tick:a', 'tick:b')
    writers = group_writers(chosen, {'a': 'script a', 'b': 'script b'})
    assert [package for package, _ in writers] == ['tick_robot']
    assert writers[0][1]('out') == (['out'], ['a', 'b'])


def test_one_robot_of_a_package_or_a_replayed_second_gets_no_group_call():
    assert group_writers(robots('tick:a'), {'a': 'script a'}) == []
    pair = robots('tick:a', 'tick:b')
    assert group_writers(pair, {'a': 'script a', 'b': 'script b'}, replays={'b': None}) == []
    assert group_writers(pair, {'a': 'script a', 'b': None}) == []  # b has no demo script
