"""Every package's package.xml declares what its code imports, and nothing it does not.

rosdep installs from these keys on a user's machine: an import that works here only through
another package breaks there, and a key that nothing needs is an install the user pays for (and
one more key that has to exist in ros/rosdistro). A module imported only by a package's tests is
a test_depend. The walk sees every import statement, at the top of a module or inside a
function; the launch files at the repository's root belong to legacy_robot_bringup (it installs
them). The interface package has no Python: its dependencies are the packages its msg/ files
name. Also: each package.xml has format 3's structure (as ros/demos' xmllint test checks against
the schema, here with xml.etree and catkin_pkg's parser, without network)."""

import ast
import re
import sys
import xml.etree.ElementTree as ElementTree

import pytest
from ament_index_python.packages import get_packages_with_prefixes
from catkin_pkg.package import InvalidPackage, parse_package
from helpers import ROOT

PACKAGES = sorted(p.parent for p in (ROOT / 'src').glob('*/package.xml'))
PYTHON_PACKAGES = [p for p in PACKAGES if (p / 'setup.py').exists()]
INTERFACES = ROOT / 'src' / 'legacy_robot_interfaces'
# Python files a package installs from outside its folder
EXTRA_FILES = {'legacy_robot_bringup': sorted((ROOT / 'launch').glob('*.launch.py'))}
# rosdep keys of the Python libraries the packages use (module → key)
PYTHON_KEYS = {
    'numpy': 'python3-numpy',
    'PIL': 'python3-pil',
    'serial': 'python3-serial',
    'matplotlib': 'python3-matplotlib',
    'pytest': 'python3-pytest',
    'hypothesis': 'python3-hypothesis',
    'uvloop': 'python3-uvloop',
    'httptools': 'python3-httptools',  # rosdep/legacy_robots.yaml (Ubuntu's python3-httptools)
    'mcap': 'python3-mcap-pip',  # rosdep/legacy_robots.yaml; its pip package brings zstandard
    'yaml': 'python3-yaml',
    'urdf_parser_py': 'urdfdom_py',  # ROS's URDF parser (urdfdom_py)
    'foxglove': 'python3-foxglove-sdk-pip',  # rosdep/legacy_robots.yaml
    'rosbags': 'python3-rosbags-pip',
    'mcap_ros2': 'mcap-ros2-support',  # rosdistro's key for the pip package mcap-ros2-support
    'websockets': 'python3-websockets',
}
# Optional libraries: in no package.xml. Each is imported only inside the function that needs it,
# and the feature says what to install when it is missing (the rest works without it).
OPTIONAL = {
    # the Nabaztag's speech, requirements-speech.txt: the say service's answer names the package
    'piper': 'nabaztag_bridge',  # GPL-3.0-or-later engine, only in the worker process
    'onnxruntime': 'nabaztag_bridge',  # piper's runtime
    'espeakng_loader': 'nabaztag_bridge',  # GPL-3.0-or-later engine, only in the worker process
    'lameenc': 'nabaztag_bridge',  # the worker's MP3 encoder (LGPL-3.0-or-later)
    'miniaudio': 'nabaztag_bridge',  # the emulator's MP3 decoder: WAVs of --audio-dir, the demo
    'faster_whisper': 'nabaztag_bridge',  # speech to text (MIT), only in the recogniser worker
}
# Keys declared though no module of the package imports them, and why
NOT_IMPORTED = {
    ('legacy_robot_common', 'lifecycle_msgs'): (
        'the types of the lifecycle services every DriverNode serves (rclpy.lifecycle), which '
        'the Foxglove relay and bag export look up by type name'
    ),
}
# ROS packages a full install has and these machines may not (no wheels): declared all the same
ROS_ELSEWHERE = {'launch', 'launch_ros'}
# not dependencies: setup.py's build tool, and the test support folder (test/support)
NOT_DEPENDENCIES = {
    'setuptools',
    'helpers',
    'ros_observer',
    'tick_robot',
    'interfaces_peer',
    'p2os_raw_client',
}
RUN_TAGS = ('depend', 'exec_depend', 'build_export_depend', 'buildtool_export_depend')
ALL_TAGS = (*RUN_TAGS, 'build_depend', 'buildtool_depend', 'test_depend', 'doc_depend')


def python_files(package):
    return sorted(package.rglob('*.py')) + EXTRA_FILES.get(package.name, [])


def imports(package):
    """{top-level module: {'run', 'test'}} imported by the package's Python files."""
    found = {}
    for path in python_files(package):
        inside = path.relative_to(package).parts if path.is_relative_to(package) else ()
        kind = 'test' if 'test' in inside else 'run'
        for name in imported_modules(path):
            found.setdefault(name.split('.')[0], set()).add(kind)
    return found


def imported_modules(path, top_level_only=False):
    """Absolute module names of path's import statements (top_level_only: those that run when
    the module is imported, i.e. outside functions)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    nodes = ast.walk(tree)
    if top_level_only:
        nodes = _outside_functions(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def _outside_functions(tree):
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        todo.extend(
            child
            for child in ast.iter_child_nodes(node)
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        )


def declared(package):
    """{key: {tag, ...}} of package.xml."""
    root = ElementTree.parse(package / 'package.xml').getroot()
    found = {}
    for tag in ALL_TAGS:
        for element in root.iter(tag):
            found.setdefault(element.text.strip(), set()).add(tag)
    return found


def required_key(module, ros_packages):
    if module in ros_packages or module in ROS_ELSEWHERE:
        return module
    return PYTHON_KEYS.get(module)


def problems_of(package, ros_packages):
    keys = declared(package)
    run_keys = {key for key, tags in keys.items() if tags & set(RUN_TAGS)}
    test_keys = {key for key, tags in keys.items() if 'test_depend' in tags}
    needed = {}  # key → {'run', 'test'}
    problems = []
    for module, kinds in sorted(imports(package).items()):
        if (
            module in sys.stdlib_module_names
            or module in NOT_DEPENDENCIES
            or module == package.name
            or OPTIONAL.get(module) == package.name
        ):
            continue
        key = required_key(module, ros_packages)
        if key is None:
            problems.append(
                f'{module}: unknown third-party module (add its rosdep key to PYTHON_KEYS)'
            )
            continue
        needed.setdefault(key, set()).update(kinds)
        if 'run' in kinds and key not in run_keys:
            problems.append(f'{module}: imported at run time, {key} is not an exec_depend')
        elif 'run' not in kinds and key not in run_keys | test_keys:
            problems.append(f'{module}: imported by tests, {key} is not a test_depend')
        elif 'run' not in kinds and key in run_keys:
            problems.append(f'{module}: imported only by tests, {key} should be a test_depend')
    for key in sorted(set(keys) - set(needed)):
        if (package.name, key) not in NOT_IMPORTED:
            problems.append(f'{key}: declared, but nothing in the package imports it')
    return problems


@pytest.mark.parametrize('package', PYTHON_PACKAGES, ids=lambda p: p.name)
def test_imports_and_declared_keys_agree(package):
    problems = problems_of(package, set(get_packages_with_prefixes()))
    assert not problems, f'{package.name}/package.xml: ' + '; '.join(problems)


@pytest.mark.parametrize('module', sorted(OPTIONAL))
def test_optional_libraries_are_imported_only_where_needed(module):
    package = ROOT / 'src' / OPTIONAL[module]
    assert module not in PYTHON_KEYS
    at_import = [
        str(path.relative_to(ROOT))
        for path in python_files(package)
        if 'test' not in path.relative_to(package).parts
        and module in {m.split('.')[0] for m in imported_modules(path, top_level_only=True)}
    ]
    assert at_import == [], f'{module} is imported when these modules are: the package needs it'
    speech = ROOT.joinpath('requirements-speech.txt').read_text()
    distribution = {
        'piper': 'piper-tts',
        'espeakng_loader': 'espeakng-loader',
        'faster_whisper': 'faster-whisper',
    }.get(module, module)
    assert re.search(rf'^{re.escape(distribution)}==', speech, re.M), (
        f'{distribution} is not in requirements-speech.txt'
    )


def test_not_imported_keys_are_still_declared():
    for package_name, key in NOT_IMPORTED:
        assert key in declared(ROOT / 'src' / package_name), (package_name, key)


def test_the_check_sees_undeclared_and_unused_keys(tmp_path):
    package = tmp_path / 'demo_pkg'
    (package / 'demo_pkg').mkdir(parents=True)
    (package / 'test').mkdir()
    (package / 'package.xml').write_text(
        '<package format="3"><name>demo_pkg</name><exec_depend>rclpy</exec_depend>'
        '<exec_depend>python3-yaml</exec_depend><exec_depend>python3-pytest</exec_depend>'
        '</package>'
    )
    (package / 'demo_pkg' / 'node.py').write_text(
        'import rclpy\n\n\ndef later():\n    import numpy\n\n\nfrom std_msgs.msg import String\n'
    )
    (package / 'test' / 'test_node.py').write_text('import pytest\nimport hypothesis\n')
    assert imports(package) == {
        'rclpy': {'run'},
        'numpy': {'run'},
        'std_msgs': {'run'},
        'pytest': {'test'},
        'hypothesis': {'test'},
    }
    assert problems_of(package, {'rclpy', 'std_msgs'}) == [
        'hypothesis: imported by tests, python3-hypothesis is not a test_depend',
        'numpy: imported at run time, python3-numpy is not an exec_depend',
        'pytest: imported only by tests, python3-pytest should be a test_depend',
        'std_msgs: imported at run time, std_msgs is not an exec_depend',
        'python3-yaml: declared, but nothing in the package imports it',
    ]


# ---- the interface package ---------------------------------------------------------------------
def interface_files():
    return sorted(
        path
        for pattern in ('*.msg', 'srv/*.srv', 'action/*.action')
        for path in (ROOT / 'msg').glob(pattern)
    )


def test_the_interface_package_depends_on_what_its_definitions_name():
    named = set()
    for path in interface_files():
        for line in path.read_text().splitlines():
            field_type = line.split('#')[0].split()[:1]
            if field_type and '/' in field_type[0]:
                named.add(field_type[0].split('/')[0])
    has_actions = any(path.suffix == '.action' for path in interface_files())
    expected = named | ({'action_msgs'} if has_actions else set())  # rosidl needs it for actions
    keys = declared(INTERFACES)
    assert {key for key, tags in keys.items() if tags == {'depend'}} == expected
    cmake = (INTERFACES / 'CMakeLists.txt').read_text()
    dependencies = re.search(r'DEPENDENCIES ([\w ]+)', cmake).group(1).split()
    assert set(dependencies) == expected
    assert {key for key, tags in keys.items() if tags != {'depend'}} == {
        'ament_cmake',
        'rosidl_default_generators',
        'rosidl_default_runtime',
    }


# ---- package.xml format 3 ----------------------------------------------------------------------
FORMAT_3_TAGS = {
    'name',
    'version',
    'description',
    'maintainer',
    'license',
    'url',
    'author',
    *ALL_TAGS,
    'conflict',
    'replace',
    'group_depend',
    'member_of_group',
    'export',
}


def structure_problems(path):
    """What format 3's schema (package_format3.xsd) would refuse in path, as far as xml.etree
    sees it: the root, the order and presence of the required elements, unknown elements, empty
    or repeated dependencies, the name and version forms."""
    text = path.read_text()
    root = ElementTree.fromstring(text)
    children = list(root)
    tags = [child.tag for child in children]
    problems = []
    if root.tag != 'package' or root.get('format') != '3':
        problems.append('root is not <package format="3">')
    if 'package_format3.xsd' not in text.split('<package', 1)[0]:
        problems.append('no xml-model line naming package_format3.xsd')
    if tags[:3] != ['name', 'version', 'description']:
        problems.append(f'first elements are {tags[:3]}, not name, version, description')
    unknown = sorted(set(tags) - FORMAT_3_TAGS)
    if unknown:
        problems.append(f'elements format 3 does not have: {unknown}')
    for tag in ('name', 'version', 'description'):
        if tags.count(tag) != 1:
            problems.append(f'{tags.count(tag)} <{tag}> elements')
    maintainers = root.findall('maintainer')
    if not maintainers or not all(m.get('email') and (m.text or '').strip() for m in maintainers):
        problems.append('no <maintainer email="..."> with a name')
    if not [e for e in root.findall('license') if (e.text or '').strip()]:
        problems.append('no <license>')
    name = (root.findtext('name') or '').strip()
    if name != path.parent.name or not re.fullmatch(r'[a-z][a-z0-9_]*', name):
        problems.append(f'name {name!r}: not the folder name in REP-144 form')
    if not re.fullmatch(r'\d+\.\d+\.\d+', (root.findtext('version') or '').strip()):
        problems.append('version is not MAJOR.MINOR.PATCH')
    seen = {}
    for child in children:
        if child.tag in ALL_TAGS:
            key = (child.text or '').strip()
            if not key:
                problems.append(f'empty <{child.tag}>')
            for other in seen.get(key, ()):
                if other == child.tag or 'depend' in (other, child.tag):
                    problems.append(f'{key} declared twice (<{other}>, <{child.tag}>)')
            seen.setdefault(key, []).append(child.tag)
    exports = root.findall('export')
    if len(exports) != 1 or tags[-1] != 'export' or exports[0].find('build_type') is None:
        problems.append('no single <export> with a <build_type> at the end')
    return problems


@pytest.mark.parametrize('package', PACKAGES, ids=lambda p: p.name)
def test_package_xml_has_format_3_structure(package):
    assert structure_problems(package / 'package.xml') == []
    try:
        parsed = parse_package(package / 'package.xml')  # what colcon and bloom read
    except InvalidPackage as exc:
        pytest.fail(f'catkin_pkg refuses it: {exc}')
    parsed.validate()
    assert parsed.package_format == 3 and parsed.name == package.name


def test_the_structure_check_sees_a_broken_manifest(tmp_path):
    folder = tmp_path / 'Bad-Name'
    folder.mkdir()
    (folder / 'package.xml').write_text(
        '<?xml version="1.0"?>\n<package format="2"><version>1.0</version><name>Bad-Name</name>'
        '<maintainer>nobody</maintainer><run_depend>x</run_depend>'
        '<exec_depend>rclpy</exec_depend><depend>rclpy</depend><exec_depend> </exec_depend>'
        '</package>'
    )
    problems = structure_problems(folder / 'package.xml')
    for expected in (
        'root is not <package format="3">',
        'no xml-model line',
        'first elements are',
        "elements format 3 does not have: ['run_depend']",
        '0 <description> elements',
        'no <maintainer email',
        'no <license>',
        "name 'Bad-Name'",
        'version is not MAJOR.MINOR.PATCH',
        'empty <exec_depend>',
        'rclpy declared twice (<exec_depend>, <depend>)',
        'no single <export>',
    ):
        assert any(p.startswith(expected) for p in problems), (expected, problems)
