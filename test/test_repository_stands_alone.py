"""A clone holds everything it refers to: no tracked file points at documents outside the
repository (a path into the project's old shared folder, or a source document named only by its
number), and every citation of docs/protocols/ names a file and a section that exist.

Sections are the numbered headings of docs/protocols/<robot>.md (`## 2. …`, `### 2.3 …`).
Checked: `docs/protocols/<robot>.md §N` anywhere (also `protocols/<robot>.md §N` in docs/ links,
and the further `§M` of a list or range that follows it), every bare `§N` inside a protocol file
itself, and every bare `§N` in a file that cites (or declares its numbers refer to) exactly one
protocol file.
Pure file reading: no ROS, no processes but `git ls-files`."""

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROTOCOLS = ROOT / 'docs' / 'protocols'
THIS = pathlib.Path(__file__).resolve()
SKIPPED_DIRS = {'.git', '.venv', 'build', 'install', 'log', '.hypothesis'}

# the old layout kept its specifications and source documents beside the repository
OUTSIDE = re.compile(r'\.\./shared|shared/specs|shared/seeds|\bseed\s+\d{3}\b', re.I)
NUMBER = r'\d+(?:\.\d+)*'
# a citation, then any further numbers of the same list or range: "§4.2, §4.6", "§2.2-2.9"
CITATION = re.compile(
    rf'(?:docs/)?protocols/([\w-]+)\.md\)?\s+§\s?({NUMBER}'
    rf'(?:\s*(?:,|and|[-–])\s*§?\s?{NUMBER})*)'
)
BARE = re.compile(rf'§\s?({NUMBER}(?:\s*[-–]\s*{NUMBER})?)')
DECLARED = re.compile(
    r'(?:numbers?|§)[^.]{0,40}?refer to\s+(?:docs/)?protocols/([\w-]+)\.md', re.S
)
HEADING = re.compile(rf'^#{{2,6}}\s+({NUMBER})\.?\s', re.M)


def tracked_files():
    """The repository's files: git's list in a checkout, else every file outside build trees."""
    try:
        listing = subprocess.run(
            ['git', 'ls-files', '-z'], cwd=ROOT, capture_output=True, check=True, timeout=60
        ).stdout
        paths = [ROOT / name for name in listing.decode().split('\0') if name]
    except (OSError, subprocess.SubprocessError):
        paths = [
            p
            for p in ROOT.rglob('*')
            if p.is_file() and not SKIPPED_DIRS & set(p.relative_to(ROOT).parts)
        ]
    return [p for p in paths if p.is_file() and p.resolve() != THIS]


def text_of(path):
    """The file as text, or None for a binary file."""
    data = path.read_bytes()
    if b'\0' in data[:8192]:
        return None
    return data.decode('utf-8', errors='replace')


FILES = {}
for _path in tracked_files():
    _text = text_of(_path)
    if _text is not None:
        FILES[_path.relative_to(ROOT).as_posix()] = _text


def sections(robot):
    """The section numbers of docs/protocols/<robot>.md, or None when there is no such file."""
    path = PROTOCOLS / f'{robot}.md'
    if not path.exists():
        return None
    return set(HEADING.findall(path.read_text()))


def numbers(run):
    """'4.2, §4.6' or '2.2-2.9' → ['4.2', '4.6'] / ['2.2', '2.9']."""
    return re.findall(NUMBER, run)


def line_of(text, offset):
    return text.count('\n', 0, offset) + 1


def unresolved(robot, run, name, text, offset):
    known = sections(robot)
    where = f'{name}:{line_of(text, offset)}'
    if known is None:
        return [f'{where}: docs/protocols/{robot}.md does not exist']
    return [
        f'{where}: docs/protocols/{robot}.md has no §{n}' for n in numbers(run) if n not in known
    ]


def test_the_section_reader_reads_numbered_headings():
    assert set(HEADING.findall('# Title\n## 1. Sources\n### 1.2 Tools\n#### 1.2.3 x\n')) == {
        '1',
        '1.2',
        '1.2.3',
    }
    found = CITATION.search('see docs/protocols/p2os.md §4.2, §4.6 and more')
    assert found.group(1) == 'p2os' and numbers(found.group(2)) == ['4.2', '4.6']
    assert numbers(CITATION.search('(docs/protocols/pleo.md §2.2-2.9).').group(2)) == [
        '2.2',
        '2.9',
    ]
    assert CITATION.search('[protocols/ipaq.md](protocols/ipaq.md) §4.1').group(1) == 'ipaq'
    assert OUTSIDE.search('as SEED 004 says') and OUTSIDE.search('the ../shared/specs folder')
    assert not OUTSIDE.search('--seed 7, seeds=[body]')


def test_no_tracked_file_points_outside_the_repository():
    found = [
        f'{name}:{line_of(text, m.start())}: {m.group(0)!r}'
        for name, text in FILES.items()
        for m in OUTSIDE.finditer(text)
    ]
    assert not found, 'tracked files that point outside the repository:\n' + '\n'.join(found)


def test_every_protocol_citation_names_a_section_that_exists():
    broken = []
    for name, text in FILES.items():
        for m in CITATION.finditer(text):
            broken += unresolved(m.group(1), m.group(2), name, text, m.start())
    assert not broken, 'citations of docs/protocols/ that lead nowhere:\n' + '\n'.join(broken)


def test_bare_section_numbers_resolve_where_a_file_says_they_refer():
    """Inside docs/protocols/<robot>.md a bare §N is its own section; a file that cites one
    protocol file, or says its section numbers refer to one, is held to that file."""
    broken = []
    for name, text in FILES.items():
        own = re.fullmatch(r'docs/protocols/([\w-]+)\.md', name)
        named = set(DECLARED.findall(text)) | {m.group(1) for m in CITATION.finditer(text)}
        robot = own.group(1) if own else (named.pop() if len(named) == 1 else None)
        if robot is None:
            continue
        cited = [m.span() for m in CITATION.finditer(text)]
        for m in BARE.finditer(text):
            if not any(start <= m.start() < end for start, end in cited):
                broken += unresolved(robot, m.group(1), name, text, m.start())
    assert not broken, 'section numbers that lead nowhere:\n' + '\n'.join(broken)


PROTOCOL_FILES = sorted(p.name for p in PROTOCOLS.glob('*.md') if p.name != 'README.md')


@pytest.mark.parametrize('name', PROTOCOL_FILES)
def test_each_protocol_file_ends_with_where_the_documents_are_wrong_or_silent(name):
    headings = re.findall(r'^## (.+)$', (PROTOCOLS / name).read_text(), re.M)
    assert headings and 'wrong or silent' in headings[-1], headings[-1:]


def test_the_index_names_every_protocol_file():
    index = (PROTOCOLS / 'README.md').read_text()
    missing = [n for n in PROTOCOL_FILES if f']({n})' not in index and f'`{n}`' not in index]
    assert PROTOCOL_FILES and not missing, missing
