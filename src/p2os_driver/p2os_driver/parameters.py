"""The `p2os_driver` node's parameters (docs/p2os.md's table follows them) and the client
settings they make. MobileBase (cmd_vel message type, odometry, base frames) and
RobotStatePublisher declare their own; client_settings checks `model` against the model
table."""

from rclpy.parameter import Parameter as RosParameter

from legacy_robot_common.params import Parameter, ParameterError, read_only

from .client import DEFAULT_BAUD_CYCLE, STREAMS, Settings
from .description import DEFAULT_TICKS_PER_REVOLUTION
from .models import FACTOR_NAMES, MODELS, model_key

FACTORS = tuple(
    read_only(
        f'{name}_factor',
        0.0,
        f"override the model's {name} factor (0 = use the model table)",
        minimum=0.0,
    )
    for name in FACTOR_NAMES
)
ACCELERATIONS = tuple(
    read_only(name, 0.0, f"{unit}; 0 keeps the robot's setting", minimum=0.0)
    for name, unit in (
        ('linear_acceleration', 'm/s²'),
        ('linear_deceleration', 'm/s²'),
        ('angular_acceleration', 'rad/s²'),
        ('angular_deceleration', 'rad/s²'),
    )
)

# a simulator's laser and true pose (docs/protocols/p2os.md §4.2, §4.6)
LASER = (
    read_only(
        'laser',
        'auto',
        "a simulator's laser (scan): auto = when the robot is a simulator (AMRISim, "
        'MobileSim, a CONFIG serial "SIM"); true; false',
        choices=('auto', 'true', 'false'),
    ),
    read_only(
        'laser_mount',
        RosParameter.Type.DOUBLE_ARRAY,
        "[x m, y m, yaw rad] of the laser in base_link (unset: the model table, ARIA's "
        "LaserX/LaserY; AMRISim mounts a p3dx's at [0, 0, 0])",
    ),
    read_only(
        'laser_start',
        -90.0,
        'degrees: scan start sent to the simulator',
        minimum=-180.0,
        maximum=180.0,
    ),
    read_only(
        'laser_end', 90.0, 'degrees: scan end sent to the simulator', minimum=-180.0, maximum=180.0
    ),
    read_only(
        'laser_increment',
        1.0,
        'degrees between readings asked for',
        minimum=0.01,
        maximum=180.0,
    ),
    read_only(
        'laser_spacing',
        'stage',
        "the simulator's ray angles: stage (AMRISim: a symmetric fan of fov / count) or ideal "
        '(start + k * increment)',
        choices=('stage', 'ideal'),
    ),
    read_only(
        'laser_range_max', 32.767, 'm; readings at or above it are no echo (+inf)', minimum=0.1
    ),
    read_only(
        'ground_truth_frame_id',
        'map',
        "frame of ground_truth: the simulator's world (no frame_prefix)",
    ),
)

PARAMETERS = (
    read_only(
        'port',
        '/dev/ttyS0',
        'serial device, pyserial URL, or tcp://host:port '
        '(MobileSim-style simulators: tcp://localhost:8101)',
    ),
    read_only('baud', 9600, 'serial baud rate (ignored on TCP)', choices=DEFAULT_BAUD_CYCLE),
    read_only(
        'cycle_baud',
        False,
        'on a silent serial port try 9600, 38400, 19200, '
        '115200, 57600 in turn, starting with baud',
    ),
    read_only(
        'read_timeout',
        2.0,
        'seconds without a SIP before reconnecting',
        minimum=0.3,
        maximum=60.0,
    ),
    read_only(
        'pulse_interval',
        0.5,
        'PULSE after this many idle seconds (the robot stops after 2 s of silence)',
        minimum=0.05,
        maximum=1.9,
    ),
    read_only(
        'sync_attempts',
        4,
        'SYNC sequences per connection attempt',
        minimum=1,
        maximum=20,
    ),
    read_only(
        'model',
        '',
        'force a robot model instead of the SYNC2 subclass '
        '(any case; laser suffixes such as -lms1xx are ignored)',
    ),
    *FACTORS,
    read_only(
        'sip_gripper_in_high_byte',
        True,
        'P2OS SIP layout (gripper state in the high byte); false for ARCOS / AMRISim',
    ),
    read_only('sonar_frame_prefix', 'sonar_', 'sonar frames: prefix + disc number'),
    Parameter('max_linear_speed', 1.0, 'cmd_vel clamp, m/s', minimum=0.0, maximum=2.2),
    Parameter('max_angular_speed', 1.75, 'cmd_vel clamp, rad/s', minimum=0.0, maximum=6.3),
    read_only(
        'move_done_tolerance',
        0.04,
        'move action: succeeds at rest within this many m of its distance (ARIA: 40 mm)',
    ),
    read_only(
        'heading_done_tolerance',
        0.0524,
        'turn action: succeeds at rest within this many rad of its heading (ARIA: 3 deg)',
    ),
    read_only(
        'wheel_mode',
        False,
        'send cmd_vel as VEL2 wheel speeds instead of VEL + RVEL',
    ),
    Parameter(
        'cmd_vel_timeout',
        0.5,
        'stop when cmd_vel stops for this long, '
        'and ignore stamped commands older than this, s (0 = never)',
        minimum=0.0,
        maximum=60.0,
    ),
    read_only(
        'wheel_radius',
        0.0,
        "m, for the robot model and the wheel joints (0 = the model's estimate, docs/p2os.md)",
        minimum=0.0,
    ),
    read_only(
        'wheel_ticks_per_revolution',
        float(DEFAULT_TICKS_PER_REVOLUTION),
        "encoder counts per wheel turn (wheel joints from the encoder stream; a guess: a P3-DX's)",
        minimum=1.0,
    ),
    read_only(
        'command_repeat_period',
        0.5,
        'resend the motion command this often, s',
        minimum=0.05,
        maximum=1.9,
    ),
    read_only(
        'enable_motors_on_start',
        False,
        'enable the motors after connecting (the robot starts with them off)',
    ),
    read_only(
        'restore_state_on_reconnect',
        True,
        'after a reconnect, restore the '
        'motors, sonar and packet streams last asked for (false: the start '
        'values of enable_motors_on_start, use_sonar, *_stream)',
    ),
    read_only(
        'simulator',
        'auto',
        'auto: a robot named AMRISim or MobileSim is a simulator; true; false',
        choices=('auto', 'true', 'false'),
    ),
    read_only(
        'simulator_laser_compat',
        True,
        'the simulator reads '
        '#35-#37 as laser commands (AMRISim without '
        '--no-srisim-laser-compat): never send them',
    ),
    *LASER,
    Parameter('use_sonar', True, 'sonar on or off (can be changed at run time)'),
    read_only('sonar_min_range', 0.1, 'm', minimum=0.0),
    read_only('sonar_max_range', 5.0, 'm', minimum=0.1),
    read_only(
        'sonar_field_of_view',
        0.5236,
        'full cone angle, rad',
        minimum=0.01,
        maximum=3.14,
    ),
    read_only(
        'bump_stall',
        -1,
        "BUMP_STALL at start: -1 keep the robot's, 0 off, 1 front, 2 rear, 3 either",
        minimum=-1,
        maximum=3,
    ),
    *(
        read_only(f'{kind}_stream', False, f'request the {kind} packet stream at start')
        for kind in STREAMS
    ),
    *ACCELERATIONS,
    read_only('battery_warn_voltage', 11.75, 'V', minimum=0.0),
    read_only('battery_error_voltage', 11.0, 'V', minimum=0.0),
    read_only(
        'state_period',
        1.0,
        'battery, motor_state, bumpers, io and the '
        'SIP gripper state: published on change and at least this often, s',
        minimum=0.0,
        maximum=60.0,
    ),
    read_only(
        'request_timeout',
        2.0,
        'service wait for a robot reply, s',
        minimum=0.1,
        maximum=60.0,
    ),
)


def client_settings(v):
    """The client's Settings from the declared values v (declare_table's namespace)."""
    values = vars(v)
    if v.model and model_key(v.model) not in MODELS:
        raise ParameterError(
            f"p2os_driver: parameter 'model' is {v.model!r}; "
            f'expected one of {", ".join(m.subclass for m in MODELS.values())}'
        )
    if v.laser_mount is not None and len(v.laser_mount) != 3:
        raise ParameterError(f'laser_mount takes [x, y, yaw], not {list(v.laser_mount)}')
    try:
        return Settings(
            port=v.port,
            baud=v.baud,
            baud_cycle=baud_cycle(v.baud) if v.cycle_baud else (),
            read_timeout=v.read_timeout,
            pulse_interval=v.pulse_interval,
            sync_attempts=v.sync_attempts,
            model=v.model,
            gripper_in_high_byte=v.sip_gripper_in_high_byte,
            factor_overrides={name: values[f'{name}_factor'] for name in FACTOR_NAMES},
            wheel_mode=v.wheel_mode,
            simulator=v.simulator,
            simulator_laser_compat=v.simulator_laser_compat,
            accelerations={  # the robot's units: mm/s², rad/s²
                name: value * 1000.0 if name.startswith('linear') else value
                for name, value in ((row.name, values[row.name]) for row in ACCELERATIONS)
            },
            bump_stall=v.bump_stall,
            motion_timeout=v.cmd_vel_timeout,
            repeat_period=v.command_repeat_period,
            laser=v.laser,
            laser_scan=(v.laser_start, v.laser_end, v.laser_increment),
        )
    except ValueError as exc:
        raise ParameterError(f'p2os_driver: {exc}') from None


def baud_cycle(first):
    """The bauds to try: the parameter's first, then the usual cycle."""
    return (first,) + tuple(b for b in DEFAULT_BAUD_CYCLE if b != first)
