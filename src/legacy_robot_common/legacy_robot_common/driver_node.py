"""The ROS side every driver shares: records from the link thread into ROS context.

A robot node subclasses DriverNode, builds its client, calls attach_client(), implements
handle_record() and ends its __init__ with begin(). The link thread never touches rclpy's
entities: it hands records to the executor (handoff.ExecutorHandoff: a queue, one
executor.create_task per burst, which both executors take from any thread); the task calls
handle_record() for each record, where publishing happens.

Every driver is a managed (lifecycle) node: configure opens the links, activate starts
publishing and accepting commands (services, cmd_vel), deactivate stops the robot and the
publishing, cleanup closes the links, shutdown says goodbye. With `autostart` (default) begin()
configures and activates at once, so a plain launch behaves as an unmanaged node.
"""

import contextlib
import functools
import gc
import importlib.metadata
import inspect
import os
import signal
import socket
import sys
import threading
import time
import weakref

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.event_handler import PublisherEventCallbacks
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.task import Future

from .diagnostics import ERROR, OK, WARN, DiagnosticsPublisher, LinkStatusTask
from .distribution import distribution, events_executor_gap, rclpy_release
from .frames import RobotFrames
from .handoff import ExecutorHandoff
from .memory import ARENAS, ENVIRONMENT, MallocTrim, configure_malloc
from .middleware import check_dds_security, use_closed_discovery, use_our_dds_profiles
from .params import ParameterError, declare
from .ratelimit import RateLimitedLogger
from .recording import Recorder, RecordingError

RCLError = rclpy_implementation.RCLError

# The last message stays available to late subscribers (robot info, audio info, rabbit lists).
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)


# LEGACY_ROBOTS_EXECUTOR chooses the executor of every driver process (bringup, run_node,
# the demo, the floors of make bench): rclpy's events executor (the default where it can run
# the drivers: Kilted) or its SingleThreadedExecutor (the default on Jazzy, whose events
# executor cannot answer async services: distribution.events_executor_gap). README "Executors".
EXECUTOR_VARIABLE = 'LEGACY_ROBOTS_EXECUTOR'
EXECUTORS = {'single': SingleThreadedExecutor, 'events': EventsExecutor}


def default_executor():
    """'events', or 'single' where this distribution's events executor cannot run the drivers."""
    return 'single' if events_executor_gap() else 'events'


def executor_kind():
    """'single' or 'events' from LEGACY_ROBOTS_EXECUTOR (default: default_executor());
    ParameterError (a user error: exit 2 with its message) for anything else, and for
    'events' where this distribution's events executor cannot run the drivers."""
    kind = os.environ.get(EXECUTOR_VARIABLE, '').strip().lower() or default_executor()
    if kind not in EXECUTORS:
        raise ParameterError(
            f'{EXECUTOR_VARIABLE}={kind!r}: must be one of {", ".join(EXECUTORS)}'
        )
    gap = events_executor_gap() if kind == 'events' else None
    if gap:
        raise ParameterError(f'{EXECUTOR_VARIABLE}=events: {gap}; use single')
    return kind


def executor_note():
    """The executor in use and, where the default had to change, why (logs, diagnostics)."""
    kind = executor_kind()
    gap = events_executor_gap()
    return f'{kind} ({gap})' if kind == 'single' and gap else kind


def make_executor(context=None, kind=None):
    """The executor every driver process uses: one, single-threaded.

    rclpy's events executor by default where it can run the drivers (Kilted): it waits in C++
    and dispatches each event without rebuilding a wait set (about half the CPU of
    SingleThreadedExecutor for the same node); SingleThreadedExecutor on Jazzy and with
    kind / LEGACY_ROBOTS_EXECUTOR=single (README "Executors").
    Never the MultiThreadedExecutor: it busy-waits while a callback runs and starved the link
    and emulator threads of the GIL (measured: 3x the CPU, a 50 Hz stream intermittently down
    to 5 Hz). Nothing blocks the executor: services that wait for a robot reply are async
    (DriverNode.reply_future).
    """
    return EXECUTORS[kind or executor_kind()](context=context)


class DriverNode(ExecutorHandoff, LifecycleNode):
    # Record types handle_record() may publish on the link thread that delivered them,
    # without the executor round trip (a wake-up costs about 0.7 ms of CPU): only those
    # whose handling touches nothing but their own publishers, each used by one thread.
    direct_records = ()

    def __init__(self, node_name, hardware_id, **kwargs):
        """hardware_id: the kind of robot ("P2OS robot"); name_hardware() adds its address."""
        super().__init__(node_name, **kwargs)
        self.links = []
        self.log = RateLimitedLogger(self.get_logger())
        # Async service handlers hold their callback group while they await a robot
        # reply; the reply's delivery and its timeout must not wait behind them.
        # Robot nodes create services, subscriptions and timers in this group.
        self.callback_group = ReentrantCallbackGroup()
        self.init_handoff()  # records from the link threads to the executor
        # state first: a parameter declared below may raise, and shutdown still reads these
        self.records_dropped = 0
        self.link_names = []
        self.recorder = None
        self.active = False
        self.inactive_refusals = 0  # commands refused while not active
        self._configure_error = None
        self.robot_kind = hardware_id
        self.diagnostics = DiagnosticsPublisher(self, hardware_id)
        self.diagnostics.add_task('process', self._process_status)
        self._hardware_id = declare(
            self,
            'hardware_id',
            '',
            'hardware_id of this driver\'s diagnostics ("" = the kind of robot and its address)',
            read_only=True,
        )
        self.frames = RobotFrames(self)
        self.model = None  # a RobotStatePublisher, for robots with a model
        self.autostart = declare(
            self,
            'autostart',
            True,
            'configure and activate at start (false: wait for a lifecycle manager)',
            read_only=True,
        )
        self._gate_commands = True  # from here on, services and subscriptions
        self.record_path = declare(
            self,
            'record_path',
            '',
            'MCAP file to record the raw bytes of every link to (empty: no recording)',
            read_only=True,
        )
        # Ctrl-C shuts the context down before destroy_node() stops the links: tell them at
        # once, so a robot side that closes in that moment is shutdown, not a link fault
        self.context.on_shutdown(self._request_links_stop)

    def name_hardware(self, address):
        """Diagnostics name the robot (two of a kind must differ): the hardware_id parameter,
        else "<kind> <address>" (a port, a host, a serial)."""
        self.diagnostics.hardware_id = self._hardware_id or f'{self.robot_kind} {address}'

    def parameter_values(self):
        """{name: value} of every parameter declared so far (robot models are built from it)."""
        return {name: parameter.value for name, parameter in self._parameters.items()}

    def clock_offset(self):
        """Seconds to add to a time.time() reception time to get the node's clock: 0 on the
        wall clock, the difference under simulated time (use_sim_time and /clock)."""
        clock = self.get_clock()
        if not clock.ros_time_is_active:
            return 0.0
        return clock.now().nanoseconds / 1e9 - time.time()

    def publisher(self, msg_type, topic, qos=10):
        """A lifecycle publisher (silent unless the node is active) without the default
        QoS-event handlers: each is a waitable the executor walks on every record (measured on
        P2OS: about a third of the driver's CPU); a subscriber with an incompatible QoS still
        gets its own warning."""
        return self.create_lifecycle_publisher(
            msg_type,
            topic,
            qos,
            event_callbacks=PublisherEventCallbacks(use_default_callbacks=False),
        )

    # ---- managed node ------------------------------------------------------------------------
    def begin(self):
        """The end of a robot node's __init__: with autostart, configure and activate now
        (a ParameterError of configure, such as a record_path that cannot be opened, raises)."""
        if not self.autostart:
            self.get_logger().info(
                'autostart is false: waiting for configure and activate (lifecycle)'
            )
            return
        self.trigger_configure()
        if self._configure_error is not None:
            raise self._configure_error
        self.trigger_activate()

    def on_configure(self, state):
        self._configure_error = None
        try:
            self.start_links()
        except ParameterError as exc:
            self._configure_error = exc
            self.get_logger().error(str(exc))
            self.stop_links()
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        self.active = True
        return super().on_activate(state)

    def on_deactivate(self, state):
        self.active = False
        self.stop_robot()
        return super().on_deactivate(state)

    def on_cleanup(self, state):
        self.stop_links()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        if self.active:
            self.stop_robot()
        self.active = False
        self.stop_links()  # each link says its goodbye to the robot
        return TransitionCallbackReturn.SUCCESS

    def on_error(self, state):
        self.active = False
        self.stop_links()
        return TransitionCallbackReturn.SUCCESS

    def stop_robot(self):
        """Deactivate: bring the robot to a stop (a mobile base overrides it)."""

    def create_service(self, srv_type, srv_name, callback, **kwargs):
        """Services of a robot node answer only while it is active (success false before)."""
        if getattr(self, '_gate_commands', False):
            callback = self._when_active_service(srv_name, callback)
        return super().create_service(srv_type, srv_name, callback, **kwargs)

    def create_subscription(self, msg_type, topic, callback, qos_profile, **kwargs):
        """Commands (cmd_vel, pan/tilt, ...) are obeyed only while the node is active; /clock
        (rclpy subscribes to it when use_sim_time is set at run time) always."""
        if getattr(self, '_gate_commands', False) and topic != '/clock':
            callback = self._when_active_message(topic, callback)
        return super().create_subscription(msg_type, topic, callback, qos_profile, **kwargs)

    def _refuse(self, what):
        self.inactive_refusals += 1
        self.log.warning(
            f'inactive-{what}',
            f'{what}: refused, the driver is not active (lifecycle: configure and activate it)',
        )

    def _when_active_service(self, name, callback):
        def refusal(response):
            self._refuse(name)
            if hasattr(response, 'success'):
                response.success = False
            if hasattr(response, 'message'):
                response.message = 'the driver is not active (lifecycle state)'
            return response

        if inspect.iscoroutinefunction(callback):

            @functools.wraps(callback)
            async def gated(request, response):
                return refusal(response) if not self.active else await callback(request, response)
        else:

            @functools.wraps(callback)
            def gated(request, response):
                return refusal(response) if not self.active else callback(request, response)

        return gated

    def _when_active_message(self, topic, callback):
        @functools.wraps(callback)
        def gated(msg):
            if self.active:
                callback(msg)
            else:
                self._refuse(topic)

        return gated

    def attach_client(self, client, diagnostic_name='link', status_task=None, link_name=None):
        """Route client records into handle_record() and report its link in diagnostics
        (a ReconnectingClient's by default; status_task for other transports). link_name
        names its channels in a recording (default: the client's name)."""
        client.on_record = self._enqueue
        self.links.append(client)
        self.link_names.append(link_name or client.name)
        self.diagnostics.add_task(diagnostic_name, status_task or LinkStatusTask(client))

    def start_links(self):
        if self.record_path and self.recorder is None:
            self._start_recording()
        for link_client in self.links:
            link_client.start()

    # ---- recording (parameter record_path) -------------------------------------------------
    def _start_recording(self):
        package = type(self).__module__.partition('.')[0]
        try:
            version = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            version = 'unknown'
        parameters = {
            name: _plain(parameter.value) for name, parameter in sorted(self._parameters.items())
        }
        try:
            self.recorder = Recorder(self.record_path, self.get_name(), version, parameters)
        except RecordingError as exc:
            raise ParameterError(f'{self.get_name()}: parameter record_path: {exc}') from None
        for link_client, name in zip(self.links, self.link_names, strict=False):
            link_client.tap = self.recorder.tap(name)
        self.recorder.start()
        self.diagnostics.add_task('recording', self._recording_status)
        self.get_logger().info(f'recording {", ".join(self.link_names)} to {self.record_path}')

    def _process_status(self):
        """The ROS 2 distribution and the executor this node runs on, and why not the events
        executor where this distribution's cannot run it (distribution.events_executor_gap)."""
        kind = 'single' if isinstance(self.executor, SingleThreadedExecutor) else 'events'
        gap = events_executor_gap()
        values = {'ROS 2': distribution(), 'rclpy': rclpy_release()}
        values['executor'] = kind if self.executor is not None else 'none yet'
        if gap:
            values['events executor'] = f'not used: {gap}'
        return OK, f'ROS 2 {values["ROS 2"]}, executor {values["executor"]}', values

    def _recording_status(self):
        recorder = self.recorder
        values = {
            'path': recorder.path,
            'state': recorder.state,
            'messages': recorder.messages,
            'bytes': recorder.bytes,
        }
        if recorder.failure:
            return WARN, f'recording stopped, the driver runs on: {recorder.failure}', values
        return (OK if recorder.state == 'recording' else ERROR), recorder.state, values

    def _enqueue(self, record):
        if isinstance(record, self.direct_records):
            if self.context.ok():  # after shutdown a late record has nowhere to go
                self._handle(record)
            return
        # one executor task per burst; records of begin()'s configure wait for the executor
        self.hand_off(record)

    def destroy_timer(self, timer):
        """Node.destroy_timer, and the timer out of its callback group: rclpy's group keeps a
        weak reference to every entity it ever had, about 200 bytes for each timer made and
        destroyed. reply_future makes one per service call that waits on the robot, so a driver
        answering a call a second grew by some 17 MB a day (the mixed soak's finding)."""
        group = timer.callback_group
        destroyed = super().destroy_timer(timer)
        group.entities.discard(weakref.ref(timer))
        return destroyed

    def reply_future(self, timeout):
        """(future, resolve) for an async service handler waiting on the robot.

        Give resolve(value) to the link thread; it may call it from any thread. The
        future completes in the executor with that value, or with a TimeoutError
        instance after timeout seconds, so the handler can `await` it without
        blocking the executor:

            future, resolve = self.reply_future(2.0)
            self.client.request(command, resolve)
            reply = await future
        """
        future = Future()

        def complete(value):
            self.destroy_timer(timer)
            if not future.done():
                future.set_result(value)

        timer = self.create_timer(
            timeout,
            lambda: complete(TimeoutError(f'no reply within {timeout:.1f} s')),
            callback_group=self.callback_group,
        )
        return future, lambda value: self._enqueue(_Resolve(complete, value))

    async def await_reply(self, send, timeout, pause=0.0):
        """send(resolve) starts a request → (reply, None) or (None, error text).

        A request that cannot even be encoded or sent (ValueError, TypeError, OSError
        including ConnectionError) resolves at once with its error; so does the timeout.

        pause: for replies that take seconds (speech synthesis). rclpy's events executor
        resumes a waiting coroutine at once, turn after turn (60,000 turns in 0.5 s), so a long
        wait kept the executor's thread busy (a say waiting 40 s for its synthesis used 90 %
        of a core, and the worker it waited for got less of the CPU). With pause > 0 each turn
        first sleeps up to pause seconds (the GIL released) unless the reply has arrived;
        other callbacks wait at most that.
        """
        future, resolve = self.reply_future(timeout)
        arrived = threading.Event()

        def resolve_and_wake(value):
            resolve(value)
            arrived.set()

        try:
            send(resolve_and_wake)
        except (ValueError, TypeError, OSError) as exc:
            resolve_and_wake(exc)
        while pause and not future.done():
            arrived.wait(pause)
            await _NEXT_TURN  # the executor runs what waits (the reply's own task, timers)
        reply = await future
        return (None, str(reply)) if isinstance(reply, Exception) else (reply, None)

    def handle_handoff(self, record):
        if isinstance(record, _Resolve):
            record.apply()
        else:
            self._handle(record)

    def _handle(self, record):
        try:
            self.handle_record(record)
        except Exception as exc:  # one bad record must not stop the stream
            self.records_dropped += 1
            self.log.error(
                'handle-record',
                f'could not publish {type(record).__name__}: '
                f'{exc!r} ({self.records_dropped} dropped so far)',
            )

    def handle_record(self, record):
        raise NotImplementedError

    def _request_links_stop(self):
        for link_client in self.links:
            request_stop = getattr(link_client, 'request_stop', None)
            if request_stop is not None:
                request_stop()

    def stop_links(self):
        """Stop every link (each says its goodbye to the robot); safe to call twice. The
        recording goes on across cleanup and configure (it ends with the node)."""
        for link_client in self.links:
            link_client.stop()

    def destroy_node(self):
        self.stop_links()
        if self.recorder is not None:
            self.recorder.stop()
        self.close_handoff()  # a drain task still queued finds nothing to publish to
        super().destroy_node()


def _plain(value):
    """A parameter value as JSON can hold it (arrays come back from rclpy as array.array)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return [_plain(item) for item in value]


class _NextTurn:
    """Awaiting it gives the executor one turn (a coroutine's yield)."""

    def __await__(self):
        yield


_NEXT_TURN = _NextTurn()


class _Resolve:
    """A reply travelling from the link thread to its future in the executor."""

    def __init__(self, complete, value):
        self.complete = complete
        self.value = value

    def apply(self):
        self.complete(self.value)


class _InterruptWatch:
    """Whether a SIGINT reached Python's handler while it watched. signal.set_wakeup_fd makes
    the interpreter write each signal's number to a socket; no handler is replaced."""

    def __init__(self):
        self._read = self._write = None
        if threading.current_thread() is threading.main_thread():
            self._read, self._write = socket.socketpair()
            self._read.setblocking(False)
            self._write.setblocking(False)
            self._previous = signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)

    def interrupted(self):
        try:
            return self._read is not None and signal.SIGINT in self._read.recv(4096)
        except BlockingIOError:
            return False

    def close(self):
        if self._read is not None:
            signal.set_wakeup_fd(self._previous)
            self._read.close()
            self._write.close()


@contextlib.contextmanager
def spin_until_shutdown():
    """Around a spin loop: SIGINT / SIGTERM end it quietly.

    Shutdown shuts the context down; an executor building its wait set at that moment sees
    the dead context before it can raise ExternalShutdownException and raises RCLError
    instead (seen in CI, once in run_node and once in the bringup composition). And a SIGINT
    whose KeyboardInterrupt is raised while rclpy 9.1's events executor converts an argument
    for a Python call comes out of spin_once as pybind11's RuntimeError "Unable to convert
    call argument '0' to Python object" (seen in CI at the P2OS driver's SIGINT, in about 1
    of 8 stops under load), sometimes before rclpy's signal thread has shut the context
    down. Both are a normal shutdown; a RuntimeError (RCLError is one) with the context up
    and no SIGINT is not.
    """
    interrupts = _InterruptWatch()
    try:
        yield
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        if rclpy.ok() and not interrupts.interrupted():
            raise
    finally:
        interrupts.close()


SPIN_TICK = 1.0  # s: the longest an idle spin_once waits (shutdown wakes it at once)


def spin(executor, malloc_trim=None):
    """Spin until the executor's context shuts down, one spin_once at a time, trimming malloc's
    free pages between them now and then (memory.MallocTrim; a new one if not given).

    Not executor.spin(): rclpy's events executor keeps the GIL while it waits in spin() (seen
    with rclpy 9.1: no other Python thread ran, and a create_task from a link thread waited
    forever); its spin_once releases it, as SingleThreadedExecutor's does.
    """
    malloc_trim = malloc_trim or MallocTrim()
    # What start-up made (rclpy, message types, speech and codec modules, the nodes) lives as
    # long as the process: out of the collector's sight, a full collection scans only what came
    # later (measured, Nabaztag bridge: one took 34 ms of the thread that triggered it, holding
    # the GIL, while 1,000 rabbits registered; docs/benchmarks.md)
    gc.freeze()
    while rclpy.ok(context=executor.context):
        executor.spin_once(timeout_sec=SPIN_TICK)
        malloc_trim.tick()


def prepare_process(plugins=()):
    """What a process that hosts our nodes sets before rclpy.init starts the DDS threads:
    malloc arenas and thresholds (memory.py), our Fast DDS profiles and discovery kept on this
    host unless the user chose a range (middleware.py), and the GIL switch interval, the
    smallest any of the robots hosted (plugins) asks for; logs them in one INFO line.
    Returns {setting: value}."""
    check_dds_security()
    configure_malloc()
    profiles = use_our_dds_profiles()
    discovery = use_closed_discovery()
    wanted = [p.switch_interval for p in plugins if p.switch_interval is not None]
    if wanted:
        sys.setswitchinterval(min(wanted))
    settings = {
        'ROS 2': distribution(),
        'executor': executor_note(),
        'malloc arenas': os.environ.get(ENVIRONMENT) or ARENAS,
        'DDS profiles': profiles or 'from the environment',
        'DDS discovery': discovery,
        'GIL switch interval s': sys.getswitchinterval(),
    }
    text = ', '.join(f'{name} {value}' for name, value in settings.items())
    rclpy.logging.get_logger('legacy_robots').info(f'process settings: {text}')
    return settings


def run_node(create_node, args=None, user_errors=(ParameterError,), plugins=()):
    """Console-script main for one node: init, spin, clean shutdown, exit code; plugins: the
    robot's (prepare_process applies what it asks of the process).

    A user error (ParameterError: a user mistake) prints its message and exits with 2.
    """
    try:
        prepare_process(plugins)
    except ParameterError as exc:  # e.g. an unknown LEGACY_ROBOTS_DDS_PROFILE
        print(f'error: {exc}', file=sys.stderr)
        return 2
    try:
        rclpy.init(args=args)
    except RCLError as exc:  # e.g. a -p value that is not valid YAML
        print(f'error: bad ROS arguments: {exc}', file=sys.stderr)
        return 2
    node = None
    try:
        executor = make_executor()  # first: an unknown executor is a user error
        malloc_trim = MallocTrim()  # and a bad LEGACY_ROBOTS_MALLOC_TRIM
        node = create_node()
        executor.add_node(node)
        with spin_until_shutdown():
            spin(executor, malloc_trim)
    except user_errors as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0
