"""The iPaq robot-control server on TCP ports 5000-5002, for users and tests.

    ros2 run ipaq_driver ipaq_emulator            # ports 5000 (control), 5001, 5002

Plays docs/protocols/ipaq.md §3.6 (whose section numbers the § below refer to): commands on the
control port answered with the documented responses and status codes; a tricycle that drives and
steers, pan/tilt, an IR ranger with the safety stop; a CMUcam1 whose synthetic scene holds a ball
that colour and window tracking follow; frame dumps; line mode; CMUcam and
BrainStem pass-through. Options play the document's unsettled variants (port assignment,
unframed responses, checksum after stuffing, CMUcam2) and faults. No rclpy here.
"""

import argparse
import dataclasses
import sys
import threading
import time

from legacy_robot_common.emulator import (
    FaultInjector,
    MainFrame,
    SendLog,
    TcpEmulatorServer,
    add_host_argument,
    run_emulator,
)
from legacy_robot_common.errors import ConnectionLost, MalformedFrame

from . import protocol as p
from .simulation import Ball, Trike, line_bitmap, track_colour, window_colour
from .units import Units, clamp

L = p.Letter
S = p.Status
PHYSICS_PERIOD = 0.02  # s
FOLLOW_GAIN = 0.35  # servo steps per pixel of tracking error per result
CMUCAM_VERSION = b'CMUcam v1.12 \r'
# CMUcam1 commands that just answer ACK here (settings the synthetic camera ignores)
CMUCAM_SETTINGS = {'CR', 'DM', 'HM', 'I1', 'L1', 'MM', 'NF', 'RM', 'SW', 'SV', 'TI'}
BS = p.BrainStemCommand
SERVOS = ('steering', 'pan', 'tilt')  # the GP's servo numbers on the Trikebot (inference)


@dataclasses.dataclass
class EmulatorOptions:
    host: str = '127.0.0.1'
    control_port: int = 5000
    frame_dump_port: int = 5001  # the document's port table (§2.1) ...
    tracking_port: int = 5002
    swap_stream_ports: bool = False  # ... or its packet descriptions: tracking 5001, dumps 5002
    units: Units = Units()
    mask_bits: p.MaskBits = p.MaskBits()
    camera: p.CameraFormat = p.CameraFormat()
    checksum_over_stuffed: bool = False
    framed_responses: bool = True
    tracking_rate: float = 17.0  # CMUcam1 results per second
    unthrottled: bool = False  # benchmarks: tracking results back to back
    ball_centre: tuple = (1.2, 0.0)  # m, centre of the ball's circle (robot starts at 0, 0)
    ball_orbit: float = 0.5  # m; 0 = the ball stands still
    ball_speed: float = 0.15  # m/s
    room_width: float = 6.0  # m
    room_height: float = 4.0  # m
    gp_address: int = 2  # BrainStem GP 1.0 (servos, IR ranger)
    moto_address: int = 4  # BrainStem Moto 1.0 (drive motor)
    camera_timeout: bool = False  # fault: camera commands answer status 10
    brainstem_silent: bool = False  # fault: BrainStem commands answer status 20
    drop_rate: float = 0.0  # fault: bytes dropped from responses and streams
    corrupt_rate: float = 0.0  # fault: bytes corrupted
    seed: int = None

    def __post_init__(self):
        if not 0.5 <= self.tracking_rate <= 100:
            raise ValueError('tracking_rate must be within 0.5..100 per second')


class StreamPort:
    """A port that only sends (5001/5002): every connected client gets every item."""

    def __init__(self, host, port, name, faults):
        self.server = TcpEmulatorServer(self._serve, host, port, name=name)
        self.faults = faults
        self._clients = []
        self._lock = threading.Lock()
        self.sent = 0

    def _serve(self, stream, stop):
        with self._lock:
            self._clients.append(stream)
        try:
            while not stop.is_set():
                stream.read(4096, 0.2)  # input is ignored; this notices the client leaving
        finally:
            with self._lock:
                self._clients.remove(stream)

    @property
    def listening(self):
        with self._lock:
            return bool(self._clients)

    def send(self, data):
        data = self.faults.apply(data)
        with self._lock:
            for stream in list(self._clients):
                try:
                    stream.write(data)
                except ConnectionLost:
                    pass
            self.sent += 1


@dataclasses.dataclass
class Tracking:
    letter: p.Letter
    bounds: tuple
    follow_pan: bool
    follow_tilt: bool


class IpaqEmulator:
    def __init__(self, options=None):
        self.options = o = options or EmulatorOptions()
        self.trike = Trike(
            o.units,
            (o.room_width, o.room_height),
            Ball(centre=o.ball_centre, orbit=o.ball_orbit, speed=o.ball_speed),
        )
        self.faults = FaultInjector(o.drop_rate, o.corrupt_rate, o.seed)
        self.control = TcpEmulatorServer(
            self._serve_control, o.host, o.control_port, name='ipaq-control'
        )
        # the two stream ports by their names in the document's port table (5001, 5002)
        self.dump_port = StreamPort(o.host, o.frame_dump_port, 'ipaq-5001', self.faults)
        self.tracking_port = StreamPort(o.host, o.tracking_port, 'ipaq-5002', self.faults)
        self.frame_stream, self.tracking_stream = self.dump_port, self.tracking_port
        if o.swap_stream_ports:
            self.frame_stream, self.tracking_stream = self.tracking_port, self.dump_port
        self.tracking = None
        self.line_mode = False
        self.poll_mode = False
        self.vel_timeout = 0.0
        self.brainstem_inits = 0
        self.bad_packets = 0
        self.last_tracking = None
        self.sent = SendLog()  # when each tracking packet went out (benchmarks)
        self.terminated = threading.Event()
        self._commands = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._physics = threading.Thread(
            target=self._run_physics, daemon=True, name='ipaq-emulator-physics'
        )
        self._unthrottled = threading.Thread(
            target=self._run_unthrottled_tracking, daemon=True, name='ipaq-emulator-tracking'
        )

    # ---- life cycle ------------------------------------------------------------------
    def start(self):
        """Listen on the three ports (0 = free ports) and start the world."""
        o = self.options
        try:
            self.control.start()
            self.dump_port.server.start()
            self.tracking_port.server.start()
        except OSError:
            self.stop()
            raise
        self._physics.start()
        if o.unthrottled:
            self._unthrottled.start()
        return self

    @property
    def ports(self):
        """The listening ports by their names in the document's port table."""
        return {
            'control_port': self.control.port,
            'frame_dump_port': self.dump_port.server.port,
            'tracking_port': self.tracking_port.server.port,
        }

    @property
    def parameters(self):
        """Node parameters that point the driver at this emulator."""
        return {'host': self.options.host, **self.ports}

    @property
    def description(self):
        ports = self.ports
        carries = 'tracking/dumps' if self.options.swap_stream_ports else 'dumps/tracking'
        return (
            f'iPaq robot on {self.options.host}: control {ports["control_port"]}, '
            f'{carries} {ports["frame_dump_port"]}/{ports["tracking_port"]}'
        )

    @property
    def _servers(self):
        return self.control, self.dump_port.server, self.tracking_port.server

    def drop_clients(self):
        """Fault: every connection breaks (the robot keeps its state)."""
        for server in self._servers:
            server.drop_clients()

    def stop(self):
        self._stop.set()
        for server in self._servers:
            server.stop()
        for thread in (self._physics, self._unthrottled):
            if thread.is_alive():
                thread.join(2.0)

    # ---- what tests look at ------------------------------------------------------------
    def received_commands(self):
        """[(monotonic time, letter, fields)] of every command parsed."""
        with self._lock:
            return list(self._commands)

    # ---- the world -----------------------------------------------------------------------
    def _run_physics(self):
        period = 1.0 / self.options.tracking_rate
        next_result = last = time.monotonic()
        while not self._stop.wait(PHYSICS_PERIOD):
            now = time.monotonic()
            self.trike.step(min(0.2, now - last), now)
            last = now
            if self.tracking is not None and not self.options.unthrottled and now >= next_result:
                next_result = max(next_result + period, now - period)
                self._send_tracking_result()

    def _run_unthrottled_tracking(self):
        """Benchmarks: tracking results back to back, paced only by the stream socket."""
        while not self._stop.is_set():
            if self.tracking is None or not self.tracking_stream.listening:
                self._stop.wait(PHYSICS_PERIOD)
            else:
                self._send_tracking_result()

    def _send_tracking_result(self):
        tracking, camera = self.tracking, self.options.camera
        if tracking is None:
            return
        image = self.trike.render(camera.columns, camera.rows)
        mask, blob = track_colour(image, tracking.bounds)
        with self.trike.lock:
            if blob.pixels and tracking.follow_pan:
                self.trike.pan_target = clamp(
                    self.trike.pan_target + FOLLOW_GAIN * (camera.columns / 2 - blob.x), 0.0, 255.0
                )
            if blob.pixels and tracking.follow_tilt:
                self.trike.tilt_target = clamp(
                    self.trike.tilt_target + FOLLOW_GAIN * (camera.rows / 2 - blob.y) / 2,
                    0.0,
                    255.0,
                )
            pan, tilt = round(self.trike.pan), round(self.trike.tilt)
        packet = p.TrackingPacket(
            pan,
            tilt,
            blob.x,
            blob.y,
            blob.x2 - blob.x1,
            blob.y2 - blob.y1,
            blob.pixels,
            blob.confidence,
        )
        self.last_tracking = packet
        if not self.tracking_stream.listening:
            return
        if self.line_mode:
            bitmap = line_bitmap(mask, camera.bitmap_columns, camera.bitmap_rows)
            self.tracking_stream.send(p.encode_bitmap(bitmap, camera))
        self.sent.mark()
        self.tracking_stream.send(p.encode_tracking(packet, self.options.checksum_over_stuffed))

    def _send_frame_dump(self):
        camera = self.options.camera
        image = self.trike.render(camera.columns, camera.rows)
        self.frame_stream.send(p.encode_frame_dump(image, camera))

    # ---- the control port ------------------------------------------------------------------
    def _serve_control(self, stream, stop):
        receiver = p.FrameReceiver()
        while not stop.is_set():
            for item in receiver.feed(stream.read(4096, 0.2)):
                if isinstance(item, p.Terminate):
                    self.terminate()
                    return
                if isinstance(item, MalformedFrame):
                    self.bad_packets += 1  # nothing to parse: the iPaq answers nothing
                    continue
                reply, after = self._handle(item)
                stream.write(self.faults.apply(self._frame(reply)))
                if after is not None:
                    after()

    def terminate(self):
        """255,54: the control program ends and every port closes."""
        self.terminated.set()
        # stop() joins the server threads, the calling one among them: stop from another
        threading.Thread(target=self.stop, daemon=True).start()

    def _frame(self, body):
        framed = p.frame(body) if self.options.framed_responses else body
        return MainFrame(framed) if isinstance(body, MainFrame) else framed

    def _mini(self, status):
        return p.mini_body(status, self.options.checksum_over_stuffed)

    def _handle(self, body):
        """One parsed packet → (response body, action to run after the response is sent)."""
        try:
            command = p.decode_command(body, self.options.checksum_over_stuffed)
        except p.PacketError as exc:
            self.bad_packets += 1
            return self._mini(exc.status), None
        with self._lock:
            self._commands.append((time.monotonic(), command.letter, command.fields))
            del self._commands[:-10000]
        letter, fields = command.letter, command.fields
        if letter is L.SET_PARAMETERS:
            return self._set_parameters(p.decode_set_parameters(fields)), None
        if letter is L.CMUCAM:
            return self._cmucam(fields.decode('ascii', 'replace')), None
        if letter is L.BRAINSTEM:
            return self._brainstem(fields), None
        if letter is L.DUMP_FRAME:
            if self.options.camera_timeout:
                return self._mini(S.CAMERA_TIMEOUT), None
            return self._mini(S.OK), self._send_frame_dump
        return self._mini(self._apply(letter, fields)), None

    def _apply(self, letter, fields):
        """Commands answered with a MiniResponse; returns the status."""
        if letter is L.SET_INTEGRATION:
            x, y, theta, mask = p.decode_set_integration(fields)
            new = self.options.units.pose_from_raw(x, y, theta)
            with self.trike.lock:
                self.trike.integrated = tuple(
                    new[i] if mask & (1 << i) else old
                    for i, old in enumerate(self.trike.integrated)
                )
        elif letter is L.SAFETY:
            with self.trike.lock:
                self.trike.safety_raw = fields[0]
        elif letter is L.STOP_TRACKING:
            self.tracking = None
        elif letter in p.COLOR_TRACKING or letter in p.WINDOW_TRACKING:
            if self.options.camera_timeout:
                return S.CAMERA_TIMEOUT
            self._start_tracking(letter, fields)
        return S.OK

    def _start_tracking(self, letter, fields):
        colour = letter in p.COLOR_TRACKING
        motion = (p.COLOR_TRACKING if colour else p.WINDOW_TRACKING).index(letter)
        if colour:
            bounds = tuple(fields)
        else:  # TW: the colour in the middle of the current window
            camera = self.options.camera
            bounds = window_colour(self.trike.render(camera.columns, camera.rows))
        self.tracking = Tracking(
            letter, bounds, follow_pan=motion in (0, 1), follow_tilt=motion in (0, 2)
        )

    def _set_parameters(self, params):
        bits, units, trike = self.options.mask_bits, self.options.units, self.trike

        def has(name):
            return params.mask & (1 << getattr(bits, name))

        now = time.monotonic()
        with trike.lock:
            if has('vel_timeout'):
                self.vel_timeout = params.vel_timeout * units.vel_timeout_scale
            if has('init_brainstem'):
                self.brainstem_inits += 1
                trike.pan_target = trike.tilt_target = units.servo_center
                trike.steer = 0.0
            if has('kill_motor'):
                trike.kill_motor()
            elif has('vel'):
                trike.set_velocity(units.raw_to_velocity(params.vel), self.vel_timeout, now)
            if has('direction'):
                trike.steer = units.raw_to_steering(params.direction)
            if has('pan'):
                trike.pan_target = params.pan
            if has('tilt'):
                trike.tilt_target = params.tilt
            response = self._full_response(trike, units)
        # the telemetry (range, wheel power, pose): the driver's main stream
        return MainFrame(p.full_body(response, self.options.checksum_over_stuffed))

    @staticmethod
    def _full_response(trike, units):
        # volts across the wheel motor and its current: negative while reversing, which only a
        # robot with signed words can say (an unsigned one reports the magnitude)
        direction = -1.0 if trike.v < 0 else 1.0
        back_emf = trike.v / 1.27 * trike.battery
        current = 0.0 if trike.motor_killed else direction * (0.15 + 0.6 * abs(trike.v))
        if not units.voltage_signed:
            back_emf = abs(back_emf)
        if not units.current_signed:
            current = abs(current)
        x, y, theta = units.pose_to_raw(*trike.integrated)
        return p.FullResponse(
            S.OK, trike.range_raw, *units.wheel_power_to_raw(back_emf, current), x, y, theta
        )

    # ---- pass-through ------------------------------------------------------------------------
    def _cmucam(self, text):
        """The CMUcam's output up to its ':' prompt, as a StringResponse (§3.5)."""
        if self.options.camera_timeout:
            return p.string_body(S.CAMERA_TIMEOUT, b'')  # a String, not a Mini (§2.3)
        words = text.strip().upper().split()
        name, arguments = (words[0], words[1:]) if words else ('', [])
        if name in ('GV', 'RS'):
            reply = b'ACK\r' + CMUCAM_VERSION
        elif name in ('LM', 'PM') and len(arguments) == 1 and arguments[0] in ('0', '1'):
            setattr(self, 'line_mode' if name == 'LM' else 'poll_mode', arguments[0] == '1')
            reply = b'ACK\r'
        elif name in CMUCAM_SETTINGS:
            reply = b'ACK\r'
        elif name == 'GM' and self.poll_mode:
            reply = b'ACK\r' + self._mean_packet()
        elif name in ('TC', 'TW', 'GM', 'DF'):
            # streams (or a binary frame) until told to stop: never a ':' within 255 bytes
            return p.string_body(S.CAMERA_OVERFLOW, b'')
        else:
            reply = b'NCK\r'
        return p.string_body(S.OK, reply)

    def _mean_packet(self):
        camera = self.options.camera
        image = self.trike.render(camera.columns, camera.rows).reshape(-1, 3)
        mean, deviation = image.mean(axis=0), image.std(axis=0)
        return ('S ' + ' '.join(str(int(v)) for v in (*mean, *deviation)) + '\r').encode()

    def _brainstem(self, data):
        """A BrainStem packet [address, length, data...] (§2.7): the reply, or status 20."""
        o = self.options
        silent = p.string_body(S.BRAINSTEM_SILENT, b'')
        try:
            packet = p.decode_brainstem(data)
        except MalformedFrame:
            return silent  # no stem answers a garbled packet
        if (
            o.brainstem_silent
            or not packet.data
            or packet.address not in (o.gp_address, o.moto_address)
        ):
            return silent
        address, command, arguments = packet.address, packet.data[0], packet.data[1:]
        if command == BS.IR02_RD and address == o.gp_address and arguments:
            reply = p.encode_brainstem(
                address, bytes([BS.DEV_VAL, arguments[0] & 0x7F, self.trike.range_raw])
            )
        elif (
            command == BS.SRV_ABS
            and address == o.gp_address
            and arguments
            and arguments[0] < len(SERVOS)
        ):
            servo = SERVOS[arguments[0]]
            if len(arguments) == 2:  # set: no reply from the stem
                self._set_servo(servo, arguments[1])
                reply = b''
            else:
                reply = p.encode_brainstem(
                    address, bytes([BS.SRV_ABS, arguments[0], self._servo(servo)])
                )
        else:
            reply = b''  # a command the stem does not answer
        return p.string_body(S.OK, reply)

    def _set_servo(self, servo, value):
        with self.trike.lock:
            if servo == 'steering':
                self.trike.steer = self.options.units.raw_to_steering(value)
            else:
                setattr(self.trike, f'{servo}_target', value)

    def _servo(self, servo):
        with self.trike.lock:
            if servo == 'steering':
                return self.options.units.steering_to_raw(self.trike.steer)
            return round(getattr(self.trike, servo))


# ---- command line ---------------------------------------------------------------------
def build_parser():
    parser = argparse.ArgumentParser(prog='ipaq_emulator', description=__doc__.split('\n\n')[0])
    add_host_argument(parser)
    parser.add_argument('--control-port', type=int, default=5000, help='command port (0 = free)')
    parser.add_argument(
        '--frame-dump-port',
        type=int,
        default=5001,
        help='frame dumps (tracking with --swap-stream-ports)',
    )
    parser.add_argument(
        '--tracking-port',
        type=int,
        default=5002,
        help='tracking results (frame dumps with --swap-stream-ports)',
    )
    parser.add_argument(
        '--swap-stream-ports',
        action='store_true',
        help="the protocol document's packet descriptions: tracking on 5001, frame dumps on 5002",
    )
    parser.add_argument('--cmucam2', action='store_true', help='CMUcam2 frame and bitmap formats')
    parser.add_argument(
        '--unframed-responses',
        action='store_true',
        help='answer without the 255,56 ... 255,55 framing',
    )
    parser.add_argument(
        '--checksum-over-stuffed',
        action='store_true',
        help='checksums sum the stuffed bytes (each 255 twice)',
    )
    parser.add_argument('--tracking-rate', type=float, default=17.0, help='results per second')
    parser.add_argument(
        '--unthrottled', action='store_true', help='tracking results back to back (benchmarks)'
    )
    parser.add_argument('--still-ball', action='store_true', help='the ball does not move')
    parser.add_argument('--camera-timeout', action='store_true', help='fault: camera status 10')
    parser.add_argument(
        '--brainstem-silent', action='store_true', help='fault: BrainStem status 20'
    )
    FaultInjector.add_arguments(parser)
    parser.add_argument(
        '--signed-wheel-power',
        action='store_true',
        help='wheel voltage and current as signed words (negative reversing)',
    )
    return parser


def options_from_args(args):
    return EmulatorOptions(
        host=args.host,
        control_port=args.control_port,
        frame_dump_port=args.frame_dump_port,
        tracking_port=args.tracking_port,
        swap_stream_ports=args.swap_stream_ports,
        camera=p.CameraFormat(generation=2 if args.cmucam2 else 1),
        framed_responses=not args.unframed_responses,
        checksum_over_stuffed=args.checksum_over_stuffed,
        tracking_rate=args.tracking_rate,
        unthrottled=args.unthrottled,
        ball_orbit=0.0 if args.still_ball else 0.5,
        camera_timeout=args.camera_timeout,
        brainstem_silent=args.brainstem_silent,
        **FaultInjector.options(args),
        units=Units(
            voltage_signed=args.signed_wheel_power, current_signed=args.signed_wheel_power
        ),
    )


def main(argv=None):
    args = build_parser().parse_args(argv)
    return run_emulator(
        'iPaq emulator',
        lambda: IpaqEmulator(options_from_args(args)),
        lambda emulator: emulator.terminated,
    )  # 255,54 ends it too


if __name__ == '__main__':
    sys.exit(main())
