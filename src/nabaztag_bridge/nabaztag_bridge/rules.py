"""Rules: a YAML file maps a rabbit's trigger (an RFID tag, a click, a double click, moved
ears, heard text, a time of day) to actions (say, play, ears, nose, choreography, publish a
message, call a service). No I/O here but reading YAML text: the node carries actions out.

    rules:
      - name: time please
        when: {phrase: what time is it}   # or regex, intent, rfid, click, double_click,
                                          # ears_moved, time
        rabbit: all                       # or one serial
        cooldown: 5                       # s between two firings for one rabbit
        do:
          - say: It is {time}

Every text of an action (say's text, play's url or media_file, a choreography's name, each
text field of a publish's message or a call's request) takes the trigger's data as {fields}:
{serial}, {time}, {date}, {heard}, {rfid} (an rfid rule), {intent} (an intent rule: the intent
a pynab rabbit recognised itself), a regex rule's groups ({1}, {name}); an unknown field is
refused when the file loads.

load() validates the whole text and raises RulesError with the line of the first problem, so
a bad file never replaces rules in force. Nothing here runs a shell or opens a file: a media
file is only a name the HTTP server resolves under media_root (BridgeServer.media_url).
"""

import copy
import dataclasses
import re
import string
import time

import yaml

from legacy_robot_common.topics import import_type

from . import choreography as chor
from . import protocol as p

EVENT_TRIGGERS = ('rfid', 'click', 'double_click', 'ears_moved')
TRIGGERS = (*EVENT_TRIGGERS, 'phrase', 'regex', 'intent', 'time')
ACTIONS = ('say', 'play', 'ears', 'nose', 'choreography', 'publish', 'call')
RABBIT_NAME = re.compile(r'[A-Za-z0-9_-]{1,32}')  # as kinds.roster names them
RULE_KEYS = ('name', 'when', 'rabbit', 'cooldown', 'do')
FIELDS = ('serial', 'time', 'date', 'heard')  # every rule's; an rfid or intent rule adds its own
TRIGGER_FIELDS = {'rfid': ('rfid',), 'intent': ('intent',)}
SAMPLE_WORD = 'word'  # what a field stands for when a say is checked for loops
INTENT_PATTERN = re.compile(r'[\w.-]+(/[\w.*-]+)?')  # nabd's app/intent, or app/* for any


class RulesError(ValueError):
    """A rules file refused: the message starts with 'line N:'."""

    def __init__(self, line, message):
        super().__init__(f'line {line}: {message}')
        self.line = line


@dataclasses.dataclass(frozen=True)
class Action:
    kind: str
    value: object  # say: text; play: ('url' or 'media_file', text); ears: (e0, e1); nose: blinks;
    # choreography: .chor bytes, or its name when the name has {fields};
    # publish: (topic, type, message); call: (service, type, request)
    line: int
    templated: bool = False  # some text of it has {fields} to fill when it fires


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str
    trigger: str
    argument: object  # rfid: tag id or '' (any); phrase: words; regex: compiled; time: 'HH:MM';
    # intent: the intent's name (lower case), or 'app/*'
    serial: str  # '' for every rabbit
    cooldown: float
    actions: tuple
    line: int


@dataclasses.dataclass(frozen=True)
class Firing:
    rule: Rule
    serial: str  # the rabbit that triggered it ('' for a time rule for every rabbit)
    detail: str  # the tag, the heard text, the intent, the time of day
    fields: dict  # the actions' fields: serial, time, date, heard, rfid, intent, regex groups
    groups: tuple = ()


# ---- loading -------------------------------------------------------------------------------
class _Node:
    """A YAML node read with its line (1-based)."""

    def __init__(self, loader, node):
        self.loader, self.node, self.line = loader, node, node.start_mark.line + 1

    def value(self):
        return self.loader.construct_object(self.node, deep=True)

    def mapping(self, what):
        if not isinstance(self.node, yaml.MappingNode):
            raise RulesError(self.line, f'{what} must be a mapping')
        items = {}
        for key, value in self.node.value:
            items[self.loader.construct_object(key)] = _Node(self.loader, value)
        return items

    def sequence(self, what):
        if not isinstance(self.node, yaml.SequenceNode):
            raise RulesError(self.line, f'{what} must be a list')
        return [_Node(self.loader, item) for item in self.node.value]

    def text(self, what):
        value = self.value()
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise RulesError(self.line, f'{what} must be text')
        return str(value)


def import_interface(name, kind, line):
    """'std_msgs/msg/String' (or std_msgs/String) → the class; RulesError when it does not
    import."""
    parts = name.split('/')
    if len(parts) == 2:
        parts = [parts[0], kind, parts[1]]
    if len(parts) != 3 or parts[1] != kind or not all(parts):
        raise RulesError(line, f'type {name!r} is not package/{kind}/Name')
    try:
        cls = import_type('/'.join(parts))
    except (ImportError, AttributeError, ValueError):
        raise RulesError(line, f'type {name!r} does not import') from None
    if not hasattr(cls, '_fields_and_field_types' if kind == 'msg' else 'Request'):
        raise RulesError(line, f'{name!r} is not a ROS {kind} type')
    return cls


def fill_message(message, fields, line):
    """Set fields of a ROS message from a mapping (nested mappings for nested messages);
    RulesError for an unknown field or a value the field does not take."""
    if not isinstance(fields, dict):
        raise RulesError(line, f'fields of {type(message).__name__} must be a mapping')
    for name, value in fields.items():
        if name not in message.get_fields_and_field_types():
            raise RulesError(line, f'{type(message).__name__} has no field {name!r}')
        current = getattr(message, name)
        try:
            if hasattr(current, 'get_fields_and_field_types'):
                fill_message(current, value, line)
            else:
                setattr(message, name, value)
        except (AssertionError, TypeError, ValueError) as exc:
            raise RulesError(line, f'field {name!r}: {value!r} does not fit ({exc})') from None
    return message


def _serial(node):
    """'' (every rabbit), a serial, or the name the rabbits file gives a rabbit."""
    text = node.text('rabbit').strip()
    if text.lower() in ('', 'all'):
        return ''
    try:
        return p.normalize_serial(text)
    except ValueError as exc:
        if RABBIT_NAME.fullmatch(text):
            return text
        raise RulesError(node.line, f'rabbit: {exc}, nor a name') from None


def _trigger(node):
    """(kind, argument) from `when:` (a kind alone, or a one-key mapping)."""
    if isinstance(node.node, yaml.ScalarNode):
        kind, argument = node.text('when'), None
    else:
        items = node.mapping('when')
        if len(items) != 1:
            raise RulesError(node.line, f'when has one trigger ({", ".join(TRIGGERS)})')
        kind, argument = next(iter(items.items()))
    if kind not in TRIGGERS:
        raise RulesError(node.line, f'unknown trigger {kind!r} ({", ".join(TRIGGERS)})')
    if kind in ('click', 'double_click', 'ears_moved'):
        return kind, None
    if kind == 'rfid':
        try:
            return kind, p.normalize_rfid(argument.text('rfid')) if argument else ''
        except ValueError as exc:
            raise RulesError(argument.line, str(exc)) from None
    if argument is None:
        raise RulesError(node.line, f'trigger {kind} needs a value')
    text = argument.text(kind)
    if kind == 'phrase':
        words = _words(text)
        if not words:
            raise RulesError(argument.line, 'phrase has no words')
        return kind, words
    if kind == 'intent':
        name = text.strip().lower()
        if not INTENT_PATTERN.fullmatch(name):
            raise RulesError(argument.line, f'intent {text!r} is not app/intent (or app/*)')
        return kind, name
    if kind == 'regex':
        try:
            return kind, re.compile(text, re.IGNORECASE)
        except re.error as exc:
            raise RulesError(argument.line, f'bad regular expression {text!r}: {exc}') from None
    match = re.fullmatch(r'([01]?\d|2[0-3]):([0-5]\d)', text.strip())
    if not match:
        raise RulesError(argument.line, f'time {text!r} is not HH:MM')
    return kind, f'{int(match[1]):02d}:{match[2]}'


def _words(text):
    """Lower-case words: 'What time is it?' and 'what  time is it' hear the same."""
    return ' '.join(re.findall(r"[\w']+", text.lower()))


def field_names(trigger, argument):
    """The {fields} an action of this rule may use."""
    names = set(FIELDS) | set(TRIGGER_FIELDS.get(trigger, ()))
    if trigger == 'regex':
        names |= set(argument.groupindex) | {str(i) for i in range(argument.groups + 1)}
    return names


def check_fields(text, names, line, what):
    """RulesError unless every {field} of text is known; whether it has any field, and its
    literal text (each field standing for a word)."""
    literal, has_fields = [], False
    try:
        for prefix, field, _spec, _conv in string.Formatter().parse(text):
            literal.append(prefix)
            if field is None:
                continue
            has_fields = True
            literal.append(SAMPLE_WORD)  # a filled field is some word
            if field.split('.')[0].split('[')[0] not in names:
                raise RulesError(
                    line, f'{what}: unknown field {{{field}}} ({", ".join(sorted(names))})'
                )
    except ValueError as exc:
        raise RulesError(line, f'{what}: {exc}') from None
    return has_fields, ''.join(literal)


def _check_say(text, trigger, argument, line):
    """The text's {fields} must be known; a say that its own heard trigger would hear again
    (its fields filled with a word) loops."""
    has_fields, spoken = check_fields(text, field_names(trigger, argument), line, 'say')
    if trigger in ('phrase', 'regex') and (
        '{heard}' in text
        or (trigger == 'phrase' and f' {argument} ' in f' {_words(spoken)} ')
        or (trigger == 'regex' and argument.search(spoken))
    ):
        raise RulesError(line, 'say: the rabbit would hear its own trigger again (a loop)')
    return has_fields


def message_texts(message):
    """(owner, field name, text) of every text field of a ROS message, nested ones included."""
    for name in message.get_fields_and_field_types():
        value = getattr(message, name)
        if isinstance(value, str):
            yield message, name, value
        elif hasattr(value, 'get_fields_and_field_types'):
            yield from message_texts(value)


def _action(node, trigger, argument, media_url, own_topics, resolve_name):
    items = node.mapping('each action')
    if len(items) != 1:
        raise RulesError(node.line, f'an action has one kind ({", ".join(ACTIONS)})')
    kind, arg = next(iter(items.items()))
    if kind not in ACTIONS:
        raise RulesError(node.line, f'unknown action {kind!r} ({", ".join(ACTIONS)})')
    line = arg.line
    names = field_names(trigger, argument)
    if kind == 'say':
        text = arg.text('say')
        return Action(kind, text, line, _check_say(text, trigger, argument, line))
    if kind == 'play':
        fields = arg.mapping('play')
        if set(fields) not in ({'url'}, {'media_file'}):
            raise RulesError(line, 'play takes url or media_file')
        if 'url' in fields:
            url = fields['url'].text('url')
            if not url.startswith(('http://', 'https://')):
                raise RulesError(line, f'play url {url!r} is not http(s)')
            return Action(kind, ('url', url), line, check_fields(url, names, line, 'play')[0])
        name = fields['media_file'].text('media_file')
        templated = check_fields(name, names, line, 'play')[0]
        try:
            # checked now (a name with fields once filled); resolved again when played
            media_url(name if not templated else _sample(name))
        except ValueError as exc:
            if not templated:
                raise RulesError(line, f'play: {exc}') from None
        return Action(kind, ('media_file', name), line, templated)
    if kind == 'ears':
        ears = arg.value()
        if not isinstance(ears, list) or len(ears) != 2:
            raise RulesError(line, 'ears is [ear0, ear1]')
        try:
            p.check_ears(tuple(ears))
        except (ValueError, TypeError) as exc:
            raise RulesError(line, f'ears: {exc}') from None
        return Action(kind, tuple(ears), line)
    if kind == 'nose':
        blinks = arg.value()
        if blinks not in (0, 1, 2) or isinstance(blinks, bool):
            raise RulesError(line, 'nose is 0 (off), 1 or 2 (blinks)')
        return Action(kind, blinks, line)
    if kind == 'choreography':
        name = arg.text('choreography')
        if check_fields(name, names, line, 'choreography')[0]:
            return Action(kind, name, line, True)  # its name is known when it fires
        try:
            return Action(kind, chor.speaking_gesture(name=name), line)
        except ValueError as exc:
            raise RulesError(line, str(exc)) from None
    fields = arg.mapping(kind)
    target = 'topic' if kind == 'publish' else 'service'
    body = 'fields' if kind == 'publish' else 'request'
    unknown = set(fields) - {target, 'type', body}
    if unknown or target not in fields or 'type' not in fields:
        raise RulesError(line, f'{kind} takes {target}, type and {body}')
    name = fields[target].text(target)
    interface = import_interface(
        fields['type'].text('type'), 'msg' if kind == 'publish' else 'srv', fields['type'].line
    )
    values = fields[body].value() if body in fields else {}
    message = fill_message(
        interface() if kind == 'publish' else interface.Request(), values or {}, line
    )
    try:
        resolved = resolve_name(name, kind == 'call')
    except ValueError as exc:
        raise RulesError(fields[target].line, f'{target} {name!r}: {exc}') from None
    if kind == 'publish' and resolved in own_topics:
        raise RulesError(line, f'publish on {name!r}: the rules listen to it (a loop)')
    templated = False
    for _owner, field, text in message_texts(message):
        templated |= check_fields(text, names, line, f'{kind} field {field!r}')[0]
    return Action(kind, (name, interface, message), line, templated)


def _sample(text):
    """text with each {field} as a word: what a name with fields looks like once filled."""
    return ''.join(
        prefix + (SAMPLE_WORD if field is not None else '')
        for prefix, field, _spec, _conv in string.Formatter().parse(text)
    )


def _as_given(name, service=False):
    return name


def load(text, media_url, own_topics=(), resolve_name=_as_given):
    """The rules of a YAML text → [Rule]; RulesError (with the line) for the first problem.
    media_url(name) → URL or ValueError (a file outside media_root); own_topics: resolved
    names the rules listen to (a publish there would loop); resolve_name(name, service) →
    the full name, or ValueError for a name ROS refuses."""
    try:
        return _load(text, media_url, own_topics, resolve_name)
    except yaml.YAMLError as exc:  # a value PyYAML cannot construct (a bad tag, ...)
        mark = getattr(exc, 'problem_mark', None)
        raise RulesError(mark.line + 1 if mark else 1, f'not YAML: {exc}') from None


def _load(text, media_url, own_topics, resolve_name):
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        mark = getattr(exc, 'problem_mark', None)
        raise RulesError(mark.line + 1 if mark else 1, f'not YAML: {exc}') from None
    finally:
        loader.dispose()
    if root is None:
        raise RulesError(1, 'empty rules file (it needs a list under "rules:")')
    top = _Node(loader, root).mapping('the file')
    if set(top) != {'rules'}:
        raise RulesError(1, 'the file has one key, rules (a list)')
    rules, names = [], set()
    for item in top['rules'].sequence('rules'):
        fields = item.mapping('a rule')
        for key in fields:
            if key not in RULE_KEYS:
                raise RulesError(fields[key].line, f'unknown rule key {key!r}')
        for key in ('name', 'when', 'do'):
            if key not in fields:
                raise RulesError(item.line, f'a rule needs {key}')
        name = fields['name'].text('name')
        if name in names:
            raise RulesError(fields['name'].line, f'two rules are named {name!r}')
        names.add(name)
        trigger, argument = _trigger(fields['when'])
        cooldown = fields['cooldown'].value() if 'cooldown' in fields else 0.0
        if not isinstance(cooldown, int | float) or isinstance(cooldown, bool) or cooldown < 0:
            raise RulesError(fields['cooldown'].line, 'cooldown is seconds, 0 or more')
        actions = tuple(
            _action(a, trigger, argument, media_url, set(own_topics), resolve_name)
            for a in fields['do'].sequence('do')
        )
        if not actions:
            raise RulesError(fields['do'].line, 'a rule needs at least one action')
        serial = _serial(fields['rabbit']) if 'rabbit' in fields else ''
        rules.append(Rule(name, trigger, argument, serial, float(cooldown), actions, item.line))
    return rules


# ---- matching ------------------------------------------------------------------------------
class RuleEngine:
    """Which rules fire for an event, heard text or the time; fire(firing) carries a firing
    out. clock: time.time-like (the time of day, {time}, {date}); monotonic: the cool-downs."""

    def __init__(self, fire, clock=time.time, monotonic=time.monotonic):
        self._fire, self._clock, self._monotonic = fire, clock, monotonic
        self.load([])

    def load(self, rules):
        """Swap rules in (all checked already by load())."""
        by_kind = {}
        for rule in rules:
            by_kind.setdefault(rule.trigger, []).append(rule)
        self.rules = tuple(rules)
        self._events = {k: tuple(v) for k, v in by_kind.items() if k in EVENT_TRIGGERS}
        self._heard = tuple(by_kind.get('phrase', []) + by_kind.get('regex', []))
        self._intents = tuple(by_kind.get('intent', ()))
        self._timed = tuple(by_kind.get('time', ()))
        self._last_fired = {}  # (rule name, serial) → monotonic time
        self._last_minute = self._minute()

    def listens(self, kind):
        """Whether some rule fires on this event kind (a cheap test per event)."""
        return kind in self._events or (kind == 'intent' and bool(self._intents))

    def on_event(self, serial, kind, rfid=''):
        for rule in self._events.get(kind, ()):
            if kind == 'rfid' and rule.argument and rule.argument != rfid:
                continue
            self._maybe_fire(rule, serial, rfid or kind, {'rfid': rfid} if rfid else {})

    def on_intent(self, serial, intent):
        """An intent a rabbit recognised itself (a pynab rabbit's asr_event): as heard
        text is to phrase rules, an intent is to intent rules (by name, or app/*)."""
        name = intent.lower()
        app = name.split('/', 1)[0] + '/*'
        for rule in self._intents:
            if rule.argument in (name, app):
                self._maybe_fire(rule, serial, intent, {'intent': intent})

    def on_heard(self, serial, text):
        """Heard text from a speech recogniser (the entry point the recogniser calls)."""
        words = None
        for rule in self._heard:
            if rule.trigger == 'phrase':
                words = _words(text) if words is None else words
                if f' {rule.argument} ' in f' {words} ':
                    self._maybe_fire(rule, serial, text, {'heard': text})
                continue
            match = rule.argument.search(text)
            if match:
                fields = {'heard': text, **match.groupdict(default='')}
                groups = (match[0], *(g or '' for g in match.groups()))
                self._maybe_fire(rule, serial, text, fields, groups)

    def tick(self):
        """Called often (a timer): fires the time rules of a minute once, when it begins."""
        minute = self._minute()
        if minute == self._last_minute:
            return
        self._last_minute = minute
        for rule in self._timed:
            if rule.argument == minute:
                self._maybe_fire(rule, rule.serial, minute, {})

    def _minute(self):
        return time.strftime('%H:%M', time.localtime(self._clock()))

    def _maybe_fire(self, rule, serial, detail, fields, groups=()):
        if rule.serial and serial and rule.serial != serial:
            return
        key, now = (rule.name, serial), self._monotonic()
        last = self._last_fired.get(key)
        if last is not None and now - last < rule.cooldown:
            return
        self._last_fired[key] = now
        stamp = time.localtime(self._clock())
        serial = serial or rule.serial
        fields = {
            'serial': serial,
            'time': time.strftime('%H:%M', stamp),
            'date': time.strftime('%A %d %B %Y', stamp),
            'heard': '',
            'rfid': '',
            'intent': '',
            **fields,
        }
        self._fire(Firing(rule, serial, detail, fields, groups))


def fill(text, firing):
    """A text of an action with the firing's fields; ValueError for a field that does not
    fill (an attribute or index of a field that its value lacks)."""
    try:
        return text.format(*firing.groups, **firing.fields)
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f'{text!r} does not fill: {exc!r}') from None


def say_text(action, firing):
    return fill(action.value, firing)


def filled(action, firing):
    """The action's value with every text filled from the firing (the value itself when it
    has no {fields}): say → text; play → (kind, text); choreography → .chor bytes
    (ValueError for a filled name that is no choreography); publish/call → (name, type, a
    copy of the message)."""
    if not action.templated:
        return action.value
    if action.kind == 'say':
        return say_text(action, firing)
    if action.kind == 'play':
        return action.value[0], fill(action.value[1], firing)
    if action.kind == 'choreography':
        return chor.speaking_gesture(name=fill(action.value, firing))
    name, cls, message = action.value
    message = copy.deepcopy(message)
    for owner, field, text in list(message_texts(message)):
        try:
            setattr(owner, field, fill(text, firing))
        except AssertionError as exc:  # a bounded string field refuses the filled text
            raise ValueError(f'field {field!r}: {exc}') from None
    return name, cls, message
