"""Every relative link of README.md and docs/ leads somewhere: the file exists and, for a link
with #anchor into a Markdown file, that file has a heading with that anchor (GitHub's rule).
Pure file reading: no ROS, no processes."""

import re
from collections import Counter

import pytest
from helpers import ROOT

PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').rglob('*.md'))]
FENCE = re.compile(r'^```.*?^```', re.S | re.M)
LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')


def prose(text):
    """The text outside fenced code blocks (a '# comment' in a bash block is no heading)."""
    return FENCE.sub('', text)


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces
    to '-'."""
    return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')


def anchors(path):
    seen = Counter()
    found = set()
    for match in re.finditer(r'^#{1,6} +(.+?) *#*$', prose(path.read_text()), re.M):
        name = anchor(match.group(1))
        found.add(f'{name}-{seen[name]}' if seen[name] else name)
        seen[name] += 1
    return found


def test_anchor_follows_githubs_rule():
    assert anchor('Fault suite (`make soak`)') == 'fault-suite-make-soak'
    assert anchor('P2OS (Pioneer 2, PeopleBot)') == 'p2os-pioneer-2-peoplebot'
    assert anchor('Nav2, TF & robot_localization') == 'nav2-tf--robot_localization'


@pytest.mark.parametrize('page', PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r'[a-z]+:', target):
            continue  # https:, mailto:
        path, _, fragment = target.partition('#')
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f'{target}: no such file')
        elif fragment and file.suffix == '.md' and fragment not in anchors(file):
            broken.append(f'{target}: no heading with that anchor in {file.name}')
    assert not broken, broken


def test_the_docs_are_reached_from_the_readme():
    """Each page under docs/ is reached from the README, directly or through other pages."""
    reached, todo = set(), [PAGES[0].resolve()]
    while todo:
        page = todo.pop()
        if page in reached or page.suffix != '.md' or not page.exists():
            continue
        reached.add(page)
        for target in LINK.findall(prose(page.read_text())):
            path = target.partition('#')[0]
            if path and not re.match(r'[a-z]+:', path):
                todo.append((page.parent / path).resolve())
    orphans = [str(p.relative_to(ROOT)) for p in PAGES[1:] if p.resolve() not in reached]
    assert not orphans, orphans
