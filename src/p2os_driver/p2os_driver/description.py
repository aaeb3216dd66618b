"""The URDF of a P2OS robot model: body, wheels, bumpers, sonar discs, gripper.

Body length and width, the sonar poses and the bumper counts are the model table's (ARIA's
parameter files, models.py). Wheel radius, wheel width and body height are in no parameter
file: the numbers below are estimates from the robots' published outer dimensions (marked
so in docs/p2os.md); the wheel_radius parameter overrides the radius. base_link sits on the
wheel axle (ARIA's robot centre) at base_height above the floor, so the drawing stands on the
floor when base_height is the robot's.
"""

import math

from legacy_robot_common.robot_model import Urdf, box, cylinder

from .models import DEFAULT_MODEL, MODELS, laser_mount, model_key

# chassis → (wheel radius m, wheel width m, body height m, wheels per side, mast height m)
CHASSIS = {
    'dx': (0.0975, 0.047, 0.237, 1, 0.0),  # Pioneer 2/3-DX, 2-CE, 2-DE, PatrolBot
    'at': (0.110, 0.095, 0.277, 2, 0.0),  # Pioneer 2/3-AT and -IT: skid steer, 4 wheels
    'peoplebot': (0.0975, 0.047, 0.237, 1, 1.04),  # a DX base with a mast
    'amigo': (0.050, 0.025, 0.130, 1, 0.0),
    'powerbot': (0.130, 0.060, 0.400, 1, 0.0),
    'pioneer1': (0.055, 0.035, 0.220, 1, 0.0),
    'lx': (0.100, 0.050, 0.370, 1, 0.0),
}
SONAR_RADIUS, SONAR_DEPTH = 0.02, 0.02  # the Polaroid 6500 transducer's face
SONAR_BELOW_TOP = 0.04  # m, ring centre below the top of the body
LASER_SIZE = (0.155, 0.15, 0.185)  # a SICK LMS200 (Stage's sicklms200 body; its height)
DEFAULT_TICKS_PER_REVOLUTION = 76_600  # 500-line encoder × 4 × 38.3:1 gear (a P3-DX)


def from_parameters(parameters, model=None, gripper=False, laser=None):
    """The URDF from the driver's parameter values (defaults for those not given) and the model
    the robot announced (None: the `model` parameter, else the default model): what the driver
    publishes, and what a launch hands robot_state_publisher. laser: whether the robot has the
    laser (None: when the `laser` parameter is true; the driver knows more once connected)."""
    if model is None:
        model = MODELS[model_key(parameters.get('model') or DEFAULT_MODEL)]
    if laser is None:
        laser = str(parameters.get('laser', 'auto')).lower() == 'true'
    if laser:
        laser = (parameters.get('laser_frame_id', 'laser'), laser_pose(model, parameters))
    else:
        laser = None
    return describe(
        model,
        parameters.get('base_frame_id', 'base_link'),
        parameters.get('sonar_frame_prefix', 'sonar_'),
        parameters.get('base_height', 0.0),
        parameters.get('wheel_radius', 0.0),
        gripper,
        laser,
    )


def laser_pose(model, parameters):
    """(x m, y m, yaw rad) of the laser in base_link: the laser_mount parameter [x, y, yaw]
    (m, m, rad) when given, else the model table's (ARIA's LaserX / LaserY)."""
    mount = list(parameters.get('laser_mount') or [])
    if len(mount) == 3:
        return tuple(float(v) for v in mount)
    x, y, th = laser_mount(model)
    return (x / 1000.0, y / 1000.0, math.radians(th))


def chassis(model):
    subclass = model.subclass.lower()
    if 'amigo' in subclass:
        return 'amigo'
    if 'powerbot' in subclass:
        return 'powerbot'
    if subclass == 'pion1m':
        return 'pioneer1'
    if 'lx' in subclass:
        return 'lx'
    if subclass.endswith(('pb', 'pp')) or 'peoplebot' in subclass or 'pb+' in subclass:
        return 'peoplebot'
    if subclass.startswith(('p2at', 'p2it', 'p3at')):
        return 'at'
    return 'dx'


def sonar_height(model, base_height=0.0):
    """z of the sonar discs in base_link: near the top of the body (an estimate), so echo
    points and beams sit where the transducers are."""
    return CHASSIS[chassis(model)][2] - SONAR_BELOW_TOP - base_height


def wheel_joints(model):
    """(joint name, child link, side) per wheel: left_wheel_joint, right_wheel_joint and, on a
    four-wheel chassis, left_rear_wheel_joint, right_rear_wheel_joint."""
    per_side = CHASSIS[chassis(model)][3]
    names = []
    for side in ('left', 'right'):
        for position in ('', 'rear_')[:per_side]:
            names.append((f'{side}_{position}wheel_joint', f'{side}_{position}wheel', side))
    return names


def wheel_positions(model, left_ticks, right_ticks, ticks_per_revolution):
    """Encoder counts → {joint name: wheel angle in rad} (both wheels of a side alike)."""
    turns = {
        'left': left_ticks / ticks_per_revolution,
        'right': right_ticks / ticks_per_revolution,
    }
    return {name: 2 * math.pi * turns[side] for name, _, side in wheel_joints(model)}


def describe(
    model,
    base_frame,
    sonar_prefix,
    base_height=0.0,
    wheel_radius=0.0,
    gripper=False,
    laser=None,
):
    """Urdf of the model; frame names without the driver's frame_prefix. laser: (frame,
    (x, y, yaw)) of a SICK on top of the body, its frame at the scan plane."""
    default_radius, wheel_width, height, per_side, mast = CHASSIS[chassis(model)]
    radius = wheel_radius or default_radius
    floor = -base_height
    length, width = model.length / 1000.0, model.width / 1000.0
    urdf = Urdf(model.subclass)
    bottom = floor + 0.6 * radius  # the body clears the floor by 60 % of a wheel
    top = floor + height
    urdf.link(
        base_frame,
        box(
            (length, width - 2.2 * wheel_width, top - bottom),
            (0, 0, (top + bottom) / 2),
            colour='accent',
        ),
    )
    if mast:
        urdf.link(
            base_frame,
            box((0.12, 0.12, mast), (-0.05, 0, top + mast / 2)),
            box((0.3, 0.3, 0.02), (-0.05, 0, top + mast), colour='dark'),
        )
    _bumpers(urdf, base_frame, model, length, width, floor + radius)
    if gripper:
        urdf.link(
            base_frame,
            box((0.12, 0.30, 0.10), (length / 2 + 0.06, 0, floor + 0.12), colour='dark'),
        )
    axle_x = (0.0,) if per_side == 1 else (length / 4, -length / 4)
    for (name, child, side), x in zip(wheel_joints(model), axle_x * 2, strict=False):
        y = (width / 2 - wheel_width / 2) * (1 if side == 'left' else -1)
        urdf.link(child, cylinder(radius, wheel_width, rpy=(math.pi / 2, 0, 0), colour='dark'))
        urdf.joint(
            name, base_frame, child, (x, y, floor + radius), kind='continuous', axis=(0, 1, 0)
        )
    for i, (x, y, heading) in enumerate(model.sonar):
        frame = f'{sonar_prefix}{i}'
        urdf.link(
            frame, cylinder(SONAR_RADIUS, SONAR_DEPTH, rpy=(0, math.pi / 2, 0), colour='sensor')
        )
        urdf.fixed(
            base_frame,
            frame,
            (x / 1000.0, y / 1000.0, sonar_height(model, base_height)),
            (0.0, 0.0, math.radians(heading)),
        )
    if laser is not None:
        frame, (x, y, yaw) = laser
        urdf.link(frame, box(LASER_SIZE, (0, 0, -LASER_SIZE[2] / 2 + 0.04), colour='sensor'))
        urdf.fixed(base_frame, frame, (x, y, top + LASER_SIZE[2] - 0.04), (0.0, 0.0, yaw))
    return urdf


def _bumpers(urdf, base_frame, model, length, width, z):
    for count, x in (
        (model.front_bumpers, length / 2 + 0.01),
        (model.rear_bumpers, -length / 2 - 0.01),
    ):
        if count:
            urdf.link(base_frame, box((0.02, width, 0.05), (x, 0, z), colour='dark'))
