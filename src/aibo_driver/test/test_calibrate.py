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
