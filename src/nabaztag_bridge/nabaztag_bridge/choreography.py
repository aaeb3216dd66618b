"""Nabaztag choreography files (.chor, docs/protocols/nabaztag.md §5): build, parse, time.

A file is a 4-byte header (the data length, big-endian; the rabbit ignores it),
commands of wait byte + opcode + parameters, and 4 zero bytes. The rabbit
skips the first wait byte; each later wait counts ticks of 10 ms x tempo since
the previous command, and the tempo is 0 until a tempo command sets it.
"""

import dataclasses

from legacy_robot_common.errors import MalformedFrame

TICK_SECONDS = 0.010  # one tick is TICK_SECONDS x tempo
LEDS = 5  # 0 bottom, 1-3 body, 4 nose
EARS = 2


@dataclasses.dataclass(frozen=True)
class Opcode:
    code: int
    name: str
    params: tuple  # parameter names, in file order
    limits: dict = dataclasses.field(default_factory=dict)  # name → highest value


OPCODES = {
    op.code: op
    for op in (
        Opcode(0x01, 'tempo', ('tempo',)),
        Opcode(
            0x07,
            'led',
            ('led', 'red', 'green', 'blue', 'zero1', 'zero2'),
            {'led': LEDS - 1, 'zero1': 0, 'zero2': 0},
        ),
        Opcode(
            0x08, 'ear', ('motor', 'position', 'direction'), {'motor': EARS - 1, 'direction': 1}
        ),
        Opcode(0x09, 'all_leds', ('red', 'green', 'blue')),
        Opcode(0x0A, 'led_off', ('led',), {'led': LEDS - 1}),
        Opcode(0x0E, 'led_palette', ('led', 'slot'), {'led': LEDS - 1, 'slot': 7}),
        Opcode(0x10, 'random_midi', ()),
        Opcode(0x11, 'ear_step', ('motor', 'delta'), {'motor': EARS - 1}),
        Opcode(0x12, 'ifne', ('value', 'offset_high', 'offset_low')),
        Opcode(0x13, 'attend', ()),
        Opcode(
            0x14, 'motor_direction', ('motor', 'direction'), {'motor': EARS - 1, 'direction': 1}
        ),
    )
}
OPCODE_BY_NAME = {op.name: op for op in OPCODES.values()}
TEMPO = 0x01


@dataclasses.dataclass(frozen=True)
class Step:
    wait: int  # ticks after the previous step
    opcode: int
    args: tuple = ()


def check_step(step):
    """ValueError naming the problem when the rabbit could not play this step."""
    op = OPCODES.get(step.opcode)
    if op is None:
        raise ValueError(
            f'unknown choreography opcode {step.opcode} (known: '
            + ', '.join(f'{c} {o.name}' for c, o in OPCODES.items())
            + ')'
        )
    if not 0 <= step.wait <= 255:
        raise ValueError(f'{op.name}: wait {step.wait} is not 0..255 ticks')
    if len(step.args) != len(op.params):
        raise ValueError(
            f'{op.name} takes {len(op.params)} values '
            f'({", ".join(op.params) or "none"}), not {len(step.args)}'
        )
    for name, value in zip(op.params, step.args, strict=False):
        highest = op.limits.get(name, 255)
        if not 0 <= value <= highest:
            raise ValueError(f'{op.name}: {name} {value} is not 0..{highest}')


def build(steps):
    """Steps → .chor bytes (header = data length; 4 zero bytes at the end)."""
    body = bytearray()
    for step in steps:
        check_step(step)
        body += bytes((step.wait, step.opcode) + tuple(step.args))
    return len(body).to_bytes(4, 'big') + bytes(body) + bytes(4)


def parse(data, strict=True):
    """.chor bytes → steps. The rabbit stops at 00 00, at the end of the data or at an
    unknown opcode; strict=True turns the last two into MalformedFrame."""
    data = bytes(data)
    if len(data) < 4:
        raise MalformedFrame(f'choreography of {len(data)} bytes has no 4-byte header')
    steps, pos = [], 4
    while pos + 2 <= len(data):
        wait, code = data[pos], data[pos + 1]
        if code == 0 and wait == 0:
            return steps
        op = OPCODES.get(code)
        end = pos + 2 + (len(op.params) if op else 0)
        if op is None or end > len(data):
            if strict:
                problem = f'unknown opcode {code}' if op is None else f'truncated {op.name}'
                raise MalformedFrame(f'choreography byte {pos}: {problem}')
            return steps
        steps.append(Step(wait, code, tuple(data[pos + 2 : end])))
        pos = end
    if strict and pos != len(data):
        raise MalformedFrame('choreography ends inside a command')
    return steps


def timeline(steps):
    """[(seconds from the start, step)] as the rabbit plays them."""
    times, now, tempo = [], 0.0, 0
    for index, step in enumerate(steps):
        if index:  # the rabbit skips the first wait byte
            now += step.wait * tempo * TICK_SECONDS
        times.append((now, step))
        if step.opcode == TEMPO:
            tempo = step.args[0]
    return times


# ---- gestures while the rabbit speaks (the say service) -----------------------------------
GESTURE_TEMPO = 10  # ticks of 100 ms
NOSE = LEDS - 1


def _both_ears(opcode, moves):
    """(wait, value) moves → steps turning ear 0 then, at once, ear 1 (direction 0)."""
    steps = []
    for wait, value in moves:
        extra = (0,) if opcode == 0x08 else ()
        steps += [Step(wait, opcode, (0, value, *extra)), Step(0, opcode, (1, value, *extra))]
    return tuple(steps)


GESTURES = {  # name → steps after the tempo command (waits in 100 ms ticks)
    'nod': _both_ears(0x08, ((0, 5), (4, 0), (4, 5), (4, 0))),
    'wiggle': _both_ears(0x11, ((0, 2), (3, 15), (3, 2), (3, 15))),
    'blink': tuple(
        Step(wait, code, args)
        for wait, code, args in (
            (0, 0x07, (NOSE, 255, 255, 255, 0, 0)),
            (3, 0x0A, (NOSE,)),
            (3, 0x07, (NOSE, 255, 255, 255, 0, 0)),
            (3, 0x0A, (NOSE,)),
        )
    ),
}


def parse_color(text):
    """'#rrggbb' or 'rrggbb' → (r, g, b); ValueError otherwise."""
    digits = text.strip().removeprefix('#')
    if len(digits) != 6 or any(c not in '0123456789abcdefABCDEF' for c in digits):
        raise ValueError(f'color {text!r} is not #rrggbb')
    return tuple(int(digits[i : i + 2], 16) for i in (0, 2, 4))


def speaking_gesture(ears=(-1, -1), color='', name=''):
    """The .chor bytes a rabbit plays while it speaks (ears to a pose, the LEDs in a colour, a
    named gesture), or None when nothing is asked; ValueError for what cannot be played."""
    steps = []
    if color:
        steps.append(Step(0, 0x09, parse_color(color)))
    for motor, position in enumerate(ears):
        if position != -1:
            if not 0 <= position <= 16:
                raise ValueError(f'ear{motor} {position} is not 0..16 (or -1: as it is)')
            steps.append(Step(0, 0x08, (motor, position, 0)))
    if name:
        if name not in GESTURES:
            raise ValueError(f'unknown choreography {name!r} ({", ".join(GESTURES)})')
        steps.extend(GESTURES[name])
    if not steps:
        return None
    return build([Step(0, TEMPO, (GESTURE_TEMPO,)), *steps])
