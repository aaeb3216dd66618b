"""The `ipaq_driver` node's parameters (docs/ipaq.md's tables follow them). Every one is
read-only; MobileBase (cmd_vel, odometry, base frames) and RobotFrames (camera and range
frames) declare their own."""

from legacy_robot_common.params import read_only
from legacy_robot_common.topics import IMAGE_QOS, IMAGE_QOS_DESCRIPTION

from . import description
from .units import Units

# CMUcam1 with its stock lens: about 50° across (users' measurements range 44-60°); the
# vertical angle follows from the 160 × 143 frame with square pixels (parameter).
FIELD_OF_VIEW = [0.87, 0.79]


PORTS = tuple(
    read_only(name, default, f'TCP port: {what}', minimum=1, maximum=65535)
    for name, default, what in (
        ('control_port', 5000, 'commands and responses'),
        ('frame_dump_port', 5001, "a stream port (the document's port table: frame dumps)"),
        ('tracking_port', 5002, "a stream port (the document's port table: tracking)"),
    )
)
UNITS = (  # the fields of Units, each with its default
    *(
        read_only(name, getattr(Units, name), text, minimum=minimum)
        for name, text, minimum in (
            ('velocity_scale', 'm/s per vel step', 1e-6),
            ('steering_scale', 'rad per dir step (positive = left)', 1e-6),
            ('wheelbase', 'm, steered front wheel to rear axle', 0.01),
            ('servo_scale', 'rad per pan/tilt step', 1e-6),
            ('pose_scale', 'm per integrated X/Y step', 1e-9),
            ('theta_scale', 'rad per integrated TH step', 1e-9),
            ('voltage_scale', 'V per wheel-voltage step', 1e-9),
            ('current_scale', 'A per wheel-current step', 1e-9),
            ('range_scale', 'm per range step (range_conversion linear)', 1e-6),
            ('vel_timeout_scale', 's per vel_timeout step', 1e-6),
        )
    ),
    *(
        read_only(name, getattr(Units, name), text)
        for name, text in (
            ('velocity_signed', "vel is two's complement (else 128 = stop)"),
            ('pose_signed', 'integrated X/Y/TH are signed'),
            ('voltage_signed', 'wheel voltage is signed (negative reversing)'),
            ('current_signed', 'wheel current is signed'),
        )
    ),
    *(
        read_only(name, 128, 'servo setting for straight ahead', minimum=0, maximum=255)
        for name in ('steering_center', 'servo_center')
    ),
    read_only(
        'range_conversion',
        'gp2d02',
        'range byte: raw Sharp GP2D02 (Acroname formula) or linear',
        choices=('gp2d02', 'linear'),
    ),
)
MOUNTS = {
    name: read_only(
        f'{name}_mount',
        list(default),
        f'{name} frame in the base frame: [x, y, z] m and yaw rad (defaults: guesses)',
    )
    for name, default in description.DEFAULT_MOUNTS.items()
}

PARAMETERS = (
    read_only('host', 'localhost', "the iPaq's address"),
    *PORTS,
    read_only(
        'poll_rate',
        10.0,
        'P packets per second for range, wheel power and pose',
        minimum=0.5,
        maximum=50.0,
    ),
    read_only('response_timeout', 1.0, 's to wait for each response', minimum=0.05, maximum=30.0),
    read_only(
        'missed_responses',
        3,
        'responses missed in a row before reconnecting',
        minimum=1,
        maximum=100,
    ),
    read_only(
        'framed_responses',
        True,
        'responses framed with 255,56 ... 255,55 (implied, unconfirmed)',
    ),
    read_only('checksum_over_stuffed', False, 'checksums sum the stuffed bytes (inferred: not)'),
    read_only(
        'p_mask_bits',
        [0, 1, 2, 3, 4, 5, 6],
        'P mask bit numbers of vel_timeout, vel, dir, pan, tilt, kill motor, init BrainStem',
    ),
    read_only(
        'cmucam_generation',
        1,
        'CMUcam generation (frame and bitmap formats)',
        choices=(1, 2),
    ),
    read_only('frame_size', [80, 143], 'CMUcam1 frame dump: column samples, rows'),
    read_only(
        'frame_double_width',
        True,
        'publish frames at twice the sampled width (CMUcam1 samples every other column)',
    ),
    read_only('frame_flip_vertical', False, 'flip dumped frames upside down'),
    *UNITS,
    read_only(
        'vel_timeout',
        -1,
        'raw vel_timeout sent with drive commands (-1 = not sent)',
        minimum=-1,
        maximum=255,
    ),
    read_only(
        'cmd_vel_timeout',
        0.5,
        'stop when cmd_vel stops for this '
        'long, and ignore stamped commands older than this, s (0 = never)',
        minimum=0.0,
        maximum=60.0,
    ),
    read_only('max_linear_speed', 0.8, 'cmd_vel clamp, m/s', minimum=0.0),
    read_only(
        'safety_distance',
        0.0,
        'm; stop when the IR range is shorter (0 = off), set at connect',
        minimum=0.0,
    ),
    read_only('range_field_of_view', 0.1, 'IR beam width, rad', minimum=0.001, maximum=3.14),
    read_only(
        'camera_field_of_view',
        list(FIELD_OF_VIEW),
        'horizontal and vertical field of view of the CMUcam, rad (camera_info)',
    ),
    read_only('image_qos', 'reliable', IMAGE_QOS_DESCRIPTION, choices=IMAGE_QOS),
    *MOUNTS.values(),
    read_only(
        'request_timeout',
        3.0,
        'service wait for a response, s',
        minimum=0.1,
        maximum=60.0,
    ),
)
