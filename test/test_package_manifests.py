"""Every package's package.xml declares what its Python code imports (rosdep installs from these
on a user's machine; an import that works here only through another package breaks there)."""

import ast
import sys
import xml.etree.ElementTree as ElementTree

import pytest
from ament_index_python.packages import get_packages_with_prefixes
from helpers import ROOT

PACKAGES = sorted(p.parent for p in (ROOT / 'src').glob('*/package.xml'))
# rosdep keys of the Python libraries the packages use
PYTHON_KEYS = {
    'numpy': 'python3-numpy',
    'PIL': 'python3-pil',
    'serial': 'python3-serial',
    'matplotlib': 'python3-matplotlib',
    'pytest': 'python3-pytest',
    'hypothesis': 'python3-hypothesis',
    'uvloop': 'python3-uvloop',
    'httptools': 'python3-httptools',
    'mcap': 'python3-mcap',
    'yaml': 'python3-yaml',
    'urdf_parser_py': 'urdfdom_py',  # ROS's URDF parser (urdfdom_py)
    'foxglove': 'python3-foxglove-sdk-pip',
    'rosbags': 'python3-rosbags-pip',
    'mcap_ros2': 'python3-mcap-ros2-support-pip',
    'websockets': 'python3-websockets',
    # the Nabaztag bridge's speech worker (requirements-speech.txt) and its emulator's decoder
    'piper': 'python3-piper-tts-pip',
    'onnxruntime': 'python3-onnxruntime-pip',
    'espeakng_loader': 'python3-espeakng-loader-pip',
    'lameenc': 'python3-lameenc-pip',
    'miniaudio': 'python3-miniaudio-pip',
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


def imports(package):
    """{top-level module: {'run', 'test'}} imported by the package's Python files."""
    found = {}
    for path in package.rglob('*.py'):
        kind = 'test' if 'test' in path.relative_to(package).parts else 'run'
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split('.')[0], set()).add(kind)
    return found


def declared(package):
    """(run-time keys, test keys) of package.xml."""
    root = ElementTree.parse(package / 'package.xml').getroot()
    run = {e.text.strip() for tag in ('depend', 'exec_depend') for e in root.iter(tag)}
    return run, run | {e.text.strip() for e in root.iter('test_depend')}


def required_key(module, ros_packages):
    if module in ros_packages or module in ROS_ELSEWHERE:
        return module
    return PYTHON_KEYS.get(module)


@pytest.mark.parametrize('package', PACKAGES, ids=lambda p: p.name)
def test_imports_are_declared(package):
    ros_packages = set(get_packages_with_prefixes())
    run_keys, test_keys = declared(package)
    problems = []
    for module, kinds in sorted(imports(package).items()):
        if (
            module in sys.stdlib_module_names
            or module in NOT_DEPENDENCIES
            or module == package.name
        ):
            continue
        key = required_key(module, ros_packages)
        if key is None:
            problems.append(
                f'{module}: unknown third-party module (add its rosdep key to PYTHON_KEYS)'
            )
        elif 'run' in kinds and key not in run_keys:
            problems.append(f'{module}: imported at run time, {key} is not an exec_depend')
        elif key not in test_keys:
            problems.append(f'{module}: imported by tests, {key} is not a test_depend')
    assert not problems, f'{package.name}/package.xml: ' + '; '.join(problems)


def test_the_check_sees_an_undeclared_import(tmp_path):
    package = tmp_path / 'demo_pkg'
    (package / 'demo_pkg').mkdir(parents=True)
    (package / 'package.xml').write_text(
        '<package format="3"><name>demo_pkg</name><exec_depend>rclpy</exec_depend></package>'
    )
    (package / 'demo_pkg' / 'node.py').write_text(
        'import rclpy\nimport numpy\nfrom std_msgs.msg import String\n'
    )
    assert imports(package) == {'rclpy': {'run'}, 'numpy': {'run'}, 'std_msgs': {'run'}}
    with pytest.raises(
        AssertionError, match='numpy.*python3-numpy.*std_msgs: imported at run time'
    ):
        test_imports_are_declared(package)
