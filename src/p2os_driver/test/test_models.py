"""The Pioneer 3 / ARCOS model table (docs/protocols/p2os.md §2.7), its lookup, and every model end
to end: the emulator plays the model, the client identifies it, and odometry and sonar decode to
the simulated robot's own truth."""

import math
import time

import pytest
from helpers import wait_for

from p2os_driver import protocol as p
from p2os_driver.client import P2osClient, Settings
from p2os_driver.emulator import EmulatorOptions, P2osEmulator
from p2os_driver.models import MODELS, closest_models, find_model
from p2os_driver.odometry import Odometry

C = p.Command

# §2.7, Pioneer 3 rows: DistConv, DiffConv, radius/width/length mm, bumpers front/rear;
# sonar count and MaxVelocity from the same parameter files. VelConv, RangeConv 1.0, Vel2Div 20.
P3_TABLE = {
    'p3dx': (0.485, 0.0056, (250, 425, 511), False, 16, 2200),
    'p3dx-sh': (1.0, 0.0056, (250, 425, 511), False, 16, 2200),
    'p3at': (0.465, 0.0034, (500, 505, 626), False, 16, 1200),
    'p3at-sh': (1.0, 0.0034, (500, 505, 626), False, 16, 1200),
    'p3atiw-sh': (1.0, 0.0034, (500, 490, 626), False, 16, 1200),
    'p2d8+': (0.485, 0.0056, (250, 425, 511), False, 16, 2200),
    'p2at8+': (0.465, 0.0034, (500, 505, 626), False, 16, 1200),
    'peoplebot-sh': (1.0, 0.0060, (340, 425, 513), True, 32, 2200),
    'perfpb+': (0.485, 0.0060, (340, 425, 511), True, 32, 2200),
    'powerbot': (0.5813, 0.00373, (550, 680, 911), True, 32, 2000),
    'powerbot-sh': (1.0, 0.00373, (550, 680, 911), True, 32, 2000),
    'patrolbot-sh': (1.0, 0.0056, (250, 425, 510), True, 16, 2200),
    'researchPB': (1.0, 0.0056, (250, 425, 510), True, 16, 2200),
    'pioneer-lx': (1.0, 0.0056, (348, 500, 696), True, 4, 2500),
}


@pytest.mark.parametrize('subclass', sorted(P3_TABLE))
def test_pioneer_3_table_row(subclass):
    dist, diff, (radius, width, length), bumpers, sonar, max_velocity = P3_TABLE[subclass]
    model, known = find_model(subclass)
    assert known and model.subclass == subclass
    assert (
        model.dist_conv,
        model.vel_conv,
        model.range_conv,
        model.diff_conv,
        model.vel2_divisor,
    ) == (dist, 1.0, 1.0, diff, 20)
    assert (model.radius, model.width, model.length) == (radius, width, length)
    assert (model.front_bumpers > 0, model.rear_bumpers > 0) == (bumpers, bumpers)
    assert (len(model.sonar), model.max_velocity) == (sonar, max_velocity)


def test_sonar_poses_from_the_parameter_files():
    assert MODELS['p3at'].sonar[0] == (147, 136, 90) and MODELS['p3at'].sonar[11] == (
        -241,
        -27,
        -170,
    )
    # PeopleBot upper front ring: x follows the ring, not a constant -20 (P2 numbers 8-15)
    assert MODELS['p2pb'].sonar[8:12] == (
        (-20, 136, 90),
        (24, 119, 50),
        (58, 78, 30),
        (77, 27, 10),
    )
    # PeopleBot-SH numbers the two lower rings first, then the upper front and upper rear rings
    pb = MODELS['peoplebot-sh'].sonar
    assert (pb[8], pb[16], pb[20], pb[24], pb[31]) == (
        (-157, -136, -90),
        (-20, 136, 90),
        (77, -27, -10),
        (-191, -136, -90),
        (-191, 136, 90),
    )
    assert MODELS['perfpb+'].sonar[8] == (-20, 136, 90) and MODELS['perfpb+'].sonar[16] == (
        -157,
        -136,
        -90,
    )
    power = MODELS['powerbot'].sonar
    assert power[6] == (332, 33, 5) and power[7] == power[15] == power[23] == power[31] == (
        0,
        0,
        -180,
    )
    assert MODELS['patrolbot-sh'].sonar[9] == (-169, -202, -125)
    assert MODELS['pioneer-lx'].sonar[2] == (-317, 90, 164)


@pytest.mark.parametrize(
    'announced, expected',
    [
        ('P3DX-SH', 'p3dx-sh'),
        ('p3dx-sh-lms1xx', 'p3dx-sh'),
        ('PEOPLEBOT-SH-LMS500', 'peoplebot-sh'),
        ('p3at-sh-tim3xx', 'p3at-sh'),
        ('powerbot-sh-uarcs', 'powerbot-sh'),
        ('researchpb', 'researchPB'),
        (' p3dx ', 'p3dx'),
    ],
)
def test_lookup_ignores_case_and_laser_suffixes(announced, expected):
    model, known = find_model(announced)
    assert known and model.subclass == expected


def test_unknown_subclass_falls_back_and_names_the_closest_models():
    model, known = find_model('box')
    assert not known and model.subclass == 'p2dx'
    assert not find_model('p3dx-lms999')[1]  # only the known laser suffixes are dropped
    assert closest_models('p3dxx')[0] == 'p3dx'
    assert 'p3at' in closest_models('P3-AT') and len(closest_models('box')) == 3


# ---- every model end to end through the client ---------------------------------------
@pytest.fixture
def robot():
    started = []

    def start(**options):
        emulator = P2osEmulator(EmulatorOptions(**options))
        client = P2osClient(Settings(port=f'tcp://127.0.0.1:{emulator.start_tcp()}'))
        client.sips = []
        client.on_record = lambda r: (
            client.sips.append(r) if isinstance(r, p.StandardSip) else None
        )
        started.append((emulator, client))
        client.start()
        return emulator, client

    yield start
    for emulator, client in started:
        client.stop()
        emulator.stop()


ANNOUNCED = {'p3dx-sh': 'P3DX-SH', 'p3at-sh': 'p3at-sh-lms500', 'researchPB': 'RESEARCHPB'}


@pytest.mark.parametrize('subclass', sorted(P3_TABLE))
def test_each_model_decodes_to_the_simulated_truth(robot, subclass):
    emulator, client = robot(model=subclass, subclass=ANNOUNCED.get(subclass, ''))
    assert wait_for(lambda: client.identity is not None and client.sips, 10), client.counters
    assert client.identity.known_model and client.identity.model.subclass == subclass
    for number, argument in ((C.ENABLE, 1), (C.SONAR, 1), (C.VEL, 600), (C.RVEL, 20)):
        client.command(number, argument)
    time.sleep(1.2)
    client.command(C.STOP)
    assert wait_for(lambda: not emulator.robot.moving, 5)
    time.sleep(0.3)
    first = len(client.sips)
    assert wait_for(
        lambda: len(client.sips) >= first + len(MODELS[subclass.lower()].sonar) // 4 + 2, 5
    )

    odometry = Odometry(client.identity.model)
    for sip in list(client.sips):
        odometry.update(sip)
    true_x, true_y, true_th = emulator.robot.odometry
    travelled = math.hypot(true_x, true_y) / 1000.0
    assert travelled > 0.3  # it really drove
    assert math.hypot(odometry.x - true_x / 1000, odometry.y - true_y / 1000) < 0.005
    assert abs(math.remainder(odometry.yaw - true_th, 2 * math.pi)) < 0.01

    model = client.identity.model
    readings = [(disc, raw) for sip in client.sips[first:] for disc, raw in sip.sonar]
    assert readings
    for disc, raw in readings:  # the robot stands still: every reading is the ray cast now
        assert (
            abs(raw * model.range_conv - emulator.robot.sonar_range(disc)) <= model.range_conv + 1
        )


def test_unknown_subclass_is_identified_as_unknown(robot):
    emulator, client = robot(model='p3dx', subclass='box')
    assert wait_for(lambda: client.identity is not None, 10)
    assert not client.identity.known_model and client.identity.subclass == 'box'
