"""The URDF of the Trikebot: a tricycle base, the iPaq, the CMUcam on its pan/tilt neck, the
IR ranger.

No document gives the Trikebot's geometry (docs/protocols/ipaq.md §1.3): the wheelbase is the
driver's `wheelbase` parameter and the mounts are its `camera_mount` / `range_mount` parameters;
the body and wheel sizes below are guesses for a small tricycle (docs/ipaq.md). base_link sits on
the rear axle, the steered front wheel `wheelbase` ahead. The neck's joints are named as
camera/pan_tilt names them, `pan` (about z, positive left) and `tilt` (positive turns the camera
up: a servo setting above `servo_center`, as the emulator's camera moves; the real neck's direction
is on record nowhere), so joint_states and the pan/tilt command speak the same names and angles.
"""

import dataclasses
import math

from legacy_robot_common.robot_model import Urdf, box, cylinder

from .units import Units

WHEEL_RADIUS, WHEEL_WIDTH = 0.05, 0.03
BODY_WIDTH, BODY_HEIGHT = 0.22, 0.06
PAN_JOINT, TILT_JOINT = 'pan', 'tilt'
# Where the camera (its pan/tilt neck at rest) and the IR ranger sit in base_link: no document
# gives the Trikebot's geometry, so these are guesses for a small tricycle (parameters).
DEFAULT_MOUNTS = {'camera': [0.10, 0.0, 0.25, 0.0], 'range': [0.15, 0.0, 0.10, 0.0]}
DEFAULT_FRAMES = {'base': 'base_link', 'camera': 'camera', 'range': 'ir_range'}


def from_parameters(parameters):
    """The URDF from the driver's parameter values (defaults for those not given): what the
    driver publishes, and what a launch hands robot_state_publisher."""
    fields = {field.name for field in dataclasses.fields(Units)}
    units = Units(**{name: value for name, value in parameters.items() if name in fields})
    frames = [
        parameters.get(f'{name}_frame_id', default) for name, default in DEFAULT_FRAMES.items()
    ]
    mounts = {
        name: list(parameters.get(f'{name}_mount', default))
        for name, default in DEFAULT_MOUNTS.items()
    }
    return describe(
        *frames,
        units.wheelbase,
        mounts['camera'],
        mounts['range'],
        (units.raw_to_servo(0), units.raw_to_servo(255)),
    )


def describe(
    base_frame, camera_frame, range_frame, wheelbase, camera_mount, range_mount, servo_range
):
    """Urdf of the Trikebot; mounts [x, y, z, yaw]; servo_range (low, high) rad of the neck."""
    urdf = Urdf('trikebot')
    axle_z = WHEEL_RADIUS
    body_z = axle_z + BODY_HEIGHT / 2
    urdf.link(
        base_frame,
        box(
            (wheelbase + 0.1, BODY_WIDTH, BODY_HEIGHT), (wheelbase / 2, 0, body_z), colour='accent'
        ),
        box(
            (0.08, 0.13, 0.015),
            (wheelbase / 2, 0, body_z + BODY_HEIGHT / 2 + 0.01),
            colour='light',
        ),  # the iPaq, lying flat
        *(
            cylinder(WHEEL_RADIUS, WHEEL_WIDTH, (0, y, axle_z), (math.pi / 2, 0, 0), 'dark')
            for y in (BODY_WIDTH / 2 + WHEEL_WIDTH, -BODY_WIDTH / 2 - WHEEL_WIDTH)
        ),
        cylinder(WHEEL_RADIUS, WHEEL_WIDTH, (wheelbase, 0, axle_z), (math.pi / 2, 0, 0), 'dark'),
    )  # steered front wheel
    x, y, z, yaw = camera_mount
    neck = f'{camera_frame}_pan_link'
    urdf.link(neck, cylinder(0.012, 0.04, (0, 0, -0.02), colour='dark'))
    urdf.link(
        camera_frame,
        box((0.03, 0.055, 0.045), colour='body'),
        cylinder(0.008, 0.015, (0.02, 0, 0), (0, math.pi / 2, 0), 'dark'),
    )  # the lens
    urdf.joint(
        PAN_JOINT,
        base_frame,
        neck,
        (x, y, z),
        (0, 0, yaw),
        kind='revolute',
        axis=(0, 0, 1),
        limits=servo_range,
    )
    urdf.joint(
        TILT_JOINT, neck, camera_frame, kind='revolute', axis=(0, -1, 0), limits=servo_range
    )  # about -y: positive looks up
    urdf.link(range_frame, box((0.015, 0.04, 0.015), colour='sensor'))
    x, y, z, yaw = range_mount
    urdf.fixed(base_frame, range_frame, (x, y, z), (0, 0, yaw))
    return urdf
