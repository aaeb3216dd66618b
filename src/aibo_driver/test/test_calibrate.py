"""aibo_calibrate as a process against the emulator playing YUV10 packings the defaults do not."""

import subprocess
import sys

import pytest

from aibo_driver import protocol as p
from aibo_driver.calibrate import parameter_lines
from aibo_driver.emulator import AiboEmulator, EmulatorOptions
from legacy_robot_common.emulator import free_port

VARIANTS = {
    'lsb-ylow-V': p.Yuv10Format(bit_order='lsb', y_bits='low', chroma_first='V'),
    'planar-ylow-bt601': p.Yuv10Format(
        layout='planar',
        y_bits='low',
        five_to_eight='shift3',
        chroma_five_to_eight='shift3_or_msb',
        matrix='bt601',
    ),
}


def calibrate(*args):
    return subprocess.run(
        [sys.executable, '-m', 'aibo_driver.calibrate', *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize('name', sorted(VARIANTS))
def test_calibration_finds_the_packing_the_dog_uses(name):
    emulator = AiboEmulator(
        EmulatorOptions(telemetry_port=0, rcode_port=0, yuv10=VARIANTS[name])
    ).start()
    try:
        result = calibrate('--host', '127.0.0.1', '--port', emulator.parameters['telemetry_port'])
    finally:
        emulator.stop()
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-len(parameter_lines(VARIANTS[name])) :] == parameter_lines(VARIANTS[name])
    assert lines[1].split()[0] == '1' and float(lines[1].split()[1]) < 8.0


def test_no_dog_is_a_clear_error():
    result = calibrate('--host', '127.0.0.1', '--port', free_port(), '--timeout', '2')
    assert result.returncode == 1 and 'no YUV10 frame within 2 s' in result.stderr


def test_bad_command_line_exits_2():
    assert calibrate('--port', '0').returncode == 2


def test_gait_speeds_are_timed_on_the_dog_and_scaled_by_what_was_measured():
    scale = 20.0  # the emulated dog plays 20 times as fast
    emulator = AiboEmulator(
        EmulatorOptions(telemetry_port=0, rcode_port=0, speed_scale=scale)
    ).start()
    try:
        port = emulator.parameters['rcode_port']
        result = calibrate(
            '--gait',
            '--host',
            '127.0.0.1',
            '--rcode-port',
            port,
            '--poll-period',
            '0.02',
            '--walked-mm',
            '900',
        )
    finally:
        emulator.stop()
    assert result.returncode == 0, result.stderr
    values = dict(
        line.split(': ') for line in result.stdout.splitlines() if line.startswith('    ')
    )
    expected = {  # the emulator's gaits (body.GAITS) × scale; walks scaled by 900/1000
        'normal_speed': 0.06 * scale * 0.9,
        'slow_speed': 0.03 * scale * 0.9,
        'normal_turn_rate': 0.5 * scale,
        'slow_turn_rate': 0.25 * scale,
    }
    for name, value in expected.items():
        assert float(values[f'    {name}']) == pytest.approx(value, rel=0.15), result.stdout
    assert 'PLAY:ACTION:MOVE.MOVE.SLOW:0:1000' in emulator.rcode_lines


def test_gait_without_a_dog_is_a_clear_error():
    result = calibrate(
        '--gait', '--host', '127.0.0.1', '--rcode-port', free_port(), '--timeout', '1'
    )
    assert result.returncode == 1 and 'no RCODE connection' in result.stderr
    assert calibrate('--gait', '--distance-mm', '5').returncode == 2
