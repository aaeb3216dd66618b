"""Static checks of launch/ (the `launch` package cannot run on these machines).

Every launch file is installed, defines generate_launch_description, uses only
helpers that exist and robots that are installed, and every installed robot's
launch names executables and parameter files that exist in the install space.
"""

import ast
import dataclasses
import pathlib

import pytest
import tick_robot
from ament_index_python.packages import get_package_share_directory
from helpers import ROOT

from legacy_robot_bringup.launch_plan import missing_files, robot_processes
from legacy_robot_bringup.registry import discover_plugins

LAUNCH_FILES = sorted((ROOT / 'launch').glob('*.launch.py'))
HELPER_MODULE = 'legacy_robot_bringup.launch_description'


def helper_functions():
    source = (
        ROOT / 'src/legacy_robot_bringup/legacy_robot_bringup/launch_description.py'
    ).read_text()
    return {n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


def test_there_is_a_launch_file_for_all_robots():
    assert ROOT / 'launch' / 'all_robots.launch.py' in LAUNCH_FILES


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_is_installed(path):
    share = pathlib.Path(get_package_share_directory('legacy_robot_bringup'))
    installed = share / 'launch' / path.name
    assert installed.is_file(), f'{path.name} is not installed; rebuild'
    assert installed.read_text() == path.read_text()


@pytest.mark.parametrize('path', LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file_uses_existing_helpers_and_robots(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert 'generate_launch_description' in functions
    helpers = helper_functions()
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == HELPER_MODULE
        for alias in node.names
    ]
    assert imported, f'{path.name} does not use {HELPER_MODULE}'
    assert set(imported) <= helpers, f'{path.name} imports unknown helpers'
    robots = discover_plugins()
    for call in ast.walk(tree):
        if (
            isinstance(call, ast.Call)
            and getattr(call.func, 'id', '') == 'robots_launch_description'
        ):
            for arg in call.args:
                assert isinstance(arg, ast.Constant) and arg.value in robots, (
                    f'{path.name} names robot {ast.dump(arg)} which is not installed'
                )


@pytest.mark.parametrize('name', sorted(discover_plugins()) or ['(none installed yet)'])
def test_installed_robot_launch_names_existing_files(name):
    plugins = discover_plugins()
    if name not in plugins:
        assert plugins == {}
        return
    assert missing_files(plugins[name]) == []


def test_the_check_reports_what_an_uninstalled_robot_lacks():
    problems = missing_files(tick_robot.PLUGIN)
    assert problems == ['tick: package tick_robot is not installed']


def test_sim_plan_adds_the_emulator_and_points_the_node_at_it():
    plain = robot_processes(tick_robot.PLUGIN, sim=False)
    sim = robot_processes(tick_robot.PLUGIN, sim=True)
    assert [p.executable for p in plain] == ['tick_driver']
    assert [p.executable for p in sim] == ['tick_emulator', 'tick_driver']
    assert sim[0].arguments == ('--port', '9000') and not sim[0].is_node
    assert sim[1].parameters == {'port': 9000} and plain[0].parameters == {}
    assert plain[0].params_files == (('legacy_robot_bringup', 'config/tick.yaml'),)


def test_launch_plan_two_pioneers_and_an_ipaq_with_sim_time_and_a_parameter_file(tmp_path):
    """What the launch files start for robots:=p2os:r1,p2os:r2,ipaq use_sim_time:=true
    params_file:=...: each robot in its namespace with its frame prefix, every node with
    use_sim_time, autostart and the user's file after the package's."""
    from legacy_robot_bringup.launch_plan import LaunchOptions, launch_plan
    from legacy_robot_bringup.registry import select

    user_file = tmp_path / 'robots.yaml'
    user_file.write_text('/r1/p2os_driver:\n  ros__parameters: {port: /dev/ttyUSB0}\n')
    chosen = select(discover_plugins(), ['p2os:r1', 'p2os:r2', 'ipaq'])
    plan = launch_plan(
        chosen, LaunchOptions(use_sim_time=True, params_file=str(user_file), log_level='warn')
    )
    assert [namespace for namespace, _ in plan] == ['/r1', '/r2', '/ipaq']
    for namespace, [node] in plan:
        assert node.is_node and node.parameters['use_sim_time'] is True
        assert node.parameters['frame_prefix'] == namespace.strip('/') + '/'
        assert node.parameters['autostart'] is True
        assert node.user_params_files == (str(user_file),)
        assert node.ros_arguments == ('--log-level', 'warn')
    frames_in_namespace = launch_plan(chosen, LaunchOptions(frames='namespace'))
    assert all(
        node.remappings == (('/tf', 'tf'), ('/tf_static', 'tf_static'))
        and 'frame_prefix' not in node.parameters
        for _, [node] in frames_in_namespace
    )


def test_launch_plan_refuses_what_cannot_work(tmp_path):
    from legacy_robot_bringup.launch_plan import LaunchOptions, launch_plan
    from legacy_robot_bringup.registry import select

    two = select(discover_plugins(), ['p2os:r1', 'p2os:r2'])
    with pytest.raises(ValueError, match='one robot of a kind'):
        launch_plan(two, LaunchOptions(sim=True))
    with pytest.raises(ValueError, match='params_file: no such file'):
        launch_plan(two, LaunchOptions(params_file=str(tmp_path / 'none.yaml')))


def test_launch_plan_hands_each_robot_model_to_robot_state_publisher(tmp_path):
    """robot_state_publisher:=true: a robot_state_publisher beside every driver with a model,
    its robot_description built from the same parameter files the driver reads; the driver
    leaves the model and its joints to it. auto: only where the package is installed."""
    from urdf_parser_py.urdf import URDF

    from legacy_robot_bringup.launch_plan import LaunchOptions, launch_plan
    from legacy_robot_bringup.registry import select

    user_file = tmp_path / 'robots.yaml'
    user_file.write_text(
        '/r1/p2os_driver:\n  ros__parameters: {model: p3at}\n'
        '/**/ipaq_driver:\n  ros__parameters: {camera_mount: [0.2, 0, 0.3, 0]}\n'
    )
    chosen = select(discover_plugins(), ['p2os:r1', 'ipaq', 'pleo', 'aibo', 'nabaztag'])
    plan = dict(
        launch_plan(
            chosen, LaunchOptions(robot_state_publisher='true', params_file=str(user_file))
        )
    )
    models = {}
    for namespace in ('/r1', '/ipaq', '/pleo', '/aibo'):
        driver, publisher = plan[namespace]
        assert driver.parameters['publish_joint_tf'] is False
        assert driver.parameters['publish_robot_description'] is False
        assert (publisher.package, publisher.executable) == (
            'robot_state_publisher',
            'robot_state_publisher',
        )
        assert publisher.parameters['frame_prefix'] == namespace.strip('/') + '/'
        models[namespace] = URDF.from_xml_string(publisher.parameters['robot_description'])
    assert [node.executable for node in plan['/nabaztag']] == ['nabaztag_bridge']  # no model
    wheels = [j.name for j in models['/r1'].joints if j.type == 'continuous']
    assert len(wheels) == 4  # the user's p3at: skid steer
    assert models['/ipaq'].joint_map['pan'].origin.xyz == [0.2, 0, 0.3]
    assert models['/aibo'].get_root() == 'aibo_base'
    own = launch_plan(chosen, LaunchOptions(robot_state_publisher='false'))
    assert all(
        len(nodes) == 1 and 'publish_joint_tf' not in nodes[0].parameters for _, nodes in own
    )
    with pytest.raises(ValueError, match='robot_state_publisher must be one of'):
        launch_plan(chosen, LaunchOptions(robot_state_publisher='maybe'))


def test_launch_plan_adds_the_foxglove_relay_when_asked():
    import os

    from legacy_robot_bringup.launch_plan import LaunchOptions, executable_path, launch_plan

    plugins = discover_plugins()
    plan = launch_plan([plugins['p2os']], LaunchOptions(sim=True, foxglove='8765'))
    namespace, (relay,) = plan[-1]
    assert namespace is None and relay.arguments == ('--port', '8765', '--address', '127.0.0.1')
    assert os.access(executable_path(relay), os.X_OK)
    assert all(
        spec.executable != 'foxglove_relay'
        for _, specs in launch_plan([plugins['p2os']], LaunchOptions())
        for spec in specs
    )
    with pytest.raises(ValueError, match='port number'):
        launch_plan([plugins['p2os']], LaunchOptions(foxglove='yes'))
    opened = LaunchOptions(
        foxglove='8765',
        foxglove_address='0.0.0.0',
        foxglove_publish='.*/cmd_vel,/p2os/gripper.*',
        foxglove_services='/p2os/enable_motors',
    )
    (relay,) = launch_plan([plugins['p2os']], opened)[-1][1]
    assert relay.arguments == (
        '--port', '8765', '--address', '0.0.0.0',
        '--publish', '.*/cmd_vel', '/p2os/gripper.*', '--services', '/p2os/enable_motors',
    )  # fmt: skip
    spaced = dataclasses.replace(opened, foxglove_publish=' .*/cmd_vel  /p2os/gripper.* ')
    assert launch_plan([plugins['p2os']], spaced)[-1][1][0].arguments == relay.arguments
    with pytest.raises(ValueError, match=r"foxglove_services '\[': not a regular expression"):
        launch_plan([plugins['p2os']], dataclasses.replace(opened, foxglove_services='/a, ['))
    secured = launch_plan([plugins['p2os']], dataclasses.replace(opened, enclave='/lab/p2os'))
    driver, relay = secured[0][1][-1], secured[-1][1][0]
    assert driver.ros_arguments[-2:] == ('--enclave', '/lab/p2os')
    assert relay.arguments[-3:] == ('--ros-args', '--enclave', '/lab/p2os')
    with pytest.raises(ValueError, match='absolute name'):
        launch_plan([plugins['p2os']], LaunchOptions(enclave='lab'))
