"""Every relative link of README.md and docs/ leads somewhere: the file exists and, for a link
with #anchor into a Markdown file, that file has a heading (or an HTML anchor) with that anchor,
by GitHub's rules. Links are read as GitHub renders them: not inside fenced code blocks or
inline code; inline links, with or without a title, and reference definitions.
Pure file reading: no ROS, no processes."""

import re
import urllib.parse
from collections import Counter

import pytest
from helpers import ROOT

PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').rglob('*.md'))]
FENCE_OPEN = re.compile(r'^ {0,3}(`{3,}|~{3,})')
INLINE_CODE = re.compile(r'(`+)(?!`)(?:(?!\n[ \t]*\n).)*?(?<!`)\1(?!`)', re.S)
INLINE_LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFERENCE = re.compile(r'^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?', re.M)
HEADING = re.compile(r'^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$', re.M)
HTML_ANCHOR = re.compile(r'<a\s+(?:name|id)="([^"]+)"', re.I)


def prose(text):
    """The text outside fenced code blocks (a '# comment' in a bash block is no heading, a
    link in it no link). A fence closes on the same character, at least as long, as
    CommonMark says; an unclosed fence runs to the end of the page."""
    kept, fence = [], None
    for line in text.splitlines():
        opening = FENCE_OPEN.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None:
            closing = FENCE_OPEN.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                if not line.strip().strip(fence[0]):
                    fence = None
        else:
            kept.append(line)
    return '\n'.join(kept)


def anchor(heading):
    """GitHub's anchor of a heading: the rendered text (a link's text, not its target), lower
    case, punctuation but '-' and '_' dropped, each space a '-'."""
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', heading.strip())
    text = re.sub(r'<[^>]+>', '', text)
    return re.sub(r'[^\w\- ]', '', text.lower()).replace(' ', '-')


def anchors(path):
    seen = Counter()
    found = set(HTML_ANCHOR.findall(path.read_text()))
    for match in HEADING.finditer(prose(path.read_text())):
        name = anchor(match.group(1))
        found.add(f'{name}-{seen[name]}' if seen[name] else name)
        seen[name] += 1
    return found


def links(text):
    """The link targets of a page as GitHub renders it."""
    text = INLINE_CODE.sub('', prose(text))
    return INLINE_LINK.findall(text) + REFERENCE.findall(text)


def broken_links(page):
    """Each relative link of page that leads nowhere, with the reason."""
    broken = []
    for target in links(page.read_text()):
        if re.match(r'[a-z][a-z0-9+.-]*:', target, re.I):
            continue  # https:, mailto:
        path, _, fragment = target.partition('#')
        path, fragment = urllib.parse.unquote(path), urllib.parse.unquote(fragment)
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f'{target}: no such file')
        elif fragment and file.suffix == '.md' and fragment not in anchors(file):
            broken.append(f'{target}: no heading with that anchor in {file.name}')
    return broken


def test_anchor_follows_githubs_rule():
    assert anchor('Fault suite (`make soak`)') == 'fault-suite-make-soak'
    assert anchor('P2OS (Pioneer 2, PeopleBot)') == 'p2os-pioneer-2-peoplebot'
    assert anchor('Nav2, TF & robot_localization') == 'nav2-tf--robot_localization'
    assert anchor('Sony ERS-210/220, AiboPet’s') == 'sony-ers-210220-aibopets'
    assert anchor('The [bytecode](protocols/nabaztag.md) file') == 'the-bytecode-file'
    assert anchor('Tables × 2: 50 °C') == 'tables--2-50-c'


def test_the_checker_finds_what_github_would_not_resolve(tmp_path):
    other = '# Other page\n\n## Twice\n\n## Twice\n\n<a id="kept"></a>\n'
    (tmp_path / 'other.md').write_text(other)
    page = tmp_path / 'page.md'
    page.write_text(
        '# Page\n\n'
        '[fine](other.md#other-page) [second twice](other.md#twice-1) [html](other.md#kept)\n'
        '[titled](other.md "a title") [same page](#page) [web](https://example.com/x#y)\n'
        '[no file](missing.md) [no anchor](other.md#twice-2) [no heading here](#nowhere)\n'
        '`[in code](missing-too.md)` and [nested [brackets]](gone.md)\n\n'
        '[ref]: also-missing.md\n\n'
        '~~~bash\n# not a heading\n[in a fence](fenced.md)\n~~~\n\n'
        '  ```\n  [indented fence](indented.md)\n  ```\n'
    )
    assert broken_links(page) == [
        'missing.md: no such file',
        'other.md#twice-2: no heading with that anchor in other.md',
        '#nowhere: no heading with that anchor in page.md',
        'gone.md: no such file',
        'also-missing.md: no such file',
    ]
    assert 'not-a-heading' not in anchors(page)


@pytest.mark.parametrize('page', PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = broken_links(page)
    assert not broken, broken


def test_the_docs_are_reached_from_the_readme():
    """Each page under docs/ is reached from the README, directly or through other pages."""
    reached, todo = set(), [PAGES[0].resolve()]
    while todo:
        page = todo.pop()
        if page in reached or page.suffix != '.md' or not page.exists():
            continue
        reached.add(page)
        for target in links(page.read_text()):
            path = urllib.parse.unquote(target.partition('#')[0])
            if path and not re.match(r'[a-z][a-z0-9+.-]*:', path, re.I):
                todo.append((page.parent / path).resolve())
    orphans = [str(p.relative_to(ROOT)) for p in PAGES[1:] if p.resolve() not in reached]
    assert not orphans, orphans


README_MOST_LINES = 700  # a guide: each robot's reference lives in docs/<robot>.md
ROBOT_WITHIN_LINES = 150  # a reader finds their robot's quick start this early


def test_the_readme_is_a_guide_that_reaches_every_robot_early():
    lines = (ROOT / 'README.md').read_text().splitlines()
    assert len(lines) <= README_MOST_LINES, f'README.md has {len(lines)} lines'
    starts = {
        robot: next((n for n, line in enumerate(lines, 1) if line == f'### {robot}'), None)
        for robot in ('P2OS', 'iPaq', 'AIBO', 'Nabaztag', 'Pleo')
    }
    late = {robot: n for robot, n in starts.items() if n is None or n > ROBOT_WITHIN_LINES}
    assert not late, f'quick starts missing or after line {ROBOT_WITHIN_LINES}: {late}'
