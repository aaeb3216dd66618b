"""The measurement package's imports: no circle among its modules (an import inside a function
counts too: soak and mixed_soak once imported each other that way), every module imports, and
no runtime package imports it (plugins name its modules only as strings)."""

import ast
import importlib
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = SRC / 'legacy_robot_bench' / 'legacy_robot_bench'
RUNTIME = sorted(
    path.parent.parent
    for path in SRC.glob('*/*/__init__.py')
    if path.parent.name == path.parent.parent.name and path.parent.name != 'legacy_robot_bench'
)


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix('').parts
    return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def imported(path):
    """Absolute names of every module path's code imports, wherever the import statement is."""
    name = module_name(path)
    package = name if path.name == '__init__.py' else name.rpartition('.')[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition('.')[0]
            module = (
                '.'.join(filter(None, [base, node.module])) if node.level else node.module or ''
            )
            found.add(module)
            found.update(f'{module}.{alias.name}' for alias in node.names)
    return found


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob('*.py'))}


def test_no_import_circle_in_the_package():
    edges = {
        name: {other for other in imported(path) if other in MODULES and other != name}
        for name, path in MODULES.items()
    }
    # every package imports its __init__ first: leave those edges out of the graph
    edges = {
        name: {o for o in others if not name.startswith(o + '.')} for name, others in edges.items()
    }
    done, on_path = set(), []

    def visit(name):
        if name in on_path:
            pytest.fail('import circle: ' + ' -> '.join(on_path[on_path.index(name) :] + [name]))
        if name in done:
            return
        on_path.append(name)
        for other in sorted(edges[name]):
            visit(other)
        on_path.pop()
        done.add(name)

    for name in sorted(edges):
        visit(name)


@pytest.mark.parametrize('name', sorted(MODULES))
def test_every_module_imports(name):
    importlib.import_module(name)


@pytest.mark.parametrize('package', RUNTIME, ids=lambda p: p.name)
def test_no_runtime_package_imports_the_measurement_package(package):
    code = package / package.name
    users = [
        str(path.relative_to(SRC))
        for path in sorted(code.rglob('*.py'))
        if any(m.split('.')[0] == 'legacy_robot_bench' for m in imported_anywhere(path))
    ]
    assert users == []


def imported_anywhere(path):
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found
