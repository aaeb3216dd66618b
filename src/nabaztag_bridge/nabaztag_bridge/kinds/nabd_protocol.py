"""nabd's service protocol (a pynab rabbit): one JSON object per line, both ways.

Pure functions, no sockets. ``encode_*`` build the packets a service sends (bytes, one line,
CRLF); ``decode`` turns one line nabd sent into a typed record. The nabd side (for the
emulator) is here too: ``decode_request`` checks a service's packet, ``*_packet`` build
nabd's. Bad input raises MalformedFrame; a well-formed packet of a type we do not know
raises UnknownPacketType (a MalformedFrame), so a client can count the two apart.
"""

import base64
import dataclasses
import json

from legacy_robot_common.errors import MalformedFrame

PORT = 10543
MAX_LINE = 64 * 1024  # bytes; nabd's longest packets (rfid_event, gestalt) are well under 1 KiB
STATES = ('asleep', 'idle', 'interactive', 'playing', 'recording')
MODES = ('idle', 'interactive')
EVENT_KINDS = ('asr/*', 'button', 'ears', 'rfid/*')  # every event a service may ask for
BUTTON_EVENTS = ('down', 'up', 'click', 'double_click', 'click_and_hold', 'hold', 'triple_click')
RFID_EVENTS = ('detected', 'removed')
STATUSES = ('ok', 'canceled', 'expired', 'error', 'failure', 'timeout')
REQUEST_TYPES = (
    'info',
    'ears',
    'command',
    'message',
    'cancel',
    'wakeup',
    'sleep',
    'mode',
    'rfid_write',
    'gestalt',
)


class UnknownPacketType(MalformedFrame):
    """Valid JSON with a type this side does not know."""


# ---- records nabd sends ------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class State:
    state: str


@dataclasses.dataclass(frozen=True)
class Response:
    """An answer to a request. status is '' for a gestalt answer, which has none: its values
    (state, connections, hardware, uptime) are in fields, as are rfid_write's uid."""

    request_id: str
    status: str
    error_class: str = ''
    message: str = ''
    fields: dict = dataclasses.field(default_factory=dict)

    @property
    def ok(self):
        return self.status in ('ok', '')

    def reason(self):
        """The failure in words, for a service's answer."""
        detail = ': '.join(part for part in (self.error_class, self.message) if part)
        return f'nabd answered {self.status}' + (f' ({detail})' if detail else '')


@dataclasses.dataclass(frozen=True)
class ButtonEvent:
    event: str
    time: float = 0.0


@dataclasses.dataclass(frozen=True)
class EarsEvent:
    """Ears moved by hand, in idle mode: the positions nabd detected."""

    left: int
    right: int
    time: float = 0.0


@dataclasses.dataclass(frozen=True)
class EarEvent:
    """An ear moved by hand, in interactive mode: which one, not where."""

    ear: str
    time: float = 0.0


@dataclasses.dataclass(frozen=True)
class RfidEvent:
    uid: str  # as nabd writes it: hex bytes joined by ':'
    event: str  # detected or removed
    tech: str = ''
    support: str = ''
    app: str = ''
    data: str = ''
    picture: int = None
    time: float = 0.0

    @property
    def tag(self):
        """The uid as lower-case hex without separators."""
        return self.uid.replace(':', '').lower()


@dataclasses.dataclass(frozen=True)
class AsrEvent:
    """Speech nabd recognised itself: the intent and its slots (nlu's other keys)."""

    intent: str
    slots: dict = dataclasses.field(default_factory=dict)
    time: float = 0.0


# ---- lines -------------------------------------------------------------------------------
def parse_line(line):
    """One line (bytes or str, with or without its CRLF) → the JSON object with a str type."""
    if isinstance(line, bytes | bytearray):
        if len(line) > MAX_LINE:
            raise MalformedFrame(f'line of {len(line)} bytes is longer than {MAX_LINE}')
        try:
            line = bytes(line).decode('utf-8')
        except UnicodeDecodeError as exc:
            raise MalformedFrame(f'not UTF-8: {exc}') from None
    try:
        packet = json.loads(line)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, or a 5000-digit int
        raise MalformedFrame(f'not JSON: {exc}') from None
    if not isinstance(packet, dict):
        raise MalformedFrame(f'a packet is a JSON object, not {type(packet).__name__}')
    if not isinstance(packet.get('type'), str):
        raise MalformedFrame('packet without a text "type"')
    return packet


def encode(packet):
    """A packet (a dict with its type) → one line of compact JSON, CRLF-terminated."""
    return json.dumps(packet, separators=(',', ':'), ensure_ascii=False).encode('utf-8') + b'\r\n'


def _text(packet, key, default=None):
    value = packet.get(key, default)
    if not isinstance(value, str):
        raise MalformedFrame(f'{packet["type"]}: {key} must be text, got {value!r}')
    return value


def _number(packet, key, default=0.0):
    value = packet.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedFrame(f'{packet["type"]}: {key} must be a number, got {value!r}')
    return float(value)


def _position(packet, key):
    value = packet.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedFrame(f'{packet["type"]}: {key} must be an ear position, got {value!r}')
    return value


def _one_of(packet, key, allowed):
    value = _text(packet, key)
    if value not in allowed:
        raise MalformedFrame(f'{packet["type"]}: {key} {value!r} is not one of {allowed}')
    return value


# ---- decoding what nabd sends --------------------------------------------------------------
def _state(packet):
    return State(_one_of(packet, 'state', STATES))


RESPONSE_KEYS = ('type', 'request_id', 'status', 'class', 'message')


def _response(packet):
    status = packet.get('status', '')
    if status != '' and status not in STATUSES:
        raise MalformedFrame(f'response: status {status!r} is not one of {STATUSES}')
    request_id = packet.get('request_id', '')
    if not isinstance(request_id, str):
        raise MalformedFrame(f'response: request_id must be text, got {request_id!r}')
    fields = {k: v for k, v in packet.items() if k not in RESPONSE_KEYS}
    if status == '' and 'state' not in fields:
        raise MalformedFrame('response without a status (and not a gestalt answer)')
    return Response(
        request_id,
        status,
        str(packet.get('class', '')),
        str(packet.get('message', '')),
        fields,
    )


def _button_event(packet):
    # nabd's button knows more gestures than it documents: keep any text, the link filters
    return ButtonEvent(_text(packet, 'event'), _number(packet, 'time'))


def _ears_event(packet):
    if 'ear' in packet:  # PROTOCOL.md's interactive form; nabd itself sends ear_event
        return _ear_event(packet)
    return EarsEvent(
        _position(packet, 'left'), _position(packet, 'right'), _number(packet, 'time')
    )


def _ear_event(packet):
    return EarEvent(_one_of(packet, 'ear', ('left', 'right')), _number(packet, 'time'))


def _rfid_event(packet):
    picture = packet.get('picture')
    if picture is not None and (isinstance(picture, bool) or not isinstance(picture, int)):
        raise MalformedFrame(f'rfid_event: picture must be a number, got {picture!r}')
    uid = _text(packet, 'uid')
    if not uid.replace(':', '') or any(c not in '0123456789abcdefABCDEF:' for c in uid):
        raise MalformedFrame(f'rfid_event: uid {uid!r} is not hex')
    return RfidEvent(
        uid,
        _one_of(packet, 'event', RFID_EVENTS),
        _text(packet, 'tech', ''),
        _text(packet, 'support', ''),
        _text(packet, 'app', ''),
        _text(packet, 'data', ''),
        picture,
        _number(packet, 'time'),
    )


def _asr_event(packet):
    nlu = packet.get('nlu')
    if not isinstance(nlu, dict):
        raise MalformedFrame(f'asr_event: nlu must be an object, got {nlu!r}')
    intent = nlu.get('intent')
    if not isinstance(intent, str) or not intent:
        raise MalformedFrame(f'asr_event: nlu.intent must be text, got {intent!r}')
    slots = {k: v for k, v in nlu.items() if k != 'intent'}
    return AsrEvent(intent, slots, _number(packet, 'time'))


DECODERS = {
    'state': _state,
    'response': _response,
    'button_event': _button_event,
    'ears_event': _ears_event,
    'ear_event': _ear_event,
    'rfid_event': _rfid_event,
    'asr_event': _asr_event,
}


def decode(line):
    """One line from nabd → State, Response, ButtonEvent, EarsEvent, EarEvent, RfidEvent or
    AsrEvent. MalformedFrame for bad input, UnknownPacketType for a type not in DECODERS."""
    packet = parse_line(line)
    decoder = DECODERS.get(packet['type'])
    if decoder is None:
        raise UnknownPacketType(f'unknown packet type {packet["type"][:40]!r}')
    return decoder(packet)


# ---- encoding what a service sends -------------------------------------------------------
def _request(kind, request_id, **slots):
    packet = {'type': kind}
    if request_id is not None:
        packet['request_id'] = request_id
    packet.update({k: v for k, v in slots.items() if v is not None})
    return encode(packet)


def encode_info(info_id, animation=None, request_id=None):
    """Show an animation while idle (tempo ms, colors: [{left, center, right}, ...]); no
    animation removes the info."""
    return _request('info', request_id, info_id=info_id, animation=animation)


def encode_ears(left=None, right=None, request_id=None, event=None):
    if left is None and right is None:
        raise ValueError('ears needs left, right or both')
    return _request('ears', request_id, left=left, right=right, event=event)


def audio_item(*urls, choreography=None):
    """One sequence item: sounds played one after another (URLs or nabd resources)."""
    return {k: v for k, v in (('audio', list(urls)), ('choreography', choreography)) if v}


def choreography_item(choreography):
    """One sequence item: a choreography alone (a resource, a urn:x-chor: URN or a data:
    URL), played to its end."""
    return {'choreography': choreography}


def choreography_data_url(chor_bytes):
    """A .chor file as the data: URL nabd accepts in a sequence."""
    encoded = base64.b64encode(chor_bytes).decode('ascii')
    return f'data:application/x-nabaztag-mtl-choreography;base64,{encoded}'


def encode_command(sequence, request_id=None, expiration=None, cancelable=None):
    """Play a sequence; nabd answers when it has played (or was cancelled / expired).
    expiration: an ISO 8601 date."""
    if not sequence:
        raise ValueError('a command needs a sequence of at least one item')
    return _request(
        'command',
        request_id,
        sequence=list(sequence),
        expiration=expiration,
        cancelable=cancelable,
    )


def encode_message(body, signature=None, request_id=None, expiration=None, cancelable=None):
    if not body:
        raise ValueError('a message needs a body of at least one item')
    return _request(
        'message',
        request_id,
        signature=signature,
        body=list(body),
        expiration=expiration,
        cancelable=cancelable,
    )


def encode_cancel(request_id):
    """Cancel the command sent with this request_id: its own response says canceled."""
    return _request('cancel', request_id)


def encode_wakeup(request_id=None):
    return _request('wakeup', request_id)


def encode_sleep(request_id=None):
    return _request('sleep', request_id)


def encode_mode(mode, events=None, request_id=None):
    if mode not in MODES:
        raise ValueError(f'mode {mode!r} is not one of {MODES}')
    return _request('mode', request_id, mode=mode, events=list(events) if events else None)


def encode_rfid_write(uid, tech, picture, app, data=None, request_id=None, timeout=None):
    return _request(
        'rfid_write',
        request_id,
        uid=uid,
        tech=tech,
        picture=picture,
        app=app,
        data=data,
        timeout=timeout,
    )


def encode_gestalt(request_id=None):
    return _request('gestalt', request_id)


# ---- the nabd side (the emulator) --------------------------------------------------------
REQUIRED_SLOTS = {
    'info': ('info_id',),
    'command': ('sequence',),
    'message': ('body',),
    'cancel': ('request_id',),
    'mode': ('mode',),
    'rfid_write': ('uid', 'tech', 'picture', 'app'),
}


def decode_request(line):
    """One line a service sent → its packet (a dict), checked as nabd checks it.
    MalformedFrame names what is wrong (nabd answers it as an error)."""
    packet = parse_line(line)
    kind = packet['type']
    if kind not in REQUEST_TYPES:
        raise UnknownPacketType(f'Packet of unknown type ({kind[:40]})')
    for slot in REQUIRED_SLOTS.get(kind, ()):
        if slot not in packet:
            raise MalformedFrame(f'Missing required {slot} slot')
    if 'request_id' in packet and not isinstance(packet['request_id'], str):
        raise MalformedFrame('Invalid request_id slot, expected a string')
    if kind == 'ears':
        for side in ('left', 'right'):
            if side in packet:
                _position(packet, side)
    if kind == 'mode':
        _one_of(packet, 'mode', MODES)
        events = packet.get('events', [])
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise MalformedFrame('Invalid events slot, expected a list of text')
    if kind in ('command', 'message'):
        items = packet['sequence' if kind == 'command' else 'body']
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise MalformedFrame(f'Invalid {kind} items, expected a list of objects')
    return packet


def sequence_audio(items):
    """The audio entries of a sequence's items, in order."""
    audio = []
    for item in items:
        entries = item.get('audio', [])
        audio.extend(
            e for e in (entries if isinstance(entries, list) else []) if isinstance(e, str)
        )
    return audio


def state_packet(state):
    return encode({'type': 'state', 'state': state})


def response_packet(request_id, status='ok', error_class=None, message=None, **fields):
    packet = {'type': 'response'}
    if status:
        packet['status'] = status
    if error_class is not None:
        packet['class'] = error_class
    if message is not None:
        packet['message'] = message
    packet.update(fields)
    if request_id is not None:
        packet['request_id'] = request_id
    return encode(packet)


def button_event_packet(event, time):
    return encode({'type': 'button_event', 'event': event, 'time': time})


def ears_event_packet(left, right, time):
    return encode({'type': 'ears_event', 'left': left, 'right': right, 'time': time})


def ear_event_packet(ear, time):
    return encode({'type': 'ear_event', 'ear': ear, 'time': time})


def rfid_event_packet(uid, event, time, tech='st25tb', support='unknown'):
    packet = {'type': 'rfid_event', 'tech': tech, 'uid': uid, 'event': event, 'time': time}
    if event == 'detected':
        packet['support'] = support
    return encode(packet)


def asr_event_packet(intent, time, **slots):
    return encode({'type': 'asr_event', 'nlu': {'intent': intent, **slots}, 'time': time})


def uid_text(tag):
    """Hex digits (with or without ':') → nabd's uid form, 'd0:02:1a:...'; ValueError when
    it is not whole bytes of hex."""
    digits = tag.replace(':', '').lower()
    if not digits or len(digits) % 2 or any(c not in '0123456789abcdef' for c in digits):
        raise ValueError(f'tag {tag!r} is not whole bytes of hex')
    return ':'.join(digits[i : i + 2] for i in range(0, len(digits), 2))
