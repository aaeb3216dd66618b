"""The violet kind: a rabbit on Violet's ping-era firmware, which polls the bridge (p4.jsp).

Nothing is sent to it: a command is queued in the registry and goes out in the reply to its
next ping (rabbits.py, server.py). A link is a thin view of one registry entry, made when a
command or a status asks for it, so that the ping path does no work for the interface.
"""

import dataclasses
import time

from .. import protocol as p
from ..rabbits import is_online
from .base import RabbitLink, RabbitState, check_ears, done


class VioletLink(RabbitLink):
    kind = 'violet'

    def __init__(self, serial, registry, on_event=None):
        super().__init__(serial, on_event)
        self.registry = registry

    def _rabbits(self):
        return self.registry.select(self.serial)  # UnknownRabbit before its first call

    def state(self):
        view = self.registry.view(self.serial)
        if view is None:
            return RabbitState(self.serial, self.kind, detail='has not called the bridge yet')
        return state_of(view, time.time())

    def set_ears(self, left, right):
        check_ears(left, right)
        self.registry.set_ears(self._rabbits(), (left, right))
        return done(f'ears ({left}, {right}) on the next ping')

    def play_url(self, url):
        return self.play_urls([url])

    def play_urls(self, urls, gesture_url=None, program_id=None):
        commands = []
        for index, url in enumerate(urls):
            commands.append(('MU', url))
            if index == 0 and gesture_url:
                commands.append(('CH', gesture_url))
            commands.append(('MW', ''))
        program_id = self.registry.queue_program(self._rabbits(), commands, program_id)
        return done(f'program {program_id:x} plays {", ".join(urls)}')

    def stream_url(self, url):
        program_id = self.registry.queue_program(self._rabbits(), [('ST', url)])
        return done(f'program {program_id:x} streams {url}')

    def reserve_program_id(self):
        """The id the next play_urls will carry, so that speech URLs can name it."""
        return self.registry.next_program_id()

    def set_nose(self, value):
        for rabbit in self._rabbits():
            ambient = dataclasses.replace(rabbit.ambient, nose_blinks=value)
            p.ambient_block(ambient)  # checks the value
            self.registry.update([rabbit], ambient=ambient)
        return done(f'nose {value} on the next ping')

    def choreography(self, name_or_url):
        program_id = self.registry.queue_program(self._rabbits(), [('CH', name_or_url)])
        return done(f'program {program_id:x} plays {name_or_url}')

    def sleep(self):
        self.registry.queue_special(self._rabbits(), p.SLEEP_ID)
        return done('sleep on the next ping')

    def wakeup(self):
        self.registry.queue_special(self._rabbits(), p.IDLE_ID)
        return done('wake on the next ping')

    def set_ambient(self, ambient):
        p.check_ears(ambient.ears)
        p.ambient_block(ambient)  # checks slots and blinks
        self.registry.update(self._rabbits(), ambient=ambient)
        return done('ambient on the next ping')

    def setting(self, name, value, text):
        if name == 'ping_interval':
            p.ping_interval_block(value)  # checks 1..255
            self.registry.update(self._rabbits(), ping_interval=value)
        elif name == 'plugin':
            self.registry.update(self._rabbits(), plugin=text)
        elif name == 'reboot':
            self.registry.queue_blocks(self._rabbits(), [p.reboot_block()])
        else:
            raise ValueError(f'unknown setting {name!r}')
        return done(f'{name} on the next ping')

    def raw_packet(self, packet):
        self.registry.queue_raw(self._rabbits(), packet)
        return done('packet queued')

    def raw(self, text):
        program_id = self.registry.queue_program_text(self._rabbits(), text)
        return done(f'program {program_id:x} queued')


def state_of(view, now):
    """A RabbitView (RabbitRegistry.snapshot) → RabbitState."""
    return RabbitState(
        view.serial,
        'violet',
        connected=is_online(view.last_seen, view.ping_interval, now),
        asleep=view.state == 'asleep',
        ears=tuple(view.ears),
        last_seen=view.last_seen,
        detail=view.state,
    )
