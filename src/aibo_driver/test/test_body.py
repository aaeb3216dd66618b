"""The emulated dog's body (pure): R-CODE statements, the action queue, walking, the model."""

import math

import pytest

from aibo_driver import description, rcode
from aibo_driver.body import Dog
from legacy_robot_common.robot_model import parse


def test_walks_turns_and_stop_walk_ends_a_long_walk():
    dog = Dog(echo=False)
    assert dog.run(rcode.walk(0, 10000), 0.0) == []
    assert dog.run('PRINT:"%d":Wait', 0.0) == ['1']
    dog.advance(10.0)
    assert dog.x == pytest.approx(0.6) and dog.y == 0.0
    legs = {dog.joints(t)['LFLeg_1'] for t in (10.0, 10.1, 10.2)}
    dog.advance(10.15)
    assert len({round(dog.joints(10.15)['LFLeg_1'])} | legs) > 1  # the legs swing
    dog.run(rcode.stop_walk(), 10.2)
    dog.advance(30.0)
    assert dog.x == pytest.approx(0.612) and dog.run('PRINT:"%d":Wait', 30.0) == ['0']
    dog.run(rcode.turn(90), 30.0)
    dog.advance(40.0)  # a turn ends by itself
    assert dog.yaw == pytest.approx(math.pi / 2) and dog.playing is None
    dog.run(rcode.walk(90, 300, 'slow'), 40.0)  # sideways, slow: 10 s
    dog.advance(50.0)
    assert (dog.x, dog.y) == (pytest.approx(0.312), pytest.approx(0.0, abs=1e-9))


def test_actions_queue_stop_lets_the_playing_one_finish_quit_ends_it():
    dog = Dog(echo=False)
    for line in (rcode.action_line('sit'), rcode.action_line('kick'), rcode.walk(0, 500)):
        dog.run(line, 0.0)
    assert dog.value('Wait', 0.0) == 3  # sit, kick, the walk (standing up first)
    dog.run('STOP', 0.1)
    assert dog.value('Wait', 0.1) == 1
    dog.advance(5.0)
    assert dog.posture == 'sit' and dog.value('Wait', 5.0) == 0
    dog.run(rcode.walk(0, 500), 5.0)  # stands up first (1.5 s), then walks
    dog.advance(6.0)
    assert dog.x == 0.0 and dog.posture == 'sit'
    dog.advance(7.5)
    assert dog.posture == 'stand' and dog.x > 0
    assert dog.run('!', 7.5) == [rcode.ACK] and dog.posture == 'undefined'
    dog.run(rcode.walk(0, 500), 8.0)
    dog.run('QUIT', 8.5)
    assert dog.value('Wait', 8.5) == 0


def test_head_moves_within_its_limits_and_the_camera_heading_follows():
    dog = Dog(echo=False)
    dog.run(rcode.move_head(200, -200), 0.0)
    dog.advance(10.0)
    assert dog.head == {'Head_Pan': 92.6, 'Head_Tilt': -85}
    assert dog.run('PRINT:"H %d %d":Head_Pan:Head_Tilt', 10.0) == ['H 92 -85']


def test_print_vdump_set_clr_and_errors():
    dog = Dog()
    assert dog.run('SET:Head_ON:1', 0.0) == ['SET:Head_ON:1']  # the echo only
    assert dog.run('VDUMP:Head_ON', 0.0)[1] == 'Head_ON = 1'
    dog.run('CLR:SENSORS', 0.0)
    assert dog.run('GET:Head_ON', 0.0)[1] == '0'
    assert dog.run('PRINT:"%d %d %d %d %d %d":1:2:3:4:5:6', 0.0)[1].startswith('ERROR')
    assert dog.run('PRINT:"%d":Nothing', 0.0)[1] == 'ERROR: unknown variable Nothing'
    assert dog.run('PLAY:ACTION:DANCE', 0.0)[1] == 'ERROR: unknown action DANCE'
    assert dog.run('PLAY:ACTION:WALK:0', 0.0)[1] == 'ERROR: WALK takes 2 arguments'
    assert dog.run('MOVE:LEGS:WALK:0:1', 0.0)[1] == 'ERROR: unknown command MOVE'  # ERS-110
    assert dog.run('PRINT:"' + 'x' * 130 + '"', 0.0)[1] == 'ERROR: line too long'
    assert 0 < dog.value('Distance', 0.0) <= 600


@pytest.mark.parametrize('model', sorted(rcode.MODELS))
def test_the_model_has_a_joint_for_every_polled_variable_with_its_limits(model):
    robot = parse(description.describe('aibo_base', 'aibo_head', 'aibo_camera', model=model).xml())
    moving = {j.name: j for j in robot.joints if j.type == 'revolute'}
    assert set(moving) == {j.variable for j in rcode.MODELS[model]}
    for joint in rcode.MODELS[model]:
        limit = moving[joint.variable].limit
        assert (limit.lower, limit.upper) == pytest.approx(joint.limits)
    assert 'aibo_camera' in {link.name for link in robot.links}


def test_the_camera_scene_follows_the_heading_and_the_head_tilt():
    import numpy as np

    from aibo_driver.scene import Scene, color_detection

    scene = Scene()

    def blue_columns(**view):
        mask = color_detection(scene.render(0.0, **view))
        return np.nonzero((mask >> 4) & 1)[1]

    ahead = blue_columns()
    left = blue_columns(heading=0.2)  # the dog turns left: the box moves right in the picture
    assert left.mean() - ahead.mean() == pytest.approx(0.2 * 176 / math.radians(57.6) / 2, 1)
    up = scene.render(0.0, tilt=0.3)
    assert not np.array_equal(up[:60], scene.render(0.0)[:60])  # the horizon moves down
