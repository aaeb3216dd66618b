"""Robot models: conversion factors and geometry per SYNC2 subclass (docs/protocols/p2os.md §2.7).

Data only. The client picks a model from the subclass the robot announces;
each factor can be overridden by a node parameter.
"""

import dataclasses
import difflib
import math
from typing import Tuple


# sonar discs: (x mm, y mm, heading deg), from each model's ARIA parameter file
def _mirrored(half):
    """A ring from its left end to the front; the right half mirrors it (y, heading negated)."""
    return tuple(half) + tuple((x, -y, -th) for (x, y, th) in reversed(half))


def _rear_ring(half):
    """A rear ring given from its left end to the back; ARIA numbers it from the right end."""
    return tuple((x, -y, -th) for (x, y, th) in _mirrored(half))


_P2_FRONT = _mirrored(((69, 136, 90), (114, 119, 50), (148, 78, 30), (166, 27, 10)))
_P2_REAR = _rear_ring(((-157, 136, 90), (-203, 119, 130), (-237, 78, 150), (-255, 27, 170)))
# PeopleBot: the upper front ring (P2 sonar 8-15) and the upper rear ring (PeopleBot-SH 24-31)
_PB_UPPER = _mirrored(((-20, 136, 90), (24, 119, 50), (58, 78, 30), (77, 27, 10)))
_PB_UPPER_REAR = _rear_ring(((-191, 136, 90), (-237, 119, 130), (-271, 78, 150), (-290, 27, 170)))
_P3AT_FRONT = _mirrored(((147, 136, 90), (193, 119, 50), (227, 79, 30), (245, 27, 10)))
_P3AT_REAR = _rear_ring(((-144, 136, 90), (-189, 119, 130), (-223, 79, 150), (-241, 27, 170)))
_PATROL = _mirrored(((83, 229, 90), (169, 202, 55), (232, 134, 30), (263, 46, 10))) + _rear_ring(
    ((-83, 229, 90), (-169, 202, 125), (-232, 134, 150), (-263, 46, 170))
)
# PowerBot: 32 numbers, of which 7, 15, 23 and 31 are no disc (ARIA writes them at 0, 0, -180)
_NO_DISC = (0, 0, -180)
_POWERBOT = (
    (152, 278, 90),
    (200, 267, 65),
    (241, 238, 45),
    (274, 200, 35),
    (300, 153, 25),
    (320, 96, 15),
    (332, 33, 5),
    _NO_DISC,
    (332, -33, -5),
    (320, -96, -15),
    (300, -153, -25),
    (274, -200, -35),
    (241, -238, -45),
    (200, -267, -65),
    (152, -278, -90),
    _NO_DISC,
    (-298, -278, -90),
    (-347, -267, -115),
    (-388, -238, -135),
    (-420, -200, -145),
    (-447, -153, -155),
    (-467, -96, -165),
    (-478, -33, -175),
    _NO_DISC,
    (-478, 33, 175),
    (-467, 96, 165),
    (-447, 153, 155),
    (-420, 200, 145),
    (-388, 238, 135),
    (-347, 267, 115),
    (-298, 278, 90),
    _NO_DISC,
)
_PIONEER_LX = ((331, 61, 10), (331, -61, -10), (-317, 90, 164), (-317, -90, -164))
_AMIGO = (
    (76, 100, 90),
    (125, 75, 41),
    (150, 30, 15),
    (150, -30, -15),
    (125, -75, -41),
    (76, -100, -90),
    (-140, -58, -145),
    (-140, 58, 145),
)


@dataclasses.dataclass(frozen=True)
class RobotModel:
    subclass: str
    description: str
    dist_conv: float  # mm per position unit
    vel_conv: float  # mm/s per velocity unit
    range_conv: float  # mm per sonar unit
    diff_conv: float  # (R-L) velocity units → rad/s, ARIA's DiffConvFactor
    vel2_divisor: float  # mm/s per VEL2 byte unit
    radius: float  # mm
    width: float  # mm
    length: float  # mm
    max_velocity: float  # mm/s
    sonar: Tuple[Tuple[float, float, float], ...] = ()
    front_bumpers: int = 0
    rear_bumpers: int = 0
    angle_conv: float = 2 * math.pi / 4096  # rad per heading unit (4096 per turn)

    def with_overrides(self, **factors):
        """A copy with the given factors replaced; None or a value <= 0 keeps the model's."""
        changes = {k: v for k, v in factors.items() if v is not None and v > 0}
        return dataclasses.replace(self, **changes)


def _p2(subclass, description, dist, range_conv=0.268, diff=0.0056, big=False):
    # radius, width, length, max velocity: the AT/IT chassis (big) or the DX one
    chassis = (500, 505, 626, 1200) if big else (250, 425, 511, 2200)
    return RobotModel(
        subclass, description, dist, 1.0, range_conv, diff, 20, *chassis, _P2_FRONT + _P2_REAR
    )


def _peoplebot(subclass, description, dist, diff, range_conv=0.268, radius=300):
    return RobotModel(
        subclass,
        description,
        dist,
        1.0,
        range_conv,
        diff,
        20,
        radius,
        425,
        513,
        2200,
        _P2_FRONT + _PB_UPPER + _P2_REAR,
        5,
        5,
    )


def _p3dx(subclass, description, dist):
    return RobotModel(
        subclass,
        description,
        dist,
        1.0,
        1.0,
        0.0056,
        20,
        250,
        425,
        511,
        2200,
        _P2_FRONT + _P2_REAR,
    )


def _p3at(subclass, description, dist, width=505):
    return RobotModel(
        subclass,
        description,
        dist,
        1.0,
        1.0,
        0.0034,
        20,
        500,
        width,
        626,
        1200,
        _P3AT_FRONT + _P3AT_REAR,
    )


def _powerbot(subclass, description, dist):
    return RobotModel(
        subclass, description, dist, 1.0, 1.0, 0.00373, 20, 550, 680, 911, 2000, _POWERBOT, 7, 5
    )


def _patrol(subclass, description):
    return RobotModel(
        subclass, description, 1.0, 1.0, 1.0, 0.0056, 20, 250, 425, 510, 2200, _PATROL, 6, 6
    )


# Keys are lower case: SYNC2 subclasses arrive in any case (docs/protocols/p2os.md §2.7).
MODELS = {
    m.subclass.lower(): m
    for m in (
        # Pioneer 2 family (P2OS)
        _p2('p2dx', 'Pioneer 2-DX', 0.840),
        _p2('p2de', 'Pioneer 2-DE', 0.969),
        _p2('p2df', 'Pioneer 2-DXf', 0.485, diff=0.0060),
        _p2('p2d8', 'Pioneer 2-DX8', 0.485, range_conv=1.0),
        _p2('p2ce', 'Pioneer 2-CE', 0.826, diff=0.0057),
        _p2('p2at', 'Pioneer 2-AT', 1.32, diff=0.0034, big=True),
        _p2('p2at8', 'Pioneer 2-AT8', 1.32, range_conv=1.0, diff=0.0034, big=True),
        _p2('p2it', 'Pioneer 2-IT', 1.136, diff=0.0032, big=True),
        _peoplebot('p2pb', 'PeopleBot (P2)', 0.424, 0.0056),
        _peoplebot('p2pp', 'Performance PeopleBot', 0.485, 0.0060),
        # 32 discs, but no source gives poses for 24-31: only the known 24 are modelled
        _peoplebot(
            'perfpb', 'Performance PeopleBot (32 sonar)', 0.485, 0.0060, range_conv=1.0, radius=340
        ),
        RobotModel(
            'amigo',
            'AmigoBot (AmigOS)',
            0.5083,
            0.6154,
            1.0,
            0.011,
            20,
            180,
            279,
            330,
            1000,
            _AMIGO,
        ),
        RobotModel(
            'amigo-sh', 'AmigoBot-SH', 1.0, 1.0, 1.0, 0.011, 20, 180, 279, 330, 1000, _AMIGO
        ),
        RobotModel(
            'pion1m',
            'Pioneer 1 (PSOS)',
            0.05066,
            2.5332,
            0.1734,
            0.00333,
            4,
            220,
            400,
            500,
            400,
            angle_conv=0.0061359,
        ),
        # Pioneer 3 and later (ARCOS / uARCS)
        _p3dx('p3dx', 'Pioneer 3-DX (H8)', 0.485),
        _p3dx('p3dx-sh', 'Pioneer 3-DX (SH)', 1.0),
        _p3dx('p2d8+', 'Pioneer 2-DX8 Plus', 0.485),
        _p3at('p3at', 'Pioneer 3-AT (H8)', 0.465),
        _p3at('p3at-sh', 'Pioneer 3-AT (SH)', 1.0),
        _p3at('p3atiw-sh', 'Pioneer 3-AT IW (SH)', 1.0, width=490),
        _p3at('p2at8+', 'Pioneer 2-AT8 Plus', 0.465),
        RobotModel(
            'peoplebot-sh',
            'PeopleBot (SH)',
            1.0,
            1.0,
            1.0,
            0.0060,
            20,
            340,
            425,
            513,
            2200,
            _P2_FRONT + _P2_REAR + _PB_UPPER + _PB_UPPER_REAR,
            5,
            5,
        ),
        RobotModel(
            'perfpb+',
            'Performance PeopleBot Plus',
            0.485,
            1.0,
            1.0,
            0.0060,
            20,
            340,
            425,
            511,
            2200,
            _P2_FRONT + _PB_UPPER + _P2_REAR + _PB_UPPER_REAR,
            5,
            5,
        ),
        _powerbot('powerbot', 'PowerBot (H8)', 0.5813),
        _powerbot('powerbot-sh', 'PowerBot (SH)', 1.0),
        _patrol('patrolbot-sh', 'PatrolBot (SH)'),
        _patrol('researchPB', 'Research PeopleBot'),
        RobotModel(
            'pioneer-lx',
            'Pioneer LX',
            1.0,
            1.0,
            1.0,
            0.0056,
            20,
            348,
            500,
            696,
            2500,
            _PIONEER_LX,
            3,
            3,
        ),
    )
}

DEFAULT_MODEL = 'p2dx'
# the RobotModel fields a user may override (node parameters <name>_factor)
FACTOR_NAMES = ('dist_conv', 'vel_conv', 'range_conv', 'diff_conv', 'vel2_divisor', 'angle_conv')
# ARIA's laser-equipped variants carry the base robot's factors (p3dx-sh-lms1xx → p3dx-sh)
LASER_SUFFIXES = ('-lms1xx', '-lms500', '-tim3xx', '-uarcs')


def model_key(subclass):
    """The MODELS key for a SYNC2 subclass or a model parameter: lower case, laser suffix off."""
    key = subclass.strip().lower()
    for suffix in LASER_SUFFIXES:
        if key.endswith(suffix) and key[: -len(suffix)] in MODELS:
            return key[: -len(suffix)]
    return key


def find_model(subclass):
    """(model, known) for a SYNC2 subclass; unknown → the p2dx entry (and known False)."""
    model = MODELS.get(model_key(subclass))
    if model is None:
        return MODELS[DEFAULT_MODEL], False
    return model, True


def closest_models(subclass, count=3):
    """The known subclasses that look most like subclass (for an unknown one's error message)."""
    key = model_key(subclass)
    close = difflib.get_close_matches(key, MODELS, n=count, cutoff=0.0)
    return [MODELS[k].subclass for k in close]


def wheel_units(model, mm_s, rad_s):
    """Body velocity → VEL2 (left, right) signed bytes of Vel2Divisor mm/s, clamped."""
    spin = rad_s / model.diff_conv  # (R - L) / 2 in mm/s
    return tuple(
        max(-127, min(127, int(round((mm_s + side * spin) / model.vel2_divisor))))
        for side in (-1, 1)
    )


# Laser mount (x mm, y mm, heading deg) as ARIA's parameter files give it (LaserX / LaserY,
# docs/protocols/p2os.md §5.5); AMRISim mounts its simulated laser elsewhere on some models
# (p3dx: 0, 0), which the driver's laser_mount parameter can follow. Other models: on the robot
# centre.
LASER_MOUNTS = {'p3dx': (18.0, 0.0, 0.0), 'p3dx-sh': (21.0, 0.0, 0.0), 'p2de': (17.0, 8.0, 0.0)}


def laser_mount(model):
    """The model table's laser mount (x mm, y mm, heading deg) of a RobotModel or subclass."""
    key = model_key(model if isinstance(model, str) else model.subclass)
    return LASER_MOUNTS.get(key, (0.0, 0.0, 0.0))
