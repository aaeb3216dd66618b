"""The model tables (pure): joints, motion IDs, formats, combinations, and the URDF they build."""

import pytest

from aibo_driver import description, models, rcode
from legacy_robot_common.robot_model import parse


def test_the_ers7_table_holds_its_joints_with_the_sticks_ranges():
    ers7 = models.MODELS['ers7']
    names = [j.name for j in ers7.joints]
    legs = [f'leg{leg}{n}' for leg in ('LF', 'LH', 'RF', 'RH') for n in (1, 2, 3)]
    assert sorted(names) == sorted(
        ['neck', 'headTilt', 'headPan', 'mouth', 'tailPan', 'tailTilt', *legs]
    )
    assert ers7.switches == ('earL', 'earR')
    assert (ers7.joint('neck').lower, ers7.joint('neck').upper) == (-79, 2)
    assert (ers7.joint('legLF1').lower, ers7.joint('legLF1').upper) == (-120, 134)
    assert (ers7.joint('legRH1').lower, ers7.joint('legRH1').upper) == (-134, 120)
    assert ers7.joint('tailTilt').clamp(90) == (63, True)
    assert ers7.joint('tailTilt').clamp(10) == (10, False)
    with pytest.raises(KeyError, match='headRoll'):
        ers7.joint('headRoll')


def test_motion_ids_moved_on_the_ers7_and_walking_ids_did_not():
    ers7, ers210 = models.MODELS['ers7'].motion_ids, models.MODELS['ers210'].motion_ids
    assert {k: ers7[k] for k in ('SIT', 'STAND', 'LIE', 'MOVE_HEAD', 'SEARCH')} == {
        'SIT': 2001,
        'STAND': 2000,
        'LIE': 2002,
        'MOVE_HEAD': 1054,
        'SEARCH': 1202,
    }
    assert {k: ers210[k] for k in ('SIT', 'STAND', 'LIE', 'MOVE_HEAD', 'SEARCH')} == {
        'SIT': 270,
        'STAND': 271,
        'LIE': 272,
        'MOVE_HEAD': 1008,
        'SEARCH': 1001,
    }
    for name, number in (('WALK', 622), ('TURN', 632), ('KICK', 680)):
        assert ers7[name] == ers210[name] == number


def test_variables_audio_and_camera_differ_per_model():
    ers7, ers210 = models.MODELS['ers7'], models.MODELS['ers210']
    assert 'Head_Tilt_2' in ers7.rcode_variables and 'Head_Roll' not in ers7.rcode_variables
    assert 'Head_Roll' in ers210.rcode_variables and 'Brightness' in ers7.rcode_variables
    assert (ers7.speaker.rate, ers7.speaker.bits) == (16000, 16)
    assert (ers210.speaker.rate, ers210.speaker.bits) == (8000, 8)
    assert ers7.microphone.bytes_per_second == 64000
    assert ers7.camera == (208, 160) and ers210.camera == (176, 144)
    assert set(ers7.distance_sensors) == {'distanceNear', 'distance', 'distanceChest'}


def test_invalid_combinations_are_refused_with_the_list_of_valid_ones():
    assert models.check_combination('ers7', 'urbi').name == 'ers7'
    with pytest.raises(ValueError) as refused:
        models.check_combination('ers7', 'rcodeplus')
    assert 'ers7/urbi' in str(refused.value) and 'ers210/rcodeplus' in str(refused.value)
    with pytest.raises(ValueError, match='valid: ers210/rcodeplus'):
        models.check_combination('ers7', 'urbi', supported=('rcodeplus',))
    with pytest.raises(ValueError, match="'ers9'"):
        models.check_combination('ers9', 'urbi')


def test_rcode_polls_the_same_joints_as_before_from_the_tables():
    assert [j.variable for j in rcode.MODELS['ers210']][:6] == [
        'Head_Tilt',
        'Head_Pan',
        'Head_Roll',
        'Mouth',
        'Tail_Pan',
        'Tail_Tilt',
    ]
    assert 'ers7' not in rcode.MODELS  # R-CODE 2.0 exposes no joint variables
    assert len(rcode.MODELS['ers220']) == 15 and len(rcode.MODELS['ers31x']) == 15


@pytest.mark.parametrize('model', sorted(models.MODELS))
def test_the_description_follows_the_model(model):
    table = models.MODELS[model]
    robot = parse(description.describe('aibo_base', 'aibo_head', 'aibo_camera', model=model).xml())
    moving = {j.name: j for j in robot.joints if j.type == 'revolute'}
    assert set(moving) == {j.name for j in table.joints}
    for joint in table.joints:
        limit = moving[joint.name].limit
        assert (limit.lower, limit.upper) == pytest.approx(joint.limits)
    links = {link.name for link in robot.links}
    assert {'aibo_camera', 'aibo_head_ir'} <= links
    assert ('aibo_base_chest_ir' in links) == (model == 'ers7')


def test_the_ers7_head_chain_is_neck_then_head_tilt_then_pan():
    robot = parse(
        description.describe('aibo_base', 'aibo_head', 'aibo_camera', model='ers7').xml()
    )
    parent_of = {j.child: (j.parent, j.name) for j in robot.joints}
    chain, link = [], 'aibo_head'
    while link in parent_of:
        link, name = parent_of[link]
        chain.append(name)
    assert [name for name in chain if not name.endswith('_joint')][:3] == [
        'headPan',
        'headTilt',
        'neck',
    ]
