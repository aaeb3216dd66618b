"""Each robot's reference page follows the code: every parameter in a node's table
(`<package>.parameters.PARAMETERS`) is documented in a parameter table of that robot's page,
docs/<robot>.md, with the default the code declares. Pure file reading and imports: no node is
started."""

import ast
import importlib
import pathlib
import re

import pytest
from rclpy.parameter import Parameter as RosParameter

ROOT = pathlib.Path(__file__).resolve().parents[1]
NUMBER = r'-?\d+(?:\.\d+)?(?:e-?\d+)?'

# package -> its reference page (the README's quick starts point there)
PAGES = {
    'aibo_driver': 'docs/aibo.md',
    'ipaq_driver': 'docs/ipaq.md',
    'nabaztag_bridge': 'docs/nabaztag.md',
    'p2os_driver': 'docs/p2os.md',
    'pleo_driver': 'docs/pleo.md',
}


def reference(package):
    """The text of the package's reference page, outside its fenced code blocks."""
    text = (ROOT / PAGES[package]).read_text()
    return re.sub(r'^```.*?^```', '', text, flags=re.S | re.M)


def split_top(cell):
    """`cell` split at the commas outside brackets, parentheses and backticks."""
    parts, depth, quoted, current = [], 0, False, ''
    for char in cell:
        if char == '`':
            quoted = not quoted
        elif not quoted and char in '[(':
            depth += 1
        elif not quoted and char in '])':
            depth -= 1
        if char == ',' and not depth and not quoted:
            parts.append(current.strip())
            current = ''
        else:
            current += char
    return [*parts, current.strip()]


def documented(text):
    """{name: the page's default text} over the page's parameter tables.

    A row may name several parameters (`a`, `b`) with one default each, or one default for all.
    """
    rows = {}
    in_table = False
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if not line.startswith('|'):
            in_table = False
        elif cells[0] == 'parameter':
            in_table = True
        elif in_table and not set(cells[0]) <= set('-: '):
            names = re.findall(r'`([^`]+)`', cells[0])
            defaults = split_top(cells[1])
            if len(defaults) != len(names):
                defaults = [cells[1]] * len(names)
            rows.update(zip(names, defaults, strict=True))
    return rows


def lookup(rows, name):
    """The page's default text of `name`; a row `prefix.<name>` documents a family, its cell
    naming each member's default (`` `member` 1, `other` 2 ``)."""
    if name in rows:
        return rows[name]
    for documented_name, text in rows.items():
        prefix, _, wildcard = documented_name.partition('<name>')
        if wildcard == '' and prefix and name.startswith(prefix):
            member = re.search(rf'`{re.escape(name[len(prefix) :])}` ([^,`]+)', text)
            return member.group(1) if member else None
    return None


def literal(text):
    """The page's rendering of a list, `[0, 1.5]`, `[""]` or `["nxp"]`, as a Python value."""
    return ast.literal_eval(text.replace('true', 'True').replace('false', 'False'))


def close(shown, value):
    """Whether the page's number `shown` is `value` rounded to the digits it shows."""
    decimals = len(shown.partition('.')[2].partition('e')[0])
    return abs(float(shown) - value) <= 0.5 * 10**-decimals + 1e-12


def matches(default, text):
    """Whether the page's default `text` (units and remarks may follow) states `default`."""
    text = text.strip()
    if isinstance(default, RosParameter.Type):  # declared by type alone: no value until given
        return text.startswith('unset')
    if isinstance(default, bool):
        return text.split(' ')[0] == str(default).lower()
    if isinstance(default, (int, float)):
        number = re.match(NUMBER, text.lstrip('`'))
        return number is not None and close(number.group(0), default)
    if isinstance(default, str):
        shown = '""' if default == '' else default
        return re.match(rf'`{re.escape(shown)}`|{re.escape(shown)}(\W|$)', text) is not None
    if isinstance(default, list):
        found = re.match(r'`?(\[.*?\])`?', text)
        if found is None:
            return False
        if default and all(isinstance(v, (int, float)) for v in default):
            shown = [v.strip() for v in found.group(1)[1:-1].split(',')]
            return len(shown) == len(default) and all(
                re.fullmatch(NUMBER, a) and close(a, b)
                for a, b in zip(shown, default, strict=True)
            )
        return literal(found.group(1)) == default
    raise AssertionError(f'no rendering known for {default!r}')


@pytest.mark.parametrize('package', sorted(PAGES))
def test_every_parameter_is_documented_with_its_default(package):
    table = importlib.import_module(f'{package}.parameters').PARAMETERS
    rows = documented(reference(package))
    page = {row.name: lookup(rows, row.name) for row in table}
    missing = [name for name, text in page.items() if text is None]
    assert not missing, f'{package}: {PAGES[package]} does not document {missing}'
    wrong = [
        f'{row.name}: code {row.default!r}, {PAGES[package]} {page[row.name]!r}'
        for row in table
        if not matches(row.default, page[row.name])
    ]
    assert not wrong, f'{package}: {PAGES[package]} defaults differ from the code:\n' + '\n'.join(
        wrong
    )


def test_the_table_parser_reads_rows_of_several_names_and_lists():
    rows = documented(
        '| parameter | default | meaning |\n|---|---|---|\n'
        '| `a`, `b` | 1.0 s, `x` | two |\n| `c`, `d` | false | both |\n'
        '| `e` | `[0, 1.5]` | list |\n\n| `f` | 3 | not a parameter table |\n'
    )
    assert rows == {'a': '1.0 s', 'b': '`x`', 'c': 'false', 'd': 'false', 'e': '`[0, 1.5]`'}
    assert matches(1.0, rows['a']) and matches('x', rows['b']) and matches(False, rows['c'])
    assert matches([0.0, 1.5], rows['e']) and not matches([0.0], rows['e'])
    assert matches([0.0, 1.54], rows['e']) and not matches([0.0, 1.56], rows['e'])
    assert not matches(2.0, rows['a']) and not matches('xy', rows['b'])
    assert matches('', '`""`') and matches('', '""') and not matches('', '`x`')
    assert matches(RosParameter.Type.DOUBLE_ARRAY, 'unset (the model table)')


def test_a_family_row_documents_each_member_with_its_own_default():
    rows = {'opcodes.<name>': '1 … 2: `get_version` 1, `get_jpeg` 2'}
    assert lookup(rows, 'opcodes.get_jpeg') == '2'
    assert lookup(rows, 'opcodes.rput') is None and lookup(rows, 'rput') is None
