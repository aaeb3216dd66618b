"""The URDF of an AIBO ERS-210/220/31x or ERS-7: body, head (tilt, nod, pan, roll), mouth, tail,
three joints per leg, the camera in the nose and the IR range finder beside it.

Joints come from the model tables (models.py): each joint's role places it in the body and its
name is what joint_states carries (the R-CODE variables `Head_Tilt`, `LFLeg_1`, … on the 2xx,
the URBI devices `neck`, `legLF1`, … on the ERS-7), so the driver's joint_states move this
model; the ERS-7's tilt is its `neck` and its nod its `headTilt`. Signs follow R-CODE: head
pan and tail pan positive to the left, tilts positive up, `_1` positive swings the paw
forward, `_2` positive spreads the leg outwards, `_3` positive bends the knee (the ERS-7's legs
are taken to follow the same signs: an assumption). Sizes are estimates from the
ERS-210's outer size (about 27 × 15 × 27 cm standing, body about 19 × 11 × 10 cm); the 220
has the same frame under a different shell (no mouth, no tail joints).
"""

import math

from legacy_robot_common.robot_model import Urdf, box, cylinder, sphere

from . import models, rcode

# The body → head → camera chain with every joint at 0: [x, y, z, roll, pitch, yaw] in m and
# rad. Estimates (the neck pivot above the front of the trunk, the camera in the nose).
# Parameters head_mount and camera_mount.
DEFAULT_MOUNTS = {
    'head': [0.07, 0.0, 0.08, 0.0, 0.0, 0.0],
    'camera': [0.07, 0.0, 0.01, 0.0, 0.0, 0.0],
}
DEFAULT_FRAMES = {'base': 'aibo_base', 'head': 'aibo_head', 'camera': 'aibo_camera'}
IR_MOUNT = (0.075, 0.0, -0.01)  # the range finder under the camera, looking forward
# ERS-7: the chest range finder under the front of the trunk, looking forward and down (estimate)
CHEST_IR_MOUNT = ((0.1, 0.0, -0.03), (0.0, 0.6, 0.0))
BODY = (0.19, 0.11, 0.10)
THIGH, SHIN = 0.06, 0.065  # m: hip to knee, knee to paw centre
LEG_X, LEG_Y = 0.065, 0.045
PAW = 0.018
# body centre above the floor standing (the emulator's stand pose: knees bent 30°)
BASE_HEIGHT = round(BODY[2] / 2 + THIGH + SHIN * math.cos(math.radians(30)) + PAW, 3)


def ir_frame(head_frame):
    return f'{head_frame}_ir'


def chest_ir_frame(base_frame):
    return f'{base_frame}_chest_ir'


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
    model = parameters.get('model', 'ers210')
    ir = parameters.get('ir_frame_id') or ir_frame(frames['head'])
    return describe(frames['base'], frames['head'], frames['camera'], mounts, model, ir)


def describe(base_frame, head_frame, camera_frame, mounts=None, model='ers210', ir=None):
    """Urdf of the dog; mounts {'head': [x, y, z, roll, pitch, yaw], 'camera': [...]}."""
    mounts = mounts or DEFAULT_MOUNTS
    joints = models.MODELS[model].by_role()
    urdf = Urdf(f'aibo_{model}')
    prefix = base_frame.rsplit('_', 1)[0] if '_' in base_frame else base_frame

    def joint(role, parent, child, xyz=(0, 0, 0), rpy=(0, 0, 0), axis=(0, 0, 1)):
        if role not in joints:
            urdf.joint(f'{child}_joint', parent, child, xyz, rpy)  # this model has no such joint
            return
        found = joints[role]
        urdf.joint(found.name, parent, child, xyz, rpy, 'revolute', axis, found.limits)

    urdf.link(base_frame, box(BODY, colour='light'))
    # the head: tilt at the neck, then pan, then roll; the head frame is the rolled one
    neck, turn = f'{prefix}_neck', f'{prefix}_head_pan'
    urdf.link(neck, cylinder(0.015, 0.04, rpy=(math.pi / 2, 0, 0), colour='dark'))
    joint('tilt', base_frame, neck, mounts['head'][:3], mounts['head'][3:], (0, -1, 0))
    if 'nod' in joints:  # ERS-31x and ERS-7: a second tilt (nod) joint
        nod = f'{prefix}_head_nod'
        joint('nod', neck, nod, axis=(0, -1, 0))
        neck = nod
    joint('pan', neck, turn)
    joint('roll', turn, head_frame, axis=(1, 0, 0))
    urdf.link(
        head_frame,
        box((0.09, 0.08, 0.075), (0.02, 0, 0), colour='light'),
        box((0.02, 0.025, 0.05), (0.0, 0.045, 0.03), (0.3, 0, 0), 'body'),  # ears
        box((0.02, 0.025, 0.05), (0.0, -0.045, 0.03), (-0.3, 0, 0), 'body'),
    )
    if 'mouth' in joints:
        mouth = f'{prefix}_mouth'
        urdf.link(mouth, box((0.05, 0.04, 0.012), (0.025, 0, 0), colour='dark'))
        joint('mouth', head_frame, mouth, (0.04, 0, -0.03), axis=(0, -1, 0))
    urdf.link(camera_frame, cylinder(0.006, 0.01, rpy=(0, math.pi / 2, 0), colour='dark'))
    urdf.fixed(head_frame, camera_frame, mounts['camera'][:3], mounts['camera'][3:])
    ir = ir or ir_frame(head_frame)
    urdf.link(ir, sphere(0.004, colour='accent'))
    urdf.fixed(head_frame, ir, IR_MOUNT)
    if 'distanceChest' in models.MODELS[model].distance_sensors:
        chest = chest_ir_frame(base_frame)
        urdf.link(chest, sphere(0.004, colour='accent'))
        urdf.fixed(base_frame, chest, *CHEST_IR_MOUNT)
    # the tail: pan, then tilt
    if 'tail_pan' in joints:
        tail_base, tail = f'{prefix}_tail_base', f'{prefix}_tail'
        urdf.link(tail, cylinder(0.008, 0.06, (-0.028, 0, 0.01), (0, -1.2, 0), 'body'))
        joint('tail_pan', base_frame, tail_base, (-BODY[0] / 2, 0, 0.03))
        joint('tail_tilt', tail_base, tail, axis=(0, -1, 0))
    else:
        urdf.link(base_frame, cylinder(0.008, 0.06, (-BODY[0] / 2 - 0.02, 0, 0.04), (0, -0.8, 0)))
    for leg in rcode.LEGS:
        x = LEG_X if leg[1] == 'F' else -LEG_X
        side = 1 if leg[0] == 'L' else -1
        hip, thigh, shin = (f'{prefix}_{leg.lower()}_{part}' for part in ('hip', 'thigh', 'shin'))
        urdf.link(thigh, box((0.035, 0.03, THIGH), (0, 0, -THIGH / 2), colour='light'))
        urdf.link(
            shin,
            box((0.03, 0.025, SHIN), (0, 0, -SHIN / 2), colour='light'),
            sphere(PAW, (0, 0, -SHIN), 'body'),
        )
        joint(f'{leg}1', base_frame, hip, (x, side * LEG_Y, -BODY[2] / 2), axis=(0, -1, 0))
        joint(f'{leg}2', hip, thigh, axis=(side, 0, 0))
        # front knees bend the paw backwards, hind knees forwards
        knee_axis = (0, 1, 0) if leg[1] == 'F' else (0, -1, 0)
        joint(f'{leg}3', thigh, shin, (0, 0, -THIGH), axis=knee_axis)
    return urdf
