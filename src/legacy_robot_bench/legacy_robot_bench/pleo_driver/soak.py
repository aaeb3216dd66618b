"""Pleo parts of the fault suite (`make soak`, legacy_robot_bench.soak)."""

import math
import os
import tempfile

from sensor_msgs.msg import JointState

from legacy_robot_bench.common.soak import FuzzTarget, NoiseSpec, RestartSpec, noise_arguments
from pleo_driver import protocol as p
from pleo_driver.emulator import EmulatorOptions, PleoEmulator
from pleo_driver.pdk import amx, ucf, umf, urf, usf
from pleo_driver.pdk.errors import BuildError
from pleo_driver.sample import build_sample_project, wav_bytes

MONITOR_TEXT = (
    b'STATS POWER\r\nINFO: nxp: 7361 - Nov 15 2007\r\nBattery sensor value = 80 (x)'
    b'\r\nmu: joint: '
    + b' '.join(b'%d' % -i for i in range(p.JOINT_COUNT))
    + b'\r\nmu: sensor: '
    + b' '.join(b'%d' % i for i in range(p.SENSOR_COUNT))
    + b'\r\n> '
)

# small WAVs of every kind wav2usf reads: 8/16-bit, mono/stereo, resampled or not
WAV_SEEDS = [
    wav_bytes(120, rate=rate, width=width, channels=channels)
    for rate, width, channels in ((11025, 1, 1), (8000, 2, 1), (22050, 2, 2), (16000, 1, 2))
]


def monitor_stream(data):
    """The client's parser on monitor output; → malformed lines (counted by the client)."""
    _, errors = p.MonitorParser().feed(data)
    return len(errors)


def fuzz_targets():
    with tempfile.TemporaryDirectory(prefix='pleo-soak-') as folder:
        with open(build_sample_project(folder).urf_path, 'rb') as handle:
            built = handle.read()
    parsed = urf.parse(built)

    def of(group):
        return [entry.data for entry in parsed.of(group)]

    return [
        FuzzTarget('Pleo monitor output', monitor_stream, [MONITOR_TEXT], stream=True),
        FuzzTarget('Pleo URF reader', urf.parse, [built], max_random=2000),
        FuzzTarget('Pleo UMF (motion) reader', umf.parse, of(urf.MOTIONS)),
        FuzzTarget('Pleo USF (sound) reader', usf.parse, of(urf.SOUNDS)),
        FuzzTarget('Pleo UCF (command) reader', ucf.parse, of(urf.COMMANDS) or [b'UGCF']),
        FuzzTarget('Pleo AMX header check', amx.check, of(urf.SCRIPTS) + [amx.stand_in(64, 32)]),
        # wav2usf's reader and converter: headers that lie (rate 0 once hung the PDK for good)
        FuzzTarget(
            'Pleo WAV reader (wav2usf)',
            lambda data: usf.wav_to_usf(data, 'fuzz'),
            WAV_SEEDS,
            rejects=(BuildError,),
        ),
    ]


def restart_spec(folder):
    """The emulator's pty gets a new name each start; the driver follows a fixed symlink."""
    link = os.path.join(folder, 'pleo-tty')
    return RestartSpec(
        ['pleo_driver.emulator', '--link', link],
        'pleo_driver.node',
        {'port': link},
        'joint_states',
        JointState,
    )


def noise_spec(rate):
    emulator = PleoEmulator(EmulatorOptions(drop_rate=rate, corrupt_rate=rate)).start()
    return NoiseSpec(emulator, 'pleo_driver.node', emulator.parameters, 'joint_states', JointState)


# ---- the mixed soak (legacy_robot_bench.mixed_soak) -----------------------------------------
def mixed_emulator_arguments(rate):
    return noise_arguments(rate)


def mixed_activity(ros, robot, elapsed):
    """A joint moved every 5 s (within its limits), a sound asked for every 30 s (the
    emulator has no URF loaded: refused, which is an answer too)."""
    from legacy_robot_interfaces.srv import JointCommand, PlayNamed

    if ros.due(robot, 'joint', 5.0):
        ros.call(
            JointCommand,
            f'{robot.namespace}/joint_command',
            JointCommand.Request(
                joint='right_elbow', position=math.radians(ros.random.uniform(0, 90))
            ),
        )
    if ros.due(robot, 'sound', 30.0):
        ros.call(PlayNamed, f'{robot.namespace}/sound_play', PlayNamed.Request(name='1'))
