"""ROS_DISTRO chooses the distribution of tools/bootstrap.sh and tools/env.sh, and every wrong
choice stops with exit 2 and a message (README "Distributions", docs/distributions.md).

The refusals come before any work, so each case runs the real scripts, in a copy of tools/ where
a set-up is missing or unfinished."""

import os
import shutil
import subprocess

import pytest
from helpers import ROOT

from legacy_robot_common.distribution import distribution

SUPPORTED = 'supported: jazzy, kilted (default: jazzy)'


def run(command, root=ROOT, **env):
    """bash -c command in root, with a clean ROS environment plus env."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(('ROS_', 'AMENT_'))}
    for name in ('PYTHONPATH', 'COLCON_PREFIX_PATH', 'CMAKE_PREFIX_PATH', 'VIRTUAL_ENV'):
        clean.pop(name, None)
    clean.update(env)
    return subprocess.run(
        ['bash', '-c', command], cwd=root, env=clean, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def bare_checkout(tmp_path):
    """A checkout's tools/ without any set-up."""
    shutil.copytree(ROOT / 'tools', tmp_path / 'tools')
    return tmp_path


@pytest.mark.parametrize('script', ['bash tools/bootstrap.sh', '. tools/env.sh'])
@pytest.mark.parametrize('value', ['humble', 'Jazzy', 'rolling'])
def test_an_unsupported_distribution_is_exit_2_with_the_list(script, value):
    result = run(script, ROS_DISTRO=value)
    assert result.returncode == 2
    assert f'ROS_DISTRO={value} is not supported here; {SUPPORTED}' in result.stderr


def test_an_unknown_constraints_set_is_exit_2():
    result = run('bash tools/bootstrap.sh', LEGACY_ROBOTS_CONSTRAINTS='focal')
    assert result.returncode == 2
    assert 'LEGACY_ROBOTS_CONSTRAINTS=focal is not known; known: noble' in result.stderr


@pytest.mark.parametrize('script', ['bash tools/bootstrap.sh', '. tools/env.sh'])
def test_a_sourced_ros_of_another_distribution_is_named_not_mixed(script):
    result = run(
        script,
        ROS_DISTRO='kilted',
        AMENT_PREFIX_PATH='/opt/ros/jazzy',
        PYTHONPATH='/opt/ros/jazzy/lib/python3.12/site-packages',
    )
    assert result.returncode == 2
    assert 'a ROS 2 jazzy install is sourced in this shell (/opt/ros/jazzy)' in result.stderr
    assert 'ROS_DISTRO asks for kilted' in result.stderr


def test_a_sourced_ros_of_the_same_distribution_is_refused_too():
    result = run('. tools/env.sh', ROS_DISTRO='jazzy', COLCON_PREFIX_PATH='/opt/ros/jazzy')
    assert result.returncode == 2
    assert 'a ROS 2 jazzy install is sourced in this shell' in result.stderr
    assert 'must not mix with it' in result.stderr


@pytest.mark.parametrize('stamps', [[], ['venv'], ['venv', 'requirements', 'build']])
def test_a_missing_or_unfinished_set_up_is_never_used(bare_checkout, stamps):
    """No venv; one whose pip step or build was interrupted (no 'complete' stamp)."""
    folder = bare_checkout / '.venv' / 'kilted' / '.stamps'
    if stamps:
        folder.mkdir(parents=True)
        for name in stamps:
            (folder / name).write_text('kilted\n')
    result = run('. tools/env.sh && echo used', root=bare_checkout, ROS_DISTRO='kilted')
    assert result.returncode == 2 and 'used' not in result.stdout
    assert 'the ROS 2 kilted set-up (.venv/kilted) is missing or unfinished' in result.stderr
    assert 'ROS_DISTRO=kilted make bootstrap' in result.stderr


def test_sourcing_the_other_distribution_leaves_the_first_behind():
    """In one shell: this distribution's env, then the other's, which is missing here or not;
    either way nothing of the first stays on the paths."""
    other = {'jazzy': 'kilted', 'kilted': 'jazzy'}[distribution()]
    result = run(
        f'. tools/env.sh; ROS_DISTRO={other} . tools/env.sh; echo "status $?"; '
        'echo "PATHS $PATH:${PYTHONPATH:-}:${AMENT_PREFIX_PATH:-}"',
        ROS_DISTRO=distribution(),
    )
    paths = next(line for line in result.stdout.splitlines() if line.startswith('PATHS '))
    first = f'/{distribution()}/'
    assert first not in paths
    if 'status 0' in result.stdout:  # the other one is set up: its paths instead
        assert f'/.venv/{other}/bin' in paths
    else:
        assert 'status 2' in result.stdout


def noble_pins():
    """{library: version} pinned in requirements/constraints-noble.txt, and its comments."""
    text = (ROOT / 'requirements' / 'constraints-noble.txt').read_text()
    pins = dict(
        line.split('==') for line in text.splitlines() if line and not line.startswith('#')
    )
    return {name.lower(): version for name, version in pins.items()}, text


def test_the_noble_table_says_what_the_constraints_pin_and_why_not():
    """docs/distributions.md's table of Ubuntu 24.04's libraries gives each pin of the noble
    constraints (httptools: noble's 0.1.1 is not on the package index, 0.6.1 is pinned), and
    websockets, the one library left at ours, is said so with its reason in both files."""
    pins, constraints = noble_pins()
    doc = (ROOT / 'docs' / 'distributions.md').read_text()
    rows = {
        cells[0].lower(): cells[1]
        for cells in (
            [c.strip() for c in line.strip('|').split('|')]
            for line in doc.split("## Ubuntu 24.04's libraries", 1)[1].splitlines()
            if line.startswith('| ') and not line.startswith('| library')
        )
    }
    for library, version in pins.items():
        if library in ('cffi', 'pycparser'):  # one row for the two
            assert version in rows['cffi, pycparser']
            continue
        assert version in rows[library], (library, version, rows[library])
    assert 'pinned: 0.6.1' in rows['httptools'] and '0.1.1' in rows['httptools']
    assert 'websockets' not in pins
    assert 'websockets (noble: 10.4)' in constraints and 'websockets.sync' in constraints
    assert "noble's 10.4 has no `websockets.sync`" in doc
