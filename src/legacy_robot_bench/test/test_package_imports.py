"""Imports across the project's Python packages: no import circle in any of them (an import
inside a function counts too: soak and mixed_soak once imported each other that way, and each
robot's node once imported its plugin in main() while the plugin imported the node), every module
of the measurement package imports, and no runtime package imports it (plugins name its modules
only as strings)."""

import ast
import importlib
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2]
# every ament_python package's code, src/<package>/<package> (nabaztag_bridge has no __init__.py)
PACKAGES = sorted(
    setup.parent / setup.parent.name
    for setup in SRC.glob('*/setup.py')
    if (setup.parent / setup.parent.name).is_dir()
)
PACKAGE = SRC / 'legacy_robot_bench' / 'legacy_robot_bench'
RUNTIME = [code.parent for code in PACKAGES if code != PACKAGE]


def module_name(path):
    parts = path.relative_to(SRC).with_suffix('').parts[1:]
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


def modules(code):
    return {module_name(path): path for path in sorted(code.rglob('*.py'))}


MODULES = modules(PACKAGE)
EVERY_MODULE = {name: path for code in PACKAGES for name, path in modules(code).items()}


def import_edges():
    """module -> the project's modules it imports, at the top or inside a function."""
    edges = {
        name: {other for other in imported(path) if other in EVERY_MODULE and other != name}
        for name, path in EVERY_MODULE.items()
    }
    # every package imports its __init__ first: leave those edges out of the graph
    return {
        name: {o for o in others if not name.startswith(o + '.')} for name, others in edges.items()
    }


def circles_from(starts, edges):
    """Each import circle a depth-first walk from starts meets, as a list of module names."""
    found, done, on_path = [], set(), []

    def visit(name):
        if name in on_path:
            found.append(on_path[on_path.index(name) :] + [name])
            return
        if name in done:
            return
        on_path.append(name)
        for other in sorted(edges[name]):
            visit(other)
        on_path.pop()
        done.add(name)

    for name in sorted(starts):
        visit(name)
    return found


@pytest.mark.parametrize('code', PACKAGES, ids=lambda p: p.name)
def test_no_import_circle(code):
    circles = circles_from(modules(code), import_edges())
    assert not circles, 'import circles: ' + '; '.join(' -> '.join(c) for c in circles)


ROBOTS = [
    code for code in PACKAGES if (code / 'node.py').exists() and (code / 'plugin.py').exists()
]


@pytest.mark.parametrize('code', ROBOTS, ids=lambda p: p.name)
def test_a_robot_node_imports_its_plugin_and_the_plugin_names_the_node_only_by_name(code):
    node, plugin = f'{code.name}.node', f'{code.name}.plugin'
    edges = import_edges()
    assert plugin in edges[node]  # inside main(): an import in a function is an edge too
    assert node not in edges[plugin]


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
