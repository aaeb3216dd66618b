"""What a new user typed, as processes: README commands as written, ROS-style parameter values,
--sim beside a parameter file, --record into a folder that does not exist yet."""

import pathlib

from helpers import run_module

from legacy_robot_common.recording import read_recording

BRINGUP = 'legacy_robot_bringup.compose'


def test_an_integer_is_accepted_where_a_number_is_expected():
    """-p max_linear_speed:=1 and a mount typed with integers, as ROS users type them."""
    result = run_module(
        BRINGUP,
        'ipaq',
        '--sim',
        '--duration',
        '3',
        '--ros-args',
        '-p',
        'max_linear_speed:=1',
        '-p',
        'camera_mount:=[0, 0, 0, 0]',
    )
    assert result.returncode == 0, result.stderr
    refused = run_module(
        BRINGUP, 'p2os', '--sim', '--duration', '3', '--ros-args', '-p', 'max_linear_speed:=5'
    )
    assert refused.returncode == 2 and 'within 0.0..2.2' in refused.stderr, refused.stderr


def test_record_makes_its_folder(tmp_path):
    folder = tmp_path / 'recordings-today' / 'lab'
    result = run_module(BRINGUP, 'pleo', '--sim', '--record', f'{folder}/', '--duration', '3')
    assert result.returncode == 0, result.stderr
    assert read_recording(str(folder / 'pleo.mcap')).node == 'pleo_driver'


def test_a_parameter_file_wins_over_the_sim_and_says_so(tmp_path):
    media = tmp_path / 'my-media'
    media.mkdir()
    params = tmp_path / 'rabbit.yaml'
    params.write_text(f'/**/nabaztag_bridge:\n  ros__parameters:\n    media_root: {media}\n')
    result = run_module(
        BRINGUP, 'nabaztag', '--sim', '--params-file', str(params), '--duration', '3'
    )
    assert result.returncode == 0, result.stderr
    assert 'your parameter file sets media_root: used instead of the emulator' in result.stdout


def test_the_sims_media_holds_the_readmes_sound():
    """The README's play_sound example names hello.mp3; the sim serves it (an MPEG frame)."""
    from nabaztag_bridge.plugin import DemoEmulator

    emulator = DemoEmulator()
    try:
        data = (pathlib.Path(emulator.parameters['media_root']) / 'hello.mp3').read_bytes()
        assert data[:2] == b'\xff\xfb' and len(data) > 10_000
    finally:
        emulator.stop()
