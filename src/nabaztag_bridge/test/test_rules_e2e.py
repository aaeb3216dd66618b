"""Rules end to end: nabaztag_bridge as a real process with a rules file, an emulated rabbit
that clicks, turns its ears and shows a tag over HTTP on loopback, this process watching the
firings, the published intents and what the rabbit does."""

import pytest
from helpers import wait_for
from ros_observer import DriverProcesses
from std_msgs.msg import String
from std_srvs.srv import Trigger

from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import RuleFired
from nabaztag_bridge import protocol as p
from nabaztag_bridge import recording
from nabaztag_bridge.emulator import RabbitEmulator, RabbitOptions

SERIAL = '0019db000001'
TAG = 'd0021a0352b7e2f4'
RULES = f"""rules:
  - name: dance on the tag
    when: {{rfid: {TAG}}}
    do:
      - choreography: wiggle
  - name: double click starts
    when: double_click
    do:
      - publish: {{topic: /intents, type: std_msgs/msg/String, fields: {{data: start}}}}
  - name: ears follow
    when: ears_moved
    do:
      - ears: [16, 16]
      - publish: {{topic: moved, type: std_msgs/msg/String, fields: {{data: ears}}}}
  - name: click plays
    when: click
    do:
      - play: {{media_file: tone.wav}}
"""


@pytest.fixture
def bridge(tmp_path):
    drivers = DriverProcesses()
    (tmp_path / 'media').mkdir()
    (tmp_path / 'media' / 'tone.wav').write_bytes(recording.encode_wav(recording.tone(0.2)))
    (tmp_path / 'bytecode.bin').write_bytes(p.wrap_bytecode(b'test /vl/p4.jsp?sn='))
    rules_file = tmp_path / 'rules.yaml'
    rules_file.write_text(RULES)
    port = free_port()
    emulator = RabbitEmulator(RabbitOptions(server=f'127.0.0.1:{port}/vl', time_scale=0.2))
    parameters = {
        'host': '127.0.0.1',
        'port': port,
        'ping_interval': 1,
        'bytecode_file': str(tmp_path / 'bytecode.bin'),
        'media_root': str(tmp_path / 'media'),
        'rules_file': str(rules_file),
    }
    emulator, process, ros = drivers.start(
        'nabaztag_bridge.node', '/rabbit', emulator.start(), parameters
    )
    rabbit = emulator.rabbits[0]
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 20), 'rabbit not up'
    yield rabbit, ros, rules_file
    drivers.stop_all()


def test_each_event_rule_fires_and_acts(bridge):
    rabbit, ros, _ = bridge
    fired = ros.listen(RuleFired, 'rules_fired')
    intents = ros.listen(String, '/intents')
    moved = ros.listen(String, 'moved')
    assert ros.spin_until(lambda: ros.node.count_publishers('/intents') == 1, 10)

    def names():
        return [f.rule for f in fired]

    rabbit.double_click()
    assert ros.spin_until(lambda: [i.data for i in intents] == ['start'], 10), names()
    assert fired[0].rule == 'double click starts' and fired[0].serial == SERIAL
    assert fired[0].trigger == 'double_click'

    rabbit.show_tag(TAG)
    assert ros.spin_until(lambda: 'dance on the tag' in names(), 10), names()
    tag = [f for f in fired if f.rule == 'dance on the tag'][0]
    assert tag.detail == TAG
    # the rabbit fetched the choreography over HTTP and played it
    assert wait_for(lambda: played(rabbit, '/chorlibrary/'), 10), list(rabbit.played)

    rabbit.move_ears(3, 4)
    assert ros.spin_until(lambda: [m.data for m in moved] == ['ears'], 10), names()
    assert wait_for(lambda: tuple(rabbit.status()['ears']) == (16, 16), 10), rabbit.status()

    rabbit.click()
    assert ros.spin_until(lambda: 'click plays' in names(), 10), names()
    assert wait_for(lambda: played(rabbit, '/local/tone.wav'), 10), list(rabbit.played)


def played(rabbit, part):
    return any(part in url for _, url, _ in list(rabbit.played))


def test_a_bad_reload_keeps_the_old_rules(bridge):
    rabbit, ros, rules_file = bridge
    intents = ros.listen(String, '/intents')
    rules_file.write_text('rules:\n  - name: x\n    when: {sneeze: 1}\n    do:\n      - say: a\n')
    answer = ros.call(Trigger, 'reload_rules', Trigger.Request())
    assert not answer.success and 'line 3' in answer.message and 'sneeze' in answer.message
    assert ros.spin_until(lambda: ros.node.count_publishers('/intents') == 1, 10)
    rabbit.double_click()
    assert ros.spin_until(lambda: [i.data for i in intents] == ['start'], 10)

    rules_file.write_text(RULES.replace('data: start', 'data: go'))
    answer = ros.call(Trigger, 'reload_rules', Trigger.Request())
    assert answer.success, answer.message
    rabbit.double_click()
    assert ros.spin_until(lambda: [i.data for i in intents] == ['start', 'go'], 10)
