"""Robot models: conversion factors and geometry per SYNC2 subclass (spec §2.7).

Data only. The client picks a model from the subclass the robot announces;
each factor can be overridden by a node parameter.
"""
import dataclasses
import math
from typing import Tuple

# sonar discs: (x mm, y mm, heading deg)
_P2_FRONT = ((69, 136, 90), (114, 119, 50), (148, 78, 30), (166, 27, 10), (166, -27, -10),
             (148, -78, -30), (114, -119, -50), (69, -136, -90))
_P2_REAR = ((-157, -136, -90), (-203, -119, -130), (-237, -78, -150), (-255, -27, -170),
            (-255, 27, 170), (-237, 78, 150), (-203, 119, 130), (-157, 136, 90))
# PeopleBot's second front ring (8-15) at x = -20, headings of the first ring
_PB_UPPER = tuple((-20, y, th) for (_, y, th) in _P2_FRONT)
_AMIGO = ((76, 100, 90), (125, 75, 41), (150, 30, 15), (150, -30, -15), (125, -75, -41),
          (76, -100, -90), (-140, -58, -145), (-140, 58, 145))


@dataclasses.dataclass(frozen=True)
class RobotModel:
    subclass: str
    description: str
    dist_conv: float        # mm per position unit
    vel_conv: float         # mm/s per velocity unit
    range_conv: float       # mm per sonar unit
    diff_conv: float        # (R-L) velocity units → rad/s, ARIA's DiffConvFactor
    vel2_divisor: float     # mm/s per VEL2 byte unit
    radius: float           # mm
    width: float            # mm
    length: float           # mm
    max_velocity: float     # mm/s
    sonar: Tuple[Tuple[float, float, float], ...] = ()
    front_bumpers: int = 0
    rear_bumpers: int = 0
    angle_conv: float = 2 * math.pi / 4096   # rad per heading unit (4096 per turn)

    def with_overrides(self, **factors):
        """A copy with the given factors replaced; None or a value <= 0 keeps the model's."""
        changes = {k: v for k, v in factors.items() if v is not None and v > 0}
        return dataclasses.replace(self, **changes)


def _p2(subclass, description, dist, range_conv=0.268, diff=0.0056, big=False):
    if big:  # the AT/IT chassis
        return RobotModel(subclass, description, dist, 1.0, range_conv, diff, 20, 500, 505, 626,
                          1200, _P2_FRONT + _P2_REAR)
    return RobotModel(subclass, description, dist, 1.0, range_conv, diff, 20, 250, 425, 511, 2200,
                      _P2_FRONT + _P2_REAR)


MODELS = {m.subclass: m for m in (
    _p2('p2dx', 'Pioneer 2-DX', 0.840),
    _p2('p2de', 'Pioneer 2-DE', 0.969),
    _p2('p2df', 'Pioneer 2-DXf', 0.485, diff=0.0060),
    _p2('p2d8', 'Pioneer 2-DX8', 0.485, range_conv=1.0),
    _p2('p2ce', 'Pioneer 2-CE', 0.826, diff=0.0057),
    _p2('p2at', 'Pioneer 2-AT', 1.32, diff=0.0034, big=True),
    _p2('p2at8', 'Pioneer 2-AT8', 1.32, range_conv=1.0, diff=0.0034, big=True),
    _p2('p2it', 'Pioneer 2-IT', 1.136, diff=0.0032, big=True),
    RobotModel('p2pb', 'PeopleBot (P2)', 0.424, 1.0, 0.268, 0.0056, 20, 300, 425, 513, 2200,
               _P2_FRONT + _PB_UPPER + _P2_REAR, 5, 5),
    RobotModel('p2pp', 'Performance PeopleBot', 0.485, 1.0, 0.268, 0.0060, 20, 300, 425, 513, 2200,
               _P2_FRONT + _PB_UPPER + _P2_REAR, 5, 5),
    # 32 discs, but the spec gives no poses for 24-31: only the known 24 are modelled
    RobotModel('perfpb', 'Performance PeopleBot (32 sonar)', 0.485, 1.0, 1.0, 0.0060, 20, 340, 425,
               513, 2200, _P2_FRONT + _PB_UPPER + _P2_REAR, 5, 5),
    RobotModel('amigo', 'AmigoBot (AmigOS)', 0.5083, 0.6154, 1.0, 0.011, 20, 180, 279, 330, 1000,
               _AMIGO),
    RobotModel('amigo-sh', 'AmigoBot-SH', 1.0, 1.0, 1.0, 0.011, 20, 180, 279, 330, 1000, _AMIGO),
    RobotModel('pion1m', 'Pioneer 1 (PSOS)', 0.05066, 2.5332, 0.1734, 0.00333, 4, 220, 400, 500,
               400, angle_conv=0.0061359),
)}

DEFAULT_MODEL = 'p2dx'
# the RobotModel fields a user may override (node parameters <name>_factor)
FACTOR_NAMES = ('dist_conv', 'vel_conv', 'range_conv', 'diff_conv', 'vel2_divisor', 'angle_conv')


def find_model(subclass):
    """(model, known) for a SYNC2 subclass, case-insensitively; unknown → the p2dx entry."""
    model = MODELS.get(subclass.strip().lower())
    if model is None:
        return MODELS[DEFAULT_MODEL], False
    return model, True
