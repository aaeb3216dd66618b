"""Rules files: loading (line-numbered refusals) and matching (no ROS graph)."""

import pathlib
import time

import pytest

from nabaztag_bridge import rules

SERIAL = '0013d3849e1a'
TAG = 'd0021a0352b7e2f4'
EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / 'config' / 'nabaztag_rules.yaml'


def media_url(name):
    """The server's answer for a media root holding only jingle.mp3."""
    if name != 'jingle.mp3':
        raise ValueError(f'{name!r} is not a file under the media root')
    return f'http://127.0.0.1:1/local/{name}'


def load(text, **kwargs):
    return rules.load(text, media_url, **kwargs)


def refusal(text, **kwargs):
    with pytest.raises(rules.RulesError) as info:
        load(text, **kwargs)
    return info.value


def rule(when, do, extra=''):
    return f'rules:\n  - name: r\n    when: {when}\n{extra}    do:\n{do}'


def test_the_example_file_loads():
    loaded = load(EXAMPLE.read_text())
    assert [r.trigger for r in loaded] == ['phrase', 'rfid', 'double_click']
    assert loaded[2].actions[0].value[2].data == 'start'


def refuse_spaces(name, service=False):
    """What the node's resolver does with a name ROS refuses."""
    if ' ' in name:
        raise ValueError('a name has no spaces')
    return name


@pytest.mark.parametrize(
    'text, line, words',
    [
        (rule('{sneeze: 1}', '      - say: hi\n'), 3, 'unknown trigger'),
        (rule('click', '      - dance: 1\n'), 5, 'unknown action'),
        (rule('{regex: "(unclosed"}', '      - say: hi\n'), 3, 'bad regular expression'),
        (
            rule(
                'click',
                '      - publish: {topic: /x, type: nosuch_msgs/msg/Thing, fields: {}}\n',
            ),
            5,
            'does not import',
        ),
        (
            rule(
                'click',
                '      - publish: {topic: /x, type: std_msgs/msg/String, fields: {dta: a}}\n',
            ),
            5,
            'no field',
        ),
        (
            rule('{phrase: what time is it}', '      - say: "what time is it, you ask"\n'),
            5,
            'loop',
        ),
        (rule('{regex: "hello (\\\\w+)"}', '      - say: "hello {1}"\n'), 5, 'loop'),
        (rule('{phrase: hi}', '      - say: "{heard}"\n'), 5, 'loop'),
        (
            rule('click', '      - publish: {topic: /events, type: std_msgs/msg/String}\n'),
            5,
            'loop',
        ),
        (rule('click', '      - play: {media_file: ../../etc/passwd}\n'), 5, 'media root'),
        (rule('click', '      - play: {url: "file:///etc/passwd"}\n'), 5, 'http'),
        (rule('click', '      - say: "{uptime}"\n'), 5, 'unknown field'),
        (rule('{time: "25:00"}', '      - say: hi\n'), 3, 'HH:MM'),
        (rule('click', '      - ears: [3, 40]\n'), 5, 'ears'),
        (rule('click', '      - choreography: moonwalk\n'), 5, 'moonwalk'),
        (rule('click', '      - say: hi\n', '    cooldown: -1\n'), 4, 'cooldown'),
        (rule('click', '      - say: hi\n', '    shell: rm -rf /\n'), 4, 'unknown rule key'),
        ('rules:\n  - name: r\n    when: click: click\n', 3, 'not YAML'),
        (rule('{rfid: 12zz}', '      - say: hi\n'), 3, 'RFID'),
        (
            rule('click', '      - publish: {topic: a b, type: std_msgs/msg/String}\n'),
            5,
            'topic',
        ),
        (rule('click', '      - say: !!python/name:os.system hi\n'), 5, 'not YAML'),
    ],
)
def test_a_bad_file_is_refused_with_its_line(text, line, words):
    error = refusal(text, own_topics={'/events'}, resolve_name=refuse_spaces)
    assert error.line == line, error
    assert words in str(error)
    assert str(error).startswith(f'line {line}:')


def test_a_service_type_is_imported_and_its_request_filled():
    (loaded,) = load(
        rule(
            'click',
            '      - call: {service: /arm, type: std_srvs/srv/SetBool, request: {data: true}}\n',
        )
    )
    name, cls, request = loaded.actions[0].value
    assert (name, cls.__name__, request.data) == ('/arm', 'SetBool', True)


class Recorder:
    def __init__(self, now=0.0):
        self.firings, self.now, self.wall = [], now, time.mktime((2026, 3, 1, 7, 29, 0, 0, 0, -1))

    def engine(self, text):
        engine = rules.RuleEngine(
            self.firings.append, clock=lambda: self.wall, monotonic=lambda: self.now
        )
        engine.load(load(text))
        return engine


def test_a_tag_fires_its_rule_only_for_that_tag():
    recorder = Recorder()
    engine = recorder.engine(rule(f'{{rfid: {TAG}}}', '      - choreography: nod\n'))
    assert engine.listens('rfid') and not engine.listens('click')
    engine.on_event(SERIAL, 'rfid', 'd0021a0352b7e2f5')
    assert recorder.firings == []
    engine.on_event(SERIAL, 'rfid', TAG)
    assert [(f.rule.name, f.serial, f.detail) for f in recorder.firings] == [('r', SERIAL, TAG)]


def test_the_cooldown_holds_a_rule_back_per_rabbit():
    recorder = Recorder()
    engine = recorder.engine(rule('click', '      - nose: 1\n', '    cooldown: 5\n'))
    engine.on_event(SERIAL, 'click')
    engine.on_event(SERIAL, 'click')
    engine.on_event('0013d3849e1b', 'click')
    recorder.now = 5.0
    engine.on_event(SERIAL, 'click')
    assert [f.serial for f in recorder.firings] == [SERIAL, '0013d3849e1b', SERIAL]


def test_a_rule_for_one_rabbit_ignores_the_others():
    recorder = Recorder()
    engine = recorder.engine(rule('ears_moved', '      - nose: 0\n', f'    rabbit: "{SERIAL}"\n'))
    engine.on_event('0013d3849e1b', 'ears_moved')
    engine.on_event(SERIAL, 'ears_moved')
    assert [f.serial for f in recorder.firings] == [SERIAL]


def test_a_phrase_is_heard_whatever_the_case_and_punctuation():
    recorder = Recorder()
    engine = recorder.engine(rule('{phrase: what time is it}', '      - say: "It is {time}"\n'))
    engine.on_heard(SERIAL, 'What timed is it')
    engine.on_heard(SERIAL, 'Hey rabbit, WHAT time is it?')
    (firing,) = recorder.firings
    assert rules.say_text(firing.rule.actions[0], firing) == 'It is 07:29'


def test_regex_groups_fill_the_say_text():
    recorder = Recorder()
    engine = recorder.engine(
        rule(
            r'{regex: "my name is (?P<name>\\w+)"}',
            '      - say: "Hello {name}, {1}. Today is {date}"\n',
        )
    )
    engine.on_heard(SERIAL, 'my name is Ada')
    (firing,) = recorder.firings
    assert rules.say_text(firing.rule.actions[0], firing) == (
        'Hello Ada, Ada. Today is Sunday 01 March 2026'
    )


def test_a_time_rule_fires_once_when_its_minute_begins():
    recorder = Recorder()
    engine = recorder.engine(rule('{time: "7:30"}', '      - ears: [0, 0]\n'))
    engine.tick()
    assert recorder.firings == []
    recorder.wall += 60
    engine.tick()
    engine.tick()
    assert [(f.detail, f.serial) for f in recorder.firings] == [('07:30', '')]


def test_a_rule_names_its_rabbit_by_serial_or_by_the_rabbits_file_name():
    by_serial = load(rule('click', '      - nose: 0\n', '    rabbit: "00:13:D3:84:9E:1A"\n'))
    by_name = load(rule('click', '      - nose: 0\n', '    rabbit: Kitchen\n'))
    assert (by_serial[0].serial, by_name[0].serial) == (SERIAL, 'Kitchen')
    error = refusal(rule('click', '      - nose: 0\n', '    rabbit: "the kitchen"\n'))
    assert 'nor a name' in str(error)


# ---- intents (a pynab rabbit recognises speech itself) -------------------------------------
def test_an_intent_rule_fires_on_its_intent_or_its_app():
    recorder = Recorder()
    engine = recorder.engine(
        'rules:\n'
        '  - name: clock\n    when: {intent: nabclockd/clock}\n'
        '    do:\n      - say: "It is {time}, you asked {intent}"\n'
        '  - name: weather\n    when: {intent: "nabweatherd/*"}\n    do:\n      - nose: 1\n'
    )
    assert engine.listens('intent') and not engine.listens('click')
    engine.on_intent(SERIAL, 'nabclockd/sleep')
    assert recorder.firings == []
    engine.on_intent(SERIAL, 'NabClockd/Clock')
    engine.on_intent(SERIAL, 'nabweatherd/forecast')
    assert [(f.rule.name, f.detail) for f in recorder.firings] == [
        ('clock', 'NabClockd/Clock'),
        ('weather', 'nabweatherd/forecast'),
    ]
    firing = recorder.firings[0]
    assert (
        rules.say_text(firing.rule.actions[0], firing) == 'It is 07:29, you asked NabClockd/Clock'
    )


@pytest.mark.parametrize(
    'text, line, words',
    [
        (rule('{intent: "what time"}', '      - say: hi\n'), 3, 'is not app/intent'),
        (rule('intent', '      - say: hi\n'), 3, 'needs a value'),
        (rule('click', '      - say: "{intent}"\n'), 5, 'unknown field {intent}'),
        (rule('{intent: a/b}', '      - say: "{rfid}"\n'), 5, 'unknown field {rfid}'),
        (
            rule(
                'click',
                '      - publish: {topic: /x, type: std_msgs/String, fields: {data: "{tag}"}}\n',
            ),
            5,
            "publish field 'data': unknown field {tag}",
        ),
        (rule('click', '      - play: {url: "http://h/{who}.mp3"}\n'), 5, 'play: unknown field'),
        (rule('click', '      - play: {media_file: "{x}.mp3"}\n'), 5, 'play: unknown field'),
        (rule('click', '      - choreography: "{sound}"\n'), 5, 'choreography: unknown field'),
        (rule('click', '      - play: {url: "{serial}"}\n'), 5, 'is not http(s)'),
    ],
)
def test_unknown_fields_are_refused_in_every_action(text, line, words):
    error = refusal(text)
    assert error.line == line, error
    assert words in str(error)


# ---- every text of every action takes the trigger's data ------------------------------------
def fire(text, trigger, *args):
    recorder = Recorder()
    engine = recorder.engine(text)
    getattr(engine, trigger)(SERIAL, *args)
    (firing,) = recorder.firings
    return firing


def filled(firing, index=0):
    return rules.filled(firing.rule.actions[index], firing)


def test_publish_fills_its_text_fields_from_the_tag():
    text = rule(
        f'{{rfid: {TAG}}}',
        '      - publish: {topic: /tags, type: std_msgs/msg/String, '
        'fields: {data: "tag {rfid} on {serial} at {time}"}}\n',
    )
    firing = fire(text, 'on_event', 'rfid', TAG)
    name, _, message = filled(firing)
    assert (name, message.data) == ('/tags', f'tag {TAG} on {SERIAL} at 07:29')
    assert firing.rule.actions[0].value[2].data == 'tag {rfid} on {serial} at {time}'  # a copy


def test_a_call_fills_its_request_and_nested_messages():
    text = rule(
        '{intent: nabclockd/clock}',
        '      - call: {service: /say, type: legacy_robot_interfaces/srv/RabbitSay, '
        'request: {serial: "{serial}", text: "asked {intent}"}}\n',
    )
    _, _, request = filled(fire(text, 'on_intent', 'nabclockd/clock'))
    assert (request.serial, request.text) == (SERIAL, 'asked nabclockd/clock')


def test_play_and_choreography_names_with_fields():
    text = rule(
        r'{regex: "play (?P<what>\\w+)"}',
        '      - play: {media_file: "{what}.mp3"}\n'
        '      - play: {url: "http://127.0.0.1:1/{1}.mp3"}\n'
        '      - choreography: "{what}"\n',
    )
    firing = fire(text, 'on_heard', 'please play jingle')
    assert filled(firing, 0) == ('media_file', 'jingle.mp3')
    assert filled(firing, 1) == ('url', 'http://127.0.0.1:1/jingle.mp3')
    with pytest.raises(ValueError, match='unknown choreography'):  # fails when it fires
        filled(firing, 2)
    chor = filled(fire(text, 'on_heard', 'play nod'), 2)
    assert isinstance(chor, bytes) and chor


def test_actions_without_fields_are_left_as_loaded():
    text = rule(
        'click', '      - publish: {topic: /x, type: std_msgs/String, fields: {data: a}}\n'
    )
    firing = fire(text, 'on_event', 'click')
    assert filled(firing) is firing.rule.actions[0].value
    assert firing.fields['serial'] == SERIAL and firing.fields['rfid'] == ''
