"""Releasable as ROS packages are: one version for every package (package.xml and setup.py
agree), and each package's CHANGELOG.rst in catkin's format (what bloom and
catkin_generate_changelog read) with that version, dated, as its newest section."""

import ast
import re
import xml.etree.ElementTree as ElementTree

import pytest
from catkin_pkg.changelog import get_changelog_from_path
from helpers import ROOT

# catkin_pkg's changelog parser calls a docutils method docutils deprecates: not ours to fix
pytestmark = pytest.mark.filterwarnings('ignore:nodes.Node.traverse:DeprecationWarning')
PACKAGES = sorted(p.parent for p in (ROOT / 'src').glob('*/package.xml'))


def manifest_version(package):
    return ElementTree.parse(package / 'package.xml').getroot().findtext('version').strip()


def setup_version(package):
    """The version= argument of setup.py's setup() call (None without setup.py)."""
    if not (package / 'setup.py').exists():
        return None
    tree = ast.parse((package / 'setup.py').read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == 'version':
            return ast.literal_eval(node.value)
    return None


VERSION = manifest_version(PACKAGES[0])


def test_one_version_everywhere():
    versions = {p.name: manifest_version(p) for p in PACKAGES}
    versions.update({f'{p.name}/setup.py': setup_version(p) for p in PACKAGES})
    versions = {where: v for where, v in versions.items() if v is not None}
    assert set(versions.values()) == {VERSION}, versions
    assert len(versions) > len(PACKAGES)  # the ament_python packages' setup.py were read


def changelog_problems(path, name, version):
    """What catkin's format wants of path: the title, sections 'X.Y.Z (YYYY-MM-DD)' each
    underlined with '-' to its length, newest first, the first one version, bullets only."""
    lines = path.read_text().splitlines()
    title = f'Changelog for package {name}'
    problems = []
    if lines[:3] != ['^' * len(title), title, '^' * len(title)]:
        problems.append(f'the first lines are not the title {title!r} between ^ lines')
    headings = [
        (line, lines[i + 1] if i + 1 < len(lines) else '')
        for i, line in enumerate(lines)
        if re.fullmatch(r'\d+\.\d+\.\d+ \(\d{4}-\d\d-\d\d\)', line)
    ]
    if not headings:
        return problems + ['no section "X.Y.Z (YYYY-MM-DD)"']
    for heading, underline in headings:
        if underline != '-' * len(heading):
            problems.append(f'{heading}: not underlined with {len(heading)} "-"')
    if headings[0][0].split()[0] != version:
        problems.append(f'newest section {headings[0][0]!r}, package.xml says {version}')
    try:
        changelog = get_changelog_from_path(str(path), name)
    except Exception as exc:  # catkin_pkg raises its own and docutils' types
        return problems + [f'catkin_pkg cannot read it: {exc}']
    sections = list(changelog.foreach_version())
    if [v for v, _, _ in sections] != [h.split()[0] for h, _ in headings]:
        problems.append('catkin_pkg reads other sections than the headings')
    for section_version, _, content in sections:
        if not content or any(type(part).__name__ != 'BulletList' for part in content):
            problems.append(f'{section_version}: not one bullet list')
    return problems


@pytest.mark.parametrize('package', PACKAGES, ids=lambda p: p.name)
def test_changelog_in_catkin_format_starts_with_the_version(package):
    path = package / 'CHANGELOG.rst'
    assert path.exists(), f'{package.name} has no CHANGELOG.rst'
    assert changelog_problems(path, package.name, VERSION) == []


def test_the_changelog_check_sees_a_wrong_one(tmp_path):
    path = tmp_path / 'CHANGELOG.rst'
    path.write_text(
        'Changelog for package demo\n=========================\n\n'
        '0.1.0 (2026-11-28)\n-----\n\nsome text\n'
    )
    problems = changelog_problems(path, 'demo', '0.2.0')
    assert problems[0].startswith('the first lines are not the title')
    assert '0.1.0 (2026-11-28): not underlined with 18 "-"' in problems
    assert "newest section '0.1.0 (2026-11-28)', package.xml says 0.2.0" in problems
