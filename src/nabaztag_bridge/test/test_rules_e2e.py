"""Rules end to end: nabaztag_bridge as a real process with a rules file, an emulated rabbit
that clicks, turns its ears and shows a tag over HTTP on loopback, this process watching the
firings, the published intents and what the rabbit does."""

import time

import pytest
import rclpy
from helpers import spin_until, wait_for
from rclpy.parameter import Parameter
from ros_observer import DriverProcesses
from std_msgs.msg import String
from std_srvs.srv import SetBool, Trigger

from legacy_robot_common.driver_node import make_executor
from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import RuleFired
from nabaztag_bridge import protocol as p
from nabaztag_bridge import recording, tts
from nabaztag_bridge.emulator import RabbitEmulator, RabbitOptions
from nabaztag_bridge.node import NabaztagBridge

SERIAL = '0019db000001'
CATALOGUE = tts.VoiceCatalogue()
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
      - call: {{service: /rules_test/arm, type: std_srvs/srv/SetBool, request: {{data: true}}}}
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
    intents = absolute(ros, String, '/intents')
    moved = ros.listen(String, 'moved')
    assert ros.spin_until(lambda: ros.node.count_publishers('/intents') == 1, 10)

    def names():
        return [f.rule for f in fired]

    # the rabbit pings at once on a double click: until the bridge's publishers have matched
    # this process's subscriptions, a firing can be lost, so double-click until one arrives
    for _ in range(5):
        rabbit.double_click()
        if ros.spin_until(lambda: intents and fired, 3):
            break
    assert ros.spin_until(lambda: {i.data for i in intents} == {'start'}, 10), names()
    assert fired[0].rule == 'double click starts' and fired[0].serial == SERIAL
    assert fired[0].trigger == 'double_click'

    rabbit.show_tag(TAG)
    assert ros.spin_until(lambda: 'dance on the tag' in names(), 10), names()
    tag = [f for f in fired if f.rule == 'dance on the tag'][0]
    assert tag.detail == TAG
    # the rabbit fetched the choreography over HTTP and played it
    assert wait_for(lambda: played(rabbit, '/chorlibrary/'), 10), list(rabbit.played)

    # hands turn the ears of a rabbit that is idle again: its end of message acknowledged (an
    # ear turned before that ping would replace the unsent end in the rabbit's one event slot)
    assert wait_for(lambda: rabbit.status()['state'] == 'idle', 10), rabbit.status()
    rabbit.move_ears(3, 4)
    assert ros.spin_until(lambda: [m.data for m in moved] == ['ears'], 10), names()
    assert wait_for(lambda: tuple(rabbit.status()['ears']) == (16, 16), 10), rabbit.status()

    calls = []

    def arm(request, response):
        calls.append(request.data)
        response.success = True
        return response

    ros.node.create_service(SetBool, '/rules_test/arm', arm)
    for _ in range(5):  # until the bridge has discovered the new service (else: counted)
        rabbit.click()
        if ros.spin_until(lambda: calls, 3):
            break
    assert calls and all(calls), names()
    assert wait_for(lambda: played(rabbit, '/local/tone.wav'), 10), list(rabbit.played)


def absolute(ros, msg_type, topic):
    """Messages on a topic outside the bridge's namespace."""
    messages = []
    ros.node.create_subscription(msg_type, topic, messages.append, 10)
    return messages


def played(rabbit, part):
    return any(part in url for _, url, _ in list(rabbit.played))


def test_a_bad_reload_keeps_the_old_rules(bridge):
    rabbit, ros, rules_file = bridge
    intents = absolute(ros, String, '/intents')
    rules_file.write_text('rules:\n  - name: x\n    when: {sneeze: 1}\n    do:\n      - say: a\n')
    answer = ros.call(Trigger, 'reload_rules', Trigger.Request())
    assert not answer.success and 'line 3' in answer.message and 'sneeze' in answer.message
    rules_file.write_text(RULES.replace('topic: moved', 'topic: "no spaces"'))
    answer = ros.call(Trigger, 'reload_rules', Trigger.Request())
    assert not answer.success and 'line 14' in answer.message, answer.message
    assert ros.spin_until(lambda: ros.node.count_publishers('/intents') == 1, 10)
    rabbit.double_click()
    assert ros.spin_until(lambda: [i.data for i in intents] == ['start'], 10)

    rules_file.write_text(RULES.replace('data: start', 'data: go'))
    answer = ros.call(Trigger, 'reload_rules', Trigger.Request())
    assert answer.success, answer.message
    rabbit.double_click()
    assert ros.spin_until(lambda: [i.data for i in intents] == ['start', 'go'], 10)


HEARD_AND_TIMED = """rules:
  - name: tell the time
    when: {phrase: what time is it}
    do:
      - say: It is {time}.
  - name: nose on request
    when: {phrase: nose please}
    do:
      - nose: 2
  - name: morning ears
    when: {time: "07:30"}
    do:
      - ears: [7, 9]
"""


@pytest.fixture
def bridge_here(tmp_path):
    """The bridge in this process (its clock in the test's hands, heard text handed to its
    hook as the speech recogniser will), the emulated rabbit polling it over HTTP."""
    rules_file = tmp_path / 'rules.yaml'
    rules_file.write_text(HEARD_AND_TIMED)
    port = free_port()
    wall = [time.mktime((2026, 3, 1, 7, 29, 58, 0, 0, -1))]
    context = rclpy.Context()
    rclpy.init(context=context)
    parameters = {'host': '127.0.0.1', 'port': port, 'ping_interval': 1}
    parameters['tts_engine'] = 'espeak'
    parameters['tts_cache_dir'] = str(tmp_path / 'tts')
    parameters['rules_file'] = str(rules_file)
    node = NabaztagBridge(
        rule_clock=lambda: wall[0],
        context=context,
        parameter_overrides=[Parameter(k, value=v) for k, v in parameters.items()],
    )
    executor = make_executor(context)
    executor.add_node(node)
    emulator = RabbitEmulator(
        RabbitOptions(server=f'127.0.0.1:{port}/vl', boot=False, time_scale=0.2)
    ).start()
    rabbit = emulator.rabbits[0]
    try:
        assert spin_until(executor, lambda: rabbit.status()['state'] == 'idle', 20)
        yield node, executor, rabbit, wall
    finally:
        emulator.stop()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def test_heard_text_and_the_time_fire_their_rules(bridge_here):
    node, executor, rabbit, wall = bridge_here
    node.rules.on_heard(SERIAL, 'Rabbit, nose please!')
    assert spin_until(executor, lambda: rabbit.status()['nose_blinks'] == 2, 10)
    assert rabbit.status()['ears'] != (7, 9)
    wall[0] += 2  # 07:30:00: the next look at the clock fires the time rule
    assert spin_until(executor, lambda: rabbit.status()['ears'] == (7, 9), 10), rabbit.status()
    assert node.rules.counters.fired == 2


@pytest.mark.skipif(not CATALOGUE.espeak_installed, reason='espeakng-loader not installed')
def test_what_time_is_it_is_answered_with_the_time(bridge_here):
    node, executor, rabbit, wall = bridge_here
    node.rules.on_heard(SERIAL, 'What time is it?')
    assert spin_until(executor, lambda: played(rabbit, '/tts/'), 60), list(rabbit.played)
    assert node.rules.counters.failed_actions == 0, node.rules.counters.last_error
