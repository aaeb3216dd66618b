"""AIBO parts of the fault suite (`make soak`, legacy_robot_bench.soak)."""

import numpy as np
from sensor_msgs.msg import Image

from aibo_driver import protocol as p
from aibo_driver import urbi
from aibo_driver.emulator import AiboEmulator, EmulatorOptions
from aibo_driver.scene import Scene, audio_chunk, color_detection
from legacy_robot_bench.common.soak import FuzzTarget, NoiseSpec, RestartSpec, Row
from legacy_robot_common.emulator import free_port
from legacy_robot_common.errors import MalformedFrame

SMALL_JPEG = (30, 40)  # rows, columns: the same markers as a camera frame, decoded faster


def audio_reply(first, count):
    return b''.join(
        p.encode_audio_record(p.AudioChunk(sequence, sequence, 0, audio_chunk(sequence)))
        for sequence in range(first, first + count)
    )


def console_text(data):
    """RCODE port bytes → lines (telnet negotiation removed); never rejects."""
    p.ConsoleText().feed(data)


def urbi_stream(data):
    """URBI server bytes → records, as the client reads them: damage skipped and counted."""
    decoder = urbi.StreamDecoder()
    decoder.feed(data)
    rejected = 0
    while True:
        try:
            if decoder.next_record() is None:
                return rejected
        except MalformedFrame:
            rejected += 1


def fuzz_targets():
    scene = Scene()
    frame = scene.render(1.0)
    yuv10 = p.Yuv10Decoder()
    small = np.ascontiguousarray(frame[: SMALL_JPEG[0], : SMALL_JPEG[1]])
    return [
        FuzzTarget(
            'AIBO YUV10 frame',
            yuv10.decode,
            [p.encode_yuv10(frame), p.encode_yuv10(scene.render(3.0))],
            max_random=2000,
        ),
        FuzzTarget('AIBO JPEG frame', p.decode_jpeg, [p.encode_jpeg(small, 80)]),
        FuzzTarget(
            'AIBO colour detection image', p.decode_color_image, [color_detection(frame).tobytes()]
        ),
        FuzzTarget(
            'AIBO audio reply',
            p.decode_audio,
            [audio_reply(0, 1), audio_reply(7, 3)],
            max_random=5000,
        ),
        FuzzTarget(
            'AIBO voice matches',
            p.decode_voice,
            [p.encode_voice([(i, 100 - i) for i in range(p.VOICE_MATCHES)])],
        ),
        FuzzTarget(
            'AIBO semantic records',
            p.decode_semantic,
            [
                b''.join(
                    p.encode_semantic(n, tuple(range(n, n + p.SEMANTIC_VALUES))) for n in range(3)
                )
            ],
        ),
        FuzzTarget('AIBO version reply', p.decode_version, [p.encode_version(p.Version(2, 1, 3))]),
        FuzzTarget(
            'AIBO URBI stream',
            urbi_stream,
            [
                urbi.message(1, 'start', '*** URBI Kernel version 1.0 rev. 153 ')
                + urbi.binary(40, 'cam', 'jpeg', p.encode_jpeg(small, 80), 40, 30)
                + urbi.message(41, 'acc', '-9.810000'),
                urbi.binary(7, 'mic', 'raw', bytes(64), 2, 16000, 16, 1)
                + urbi.message(8, 'error', '!!! Unknown identifier: U1.foo'),
            ],
            max_random=3000,
            stream=True,
        ),
        FuzzTarget(
            'AIBO RCODE console text',
            console_text,
            [b'\xff\xfb\x01\xff\xfd\x03RCodePlus ready\r\n> ', b'PLAY:ACTION:1\r\n'],
        ),
    ]


def restart_spec(folder):
    telemetry, rcode = free_port(), free_port()
    return RestartSpec(
        ['aibo_driver.emulator', '--telemetry-port', str(telemetry), '--rcode-port', str(rcode)],
        'aibo_driver.node',
        {'host': '127.0.0.1', 'telemetry_port': telemetry, 'rcode_port': rcode},
        'camera/image_raw',
        Image,
    )


def noise_spec(rate):
    """Audio in real time while rate of the reply bytes are dropped and as many corrupted:
    the driver must not crash and must count the bad replies, and once the line is clean
    again the chunks it says it lost must be the gaps a subscriber saw.

    Nothing gets through such a line: the telemetry is size-prefixed replies of kilobytes
    (31,680 bytes a YUV10 frame, 2 KB an audio chunk) with no checksum or marker to
    resynchronise on, so a reply loses a byte almost every time and costs a reconnect. A
    real TCP link drops no bytes."""
    from legacy_robot_interfaces.msg import AiboSensorWords

    emulator = AiboEmulator(
        EmulatorOptions(telemetry_port=0, rcode_port=0, drop_rate=rate, corrupt_rate=rate)
    ).start()

    def check(emulator, received, diagnostics):
        tracker = p.SequenceTracker()
        for words in received['sensor_words']:
            tracker.update(words.sequence)
        reported = next(
            (
                int(values['audio chunks lost'])
                for values in diagnostics.values()
                if 'audio chunks lost' in values
            ),
            None,
        )
        return [
            Row(
                'noise',
                'AIBO audio sequence',
                f'driver reports {reported} chunks lost, a subscriber saw {tracker.lost} missing',
                'the same',
                reported == tracker.lost,
            )
        ]

    return NoiseSpec(
        emulator,
        'aibo_driver.node',
        emulator.parameters,
        'sensor_words',
        AiboSensorWords,
        {'sensor_words': AiboSensorWords},
        check=check,
        no_flow_reason='kilobyte replies, no checksum or resync',
    )


def audio_rows(minutes):
    """Audio at the dog's real-time rate for minutes while another process keeps a core busy
    (the benchmark's run): no chunk may be lost."""
    from .bench import real_dog_run

    _, _, received, lost, dropped = real_dog_run(5.0, 60 * minutes)
    return [
        Row(
            'AIBO audio',
            f'{minutes:g} min real time, one core kept busy',
            f'{lost} lost of {received:,} received; {dropped} dropped by the dog',
            '0 lost',
            lost == 0 and dropped == 0,
        )
    ]


# ---- the mixed soak (legacy_robot_bench.mixed_soak) -----------------------------------------
def mixed_emulator_arguments(rate):
    """No line noise: the telemetry has no marker to resynchronise on (noise_spec), so a noisy
    line would only measure reconnects; the noise part covers it."""
    return []


def mixed_activity(ros, robot, elapsed):
    """The camera's frame rate switched every 20 s (a new snapshot rate on the robot)."""
    from legacy_robot_interfaces.srv import SetCameraMode

    if ros.due(robot, 'camera', 20.0):
        ros.call(
            SetCameraMode,
            f'{robot.namespace}/set_camera_mode',
            SetCameraMode.Request(mode='yuv10', image_rate=ros.random.choice([5.0, 10.0])),
        )
