"""The URDF of the Pleo: its 14 monitor joints (protocol.JOINTS: names and limits, firmware
1.1's joint table) on a body drawn from boxes.

Sizes are estimates from the Pleo's outer size (about 53 cm nose to tail, 15 cm wide, 20 cm
tall); no document gives its link lengths. Axes: the side-to-side joints (torso, neck and
tail horizontal) turn about z, every other joint about y, so a joint angle from joint_states
moves the part the joint table names. base_link lies on the floor under the hips; the
joint names are the driver's joint_states names (with joint_name_prefix).
"""

import math

from legacy_robot_common.robot_model import Urdf, box, sphere

from . import protocol as p

HIP_HEIGHT = 0.13  # m, hips and shoulders above the floor
BODY = (0.16, 0.10, 0.09)


def _limits(name):
    joint = p.JOINT_BY_NAME[name]
    return math.radians(joint.low), math.radians(joint.high)


def from_parameters(parameters):
    """The URDF from the driver's parameter values: what the driver publishes, and what a
    launch hands robot_state_publisher."""
    return describe(
        parameters.get('frame_id', 'base_link'), parameters.get('joint_name_prefix', '')
    )


def describe(base_frame, joint_prefix=''):
    """Urdf of the Pleo in its zero pose; links named after the parts they draw."""
    urdf = Urdf('pleo')

    def joint(name, parent, child, xyz, axis):
        urdf.joint(
            joint_prefix + name,
            parent,
            child,
            xyz,
            kind='revolute',
            axis=axis,
            limits=_limits(name),
        )

    urdf.link(base_frame, box(BODY, (0, 0, HIP_HEIGHT), colour='green'))
    urdf.link('front_body', box((0.12, 0.095, 0.085), (0.06, 0, 0), colour='green'))
    joint('torso', base_frame, 'front_body', (0.08, 0, HIP_HEIGHT), (0, 0, 1))
    urdf.link('neck', box((0.09, 0.05, 0.05), (0.045, 0, 0.02), (0, -0.5, 0), 'green'))
    joint('neck_horizontal', 'front_body', 'neck_base', (0.12, 0, 0.02), (0, 0, 1))
    joint('neck_vertical', 'neck_base', 'neck', (0, 0, 0), (0, 1, 0))
    urdf.link(
        'head',
        box((0.10, 0.065, 0.06), (0.05, 0, 0.01), colour='green'),
        sphere(0.008, (0.05, 0.03, 0.03), 'dark'),
        sphere(0.008, (0.05, -0.03, 0.03), 'dark'),
    )
    urdf.fixed('neck', 'head', (0.08, 0, 0.05))
    urdf.link('jaw', box((0.08, 0.05, 0.015), (0.04, 0, 0), colour='light'))
    joint('head', 'head', 'jaw', (0.02, 0, -0.02), (0, 1, 0))
    joint('tail_horizontal', base_frame, 'tail_base', (-BODY[0] / 2, 0, HIP_HEIGHT), (0, 0, 1))
    urdf.link('tail', box((0.16, 0.04, 0.04), (-0.08, 0, 0), (0, -0.15, 0), 'green'))
    joint('tail_vertical', 'tail_base', 'tail', (0, 0, 0), (0, 1, 0))
    for side, y in (('left', 1), ('right', -1)):
        _leg(
            joint,
            urdf,
            'front_body',
            f'{side}_shoulder',
            f'{side}_elbow',
            (0.07, y * 0.055, -0.01),
            f'{side}_upper_arm',
            f'{side}_forearm',
        )
        _leg(
            joint,
            urdf,
            base_frame,
            f'{side}_hip',
            f'{side}_knee',
            (-0.03, y * 0.06, HIP_HEIGHT - 0.01),
            f'{side}_thigh',
            f'{side}_shin',
        )
    return urdf


def _leg(joint, urdf, parent, upper_joint, lower_joint, xyz, upper, lower):
    """Two leg segments hanging down; the lower ends on the floor in the zero pose."""
    length = (HIP_HEIGHT - 0.01) / 2
    urdf.link(upper, box((0.035, 0.03, length), (0, 0, -length / 2), colour='green'))
    urdf.link(
        lower,
        box((0.03, 0.028, length), (0, 0, -length / 2), colour='green'),
        box((0.05, 0.035, 0.012), (0.01, 0, -length), colour='dark'),
    )  # the foot
    joint(upper_joint, parent, upper, xyz, (0, 1, 0))
    joint(lower_joint, upper, lower, (0, 0, -length), (0, 1, 0))
