"""The `pleo_driver` node's parameters, in declaration order (docs/pleo.md's
table follows them)."""

from legacy_robot_common.params import read_only

PARAMETERS = (
    read_only(
        'port',
        '/dev/ttyACM0',
        'serial device (or pyserial URL); "auto" finds the Pleo by its USB ID 6962:0100',
    ),
    read_only(
        'baud',
        115200,
        'baud rate (nominal over USB CDC-ACM)',
        minimum=110,
        maximum=4000000,
    ),
    read_only(
        'open_timeout',
        5.0,
        's to wait for a prompt that comes at once (the first one, STATS POWER, a resync)',
        minimum=0.1,
        maximum=120.0,
    ),
    read_only(
        'answer_timeout',
        60.0,
        "s to wait for a command's prompt (default for services)",
        minimum=0.1,
        maximum=600.0,
    ),
    read_only(
        'battery_interval',
        5.0,
        's between STATS POWER polls (0 = never)',
        minimum=0.0,
        maximum=3600.0,
    ),
    read_only(
        'unload_app_on_start',
        True,
        'APP UNLOAD after connecting (stops the built-in behaviour)',
    ),
    read_only('neutral_on_start', True, 'JOINT NEUTRAL after connecting'),
    read_only(
        'log_enable',
        [''],
        'log types to enable after connecting (log enable <type>, e.g. nxp); [""] = none',
    ),
    read_only(
        'startup_commands',
        [''],
        'further monitor commands after '
        'connecting (e.g. the one that starts the sensor/joint dumps)',
    ),
    read_only(
        'frame_id',
        'base_link',
        'frame of sensors, battery and log messages',
    ),
    read_only(
        'joint_name_prefix',
        '',
        'prefix for joint_states names (several Pleos in one tf tree)',
    ),
)
