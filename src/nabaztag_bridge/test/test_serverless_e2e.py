"""nabaztag_bridge as a real process with a declared ServerlessNabaztag rabbit (the emulator):
the services reach the rabbit's API, its hooks reach the events topic, its state the rabbits
topic. One bridge for the module: each start costs seconds."""

import http.client
import time

import pytest
from rclpy.action import ActionClient

from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.action import RabbitSpeak
from legacy_robot_interfaces.msg import RabbitEvent
from legacy_robot_interfaces.srv import (
    RabbitChoreography,
    RabbitEars,
    RabbitLeds,
    RabbitProgram,
    RabbitRawPacket,
    RabbitSay,
    RabbitSetting,
    RabbitSound,
)
from nabaztag_bridge import protocol as p
from nabaztag_bridge import tts
from nabaztag_bridge.emulator_serverless import ServerlessRabbit

NAME = 'kitchen'


@pytest.fixture(scope='module')
def bridge(declared_bridge):
    port = free_port()
    rabbit = ServerlessRabbit(f'127.0.0.1:{port}').start()
    rabbits = (
        f'  - name: {NAME}\n    kind: serverless\n    address: 127.0.0.1:{rabbit.port}\n'
        f'  - {{name: gone, kind: serverless, address: "127.0.0.1:{free_port()}"}}\n'
    )
    rules = (
        'rules:\n  - name: tag turns the ears\n    when: {rfid: d0021a0352b7e2f4}\n'
        f'    rabbit: {NAME}\n    do:\n      - ears: [7, 8]\n'
    )
    rabbit, ros, events, rabbits_seen, _ = declared_bridge(rabbit, rabbits, rules, port=port)
    return rabbit, None, ros, events, rabbits_seen, port


def test_services_reach_the_rabbit(bridge):
    rabbit, _, ros, _, _, _ = bridge
    reply = ros.ask(RabbitEars, 'set_ears', serial=NAME, ear0=4, ear1=9)
    assert reply.success, reply.message
    assert rabbit.wait_for(lambda r: r.ear_positions() == (4, 9), 10)
    reply = ros.ask(RabbitSound, 'play_sound', serial=NAME, media_file='tone.wav')
    assert reply.success, reply.message
    assert rabbit.wait_for(lambda r: any(url.endswith('/local/tone.wav') for url, _ in r.played))
    assert [size for url, size in rabbit.played if url.endswith('tone.wav')][0] > 1000
    reply = ros.ask(RabbitProgram, 'send_program', serial=NAME, program='taichi')
    assert reply.success and rabbit.forth[-1] == 'taichi', reply.message
    assert ros.ask(RabbitSetting, 'rabbit_setting', serial=NAME, name='sleep').success
    assert rabbit.asleep
    assert ros.ask(RabbitSetting, 'rabbit_setting', serial=NAME, name='wake').success
    assert not rabbit.asleep


def test_set_leds_lights_the_nose_and_refuses_colours(bridge):
    rabbit, _, ros, _, _, _ = bridge
    reply = ros.ask(RabbitLeds, 'set_leds', serial=NAME, nose=3)
    assert reply.success and rabbit.nose == 3, reply.message
    reply = ros.ask(RabbitLeds, 'set_leds', serial=NAME, leds=['left'], colors=['#ff0000'])
    assert not reply.success and 'serverless rabbit cannot' in reply.message, reply.message
    reply = ros.ask(RabbitLeds, 'set_leds', serial=NAME, nose=9)
    assert not reply.success and '0..4' in reply.message, reply.message
    assert rabbit.nose == 3


def test_what_the_kind_cannot_do_is_refused_naming_it(bridge):
    _, _, ros, _, _, _ = bridge
    packet = list(p.encode_packet([p.ping_interval_block(10)]))  # a good one, for violet
    reply = ros.ask(RabbitRawPacket, 'send_raw_packet', serial=NAME, packet=packet)
    assert not reply.success and 'serverless rabbit cannot' in reply.message, reply.message
    reply = ros.ask(RabbitChoreography, 'play_choreography', serial=NAME, tempo=2, steps=[])
    assert not reply.success and 'serverless rabbit cannot' in reply.message, reply.message
    reply = ros.ask(RabbitSetting, 'rabbit_setting', serial=NAME, name='ping_interval', value=5)
    assert not reply.success and 'cannot change ping_interval' in reply.message, reply.message


@pytest.mark.skipif(not tts.VoiceCatalogue().espeak_installed, reason='espeakng-loader missing')
def test_say_plays_our_mp3_by_url(bridge):
    rabbit, _, ros, _, _, _ = bridge
    reply = ros.ask(RabbitSay, 'say', serial=NAME, text='hello rabbit')
    assert reply.success, reply.message
    url = reply.audio_urls[0]
    assert rabbit.wait_for(lambda r: any(u == url and size > 500 for u, size in r.played), 10)
    assert '/tts/' in url and 'translate' not in url


@pytest.mark.skipif(not tts.VoiceCatalogue().espeak_installed, reason='espeakng-loader missing')
def test_the_speak_action_ends_when_the_rabbit_has_the_url(bridge):
    rabbit, _, ros, _, _, _ = bridge
    client = ActionClient(ros.node, RabbitSpeak, '/rabbit/speak')
    assert ros.spin_until(client.server_is_ready, 10), 'no speak action'
    stages = []
    sent = client.send_goal_async(
        RabbitSpeak.Goal(serial=NAME, text='An action.'),
        feedback_callback=lambda message: stages.append(message.feedback.stage),
    )
    assert ros.spin_until(sent.done, 10) and sent.result().accepted
    result = sent.result().get_result_async()
    assert ros.spin_until(result.done, 30), stages
    assert result.result().result.success, result.result().result.message
    assert RabbitSpeak.Feedback.QUEUED in stages
    url = result.result().result.audio_urls[0]
    assert rabbit.wait_for(lambda r: any(u == url for u, _ in r.played), 10)
    client.destroy()


def test_hooks_reach_the_events_topic(bridge):
    rabbit, _, ros, events, _, _ = bridge

    def kinds():
        return {e.kind for e in events if e.serial == NAME}

    assert rabbit.click() == 200
    assert rabbit.double_click() == 200
    assert rabbit.turn_ears(2, 15) == 200
    assert rabbit.show_tag('d0021a0352d64cec') == 200
    wanted = {
        RabbitEvent.CLICK,
        RabbitEvent.DOUBLE_CLICK,
        RabbitEvent.EARS_MOVED,
        RabbitEvent.RFID,
    }
    assert ros.spin_until(lambda: wanted <= kinds(), 10), kinds()
    ears = [e for e in events if e.kind == RabbitEvent.EARS_MOVED][-1]
    assert (ears.ear0, ears.ear1) == (2, 15)
    assert [e.rfid for e in events if e.kind == RabbitEvent.RFID] == ['d0021a0352d64cec']


def test_a_hook_from_an_undeclared_address_gets_403(bridge):
    _, _, _, _, _, port = bridge
    connection = http.client.HTTPConnection(
        '127.0.0.1', port, timeout=5, source_address=('127.0.0.2', 0)
    )
    connection.request('POST', '/hooks/click.php', b'time=1', {'Content-Length': '6'})
    assert connection.getresponse().status == 403
    connection.close()


def test_the_rabbits_topic_shows_its_kind_and_state(bridge):
    rabbit, _, ros, _, rabbits, _ = bridge

    def state():
        listed = [r for m in rabbits[-1:] for r in m.rabbits if r.serial == NAME]
        return listed[0] if listed else None

    assert ros.spin_until(lambda: state() is not None and state().connected, 15)
    assert state().kind == 'serverless' and not state().asleep


def test_a_tag_fires_a_rule_that_moves_the_ears(bridge):
    rabbit, _, _, _, _, _ = bridge
    assert rabbit.show_tag('d0021a0352b7e2f4') == 200
    assert rabbit.wait_for(lambda r: r.ear_positions() == (7, 8), 10)


def test_diagnostics_show_the_rabbit_by_kind(bridge):
    _, _, ros, _, _, _ = bridge
    status = ros.diagnostic_status(f'rabbit {NAME}')

    def values():
        return {v.key: v.value for v in status().values}

    assert ros.spin_until(lambda: status() is not None and values().get('connected') == 'True', 15)
    assert values()['kind'] == 'serverless' and status().message.startswith('serverless')


def test_a_rabbit_that_is_off_fails_the_call_with_the_reason(bridge):
    _, _, ros, _, _, _ = bridge
    started = time.monotonic()
    reply = ros.ask(RabbitEars, 'set_ears', serial='gone', ear0=1, ear1=2)
    assert not reply.success and 'gone at 127.0.0.1' in reply.message, reply.message
    assert time.monotonic() - started < 10
    reply = ros.ask(RabbitSetting, 'rabbit_setting', serial=NAME, name='wake')
    assert reply.success, reply.message  # the other rabbit is not held up
