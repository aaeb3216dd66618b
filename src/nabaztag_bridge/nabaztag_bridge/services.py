"""The Nabaztag bridge's services: the ones that command the rabbits are rows of
`NabaztagServices.create` (a method: request → a command, link → Future, which `answering`
runs on each rabbit the serial addresses through the one rabbit interface, kinds/base.py);
say and the speak action are in speaking.py.
"""

from rclpy.action import ActionServer

from legacy_robot_common.services import create_services
from legacy_robot_interfaces.action import RabbitSpeak
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

from . import choreography as chor
from . import conversions as convert
from . import protocol as p
from .rabbits import UnknownRabbit, check_plugin


class NabaztagServices:
    def __init__(self, node):
        self.node = node

    def create(self):
        node, speaking = self.node, self.node.speaking
        services = [
            (srv_type, name, answering(node, handler))
            for srv_type, name, handler in (
                (RabbitProgram, 'send_program', self.send_program),
                (RabbitSound, 'play_sound', self.play_sound),
                (RabbitEars, 'set_ears', self.set_ears),
                (RabbitLeds, 'set_leds', self.set_leds),
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
        return lambda link: link.raw(request.program)

    def play_sound(self, request):
        if bool(request.url) == bool(request.media_file):
            raise ValueError('give either url or media_file')
        url = request.url or self.node.bridge.media_url(request.media_file)
        if request.stream:
            return lambda link: link.stream_url(url)
        return lambda link: link.play_url(url)

    def set_ears(self, request):
        ears = (request.ear0, request.ear1)
        p.check_ears(ears)
        return lambda link: link.set_ears(*ears)

    def set_leds(self, request):
        """The nose (blinking) or LEDs by colour: one or the other, as each kind lights only
        one of them (violet and serverless the nose, pynab its left, center, right LEDs)."""
        if len(request.leds) != len(request.colors):
            raise ValueError('give one colour per LED: leds and colors go in pairs')
        colors = dict(zip(request.leds, request.colors, strict=True))
        if (request.nose >= 0) == bool(colors):
            raise ValueError('give either nose (0 off, 1.. blinking) or leds with their colors')
        if colors:
            return lambda link: link.set_leds(colors)
        return lambda link: link.set_nose(request.nose)

    def play_choreography(self, request):
        if request.tempo == 0:
            raise ValueError('tempo 0 would play every step at once (a tick is 10 ms x tempo)')
        data = chor.build(convert.steps_from_msgs(request.tempo, request.steps))
        return lambda link: link.choreography(self.node.bridge.add_choreography(data))

    def set_ambient(self, request):
        ambient = convert.ambient_from_request(request)
        p.check_ears(ambient.ears)
        p.ambient_block(ambient)  # checks slots and blinks
        return lambda link: link.set_ambient(ambient)

    def setting(self, request):
        name = request.name
        if name == 'ping_interval':
            p.ping_interval_block(request.value)  # checks 1..255
        elif name == 'plugin':
            check_plugin(request.text)
        elif name == 'sleep':
            return lambda link: link.sleep()
        elif name == 'wake':
            return lambda link: link.wakeup()
        elif name != 'reboot':
            raise ValueError(
                f'unknown setting {name!r} (ping_interval, plugin, sleep, wake, reboot)'
            )
        return lambda link: link.setting(name, request.value, request.text)

    def raw_packet(self, request):
        p.decode_packet(bytes(request.packet))  # what the rabbit would refuse is refused here
        return lambda link: link.raw_packet(bytes(request.packet))


def answering(node, handler):
    """A service callback: handler(request) → command(link) → Future, carried out on every
    rabbit the request's serial addresses. User errors (ValueError, UnknownRabbit, a kind that
    cannot) and rabbits that do not answer → success False with the reason."""

    async def callback(request, response):
        try:
            command = handler(request)
            links = node.roster.select(request.serial)
            futures = [(link, command(link)) for link in links]
        except (ValueError, UnknownRabbit) as exc:
            response.success, response.message = False, str(exc)
            return response
        texts, failures = [], []
        for link, future in futures:
            text, error = await await_future(node, future)
            if error is None:
                texts.append(text)
            else:
                failures.append(f'{link.serial}: {error}' if len(links) > 1 else error)
        response.success = not failures
        if failures:
            response.message = '; '.join(failures)
        elif len(links) == 1:
            response.message = texts[0]
        else:
            response.message = f'{len(links)} rabbits: {texts[0]}'
        return response

    return callback


async def await_future(node, future):
    """(result, None) or (None, error text) of a link's Future, waited for without holding the
    executor, at most twice rabbit_timeout (a command may make two requests)."""

    def send(resolve):
        future.add_done_callback(lambda done: resolve(done.exception() or done.result()))

    return await node.await_reply(send, 2 * node.rabbit_timeout + 0.5)
