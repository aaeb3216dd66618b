"""The rosdep keys a ros/rosdistro checkout resolves for every given ROS distribution on one
platform, as the sorted list rosdep/rosdistro-keys.txt holds (a header names the commit and the
day it was taken), so tests can check package.xml keys without network.

    git clone https://github.com/ros/rosdistro /tmp/rosdistro
    python tools/rosdistro_keys.py /tmp/rosdistro > rosdep/rosdistro-keys.txt

A key resolves as `rosdep resolve KEY --os=OS:VERSION --rosdistro=DISTRO` would resolve it:
either a rule of the rosdep YAML files that rosdistro's default sources list names (the rule for
the OS, or '*', then an installer or the OS version, or '*'; a null rule does not resolve), or a
package released in DISTRO's distribution.yaml for a platform DISTRO targets. Only PyYAML is
needed (no rosdep, no network)."""

import argparse
import datetime
import pathlib
import subprocess
import sys

import yaml

DISTROS = ('jazzy', 'kilted')
PLATFORM = 'ubuntu:noble'
# what rosdep's platform support registers as installers of these systems (rosdep 0.27)
INSTALLERS = {
    'ubuntu': ('apt', 'pip', 'gem', 'source', 'npm'),
    'debian': ('apt', 'pip', 'gem', 'source', 'npm'),
}
DEFAULT_SOURCES = 'rosdep/sources.list.d/20-default.list'


def resolves(rule, os_name, os_version, installers=None):
    """Whether a rosdep rule ({os: ...}) gives something to install (or nothing to do, []) on
    os_name:os_version; the precedence of REP 111 as rosdep applies it."""
    installers = INSTALLERS.get(os_name, ('pip', 'source')) if installers is None else installers
    if not isinstance(rule, dict):
        return False
    if os_name not in rule:
        if not isinstance(rule.get('*'), dict):
            return False
        os_name = '*'
    data = rule[os_name]
    if isinstance(data, dict):
        for installer in installers:
            if installer in data:
                data = data[installer]
                break
        else:
            if os_version in data:
                data = data[os_version]
            elif '*' in data:
                data = data['*']
            else:
                return False
            if isinstance(data, dict):
                data = next((data[i] for i in installers if i in data), data)
    return isinstance(data, (dict, list, str))


def rosdep_yaml_files(checkout, os_name):
    """The rosdep YAML files rosdistro's default sources list names for os_name, in order."""
    files = []
    for line in (checkout / DEFAULT_SOURCES).read_text().splitlines():
        words = line.split()
        if len(words) < 2 or words[0] != 'yaml':
            continue
        tags = words[2:]
        if not tags or os_name in tags:
            files.append(checkout / 'rosdep' / words[1].rsplit('/', 1)[-1])
    return files


def rule_keys(checkout, os_name, os_version):
    """Keys of the rosdep YAML files that resolve on the platform (the first file defining a
    key wins, as in rosdep)."""
    seen, keys = set(), set()
    for path in rosdep_yaml_files(checkout, os_name):
        for key, rule in (yaml.safe_load(path.read_text()) or {}).items():
            if key in seen:
                continue
            seen.add(key)
            if resolves(rule, os_name, os_version):
                keys.add(key)
    return keys


def released_packages(checkout, distro, os_name, os_version):
    """Packages of distro's distribution.yaml that rosdep maps to binaries on the platform: every
    package of a repository with a release entry, when the distribution targets the platform."""
    data = yaml.safe_load((checkout / distro / 'distribution.yaml').read_text())
    if os_version not in (data.get('release_platforms') or {}).get(os_name, []):
        return set()
    packages = set()
    for name, repository in (data.get('repositories') or {}).items():
        release = repository.get('release')
        if release is not None:
            packages.update(release.get('packages') or [name])
    return packages


def keys(checkout, distros=DISTROS, platform=PLATFORM):
    """{key: where from} for the keys that resolve for every distro on platform."""
    os_name, os_version = platform.split(':')
    rules = rule_keys(checkout, os_name, os_version)
    found = {key: 'rosdep' for key in rules}
    ros = [released_packages(checkout, d, os_name, os_version) for d in distros]
    for package in set.intersection(*ros) - rules:
        found[package] = 'ros'
    return found


def commit_of(checkout):
    """(commit hash, commit date) of the checkout."""
    out = subprocess.run(
        ['git', '-C', str(checkout), 'log', '-1', '--format=%H %cs'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return out[0], out[1]


def render(found, commit, committed, taken, distros=DISTROS, platform=PLATFORM):
    ros = sum(1 for where in found.values() if where == 'ros')
    header = [
        f'# rosdep keys that resolve for ROS 2 {" and ".join(distros)} on {platform}, '
        'from ros/rosdistro',
        f'# rosdistro commit {commit} (committed {committed}); taken {taken}',
        '# by tools/rosdistro_keys.py (a checkout in, this list out); do not edit by hand',
        f'# {len(found)} keys: {len(found) - ros} rules of rosdep/*.yaml, {ros} ROS packages '
        f'released in {" and ".join(distros)}',
    ]
    return '\n'.join(header + sorted(found)) + '\n'


def read_list(path):
    """The keys of a list render() wrote (header lines start with #)."""
    lines = pathlib.Path(path).read_text().splitlines()
    return {line for line in lines if line and not line.startswith('#')}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('checkout', type=pathlib.Path, help='a git checkout of ros/rosdistro')
    parser.add_argument('--distros', nargs='+', default=list(DISTROS), metavar='DISTRO')
    parser.add_argument('--platform', default=PLATFORM, help='OS:VERSION (%(default)s)')
    parser.add_argument('--taken', default=datetime.date.today().isoformat(), help='the day')
    args = parser.parse_args(argv)
    if not (args.checkout / DEFAULT_SOURCES).is_file():
        parser.error(f'{args.checkout} is no rosdistro checkout (no {DEFAULT_SOURCES})')
    missing = [d for d in args.distros if not (args.checkout / d / 'distribution.yaml').is_file()]
    if missing:
        parser.error(f'no distribution.yaml for {", ".join(missing)} in {args.checkout}')
    if ':' not in args.platform:
        parser.error(f'--platform {args.platform!r}: OS:VERSION, e.g. {PLATFORM}')
    try:
        commit, committed = commit_of(args.checkout)
    except (OSError, subprocess.CalledProcessError):
        parser.error(f'{args.checkout} is not a git checkout (the list names its commit)')
    found = keys(args.checkout, args.distros, args.platform)
    sys.stdout.write(render(found, commit, committed, args.taken, args.distros, args.platform))
    return 0


if __name__ == '__main__':
    sys.exit(main())
