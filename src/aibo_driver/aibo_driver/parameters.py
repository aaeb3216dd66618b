"""The `aibo_driver` node's parameters, in declaration order (docs/aibo.md's tables follow them).

Every one is read-only but cmd_vel_timeout. The frame parameters are declared by `RobotFrames`,
the odometry frames and covariances by `MobileBase` (the node).
"""

from legacy_robot_common.params import Parameter, read_only
from legacy_robot_common.topics import IMAGE_QOS, IMAGE_QOS_DESCRIPTION

from . import conversions as convert
from . import description, models, rcode
from . import protocol as p
from .motion import MotionSettings, OdometryModel

PORTS = (
    read_only('telemetry_port', 21001, 'binary telemetry pipe', minimum=1, maximum=65535),
    read_only('rcode_port', 21002, 'RCODE text pipe (RCodePlus)', minimum=1, maximum=65535),
    read_only('urbi_port', 54000, 'URBI server (protocol urbi)', minimum=1, maximum=65535),
)
BTYPES = {
    product: read_only(
        f'btype_{product.value}',
        value,
        f'TELEMVER bType of {product.value} (unknown: an assumption)',
        minimum=0,
        maximum=255,
    )
    for product, value in ((p.Product.RCODEPLUS, 0), (p.Product.LIFEPLUS, 1))
}
OPCODES = {
    op.value: read_only(
        f'opcodes.{op.value}',
        byte,
        f'request byte of {op.value} (not public: an assumption)',
        minimum=0,
        maximum=255,
    )
    for op, byte in p.DEFAULT_OPCODES.items()
}
YUV10 = {
    name: read_only(f'yuv10_{name}', default, text, choices=choices)
    for name, default, text, choices in (
        ('layout', 'interleaved', 'interleaved or planar', ('interleaved', 'planar')),
        ('bit_order', 'msb', 'msb or lsb first', ('msb', 'lsb')),
        (
            'y_bits',
            'high',
            'which 5 bits are Y: high or low (planar: first or second plane)',
            ('high', 'low'),
        ),
        ('chroma_first', 'U', 'chroma on even pixels: U or V', ('U', 'V')),
        ('five_to_eight', 'shift3_or_msb', 'Y scaling: shift3 or shift3_or_msb', p.FIVE_TO_EIGHT),
        (
            'chroma_five_to_eight',
            'shift3',
            'U/V scaling: shift3 (code 16 = 128, neutral) or shift3_or_msb',
            p.FIVE_TO_EIGHT,
        ),
        ('matrix', 'sony', 'colour matrix: sony (OPEN-R) or bt601', ('sony', 'bt601')),
    )
}
YUV10['chroma_offset'] = read_only(
    'yuv10_chroma_offset', 128, 'chroma zero level', minimum=0, maximum=255
)
MOUNTS = {
    name: read_only(
        f'{name}_mount',
        list(default),
        f'{name} frame in its parent (base → neck joint, head → camera): [x, y, z] m, '
        '[roll, pitch, yaw] rad (defaults: estimates, every joint at 0)',
    )
    for name, default in description.DEFAULT_MOUNTS.items()
}
_GAIT = MotionSettings()
GAIT = tuple(  # the walk planner's settings (motion.MotionSettings)
    read_only(name, getattr(_GAIT, name), text, minimum=low, maximum=high)
    for name, text, low, high in (
        ('normal_speed', 'm/s of the normal walk (an estimate: calibrate)', 0.001, 1.0),
        ('slow_speed', 'm/s of the slow walk (an estimate: calibrate)', 0.001, 1.0),
        ('normal_turn_rate', 'rad/s of TURN (an estimate: calibrate)', 0.01, 5.0),
        ('slow_turn_rate', 'rad/s of the slow turn (an estimate: calibrate)', 0.01, 5.0),
        ('segment_mm', 'mm one WALK line asks for (the dog walks on)', 100, rcode.MAX_WALK_MM),
        ('turn_chunk_deg', 'degrees one TURN line asks for', 5, 360),
        ('direction_threshold_deg', 'a larger change of direction re-segments', 1.0, 180.0),
        ('min_speed', 'm/s below which a translation is zero', 0.0, 1.0),
        ('min_turn_rate', 'rad/s below which a rotation is zero', 0.0, 5.0),
    )
)
_ODOMETRY = OdometryModel()
ODOMETRY = {
    name: read_only(f'odometry_{name}', getattr(_ODOMETRY, name), text, minimum=0.0, maximum=10.0)
    for name, text in (
        ('slip', 'standard deviation of the distance walked, a fraction of it'),
        ('turn_slip', 'standard deviation of the angle turned, a fraction of it'),
        ('drift', 'rad of heading uncertainty per metre walked'),
    )
}
MOTION = (
    read_only(
        'model',
        'ers210',
        'the dog: ers210, ers220, ers31x or ers7 (its joints, motion IDs, audio, robot model)',
        choices=tuple(models.MODELS),
    ),
    read_only(
        'protocol',
        'rcodeplus',
        'the stick: rcodeplus (AiboPet telemetry + R-CODE), urbi or rcode (Sony R-CODE alone)',
        choices=models.PROTOCOLS,
    ),
    Parameter(  # settable at run time, as for the other bases
        'cmd_vel_timeout',
        0.5,
        's without cmd_vel before the dog is stopped (STOP_WALK), and the age of a stamped '
        'command too old to execute (0 = never)',
        minimum=0.0,
        maximum=60.0,
    ),
    *GAIT,
    read_only(
        'joint_state_rate',
        2.0,
        'joint angle polls per second over RCODE (0 = off)',
        minimum=0.0,
        maximum=20.0,
    ),
    read_only(
        'motion_poll_rate',
        4.0,
        'polls per second of Wait, Status and Distance',
        minimum=0.2,
        maximum=20.0,
    ),
    read_only(
        'sensor_rate',
        1.0,
        'polls per second of the battery and touch sensors (0 = off)',
        minimum=0.0,
        maximum=10.0,
    ),
    read_only(
        'urbi_sensor_rate',
        10.0,
        'URBI: accelerometer, distance and touch reads per second (0 = off)',
        minimum=0.0,
        maximum=50.0,
    ),
    read_only(
        'poll_timeout',
        1.0,
        's a PRINT poll or a motion line may take',
        minimum=0.1,
        maximum=10.0,
    ),
    read_only('odom_rate', 10.0, 'odometry messages per second', minimum=1.0, maximum=100.0),
    *ODOMETRY.values(),
)

PARAMETERS = (
    read_only('host', 'localhost', "the AIBO's address"),
    *PORTS,
    read_only('rcode_enabled', True, 'connect the RCODE pipe (LifePlus has none)'),
    read_only(
        'product',
        'auto',
        'stick type: auto (from bType), rcodeplus, lifeplus',
        choices=('auto', 'rcodeplus', 'lifeplus'),
    ),
    *BTYPES.values(),
    read_only(
        'version_size_prefix',
        False,
        'the version reply has a 4-byte size prefix (AiboPet says no)',
    ),
    *OPCODES.values(),
    read_only('camera_mode', 'yuv10', 'yuv10, jpeg or off', choices=('yuv10', 'jpeg', 'off')),
    read_only('image_rate', 10.0, 'camera requests per second', minimum=0.1, maximum=10000.0),
    read_only(
        'color_rate',
        10.0,
        'colour-detection requests per second (0 = off)',
        minimum=0.0,
        maximum=10000.0,
    ),
    read_only('audio_enabled', True, 'poll the microphones'),
    read_only(
        'audio_poll_rate', 10.0, 'GETAUDIO requests per second', minimum=3.0, maximum=1000.0
    ),
    read_only(
        'voice_rate', 2.0, 'LifePlus voice polls per second (0 = off)', minimum=0.0, maximum=100.0
    ),
    read_only(
        'semantic_rate',
        2.0,
        'LifePlus semantic polls per second (0 = off)',
        minimum=0.0,
        maximum=100.0,
    ),
    *YUV10.values(),
    read_only(
        'audio_channel_order',
        'right_first',
        'stereo order on the wire',
        choices=('right_first', 'left_first'),
    ),
    read_only('sensor_words_signed', False, 'AP_SensorData words are signed'),
    read_only('decode_jpeg', True, 'also publish JPEG frames on camera/image_raw'),
    read_only('image_qos', 'reliable', IMAGE_QOS_DESCRIPTION, choices=IMAGE_QOS),
    read_only(
        'color_labels', list(p.DEFAULT_COLOR_LABELS), 'label of each colour-detection bit 0..7'
    ),
    read_only('property_presets', [''], 'SETPROPERTY presets "name=index:value"'),
    read_only('rput_enabled', False, 'allow upload_file (experimental)'),
    read_only(
        'rput_layout',
        ','.join(p.DEFAULT_RPUT_LAYOUT),
        'RPUT fields after the opcode (docs/aibo.md)',
    ),
    read_only(
        'rput_grace',
        1.0,
        'with rput_reply none: seconds the link must stay up '
        'after an upload before it counts as taken (unconfirmed)',
        minimum=0.1,
        maximum=30.0,
    ),
    read_only(
        'rput_reply',
        'none',
        'none, or standard (a sized reply follows)',
        choices=('none', 'standard'),
    ),
    read_only('rput_max_bytes', 1_000_000, 'largest upload', minimum=1, maximum=100_000_000),
    read_only(
        'reply_timeout',
        2.0,
        's to wait for a reply before reconnecting',
        minimum=0.1,
        maximum=60.0,
    ),
    read_only(
        'unavailable_after',
        10.0,
        's of empty replies before a feature is reported unavailable',
        minimum=1.0,
    ),
    read_only('rcode_timeout', 3.0, 's an RCODE command may take', minimum=0.1, maximum=120.0),
    read_only(
        'rcode_quiet_time',
        0.3,
        's of silence that ends an RCODE reply',
        minimum=0.01,
        maximum=10.0,
    ),
    *MOUNTS.values(),
    read_only(
        'camera_field_of_view',
        list(convert.FIELD_OF_VIEW),
        'horizontal and vertical field of view, rad',
    ),
    *MOTION,
)
