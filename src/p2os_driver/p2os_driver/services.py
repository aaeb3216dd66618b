"""The P2OS node's services: most are one row of COMMANDS (a request → one client command);
the ones that await a packet from the robot (streams, playlist, AUX serial, IO) are methods.

Adding a service: a row in `commands()` when the request maps onto one client call, else a
method here and a line in `P2osServices.create`.
"""

import math

from std_srvs.srv import SetBool, Trigger

from legacy_robot_common.errors import ConnectionLost
from legacy_robot_common.messages import uint8_array
from legacy_robot_common.services import Command, create_services, sent_handler
from legacy_robot_interfaces.srv import (
    BytesCommand,
    DigitalOutput,
    GripperCommand,
    Playlist,
    SayTones,
    SetPose,
    SetValue,
)

from .client import AUX_IN_MAX, AUX_OUT_MAX, STREAMS, CommandRefused

# what a command the client refuses to encode or send raises: the service answers failure
SEND_ERRORS = (ConnectionLost, ValueError, TypeError)


def commands(node):
    """The services that turn their request into one client command (client terms, SI)."""
    c = node.client

    def want(key, value=None):
        def remember(request):
            node.wanted[key] = request.data if value is None else value

        return remember

    def zero_odometry(_request):
        if node.odometry is not None:
            node.odometry.zero()

    return (
        Command(
            'enable_motors', Trigger, lambda r: c.enable_motors(True), then=want('motors', True)
        ),
        Command(
            'disable_motors', Trigger, lambda r: c.enable_motors(False), then=want('motors', False)
        ),
        Command('stop', Trigger, lambda r: c.stop_motion()),
        Command('e_stop', Trigger, lambda r: c.stop_motion(emergency=True)),
        Command('reset_odometry', Trigger, lambda r: c.reset_odometry(), then=zero_odometry),
        Command('set_sonar', SetBool, lambda r: c.set_sonar(r.data), then=want('sonar')),
        Command('play_sound', SetValue, lambda r: c.play_sound(r.value)),
        Command('bump_stall', SetValue, lambda r: c.set_bump_stall(r.value)),
        Command('select_analog_port', SetValue, lambda r: c.select_analog_port(r.value)),
        Command('gripper', GripperCommand, lambda r: c.gripper(r.command, r.value)),
        Command('digital_output', DigitalOutput, lambda r: c.digital_output(r.mask, r.values)),
        Command('say', SayTones, lambda r: c.say(r.durations, r.tones)),
    )


def send(command, response=None):
    """Run one client command; fill response.success/message; True when it went out."""
    try:
        name = command()
    except SEND_ERRORS as exc:
        if response is not None:
            response.success, response.message = False, str(exc)
        return False
    if response is not None:
        response.success, response.message = True, f'{name} sent'
    return True


class P2osServices:
    def __init__(self, node):
        self.node = node
        self.client = node.client

    def create(self):
        services = [
            (row.srv_type, row.name, sent_handler(row, SEND_ERRORS)) for row in commands(self.node)
        ]
        services += [
            (SetBool, f'set_{kind}_stream', self._stream_handler(kind)) for kind in STREAMS
        ]
        services += [
            (Trigger, 'io_request', self._io_request),
            (Playlist, 'playlist', self._playlist),
            (SetPose, 'set_pose', self._set_pose),
            (BytesCommand, 'aux_serial', self._aux_serial),
        ]
        create_services(self.node, services)

    def _stream_handler(self, kind):
        """On: success only once the first packet arrives (a robot or simulator may ignore the
        request); off: the stop request sent."""

        async def handle(request, response):
            if not request.data:
                if send(lambda: self.client.stop_stream(kind), response):
                    self.node.wanted[kind] = False
                return response
            reply, error = await self._ask(
                lambda resolve: self.client.request_stream(kind, resolve)
            )
            response.success = error is None
            response.message = error or f'{kind} stream running'
            self.node.wanted[kind] = response.success
            return response

        return handle

    async def _ask(self, start):
        """start(resolve) asks the client for a reply (returning the awaited packet's name);
        (record, None) or (None, error message).

        No reply within request_timeout means the robot ignored the command: firmware without
        it, or a simulator that does not support it."""
        timeout = self.node.request_timeout
        future, resolve = self.node.reply_future(timeout)
        try:
            awaited = start(resolve)
        except (ConnectionLost, CommandRefused) as exc:
            resolve(exc)  # ends the wait's timer
            return None, str(exc)
        reply = await future
        if isinstance(reply, TimeoutError):
            return None, (
                f'not supported by this robot / firmware: no {awaited} packet '
                f'within {timeout:.1f} s'
            )
        if isinstance(reply, Exception):
            return None, str(reply)
        return reply, None

    async def _playlist(self, _request, response):
        entries, error = await self._ask(self.client.request_playlist)
        response.success, response.message = error is None, error or f'{len(entries or [])} sounds'
        for name, position, length in entries or []:
            response.names.append(name)
            response.positions.append(position)
            response.lengths.append(length)
        return response

    def _set_pose(self, request, response):
        """A simulator's true pose (ground_truth frame; fields not set keep the current)."""
        if not self.client.is_simulator:
            response.success, response.message = False, 'set_pose needs a simulator'
            return response
        wanted = (request.set_x, request.set_y, request.set_theta)
        t = self.node.truth
        if not all(wanted) and t is None:
            response.success = False
            response.message = 'no ground truth yet: give x, y and theta'
            return response
        x = request.x * 1000.0 if request.set_x else t.true_x
        y = request.y * 1000.0 if request.set_y else t.true_y
        th = math.degrees(request.theta) if request.set_theta else t.true_th
        send(lambda: self.client.set_true_pose(x, y, th), response)
        return response

    async def _aux_serial(self, request, response):
        """Write data out of AUX, then read reply_size bytes from it; no data and 0 = flush."""
        data = bytes(request.data)
        if len(data) > AUX_OUT_MAX or request.reply_size > AUX_IN_MAX:
            response.success = False
            response.message = f'at most {AUX_OUT_MAX} bytes out and {AUX_IN_MAX} back'
            return response
        if data and not send(lambda: self.client.aux_write(data), response):
            return response
        if request.reply_size == 0:
            if not data:
                send(self.client.aux_flush, response)
            return response
        reply, error = await self._ask(
            lambda resolve: self.client.request_aux(request.reply_size, resolve)
        )
        response.success, response.message = error is None, error or f'{len(reply.data)} bytes'
        if reply is not None:
            response.reply = uint8_array(reply.data)
        return response

    async def _io_request(self, _request, response):
        reply, error = await self._ask(self.client.request_io)
        response.success = error is None
        response.message = error or (
            f'digital in {reply.digital_inputs.hex()}, out '
            f'{reply.digital_outputs.hex()}, analog {reply.analog}'
        )
        return response
