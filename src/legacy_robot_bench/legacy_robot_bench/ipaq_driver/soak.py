"""iPaq parts of the fault suite (`make soak`, legacy_robot_bench.soak)."""

import numpy as np
from sensor_msgs.msg import Range

from ipaq_driver import protocol as p
from ipaq_driver.emulator import EmulatorOptions, IpaqEmulator
from legacy_robot_bench.common.soak import (
    FuzzTarget,
    NoiseSpec,
    RestartSpec,
    noise_arguments,
    stream_rejects,
)
from legacy_robot_common.emulator import free_port
from legacy_robot_common.errors import MalformedFrame

SMALL_CMUCAM2 = p.CameraFormat(generation=2, columns=8, rows=6)  # frame dumps that mutate fast


def _pixels(rows, columns, seed=1):
    return np.random.default_rng(seed).integers(16, 240, (rows, columns, 3), dtype=np.uint8)


def stream_items(camera):
    tracking = [
        p.encode_tracking(p.TrackingPacket(128 + i, 120 - i, 40, 70, 10, 12, 30 + i, 200))
        for i in range(3)
    ]
    bitmap = p.encode_bitmap(
        np.arange(camera.bitmap_rows * camera.bitmap_columns).reshape(
            camera.bitmap_rows, camera.bitmap_columns
        )
        % 3
        == 0,
        camera,
    )
    return tracking + [bitmap]


def responses():
    return [
        p.encode_mini(0),
        p.encode_mini(11),
        p.encode_full(p.FullResponse(0, 120, 200, 30, 1000, 65000, 314)),
        p.encode_string(0, b'ACK\r:'),
        p.encode_string(20, p.encode_brainstem(2, b'\x1e\x05')),
    ]


def commands():
    return [
        p.encode_command(p.Letter.STOP_TRACKING),
        p.encode_safety(40),
        p.encode_pass_through(p.Letter.CMUCAM, 'GV'),
        p.encode_pass_through(p.Letter.BRAINSTEM, p.encode_brainstem(4, b'\x21\x00\x80')),
    ]


def decode_stream(camera):
    """What the client does with a stream port's bytes."""

    def decode(data):
        return sum(isinstance(item, MalformedFrame) for item in p.StreamDecoder(camera).feed(data))

    return decode


def decode_frames(decode_body):
    """Framing (255,56 … 255,55, stuffing, checksum), then decode_body on each body."""

    def decode(data):
        items = [
            item for item in p.FrameReceiver().feed(data) if not isinstance(item, p.Terminate)
        ]
        return stream_rejects(items, decode_body)

    return decode


def fuzz_targets():
    camera = p.CameraFormat()
    items = stream_items(camera) + [p.encode_frame_dump(_pixels(6, 8), SMALL_CMUCAM2)]
    full_dump = p.encode_frame_dump(_pixels(camera.rows, camera.columns), camera)
    return [
        FuzzTarget(
            'iPaq stream port (tracking, bitmaps, CMUcam2 dumps)',
            decode_stream(SMALL_CMUCAM2),
            items + [b''.join(items)],
            max_random=800,
            stream=True,
        ),
        FuzzTarget(
            'iPaq stream port (CMUcam1 frame dump)',
            decode_stream(camera),
            [full_dump],
            stream=True,
        ),
        FuzzTarget(
            'iPaq control port responses',
            decode_frames(p.decode_response),
            responses(),
            stream=True,
        ),
        FuzzTarget(
            'iPaq commands (emulator side)',
            decode_frames(p.decode_command),
            commands(),
            stream=True,
        ),
        FuzzTarget(
            'iPaq BrainStem packet',
            p.decode_brainstem,
            [p.encode_brainstem(2, b'\x1e\x05'), p.encode_brainstem(4, b'')],
        ),
    ]


def restart_spec(folder):
    ports = {
        'control_port': free_port(),
        'frame_dump_port': free_port(),
        'tracking_port': free_port(),
    }
    emulator = ['ipaq_driver.emulator'] + [
        argument
        for name, port in ports.items()
        for argument in (f'--{name.replace("_", "-")}', str(port))
    ]
    return RestartSpec(
        emulator, 'ipaq_driver.node', {'host': '127.0.0.1', **ports}, 'range', Range
    )


def noise_spec(rate):
    emulator = IpaqEmulator(
        EmulatorOptions(
            control_port=0, frame_dump_port=0, tracking_port=0, drop_rate=rate, corrupt_rate=rate
        )
    ).start()
    return NoiseSpec(emulator, 'ipaq_driver.node', emulator.parameters, 'range', Range)


# ---- the mixed soak (legacy_robot_bench.mixed_soak) -----------------------------------------
def mixed_emulator_arguments(rate):
    return noise_arguments(rate)


def mixed_activity(ros, robot, elapsed):
    """cmd_vel at 10 Hz, turning one way and then the other; the cmd_vel clamp changed by its
    parameter every minute."""
    from geometry_msgs.msg import Twist, Vector3

    turn = 0.4 if int(elapsed / 20) % 2 else -0.4
    ros.publish(
        Twist, f'{robot.namespace}/cmd_vel', Twist(linear=Vector3(x=0.1), angular=Vector3(z=turn))
    )
    if ros.due(robot, 'clamp', 60.0):
        ros.set_parameters(
            f'{robot.namespace}/{robot.plugin.node_name}',
            {'max_linear_speed': ros.random.choice([0.5, 0.8])},
        )
