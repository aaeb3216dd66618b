"""The commands of the README and of each robot's reference page (docs/<robot>.md), as written:
every command line of their bash blocks that can run on this machine (no ros2 CLI: `ros2 run
legacy_robot_bringup bringup|recording` are run as the modules they start), and every `ros2
service call` of a robot's quick start against that robot's emulator (made with rclpy, as the
ros2 CLI would). A command with a placeholder (<...>, [...], DIR, a real robot's address) is a
pattern, not a command, and is left out."""

import importlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest
import rclpy
import yaml
from helpers import ROOT, env_with_support, start_module
from rclpy.node import Node

from pleo_driver.sample import SAMPLE_PROJECT

# the guide and the robot pages it sends its readers to
GUIDE_PAGES = [
    ROOT / 'README.md',
    *(ROOT / 'docs' / f'{page}.md' for page in ('p2os', 'ipaq', 'aibo', 'nabaztag', 'pleo')),
    ROOT / 'docs' / 'urf_builder.md',
]
AS_MODULES = {
    'ros2 run legacy_robot_bringup bringup': 'python -m legacy_robot_bringup.compose',
    'ros2 run legacy_robot_bringup recording': 'python -m legacy_robot_bringup.recordings',
    'urf_builder': 'python -m pleo_driver.urf_builder',
}
# "project" in the urf_builder lines is the reader's project: here the sample project, built
# in the folder the commands run in
YOUR_PROJECT = {'project.upf': 'sample.upf', 'project.urf': 'sample.urf'}
PLACEHOLDER = re.compile(r'<|\[|\bDIR\b|\bFILE\b|my_robots|192\.168|/dev/tty|\$')
RUN_SECONDS = '4'
# which emulator answers a README service call (the sections name services without namespace)
SERVICE_ROBOTS = {
    'enable_motors': 'p2os',
    'start_color_tracking': 'ipaq',
    'dump_frame': 'ipaq',
    'rcode_command': 'aibo',
    'set_camera_mode': 'aibo',
    'play_action': 'aibo',
    'set_ears': 'nabaztag',
    'play_sound': 'nabaztag',
    'send_program': 'nabaztag',
    'say': 'nabaztag',
}


def readme_command_lines():
    """Each command of the guide pages' bash blocks: continuation lines joined, comments off."""
    commands = []
    blocks = [
        block
        for page in GUIDE_PAGES
        for block in re.findall(r'^```bash\n(.*?)^```', page.read_text(), re.S | re.M)
    ]
    for block in blocks:
        text = re.sub(r'\\\n\s*', ' ', block)
        for line in text.splitlines():
            line = re.sub(r'\s+#.*$', '', line).strip()
            if line and not line.startswith('#'):
                commands.append(line)
    return commands


def runnable(line):
    """The command as this machine runs it, or None (ros2 CLI, make, a pattern)."""
    for prefix, module in AS_MODULES.items():
        if line.startswith(prefix):
            line = module + line[len(prefix) :]
    if not re.match(r'python -m (legacy_robot_bringup|pleo_driver)\.', line) or PLACEHOLDER.search(
        line
    ):
        return None
    for name, sample in YOUR_PROJECT.items():
        line = line.replace(name, sample)
    words = shlex.split(line)
    if words[2] == 'legacy_robot_bringup.compose' and ('--sim' in words or '--replay' in words):
        words += ['--duration', RUN_SECONDS]  # they run until Ctrl-C
    return [sys.executable] + words[1:]


def test_every_runnable_readme_command_works_as_written(tmp_path):
    shutil.copytree(ROOT / 'recordings', tmp_path / 'recordings')
    shutil.copy(ROOT / 'recordings' / 'p2os.mcap', tmp_path / 'p2os.mcap')  # "your" recording
    shutil.copytree(SAMPLE_PROJECT, tmp_path, dirs_exist_ok=True)  # "your" project,
    built = subprocess.run(
        [
            sys.executable,
            '-m',
            'pleo_driver.urf_builder',
            'sample.upf',
            'rebuild',
            '--amx-dir',
            'prebuilt',
        ],
        cwd=tmp_path,
        timeout=120,
        capture_output=True,
        text=True,
    )  # as docs/urf_builder.md says
    assert built.returncode == 0, built.stderr
    ran = []
    for line in readme_command_lines():
        command = runnable(line)
        if command is None:
            continue
        if 'replay' in command and '--params-out' in command:
            _serve_until_announced(command, tmp_path / command[-1])
        else:
            result = subprocess.run(
                command,
                cwd=tmp_path,
                env=env_with_support(),
                timeout=120,
                capture_output=True,
                text=True,
            )
            assert result.returncode == 0, (line, result.stdout[-2000:], result.stderr[-2000:])
        ran.append(line)
    assert len(ran) >= 14, ran  # the pages' bringup, recording and urf_builder commands
    assert any('4096.usf' in line for line in ran)  # docs/urf_builder.md
    assert any('p2os:r3' in line for line in ran)  # docs/p2os.md, several robots in one world
    assert (tmp_path / 'recordings-today' / 'p2os.mcap').is_file()
    assert (tmp_path / 'p2os.csv').stat().st_size > 0


def _serve_until_announced(command, params_out):
    """`recording replay` serves until Ctrl-C: it must write its parameter file, then end
    cleanly on SIGINT."""
    server = subprocess.Popen(
        command,
        cwd=params_out.parent,
        env=env_with_support(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not params_out.exists() and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.1)
        assert params_out.exists(), server.stderr.read() if server.poll() is not None else ''
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(30) == 0


def readme_service_calls():
    """(robot, service name, type, request fields) of each `ros2 service call` line."""
    calls = []
    for line in readme_command_lines():
        if not line.startswith('ros2 service call'):
            continue
        words = shlex.split(line)
        name = words[3].rsplit('/', 1)[-1]
        fields = yaml.safe_load(words[5]) if len(words) > 5 else {}
        calls.append((SERVICE_ROBOTS[name], name, words[4], fields or {}))
    return calls


@pytest.mark.parametrize('robot', sorted(set(SERVICE_ROBOTS.values())))
def test_the_readmes_service_calls_succeed_on_the_emulators(robot):
    calls = [call for call in readme_service_calls() if call[0] == robot]
    assert calls, f'the README calls no {robot} service'
    process = start_module('legacy_robot_bringup.compose', robot, '--sim')
    context = rclpy.Context()
    rclpy.init(context=context)
    node = Node('readme_caller', context=context)
    try:
        for _, name, type_name, fields in calls:
            package, _, service = type_name.split('/')  # pkg/srv/Name, as ros2 takes it
            kind = getattr(importlib.import_module(f'{package}.srv'), service)
            request = kind.Request(**fields)
            reply = _call_until_it_succeeds(node, context, kind, f'/{name}', request)
            assert reply.success, (name, fields, reply.message)
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
        process.terminate()
        process.wait(30)


def _call_until_it_succeeds(node, context, kind, name, request, timeout=30.0):
    """The reply to request; asked again while the robot is still connecting (the rabbit has
    not pinged yet, the dog's RCODE link is not up) until it succeeds or timeout passes."""
    from rclpy.executors import SingleThreadedExecutor

    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    client = node.create_client(kind, name)
    deadline = time.monotonic() + timeout
    reply = None
    while time.monotonic() < deadline:
        if not client.service_is_ready():
            executor.spin_once(timeout_sec=0.1)
            continue
        future = client.call_async(request)
        executor.spin_until_future_complete(future, timeout_sec=10.0)
        reply = future.result()
        if reply is not None and reply.success:
            break
        executor.spin_once(timeout_sec=0.5)
    executor.remove_node(node)
    assert reply is not None, f'{name} never answered'
    return reply
