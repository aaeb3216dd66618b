"""The dogs as data: joints, R-CODE motion IDs and variables, audio and camera, per model.

No sockets, threads or rclpy. Every difference between an ERS-210, an ERS-220 and an ERS-7 that
the driver, the robot description or the emulator needs lives in these tables, so that adding
a model is data, not code. Joint limits are degrees as the dog's software states them; a joint's
`role` says where it sits in the body (description.py builds the URDF from roles), its `name`
is what `joint_states` and the URDF call it, `urbi` and `rcode` what each protocol calls it.

Naming: the ERS-2xx joints keep the R-CODE variable names the driver has always published
(`Head_Tilt`, `LFLeg_1`); the ERS-7, whose joints R-CODE 2.0 does not expose, is named after its
URBI devices (`neck`, `legLF1`).
"""

import dataclasses
import math

PROTOCOLS = ('rcodeplus', 'urbi', 'rcode')


@dataclasses.dataclass(frozen=True)
class Joint:
    name: str  # joint_states / URDF name
    role: str  # place in the body: tilt, nod, pan, roll, mouth, tail_pan, tail_tilt, LF1..RR3
    lower: float  # degrees
    upper: float
    urbi: str | None = None  # the URBI device
    rcode: str | None = None  # the R-CODE variable (integer degrees), when R-CODE has one

    @property
    def limits(self):
        return math.radians(self.lower), math.radians(self.upper)

    def clamp(self, degrees):
        """degrees within the joint's limits, and whether it had to be moved."""
        clamped = min(max(degrees, self.lower), self.upper)
        return clamped, clamped != degrees


@dataclasses.dataclass(frozen=True)
class AudioFormat:
    rate: int  # Hz
    bits: int
    channels: int

    @property
    def bytes_per_second(self):
        return self.rate * self.bits // 8 * self.channels


@dataclasses.dataclass(frozen=True)
class Model:
    name: str
    aibo_type: int  # R-CODE's AiboType
    protocols: tuple  # the sticks that run on this dog
    joints: tuple
    switches: tuple  # on/off actuators (the ERS-7's ears)
    motion_ids: dict  # R-CODE motion name → ID
    rcode_variables: tuple  # system variables only this model has
    microphone: AudioFormat
    speaker: AudioFormat
    camera: tuple  # (width, height) at full resolution
    field_of_view: tuple  # (horizontal, vertical) degrees
    leds: tuple  # URBI LED devices
    distance_sensors: dict  # URBI device → (min, max) in cm
    touch_sensors: tuple  # URBI devices reported as events

    def joint(self, name):
        """The joint by any of its names (joint_states, URBI, R-CODE); KeyError when none."""
        for joint in self.joints:
            if name in (joint.name, joint.urbi, joint.rcode):
                return joint
        raise KeyError(f'{self.name} has no joint {name!r}')

    def by_role(self):
        return {joint.role: joint for joint in self.joints}


# R-CODE motion IDs (PLAY:MWCID); the ERS-7 renumbered its postures and head moves
MOTION_IDS_2XX = {
    'SIT': 270,
    'STAND': 271,
    'LIE': 272,
    'MOVE_HEAD': 1008,
    'SEARCH': 1001,
    'WALK': 622,
    'TURN': 632,
    'KICK': 680,
    'TOUCH': 692,
}
MOTION_IDS_ERS7 = {
    **MOTION_IDS_2XX,
    'SIT': 2001,
    'STAND': 2000,
    'LIE': 2002,
    'MOVE_HEAD': 1054,
    'SEARCH': 1202,
}
RCODE_VARIABLES_2XX = (
    'Head_Roll',
    'Body_Temp',
    'Head_Pat',
    'Head_Hit',
    'Head_OFF',
    'Back_ON',
    'Back_OFF',
    'Back_LONG',
    'Jaw_OFF',
    'Jaw_LONG',
)
RCODE_VARIABLES_ERS7 = (
    'AiboType',
    'Head_Tilt_2',
    'BackF_ON',
    'BackM_ON',
    'BackR_ON',
    'BackFR_LONG',
    'BackF_Jaw_LONG',
    'Back_Pat',
    'BackR_Hit',
    'Distance_Cliff',
    'Face',
    'AIBONE',
    'AIBONE_H',
    'AIBONE_V',
    'AIBONE_D',
    'Temp_Hi',
    'Brightness',
)


def _legs_2xx():
    """R-CODE names LF, LR, RF, RR; URBI names the hind legs LH, RH."""
    limits = ((-120, 120), (-14, 92), (-30, 150))
    return tuple(
        Joint(
            f'{leg}Leg_{n}',
            f'{leg}{n}',
            lo,
            hi,
            f'leg{leg[0]}{"H" if leg[1] == "R" else "F"}{n}',
            f'{leg}Leg_{n}',
        )
        for leg in ('LF', 'LR', 'RF', 'RR')
        for n, (lo, hi) in enumerate(limits, start=1)
    )


def _legs_ers7():
    """J1 is mirrored left and right: about [-120, 134] left, [-134, 120] right."""
    joints = []
    for side, hind, role_leg in (
        ('L', 'F', 'LF'),
        ('L', 'H', 'LR'),
        ('R', 'F', 'RF'),
        ('R', 'H', 'RR'),
    ):
        j1 = (-120, 134) if side == 'L' else (-134, 120)
        for n, (lo, hi) in enumerate((j1, (-9, 91), (-29, 119)), start=1):
            name = f'leg{side}{hind}{n}'
            joints.append(Joint(name, f'{role_leg}{n}', lo, hi, name))
    return tuple(joints)


_HEAD_2XX = (
    Joint('Head_Tilt', 'tilt', -85, 46, 'headTilt', 'Head_Tilt'),
    Joint('Head_Pan', 'pan', -92.6, 92.6, 'headPan', 'Head_Pan'),
    Joint('Head_Roll', 'roll', -32, 32, 'headRoll', 'Head_Roll'),
)
ERS210 = Model(
    name='ers210',
    aibo_type=210,
    protocols=('rcodeplus', 'urbi', 'rcode'),
    joints=(
        *_HEAD_2XX,
        Joint('Mouth', 'mouth', -50, 0, 'mouth', 'Mouth'),
        Joint('Tail_Pan', 'tail_pan', -25, 25, 'tailPan', 'Tail_Pan'),
        Joint('Tail_Tilt', 'tail_tilt', -25, 25, 'tailTilt', 'Tail_Tilt'),
        *_legs_2xx(),
    ),
    switches=(),
    motion_ids=MOTION_IDS_2XX,
    rcode_variables=RCODE_VARIABLES_2XX,
    microphone=AudioFormat(16000, 16, 2),
    speaker=AudioFormat(8000, 8, 1),
    camera=(176, 144),
    field_of_view=(57.6, 47.8),
    leds=('ledF1', 'ledF2', 'ledF3', 'ledF4', 'ledF5', 'ledF6', 'ledF7', 'ledT'),
    distance_sensors={'distance': (10.0, 90.0)},
    touch_sensors=(
        'headSensorF',
        'headSensorB',
        'backSensor',
        'chinSensor',
        'pawLF',
        'pawLH',
        'pawRF',
        'pawRH',
    ),
)
ERS220 = dataclasses.replace(
    ERS210,
    name='ers220',
    aibo_type=220,
    protocols=('rcodeplus', 'rcode'),  # the URBI stick names the 210 and the 7 only
    joints=(
        *_HEAD_2XX,
        *_legs_2xx(),
    ),
)
# ERS-31x: ranges not in the references; the ERS-210's head ranges are used (assumption)
ERS31X = dataclasses.replace(
    ERS210,
    name='ers31x',
    aibo_type=310,
    protocols=('rcodeplus',),
    joints=(
        Joint('Head_Tilt', 'tilt', -85, 46, rcode='Head_Tilt'),
        Joint('Head_Tilt_2', 'nod', -85, 46, rcode='Head_Tilt_2'),
        Joint('Head_Pan', 'pan', -92.6, 92.6, rcode='Head_Pan'),
        *_legs_2xx(),
    ),
)
ERS7 = Model(
    name='ers7',
    aibo_type=7,
    protocols=('urbi', 'rcode'),  # no RCodePlus build for the ERS-7 is known
    joints=(
        Joint('neck', 'tilt', -79, 2, 'neck'),
        Joint('headTilt', 'nod', -16, 44, 'headTilt'),
        Joint('headPan', 'pan', -91, 91, 'headPan'),
        Joint('mouth', 'mouth', -58, -3, 'mouth'),
        Joint('tailPan', 'tail_pan', -59, 59, 'tailPan'),
        Joint('tailTilt', 'tail_tilt', 2, 63, 'tailTilt'),
        *_legs_ers7(),
    ),
    switches=('earL', 'earR'),
    motion_ids=MOTION_IDS_ERS7,
    rcode_variables=RCODE_VARIABLES_ERS7,
    microphone=AudioFormat(16000, 16, 2),
    speaker=AudioFormat(16000, 16, 1),
    camera=(208, 160),
    field_of_view=(56.9, 45.2),
    leds=(
        *(f'ledF{n}' for n in range(1, 15)),
        'ledBFC',
        'ledBFW',
        'ledBMC',
        'ledBMW',
        'ledBRC',
        'ledBRW',
        'ledHC',
        'ledHW',
        'modeR',
        'modeG',
        'modeB',
        'ledWIFI',
    ),
    distance_sensors={
        'distanceNear': (5.7, 50.0),
        'distance': (20.0, 150.0),
        'distanceChest': (19.0, 90.0),
    },
    touch_sensors=(
        'pawLF',
        'pawLH',
        'pawRF',
        'pawRH',
        'chinSensor',
        'headSensor',
        'backSensorF',
        'backSensorM',
        'backSensorR',
    ),
)
MODELS = {model.name: model for model in (ERS210, ERS220, ERS31X, ERS7)}


def valid_combinations():
    return [f'{m.name}/{protocol}' for m in MODELS.values() for protocol in m.protocols]


def check_combination(model, protocol, supported=PROTOCOLS):
    """The Model for model over protocol, or ValueError naming every valid combination.

    supported: the protocols the caller can speak (a combination a dog runs but the caller
    does not serve is refused as well)."""
    valid = [c for c in valid_combinations() if c.split('/')[1] in supported]
    known = MODELS.get(model)
    if known is None or protocol not in known.protocols or protocol not in supported:
        raise ValueError(
            f'model {model!r} over protocol {protocol!r} is not supported; '
            f'valid: {", ".join(valid)}'
        )
    return known
