"""nabd's JSON lines: our packets as nabd reads them, nabd's packets as we decode them, and
bad lines refused with MalformedFrame (never another exception)."""

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from legacy_robot_common.errors import MalformedFrame
from nabaztag_bridge.kinds import nabd_protocol as n


def read(line):
    assert line.endswith(b'\r\n') and line.count(b'\n') == 1
    return json.loads(line)


# ---- what we send ------------------------------------------------------------------------
def test_ears_with_request_id():
    assert read(n.encode_ears(3, 12, request_id='r1')) == {
        'type': 'ears',
        'request_id': 'r1',
        'left': 3,
        'right': 12,
    }


def test_ears_one_side_and_none_refused():
    assert read(n.encode_ears(right=4)) == {'type': 'ears', 'right': 4}
    with pytest.raises(ValueError):
        n.encode_ears()


def test_command_plays_audio_urls_then_a_choreography():
    line = n.encode_command(
        [
            n.audio_item('http://127.0.0.1:8080/a.mp3', 'http://127.0.0.1:8080/b.mp3'),
            n.choreography_item('urn:x-chor:streaming'),
        ],
        request_id='c1',
        cancelable=False,
    )
    assert read(line) == {
        'type': 'command',
        'request_id': 'c1',
        'sequence': [
            {'audio': ['http://127.0.0.1:8080/a.mp3', 'http://127.0.0.1:8080/b.mp3']},
            {'choreography': 'urn:x-chor:streaming'},
        ],
        'cancelable': False,
    }
    with pytest.raises(ValueError):
        n.encode_command([])


def test_choreography_as_data_url_round_trips():
    url = n.choreography_data_url(b'\x00\x01\x02')
    prefix = 'data:application/x-nabaztag-mtl-choreography;base64,'
    assert url.startswith(prefix) and base64.b64decode(url[len(prefix) :]) == b'\x00\x01\x02'


def test_message_info_cancel_wakeup_sleep_gestalt():
    body = [n.audio_item('http://h/x.mp3')]
    assert read(n.encode_message(body, signature={'audio': ['s.mp3']}, request_id='m')) == {
        'type': 'message',
        'request_id': 'm',
        'signature': {'audio': ['s.mp3']},
        'body': body,
    }
    animation = {'tempo': 100, 'colors': [{'left': '#ff0000', 'center': 0, 'right': 15}]}
    assert read(n.encode_info('nose', animation, 'i')) == {
        'type': 'info',
        'request_id': 'i',
        'info_id': 'nose',
        'animation': animation,
    }
    assert read(n.encode_info('nose')) == {'type': 'info', 'info_id': 'nose'}
    assert read(n.encode_cancel('c1')) == {'type': 'cancel', 'request_id': 'c1'}
    assert read(n.encode_wakeup('w')) == {'type': 'wakeup', 'request_id': 'w'}
    assert read(n.encode_sleep()) == {'type': 'sleep'}
    assert read(n.encode_gestalt('g')) == {'type': 'gestalt', 'request_id': 'g'}


def test_mode_with_events_and_bad_mode():
    assert read(n.encode_mode('idle', n.EVENT_KINDS, 'x')) == {
        'type': 'mode',
        'request_id': 'x',
        'mode': 'idle',
        'events': ['asr/*', 'button', 'ears', 'rfid/*'],
    }
    with pytest.raises(ValueError):
        n.encode_mode('busy')


def test_rfid_write():
    assert read(n.encode_rfid_write('d0:02', 'st25tb', 3, 'nabclockd', 'x', 'w1')) == {
        'type': 'rfid_write',
        'request_id': 'w1',
        'uid': 'd0:02',
        'tech': 'st25tb',
        'picture': 3,
        'app': 'nabclockd',
        'data': 'x',
    }


def test_every_request_we_encode_is_one_nabd_accepts():
    for line in (
        n.encode_ears(1, 2, 'a'),
        n.encode_command([n.audio_item('http://h/a.mp3')], 'b'),
        n.encode_message([n.audio_item('http://h/a.mp3')]),
        n.encode_cancel('b'),
        n.encode_mode('interactive', ['button']),
        n.encode_info('i'),
        n.encode_rfid_write('d0:02', 'st25tb', 1, 'x'),
        n.encode_gestalt(),
    ):
        assert n.decode_request(line)['type'] in n.REQUEST_TYPES


# ---- what nabd sends ---------------------------------------------------------------------
def test_state():
    assert n.decode(b'{"type":"state","state":"asleep"}\r\n') == n.State('asleep')
    with pytest.raises(MalformedFrame):
        n.decode(b'{"type":"state","state":"dancing"}')


def test_responses_ok_error_and_canceled():
    assert n.decode('{"type":"response","request_id":"r1","status":"ok"}') == n.Response(
        'r1', 'ok'
    )
    error = n.decode(
        '{"type":"response","request_id":"r2","status":"error",'
        '"class":"MalformedPacket","message":"Packet of unknown type (x)"}'
    )
    assert not error.ok and error.error_class == 'MalformedPacket'
    assert error.reason() == 'nabd answered error (MalformedPacket: Packet of unknown type (x))'
    assert n.decode('{"type":"response","status":"canceled"}').request_id == ''


def test_gestalt_answer_has_no_status():
    answer = n.decode(
        '{"type":"response","request_id":"g","state":"idle","connections":2,'
        '"hardware":{"model":"pc"},"uptime":30}'
    )
    assert answer.ok and answer.status == ''
    assert answer.fields == {
        'state': 'idle',
        'connections': 2,
        'hardware': {'model': 'pc'},
        'uptime': 30,
    }
    with pytest.raises(MalformedFrame):
        n.decode('{"type":"response","request_id":"g"}')  # neither a status nor a gestalt


def test_rfid_write_answer_keeps_the_uid():
    assert n.decode('{"type":"response","status":"ok","uid":"d0:02"}').fields == {'uid': 'd0:02'}


def test_button_events():
    assert n.decode('{"type":"button_event","event":"click","time":1.5}') == n.ButtonEvent(
        'click', 1.5
    )
    assert n.decode('{"type":"button_event","event":"double_click"}').event == 'double_click'


def test_ears_in_idle_and_ear_in_interactive():
    assert n.decode('{"type":"ears_event","left":4,"right":7}') == n.EarsEvent(4, 7)
    assert n.decode('{"type":"ear_event","ear":"left","time":2}') == n.EarEvent('left', 2.0)
    assert n.decode('{"type":"ears_event","ear":"right"}') == n.EarEvent('right')
    for bad in ('{"type":"ears_event","left":"4","right":7}', '{"type":"ear_event","ear":"up"}'):
        with pytest.raises(MalformedFrame):
            n.decode(bad)


def test_rfid_detected_and_removed():
    detected = n.decode(
        '{"type":"rfid_event","tech":"st25tb","uid":"D0:02:1A:03","event":"detected",'
        '"support":"formatted","picture":3,"app":"nabclockd","data":"x","time":9}'
    )
    assert detected.event == 'detected' and detected.tag == 'd0021a03'
    assert (detected.support, detected.app, detected.data, detected.picture) == (
        'formatted',
        'nabclockd',
        'x',
        3,
    )
    removed = n.decode('{"type":"rfid_event","tech":"st25tb","uid":"d0:02","event":"removed"}')
    assert removed.event == 'removed'
    for bad in (
        '{"type":"rfid_event","uid":"zz","event":"detected"}',
        '{"type":"rfid_event","uid":"d0","event":"shown"}',
        '{"type":"rfid_event","uid":"","event":"removed"}',
    ):
        with pytest.raises(MalformedFrame):
            n.decode(bad)


def test_asr_event_intent_and_slots():
    event = n.decode(
        '{"type":"asr_event","nlu":{"intent":"nabweatherd/forecast","date":"tomorrow"},"time":3}'
    )
    assert event == n.AsrEvent('nabweatherd/forecast', {'date': 'tomorrow'}, 3.0)
    for bad in ('{"type":"asr_event"}', '{"type":"asr_event","nlu":{"intent":""}}'):
        with pytest.raises(MalformedFrame):
            n.decode(bad)


def test_unknown_type_is_its_own_error():
    with pytest.raises(n.UnknownPacketType):
        n.decode('{"type":"weather","sky":"blue"}')


@pytest.mark.parametrize(
    'line',
    [
        b'',
        b'\r\n',
        b'not json',
        b'[1, 2]',
        b'{"state": "idle"}',
        b'{"type": 3}',
        b'\xff\xfe{}',
        b'{"type":"state"}',
        b'1' * 5000,
        b'[' * 100000,
        b'{"type":"state","state":"idle"' + b' ' * n.MAX_LINE + b'}',
    ],
)
def test_malformed_lines(line):
    with pytest.raises(MalformedFrame):
        n.decode(line)


# ---- the nabd side -------------------------------------------------------------------------
@pytest.mark.parametrize(
    ('line', 'reason'),
    [
        ('{"type":"command"}', 'Missing required sequence slot'),
        ('{"type":"cancel"}', 'Missing required request_id slot'),
        ('{"type":"mode","mode":"busy"}', 'mode'),
        ('{"type":"ears","left":"x"}', 'left'),
        ('{"type":"ears","request_id":5}', 'request_id'),
        ('{"type":"command","sequence":[1]}', 'command items'),
    ],
)
def test_requests_nabd_refuses(line, reason):
    with pytest.raises(MalformedFrame, match=reason):
        n.decode_request(line)


def test_nabd_packets_decode_to_records():
    assert n.decode(n.state_packet('idle')) == n.State('idle')
    assert n.decode(n.response_packet('r', 'ok')) == n.Response('r', 'ok')
    assert n.decode(n.button_event_packet('click', 1.0)) == n.ButtonEvent('click', 1.0)
    assert n.decode(n.ears_event_packet(1, 2, 1.0)) == n.EarsEvent(1, 2, 1.0)
    assert n.decode(n.ear_event_packet('left', 1.0)) == n.EarEvent('left', 1.0)
    rfid = n.decode(n.rfid_event_packet('d0:02', 'detected', 1.0))
    assert rfid.tag == 'd002' and rfid.support == 'unknown'
    asr = n.decode(n.asr_event_packet('nabclockd/clock', 1.0, room='kitchen'))
    assert asr == n.AsrEvent('nabclockd/clock', {'room': 'kitchen'}, 1.0)
    gestalt = n.decode(n.response_packet('g', '', state='idle', connections=1))
    assert gestalt.fields == {'state': 'idle', 'connections': 1}


def test_uid_text():
    assert n.uid_text('D0021A03') == 'd0:02:1a:03'
    assert n.uid_text('d0:02') == 'd0:02'
    for bad in ('', 'd0a', 'zz'):
        with pytest.raises(ValueError):
            n.uid_text(bad)


def test_sequence_audio():
    assert n.sequence_audio([{'audio': ['a', 'b']}, {'choreography': 'c'}, {'audio': 3}]) == [
        'a',
        'b',
    ]


# ---- fuzz: any line either decodes or raises MalformedFrame ----------------------------------
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)
json_values = (
    scalars
    | st.lists(scalars, max_size=3)
    | st.dictionaries(st.sampled_from(['intent', 'date', 'x']), scalars, max_size=2)
)
slot_names = st.sampled_from(
    ['state', 'status', 'request_id', 'event', 'left', 'right', 'ear', 'uid', 'nlu', 'picture']
    + ['time', 'class', 'message', 'mode', 'events', 'sequence', 'body', 'support']
)
packets = st.builds(
    lambda kind, slots: {**slots, 'type': kind},
    st.sampled_from([*n.DECODERS, *n.REQUEST_TYPES, 'other']),
    st.dictionaries(slot_names, json_values, max_size=5),
)


@settings(max_examples=400, deadline=None)
@given(packets)
def test_fuzz_packets_decode_or_refuse(packet):
    line = json.dumps(packet).encode()
    for decoder in (n.decode, n.decode_request):
        try:
            decoder(line)
        except MalformedFrame:
            pass


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_fuzz_bytes_decode_or_refuse(data):
    for decoder in (n.decode, n.decode_request):
        try:
            decoder(data)
        except MalformedFrame:
            pass
