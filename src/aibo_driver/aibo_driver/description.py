"""The URDF of an AIBO ERS-210/220: body, legs and tail in their neutral pose, the head, the
camera in its nose.

The dog reports no joint angle over RCodePlus/LifePlus telemetry, so the legs are drawn on
the body link standing straight and the head where head_mount puts it (the driver's
aibo_base → aibo_head → aibo_camera mounts become the model's fixed joints). Sizes are
estimates from the ERS-210's outer size (about 27 × 15 × 27 cm standing, body about
19 × 11 × 10 cm); the 220 has the same frame under a different shell.
"""

import math

from legacy_robot_common.robot_model import Urdf, box, cylinder, sphere

# The body → head → camera chain with the head in its neutral pose (no joint angle is reported):
# [x, y, z, roll, pitch, yaw] in m and rad. Estimates from the ERS-210/220's outer size (about
# 0.27 m long, 0.27 m high standing): the neck pivot above the front of the trunk, the camera
# in the nose. Parameters head_mount and camera_mount.
DEFAULT_MOUNTS = {
    'head': [0.07, 0.0, 0.08, 0.0, 0.0, 0.0],
    'camera': [0.07, 0.0, 0.01, 0.0, 0.0, 0.0],
}
DEFAULT_FRAMES = {'base': 'aibo_base', 'head': 'aibo_head', 'camera': 'aibo_camera'}
BODY = (0.19, 0.11, 0.10)
LEG_LENGTH = 0.12  # body underside to the floor, legs straight
LEG_X, LEG_Y = 0.065, 0.045


def from_parameters(parameters):
    """The URDF from the driver's parameter values (defaults for those not given): what the
    driver publishes, and what a launch hands robot_state_publisher."""
    frames = {
        name: parameters.get(f'{name}_frame_id', default)
        for name, default in DEFAULT_FRAMES.items()
    }
    mounts = {
        name: list(parameters.get(f'{name}_mount', default))
        for name, default in DEFAULT_MOUNTS.items()
    }
    return describe(frames['base'], frames['head'], frames['camera'], mounts)


def describe(base_frame, head_frame, camera_frame, mounts=None):
    """Urdf of the dog; mounts {'head': [x, y, z, roll, pitch, yaw], 'camera': [...]}."""
    mounts = mounts or DEFAULT_MOUNTS
    urdf = Urdf('aibo_ers2x0')
    bottom = -BODY[2] / 2
    legs = [
        box((0.035, 0.03, LEG_LENGTH), (x, y, bottom - LEG_LENGTH / 2), colour='light')
        for x in (LEG_X, -LEG_X)
        for y in (LEG_Y, -LEG_Y)
    ]
    paws = [
        sphere(0.018, (x, y, bottom - LEG_LENGTH + 0.018), 'body')
        for x in (LEG_X, -LEG_X)
        for y in (LEG_Y, -LEG_Y)
    ]
    tail = cylinder(0.008, 0.06, (-BODY[0] / 2 - 0.02, 0, 0.04), (0, -0.8, 0), 'body')
    urdf.link(base_frame, box(BODY, colour='light'), *legs, *paws, tail)
    urdf.link(
        head_frame,
        box((0.09, 0.08, 0.075), (0.02, 0, 0), colour='light'),
        box((0.02, 0.025, 0.05), (0.0, 0.045, 0.03), (0.3, 0, 0), 'body'),  # ears
        box((0.02, 0.025, 0.05), (0.0, -0.045, 0.03), (-0.3, 0, 0), 'body'),
    )
    urdf.link(camera_frame, cylinder(0.006, 0.01, rpy=(0, math.pi / 2, 0), colour='dark'))
    urdf.fixed(base_frame, head_frame, mounts['head'][:3], mounts['head'][3:])
    urdf.fixed(head_frame, camera_frame, mounts['camera'][:3], mounts['camera'][3:])
    return urdf
