"""Every rosdep key of every package.xml resolves for Jazzy and Kilted on Ubuntu 24.04, checked
without network: against rosdep/rosdistro-keys.txt (the keys ros/rosdistro resolved there, made
by tools/rosdistro_keys.py from a checkout; its header names the commit and the day) plus the
keys of rosdep/legacy_robots.yaml, which the README has a workspace add to rosdep. Also: that
YAML maps each of its keys on the platforms, follows rosdistro's rules, holds nothing rosdistro
has or nobody uses, and is the file the README and docs/rosdistro-request.md name."""

import importlib.util
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest
import yaml
from helpers import ROOT

spec = importlib.util.spec_from_file_location('rosdistro_keys', ROOT / 'tools/rosdistro_keys.py')
rosdistro_keys = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rosdistro_keys)

LIST = ROOT / 'rosdep' / 'rosdistro-keys.txt'
OURS_PATH = ROOT / 'rosdep' / 'legacy_robots.yaml'
OURS = yaml.safe_load(OURS_PATH.read_text())
KNOWN = rosdistro_keys.read_list(LIST)
MANIFESTS = sorted((ROOT / 'src').glob('*/package.xml'))
DEPEND_TAGS = (
    'depend',
    'build_depend',
    'build_export_depend',
    'buildtool_depend',
    'buildtool_export_depend',
    'exec_depend',
    'test_depend',
    'doc_depend',
)
# the platforms Jazzy and Kilted release for that our YAML maps (rosdistro wants Ubuntu and
# Debian first)
PLATFORMS = ('ubuntu:noble', 'debian:bookworm')


def keys_of(manifest):
    root = ElementTree.parse(manifest).getroot()
    return {e.text.strip() for tag in DEPEND_TAGS for e in root.iter(tag)}


OWN = {ElementTree.parse(m).getroot().findtext('name') for m in MANIFESTS}
USED = set().union(*(keys_of(m) for m in MANIFESTS)) - OWN


def test_the_list_says_where_and_when_it_was_taken():
    header = [line for line in LIST.read_text().splitlines() if line.startswith('#')]
    text = '\n'.join(header)
    assert 'jazzy and kilted on ubuntu:noble' in text
    assert re.search(r'rosdistro commit [0-9a-f]{40} \(committed \d{4}-\d\d-\d\d\)', text)
    assert re.search(r'taken \d{4}-\d\d-\d\d', text)
    count = int(re.search(r'# (\d+) keys', text).group(1))
    assert count == len(KNOWN) > 1000  # the whole list, not only the keys we use


@pytest.mark.parametrize('manifest', MANIFESTS, ids=lambda m: m.parent.name)
def test_every_key_is_known_to_rosdistro_or_ours(manifest):
    unknown = sorted(keys_of(manifest) - KNOWN - set(OURS) - OWN)
    assert unknown == [], (
        f'{manifest.parent.name}: keys rosdep cannot resolve for jazzy and kilted on '
        f'ubuntu:noble: {unknown} (use a key rosdistro has, make the library optional, or map '
        'it in rosdep/legacy_robots.yaml and docs/rosdistro-request.md)'
    )


@pytest.mark.parametrize('key', sorted(OURS))
def test_our_keys_resolve_on_the_platforms(key):
    for platform in PLATFORMS:
        os_name, os_version = platform.split(':')
        assert rosdistro_keys.resolves(OURS[key], os_name, os_version), (key, platform)


def test_our_yaml_holds_only_keys_that_are_used_and_that_rosdistro_lacks():
    assert set(OURS) <= USED, f'keys no package.xml uses: {sorted(set(OURS) - USED)}'
    assert not set(OURS) & KNOWN, (
        f'rosdistro has {sorted(set(OURS) & KNOWN)} now: drop them from {OURS_PATH.name}'
    )


def test_our_yaml_follows_rosdistros_rules():
    text = OURS_PATH.read_text()
    assert list(OURS) == sorted(OURS), 'keys in alphabetical order'
    assert '\n\n' not in text and not re.search(r'[ \t]$', text, re.M), 'blank lines, spaces'
    for key, rule in OURS.items():
        pip = 'pip' in yaml.safe_dump(rule)
        assert key.startswith('python3-'), key
        assert pip == key.endswith('-pip'), f'{key}: a -pip key installs with pip, and only it'


def test_readme_and_request_name_the_yaml():
    readme = (ROOT / 'README.md').read_text()
    section = readme.split('### In a ROS 2 workspace', 1)[1].split('\n### ', 1)[0]
    assert 'rosdep/legacy_robots.yaml' in section and '/etc/ros/rosdep/sources.list.d/' in section
    assert 'rosdep update' in section
    assert 'rosdep install --from-paths src --ignore-src -y --rosdistro jazzy' in section
    request = (ROOT / 'docs' / 'rosdistro-request.md').read_text()
    for key in OURS:
        assert f'`{key}`' in request, f'docs/rosdistro-request.md does not ask for {key}'


# ---- the generator, on a rosdistro of its own ---------------------------------------------------
def test_resolution_follows_rosdeps_precedence():
    resolves = rosdistro_keys.resolves
    assert resolves({'ubuntu': ['python3-x']}, 'ubuntu', 'noble')
    assert resolves({'ubuntu': []}, 'ubuntu', 'noble')  # nothing to install: resolves
    assert resolves({'ubuntu': {'pip': {'packages': ['x']}}}, 'ubuntu', 'noble')
    assert resolves({'*': {'pip': {'packages': ['x']}}}, 'ubuntu', 'noble')
    assert not resolves({'*': ['x']}, 'ubuntu', 'noble')  # the OS wildcard needs an installer
    assert not resolves({'debian': ['x']}, 'ubuntu', 'noble')
    assert resolves({'ubuntu': {'noble': ['x'], 'jammy': None}}, 'ubuntu', 'noble')
    assert not resolves({'ubuntu': {'noble': None, '*': ['x']}}, 'ubuntu', 'noble')
    assert resolves({'ubuntu': {'jammy': None, '*': ['x']}}, 'ubuntu', 'noble')
    assert not resolves({'ubuntu': {'jammy': ['x']}}, 'ubuntu', 'noble')
    assert not resolves({'ubuntu': None}, 'ubuntu', 'noble')
    assert resolves({'ubuntu': {'*': {'pip': {'packages': ['x']}}}}, 'ubuntu', 'noble')


def test_the_generator_reads_a_checkout(tmp_path):
    checkout = tmp_path / 'rosdistro'
    (checkout / 'rosdep' / 'sources.list.d').mkdir(parents=True)
    (checkout / 'rosdep' / 'sources.list.d' / '20-default.list').write_text(
        '# comment\nyaml https://example.invalid/rosdep/osx-homebrew.yaml osx\n'
        'yaml https://example.invalid/rosdep/base.yaml\n'
        'yaml https://example.invalid/rosdep/python.yaml\n'
    )
    (checkout / 'rosdep' / 'osx-homebrew.yaml').write_text('mac-only:\n  osx: [x]\n')
    (checkout / 'rosdep' / 'base.yaml').write_text(
        'both:\n  ubuntu: [both]\ngone:\n  ubuntu:\n    noble: null\n    jammy: [gone]\n'
    )
    (checkout / 'rosdep' / 'python.yaml').write_text(
        'both:\n  debian: [shadowed]\npython3-y-pip:\n  ubuntu:\n    pip:\n      packages: [y]\n'
    )
    for distro, packages in (('jazzy', 'packages: [a_msgs, b_msgs]'), ('kilted', '')):
        (checkout / distro).mkdir()
        (checkout / distro / 'distribution.yaml').write_text(
            'release_platforms:\n  ubuntu: [noble]\nrepositories:\n'
            f'  a_repo:\n    release:\n      {packages}\n      version: 1.0.0-1\n'
            '  a_msgs:\n    release:\n      version: 1.0.0-1\n'
            '  source_only:\n    source:\n      type: git\n'
        )
    assert rosdistro_keys.keys(checkout) == {
        'both': 'rosdep',
        'python3-y-pip': 'rosdep',
        'a_msgs': 'ros',  # released in both (kilted: a repository of that name)
    }
    subprocess.run(['git', 'init', '-q', str(checkout)], check=True)
    subprocess.run(['git', '-C', str(checkout), 'add', '.'], check=True)
    subprocess.run(
        ['git', '-C', str(checkout), '-c', 'user.name=t', '-c', 'user.email=t@example.com']
        + ['commit', '-q', '-m', 'rules'],
        check=True,
    )
    listing = tmp_path / 'keys.txt'
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / 'tools/rosdistro_keys.py'),
            str(checkout),
            '--taken',
            '2026-11-28',
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    listing.write_text(result.stdout)
    assert rosdistro_keys.read_list(listing) == {'both', 'python3-y-pip', 'a_msgs'}
    assert 'taken 2026-11-28' in result.stdout and '# 3 keys: 2 rules' in result.stdout


def test_the_generator_refuses_what_is_no_checkout(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / 'tools/rosdistro_keys.py'), str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and 'no rosdistro checkout' in result.stderr
