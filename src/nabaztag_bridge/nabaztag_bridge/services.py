"""The Nabaztag bridge's services: the ones that queue something for the rabbits are rows of
`NabaztagServices.create` (a method: request → the success text; ValueError or UnknownRabbit
→ success False with its text); say and the speak action are in speaking.py.
"""

from rclpy.action import ActionServer

from legacy_robot_common.services import create_services
from legacy_robot_interfaces.action import RabbitSpeak
from legacy_robot_interfaces.srv import (
    RabbitAmbient,
    RabbitChoreography,
    RabbitEars,
    RabbitProgram,
    RabbitRawPacket,
    RabbitSay,
    RabbitSetting,
    RabbitSound,
)

from . import choreography as chor
from . import conversions as convert
from . import protocol as p
from .rabbits import UnknownRabbit


class NabaztagServices:
    def __init__(self, node):
        self.node = node

    def create(self):
        node, speaking = self.node, self.node.speaking
        services = [
            (srv_type, name, answering(handler))
            for srv_type, name, handler in (
                (RabbitProgram, 'send_program', self.send_program),
                (RabbitSound, 'play_sound', self.play_sound),
                (RabbitEars, 'set_ears', self.set_ears),
                (RabbitChoreography, 'play_choreography', self.play_choreography),
                (RabbitAmbient, 'set_ambient', self.set_ambient),
                (RabbitSetting, 'rabbit_setting', self.setting),
                (RabbitRawPacket, 'send_raw_packet', self.raw_packet),
            )
        ]
        services.append((RabbitSay, 'say', speaking.say))
        create_services(node, services)
        node.speak_server = ActionServer(
            node,
            RabbitSpeak,
            'speak',
            execute_callback=speaking.speak,
            callback_group=node.callback_group,
        )

    def send_program(self, request):
        rabbits = self.node.registry.select(request.serial)
        program_id = self.node.registry.queue_program_text(rabbits, request.program)
        return f'program {program_id} queued for {len(rabbits)} rabbit(s)'

    def play_sound(self, request):
        rabbits = self.node.registry.select(request.serial)
        if bool(request.url) == bool(request.media_file):
            raise ValueError('give either url or media_file')
        url = request.url or self.node.bridge.media_url(request.media_file)
        commands = [('ST', url)] if request.stream else [('MU', url), ('MW', '')]
        program_id = self.node.registry.queue_program(rabbits, commands)
        return f'program {program_id} plays {url}'

    def set_ears(self, request):
        ears = (request.ear0, request.ear1)
        p.check_ears(ears)
        rabbits = self.node.registry.select(request.serial)
        self.node.registry.set_ears(rabbits, ears)
        return f'ears {ears} on the next ping of {len(rabbits)} rabbit(s)'

    def play_choreography(self, request):
        if request.tempo == 0:
            raise ValueError('tempo 0 would play every step at once (a tick is 10 ms x tempo)')
        rabbits = self.node.registry.select(request.serial)
        url = self.node.bridge.add_choreography(
            chor.build(convert.steps_from_msgs(request.tempo, request.steps))
        )
        program_id = self.node.registry.queue_program(rabbits, [('CH', url)])
        return f'program {program_id} plays {url}'

    def set_ambient(self, request):
        ambient = convert.ambient_from_request(request)
        p.check_ears(ambient.ears)
        p.ambient_block(ambient)  # checks slots and blinks
        rabbits = self.node.registry.select(request.serial)
        self.node.registry.update(rabbits, ambient=ambient)
        return f'ambient set on {len(rabbits)} rabbit(s)'

    def setting(self, request):
        rabbits = self.node.registry.select(request.serial)
        name = request.name
        if name == 'ping_interval':
            p.ping_interval_block(request.value)  # checks 1..255
            self.node.registry.update(rabbits, ping_interval=request.value)
        elif name == 'plugin':
            self.node.registry.update(rabbits, plugin=request.text)
        elif name in ('sleep', 'wake'):
            self.node.registry.queue_special(rabbits, p.SLEEP_ID if name == 'sleep' else p.IDLE_ID)
        elif name == 'reboot':
            self.node.registry.queue_blocks(rabbits, [p.reboot_block()])
        else:
            raise ValueError(
                f'unknown setting {name!r} (ping_interval, plugin, sleep, wake, reboot)'
            )
        return f'{name} for {len(rabbits)} rabbit(s)'

    def raw_packet(self, request):
        rabbits = self.node.registry.select(request.serial)
        self.node.registry.queue_raw(rabbits, bytes(request.packet))
        return f'packet queued for {len(rabbits)} rabbit(s)'


def answering(handler):
    """A service callback: handler(request) → message; user errors → success False."""

    def callback(request, response):
        try:
            response.message = handler(request)
            response.success = True
        except (ValueError, UnknownRabbit) as exc:
            response.success, response.message = False, str(exc)
        return response

    return callback
