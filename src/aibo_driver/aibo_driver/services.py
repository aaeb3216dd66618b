"""The AIBO node's services: each a method of AiboServices, listed in `create`. The motion
services (play_action, stop, emergency_stop) and rcode_command need the RCODE link;
motion_refusal says why they cannot run.
"""

import os

from std_srvs.srv import Trigger

from legacy_robot_common.services import create_services
from legacy_robot_interfaces.srv import (
    PlayNamed,
    SetCameraMode,
    SetProperty,
    TextCommand,
    UploadFile,
)

from . import protocol as p
from . import rcode, urbi

MAX_SOUND_BYTES = 16_000_000  # a WAV file play_sound reads at most (about 8 min at 16 kHz)


class AiboServices:
    def __init__(self, node):
        self.node = node

    def create(self):
        create_services(
            self.node,
            (
                (SetProperty, 'set_property', self.aibopet_only(self.set_property)),
                (SetCameraMode, 'set_camera_mode', self.aibopet_only(self.set_camera_mode)),
                (UploadFile, 'upload_file', self.aibopet_only(self.upload)),
                (TextCommand, 'rcode_command', self.rcode_command),
                (PlayNamed, 'play_action', self.play_action),
                (Trigger, 'stop', self.stop),
                (Trigger, 'emergency_stop', self.emergency_stop),
            ),
        )
        if self.node.urbi is not None:
            create_services(self.node, ((UploadFile, 'play_sound', self.play_sound),))

    def aibopet_only(self, handler):
        """The handler, or over URBI one that says the service belongs to AiboPet's sticks."""
        if self.node.urbi is None:
            return handler

        def refuse(_request, response):
            response.success = False
            response.message = "not over URBI: this service needs AiboPet's telemetry stick"
            return response

        return refuse

    async def set_property(self, request, response):
        index, value = request.index, request.value
        if request.preset:
            if request.preset not in self.node.preset_table:
                known = ', '.join(sorted(self.node.preset_table)) or 'none configured'
                response.success = False
                response.message = f'unknown preset {request.preset!r} (known: {known})'
                return response
            index, value = self.node.preset_table[request.preset]
        reply, error = await self.node.await_reply(
            lambda resolve: self.node.telemetry.set_property(index, value, resolve),
            self.node.reply_timeout,
        )
        response.success, response.message = error is None, error or reply
        return response

    def set_camera_mode(self, request, response):
        color_rate = request.color_rate if request.color_rate > 0 else -1.0
        try:
            self.node.telemetry.set_camera(request.mode, request.image_rate, color_rate)
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = True, f'camera: {request.mode}'
        return response

    def play_sound(self, request, response):
        """Over URBI: a WAV file on the host, converted to the dog's speaker format and sent."""
        try:
            with open(request.path, 'rb') as file:
                samples, rate = urbi.read_wav(file.read(MAX_SOUND_BYTES + 1)[:MAX_SOUND_BYTES])
            seconds = self.node.urbi.say(samples, rate)
        except OSError as exc:
            response.success, response.message = False, f'cannot read {request.path}: {exc}'
            return response
        except (ValueError, ConnectionError) as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.message = f'{seconds:.2f} s of sound sent to the speaker'
        response.bytes_sent = int(seconds * self.node.dog_model.speaker.bytes_per_second)
        return response

    async def upload(self, request, response):
        try:
            with open(request.path, 'rb') as source:
                contents = source.read(self.node.rput_max_bytes + 1)
        except OSError as exc:
            response.success, response.message = False, f'cannot read {request.path}: {exc}'
            return response
        name = request.remote_name or os.path.basename(request.path)
        connects = self.node.telemetry.counters.connects
        reply, error = await self.node.await_reply(
            lambda resolve: self.node.telemetry.upload(name, contents, resolve),
            self.node.reply_timeout + len(contents) / 50_000,
        )  # Wi-Fi of the time: ~50 kB/s
        if error is None and self.node.rput_reply == 'none':
            reply, error = await self.unconfirmed_upload(reply, connects)
        response.success, response.message = error is None, error or reply
        response.bytes_sent = len(contents) if error is None else 0
        return response

    async def unconfirmed_upload(self, sent, connects):
        """No reply to wait for: the upload counts only if the link outlives a grace period (a dog
        that cannot read the request drops the connection) and says it is unconfirmed."""
        grace, _ = self.node.reply_future(self.node.rput_grace)
        await grace  # completes after rput_grace seconds
        if not self.node.telemetry.connected or self.node.telemetry.counters.connects != connects:
            return None, (
                f'the dog closed the link within {self.node.rput_grace:.1f} s of the upload: '
                f'it did not take it; check rput_layout (now {self.node.rput_layout})'
            )
        return (
            f'{sent}; unconfirmed: the dog sends no reply (rput_reply none), the link was still '
            f'up {self.node.rput_grace:.1f} s later'
        ), None

    async def rcode_command(self, request, response):
        if self.node.rcode_off:
            response.success, response.message = False, self.node.rcode_off
            return response
        timeout = request.timeout or self.node.rcode_timeout
        reply, error = await self.node.await_reply(
            lambda resolve: self.node.rcode.command(request.command, resolve, timeout),
            timeout + 2.0,
        )
        refusal = p.rcode_error(reply or '')  # RCodePlus answers a bad command with ERROR:
        response.success = error is None and not refusal
        response.message = error or refusal or ('printed nothing' if not reply else 'ok')
        response.reply = reply or ''
        return response

    def motion_refusal(self):
        """Why the dog cannot be moved now ('' when it can)."""
        if self.node.rcode_off:
            return f'no motion: {self.node.rcode_off}'
        if not self.node.rcode.connected:
            return 'no motion: the RCODE link is not connected'
        return ''

    async def play_action(self, request, response):
        if self.node.urbi is not None:
            return self.urbi_action(request, response)
        refusal = self.motion_refusal()
        try:
            line = rcode.action_line(request.name)
        except ValueError as exc:
            refusal = refusal or str(exc)
        if refusal:
            response.success, response.message = False, refusal
            return response
        reply, error = await self.node.await_reply(
            lambda resolve: self.node.rcode.play(line, resolve), self.node.poll_timeout + 2.0
        )
        if error is None and reply.error:
            error = f'the dog refused {line}: {reply.error}'
        response.success, response.message = error is None, error or f'sent {line}'
        return response

    def urbi_action(self, request, response):
        """Over URBI a posture script is sent and not waited for (the stick answers nothing)."""
        try:
            sent = self.node.urbi.play_action(request.name)
        except ValueError as exc:
            response.success, response.message = False, str(exc)
            return response
        except ConnectionError as exc:
            response.success, response.message = False, f'no motion: {exc}'
            return response
        response.success, response.message = True, f'sent {sent}'
        return response

    def stop(self, _request, response):
        if self.node.urbi is not None:
            response.success, response.message = True, 'robot.stopwalk() sent'
            try:
                self.node.urbi.halt()
            except ConnectionError as exc:
                response.success, response.message = False, f'no motion: {exc}'
            return response
        refusal = self.motion_refusal()
        if not refusal:
            self.node.rcode.halt()
        response.success = not refusal
        response.message = refusal or 'STOP_WALK sent if the dog was walking or turning'
        return response

    async def emergency_stop(self, _request, response):
        refusal = self.motion_refusal()
        if refusal:
            response.success, response.message = False, refusal
            return response
        reply, error = await self.node.await_reply(
            self.node.rcode.emergency_stop, self.node.poll_timeout + 2.0
        )
        response.success = error is None
        response.message = error or 'QUIT sent: the queue is empty, the posture undefined'
        return response
