"""The iPaq node's services. Each one whose request becomes a single control-link request
(its reply awaited, a fixed or request-made text on success) is a row of `commands()`; the
ones that check the request first or return the reply's content are methods of IpaqServices,
listed in its `create`.
"""

from std_srvs.srv import Trigger

from legacy_robot_common.messages import uint8_array
from legacy_robot_common.services import Command, create_services, reply_handler
from legacy_robot_interfaces import srv

from . import protocol as p


def _pose_mask(request):
    wanted = (request.set_x, request.set_y, request.set_theta)
    return sum(1 << i for i, on in enumerate(wanted) if on)


def _tracking_started(what):
    def text(request):
        return f'{what} tracking started ({p.TRACKING_MOTION[min(request.mode, 3)]})'

    return text


def _color_bounds(r):
    return (r.r_min, r.r_max, r.g_min, r.g_max, r.b_min, r.b_max)


def commands(control, units):
    """The services whose request needs nothing but one control request (SI → raw here)."""
    return (
        Command(
            'set_pose',
            srv.SetPose,
            lambda r, resolve: control.set_pose(
                *units.pose_to_raw(r.x, r.y, r.theta), _pose_mask(r), resolve
            ),
            'pose set',
        ),
        Command(
            'start_color_tracking',
            srv.ColorTracking,
            lambda r, resolve: control.start_color_tracking(r.mode, _color_bounds(r), resolve),
            _tracking_started('colour'),
        ),
        Command(
            'start_window_tracking',
            srv.WindowTracking,
            lambda r, resolve: control.start_window_tracking(r.mode, resolve),
            _tracking_started('window'),
        ),
        Command(
            'stop_tracking',
            Trigger,
            lambda r, resolve: control.stop_tracking(resolve),
            'tracking stopped',
        ),
        Command(
            'dump_frame',
            Trigger,
            lambda r, resolve: control.dump_frame(resolve),
            'frame requested: it follows on camera/image_raw',
        ),
        Command(
            'kill_motor',
            Trigger,
            lambda r, resolve: control.set_parameter_bits('kill_motor', resolve=resolve),
            'motor power off until the next cmd_vel',
        ),
        Command(
            'init_brainstem',
            Trigger,
            lambda r, resolve: control.set_parameter_bits('init_brainstem', resolve=resolve),
            'BrainStem initialised, servos at full range',
        ),
    )


class IpaqServices:
    def __init__(self, node):
        self.node = node
        self.control = node.control
        self.units = node.units

    def create(self):
        node = self.node
        services = [
            (row.srv_type, row.name, reply_handler(node, row, self._timeout))
            for row in commands(self.control, self.units)
        ]
        services += [
            (srv.SetDistance, 'set_safety_distance', self._safety),
            (srv.TextCommand, 'cmucam_command', self._cmucam),
            (srv.BytesCommand, 'brainstem_command', self._brainstem),
            (Trigger, 'terminate_server', self._terminate),
        ]
        create_services(node, services)

    def _timeout(self):
        return self.node.request_timeout

    async def _safety(self, request, response):
        raw = self.units.range_to_raw(request.distance) if request.distance > 0 else 0
        if request.distance > 0 and raw == 0:
            _low, high = self.units.range_limits
            response.success = False
            response.message = f'{request.distance} m is beyond the range sensor ({high:.2f} m)'
            return response
        _reply, error = await self.node.await_reply(
            lambda resolve: self.control.set_safety_distance(raw, resolve), self._timeout()
        )
        response.success = error is None
        response.message = error or (
            f'safety distance {request.distance:.2f} m (raw {raw})' if raw else 'safety stop off'
        )
        return response

    async def _cmucam(self, request, response):
        reply, error = await self.node.await_reply(
            lambda resolve: self.control.cmucam(request.command, resolve),
            request.timeout or self._timeout(),
        )
        response.success, response.message = error is None, error or 'camera answered'
        if reply is not None:
            response.reply = reply.data.decode('ascii', 'replace')
            if response.reply.startswith('NCK'):
                response.success, response.message = False, 'the CMUcam refused the command (NCK)'
        return response

    async def _brainstem(self, request, response):
        reply, error = await self.node.await_reply(
            lambda resolve: self.control.brainstem(request.data, resolve),
            request.timeout or self._timeout(),
        )
        response.success, response.message = error is None, error or f'{len(reply.data)} bytes'
        if reply is not None:
            response.reply = uint8_array(reply.data)
        return response

    def _terminate(self, _request, response):
        try:
            self.control.terminate_server()
        except ConnectionError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.message = 'the iPaq control program was told to end (restart it on the iPaq)'
        return response
