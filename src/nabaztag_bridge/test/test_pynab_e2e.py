"""nabaztag_bridge as a real process with a declared pynab rabbit (the nabd emulator on a
loopback port): the services become nabd packets, nabd's events reach the events topic and the
rules, its state the rabbits topic; a nabd that is off fails the call, a restarted one is
reconnected. One bridge for the module: each start costs seconds."""

import json
import time
import urllib.request

import pytest
from helpers import wait_for

from legacy_robot_common.emulator import free_port
from legacy_robot_interfaces.msg import ChoreographyStep, RabbitEvent, RuleFired
from legacy_robot_interfaces.srv import (
    RabbitAmbient,
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
from nabaztag_bridge.emulator_pynab import NabdEmulator

NAME = 'living'
RULE_TAG = 'd0021a0352b7e2f4'
TIMEOUT = 2.0  # rabbit_timeout


class FetchLog:
    """The emulator's HTTP fetch, remembering (url, size) of what the rabbit downloaded."""

    def __init__(self):
        self.fetched = []

    def __call__(self, url):
        with urllib.request.urlopen(url, timeout=5) as reply:
            data = reply.read()
        self.fetched.append((url, len(data)))
        return data


@pytest.fixture(scope='module')
def bridge(declared_bridge):
    fetch = FetchLog()
    nabd = NabdEmulator('127.0.0.1', free_port(), fetch=fetch).start()
    rabbits = (
        f'  - {{name: {NAME}, kind: pynab, address: "127.0.0.1:{nabd.port}"}}\n'
        f'  - {{name: gone, kind: pynab, address: "127.0.0.1:{free_port()}"}}\n'
    )
    rules = (
        'rules:\n'
        '  - name: the time\n    when: {intent: nabclockd/clock}\n'
        f'    rabbit: {NAME}\n    do:\n      - say: It is {{time}}\n'
        f'  - name: tag plays\n    when: {{rfid: {RULE_TAG}}}\n'
        f'    rabbit: {NAME}\n    do:\n      - play: {{media_file: tone.wav}}\n'
    )
    nabd, ros, events, rabbits_seen, _ = declared_bridge(nabd, rabbits, rules, TIMEOUT)
    fired = ros.listen(RuleFired, 'rules_fired')
    # the bridge is connected once it registered for nabd's events (mode idle)
    assert wait_for(lambda: nabd.counters['mode'] >= 1, 20), nabd.status()
    return nabd, fetch, ros, events, rabbits_seen, fired


def played_urls(nabd):
    return [url for _, audio in list(nabd.played) for url in audio]


def listed(rabbits, name):
    found = [r for m in rabbits[-1:] for r in m.rabbits if r.serial == name]
    return found[0] if found else None


def test_services_become_nabd_packets(bridge):
    nabd, fetch, ros, _, _, _ = bridge
    reply = ros.ask(RabbitEars, 'set_ears', serial=NAME, ear0=4, ear1=9)
    assert reply.success, reply.message
    assert nabd.status()['ears'] == (4, 9)
    reply = ros.ask(RabbitSound, 'play_sound', serial=NAME, media_file='tone.wav')
    assert reply.success, reply.message  # nabd answers a command once it has played
    assert any(url.endswith('/local/tone.wav') for url in played_urls(nabd)), nabd.played
    assert [size for url, size in fetch.fetched if url.endswith('tone.wav')][0] > 1000


def test_sleep_and_wake(bridge):
    nabd, _, ros, _, rabbits, _ = bridge
    assert ros.ask(RabbitSetting, 'rabbit_setting', serial=NAME, name='sleep').success
    assert wait_for(lambda: nabd.state == 'asleep', 5), nabd.status()
    assert ros.spin_until(lambda: listed(rabbits, NAME) and listed(rabbits, NAME).asleep, 10)
    assert ros.ask(RabbitSetting, 'rabbit_setting', serial=NAME, name='wake').success
    assert wait_for(lambda: nabd.state == 'idle', 5), nabd.status()
    assert ros.spin_until(lambda: not listed(rabbits, NAME).asleep, 10)


def test_a_raw_nabd_packet_and_its_answer(bridge):
    _, _, ros, _, _, _ = bridge
    reply = ros.ask(RabbitProgram, 'send_program', serial=NAME, program='{"type": "gestalt"}')
    assert reply.success and 'nabaztag_emulator' in reply.message, reply.message
    reply = ros.ask(RabbitProgram, 'send_program', serial=NAME, program='{"type": "bogus"}')
    assert not reply.success and 'bogus' in reply.message, reply.message
    reply = ros.ask(RabbitProgram, 'send_program', serial=NAME, program='taichi')
    assert not reply.success and 'not JSON' in reply.message, reply.message


def test_a_choreography_goes_to_nabd_as_a_chor_file(bridge):
    nabd, _, ros, _, _, _ = bridge
    steps = [ChoreographyStep(wait=0, opcode=ChoreographyStep.EAR, args=[0, 3, 0])]
    reply = ros.ask(RabbitChoreography, 'play_choreography', serial=NAME, tempo=2, steps=steps)
    assert reply.success, reply.message
    commands = [packet for packet in nabd.received if packet['type'] == 'command']
    chor = commands[-1]['sequence'][0]['choreography']
    assert chor.startswith('data:application/x-nabaztag-mtl-choreography;base64,'), chor


def test_set_leds_shows_colours_while_idle_and_refuses_the_nose(bridge):
    nabd, _, ros, _, _, _ = bridge
    leds, colors = ['left', 'center', 'right'], ['#FF0000', '#00ff00', '#0000ff']
    reply = ros.ask(RabbitLeds, 'set_leds', serial=NAME, leds=leds, colors=colors)
    assert reply.success, reply.message
    frames = nabd.info['nabaztag_bridge']['colors']
    assert frames == [{'left': 'ff0000', 'center': '00ff00', 'right': '0000ff'}], frames
    reply = ros.ask(RabbitLeds, 'set_leds', serial=NAME, nose=1)
    assert not reply.success and 'pynab rabbit cannot' in reply.message, reply.message
    reply = ros.ask(RabbitLeds, 'set_leds', serial=NAME, leds=['nose'], colors=['#ffffff'])
    assert not reply.success and 'pynab rabbit cannot' in reply.message, reply.message
    reply = ros.ask(RabbitLeds, 'set_leds', serial=NAME, leds=['left'], colors=['red'])
    assert not reply.success and '#rrggbb' in reply.message, reply.message
    reply = ros.ask(RabbitLeds, 'set_leds', serial=NAME, leds=['left'], colors=[])
    assert not reply.success and 'pairs' in reply.message, reply.message


def test_what_the_kind_cannot_do_is_refused_naming_it(bridge):
    _, _, ros, _, _, _ = bridge
    packet = list(p.encode_packet([p.ping_interval_block(10)]))  # a good one, for violet
    reply = ros.ask(RabbitRawPacket, 'send_raw_packet', serial=NAME, packet=packet)
    assert not reply.success and 'pynab rabbit cannot' in reply.message, reply.message
    reply = ros.ask(RabbitAmbient, 'set_ambient', serial=NAME, ear0=3, ear1=3)
    assert not reply.success and 'pynab rabbit cannot' in reply.message, reply.message


@pytest.mark.skipif(not tts.VoiceCatalogue().espeak_installed, reason='espeakng-loader missing')
def test_say_plays_our_mp3_by_url(bridge):
    nabd, fetch, ros, _, _, _ = bridge
    reply = ros.ask(RabbitSay, 'say', serial=NAME, text='hello rabbit')
    assert reply.success, reply.message
    url = reply.audio_urls[0]
    assert '/tts/' in url
    assert wait_for(lambda: any(u == url and size > 500 for u, size in fetch.fetched), 10)
    assert url in played_urls(nabd)


def test_nabd_events_reach_the_events_topic(bridge):
    nabd, _, ros, events, _, _ = bridge

    def of(kind):
        return [e for e in events if e.serial == NAME and e.kind == kind]

    nabd.click()
    nabd.double_click()
    nabd.move_ears(2, 15)
    nabd.show_tag('d0021a0352d64cec')
    nabd.remove_tag('d0021a0352d64cec')
    nabd.hear_intent('nabweatherd/forecast', date='today')
    wanted = (
        RabbitEvent.CLICK,
        RabbitEvent.DOUBLE_CLICK,
        RabbitEvent.EARS_MOVED,
        RabbitEvent.RFID,
        RabbitEvent.RFID_REMOVED,
        RabbitEvent.INTENT,
    )
    assert ros.spin_until(lambda: all(of(kind) for kind in wanted), 10), [e.kind for e in events]
    ears = of(RabbitEvent.EARS_MOVED)[-1]
    assert (ears.ear0, ears.ear1) == (2, 15)
    assert [e.rfid for e in of(RabbitEvent.RFID)] == ['d0021a0352d64cec']
    assert [e.rfid for e in of(RabbitEvent.RFID_REMOVED)] == ['d0021a0352d64cec']
    intent = of(RabbitEvent.INTENT)[-1]
    assert intent.intent == 'nabweatherd/forecast'
    assert [(s.key, s.value) for s in intent.slots] == [('date', 'today')]


def test_a_tag_rule_plays_on_the_rabbit(bridge):
    nabd, _, ros, _, _, fired = bridge

    def tones():
        return [u for u in played_urls(nabd) if u.endswith('/local/tone.wav')]

    before = len(tones())
    nabd.show_tag(RULE_TAG)
    assert ros.spin_until(lambda: any(f.rule == 'tag plays' for f in fired), 10)
    rule = [f for f in fired if f.rule == 'tag plays'][0]
    assert (rule.serial, rule.trigger, rule.detail) == (NAME, 'rfid', RULE_TAG)
    assert wait_for(lambda: len(tones()) > before, 10), nabd.played


@pytest.mark.skipif(not tts.VoiceCatalogue().espeak_installed, reason='espeakng-loader missing')
def test_an_intent_rule_says_the_time(bridge):
    nabd, fetch, ros, _, _, fired = bridge
    spoken = len([u for u in played_urls(nabd) if '/tts/' in u])
    nabd.hear_intent('nabclockd/clock')
    assert ros.spin_until(lambda: any(f.rule == 'the time' for f in fired), 10)
    rule = [f for f in fired if f.rule == 'the time'][0]
    assert (rule.serial, rule.trigger, rule.detail) == (NAME, 'intent', 'nabclockd/clock')
    assert wait_for(lambda: len([u for u in played_urls(nabd) if '/tts/' in u]) > spoken, 20)
    url = [u for u in played_urls(nabd) if '/tts/' in u][-1]
    assert any(u == url and size > 500 for u, size in fetch.fetched)


def test_the_rabbits_topic_shows_kind_state_and_ears(bridge):
    nabd, _, ros, _, rabbits, _ = bridge
    reply = ros.ask(RabbitEars, 'set_ears', serial=NAME, ear0=6, ear1=11)
    assert reply.success, reply.message

    def shown():
        state = listed(rabbits, NAME)
        return state is not None and (state.ear0, state.ear1) == (6, 11)

    assert ros.spin_until(shown, 10)
    state = listed(rabbits, NAME)
    assert state.kind == 'pynab' and state.connected and not state.asleep
    assert state.state == 'idle'


def test_a_nabd_that_is_off_fails_the_call_with_the_reason(bridge):
    _, _, ros, _, rabbits, _ = bridge
    started = time.monotonic()
    reply = ros.ask(RabbitEars, 'set_ears', serial='gone', ear0=1, ear1=2)
    took = time.monotonic() - started
    assert not reply.success and 'nabd at 127.0.0.1' in reply.message, reply.message
    assert 'not connected' in reply.message, reply.message
    assert took < TIMEOUT + 1.0, took
    assert ros.spin_until(lambda: listed(rabbits, 'gone') is not None, 10)
    gone = listed(rabbits, 'gone')
    assert not gone.connected and gone.state == 'unreachable' and gone.kind == 'pynab'
    reply = ros.ask(RabbitSetting, 'rabbit_setting', serial=NAME, name='wake')
    assert reply.success, reply.message  # the other rabbit is not held up


def test_a_restarted_nabd_is_reconnected(bridge):
    nabd, _, ros, _, rabbits, _ = bridge
    port = nabd.port
    nabd.stop()
    assert ros.spin_until(lambda: not listed(rabbits, NAME).connected, 15)
    reply = ros.ask(RabbitEars, 'set_ears', serial=NAME, ear0=1, ear1=1)
    assert not reply.success and 'not connected' in reply.message, reply.message
    again = NabdEmulator('127.0.0.1', port).start()
    try:
        assert wait_for(lambda: again.counters['mode'] >= 1, 15), again.status()
        assert ros.spin_until(lambda: listed(rabbits, NAME).connected, 15)
        reply = ros.ask(RabbitEars, 'set_ears', serial=NAME, ear0=5, ear1=7)
        assert reply.success, reply.message
        assert again.status()['ears'] == (5, 7)
        received = json.dumps(again.received[-1])
        assert '"ears"' in received, received
    finally:
        again.stop()
