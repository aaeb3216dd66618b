"""The Pleo monitor link: open the USB serial port, sync on the prompt, run one command at
a time, poll the battery, and hand log and dump lines to the node (docs/protocols/pleo.md §3.3).

No rclpy here. Records handed to ``on_record``: Connected (once per session),
protocol.LogLine / SensorDump / JointDump, and Battery.
"""

import collections
import dataclasses
import threading
import time
from typing import Tuple

from legacy_robot_common.client import ReconnectingClient
from legacy_robot_common.errors import ConnectionLost, LinkTimeout
from legacy_robot_common.streams import SerialStream

from . import protocol as p

PLEO_USB_ID = (0x6962, 0x0100)  # CDC-ACM "Pleo"; 0x8100 is its firmware upgrade mode
IDLE_SLICE = 0.05  # s; how long an idle read waits before looking at work
RESYNC_SETTLE = 0.3  # s; after a resync, prompts this soon are late duplicates


@dataclasses.dataclass
class Settings:
    port: str = '/dev/ttyACM0'  # device path, pyserial URL, or "auto" (find by USB ID)
    baud: int = 115200  # nominal over CDC-ACM
    open_timeout: float = 5.0  # wait for a prompt that comes at once (sync, STATS POWER)
    answer_timeout: float = 60.0  # default wait for a command's prompt
    battery_interval: float = 5.0  # STATS POWER every this many seconds; 0 = never
    startup_commands: Tuple[str, ...] = ('APP UNLOAD', 'JOINT NEUTRAL')

    def __post_init__(self):
        for name in ('open_timeout', 'answer_timeout'):
            if getattr(self, name) <= 0:
                raise ValueError(f'{name} must be positive')
        if self.battery_interval < 0:
            raise ValueError('battery_interval must be 0 (off) or positive')
        for command in self.startup_commands:
            p.encode_command(command)


@dataclasses.dataclass(frozen=True)
class Connected:
    port: str


@dataclasses.dataclass(frozen=True)
class Battery:
    value: int  # the monitor's battery sensor value, 0..100


@dataclasses.dataclass(frozen=True)
class Answer:
    command: str
    lines: Tuple[str, ...]

    @property
    def failed(self):
        return p.answer_failed(self.lines)

    @property
    def text(self):
        return '\n'.join(self.lines)


@dataclasses.dataclass
class _Command:
    text: str
    resolve: object
    timeout: float


def find_pleo_port():
    """The device path of the first USB serial port with the Pleo's vendor/product ID."""
    from serial.tools import list_ports

    for port in list_ports.comports():
        if (port.vid, port.pid) == PLEO_USB_ID:
            return port.device
    raise ConnectionLost('no Pleo (USB 6962:0100) found; is it switched on and plugged in?')


class PleoClient(ReconnectingClient):
    def __init__(self, settings, **kwargs):
        super().__init__('pleo', self._open, read_timeout=settings.answer_timeout, **kwargs)
        self.settings = settings
        self.parser = p.MonitorParser()
        self.port_in_use = None
        self.battery = None
        self.commands_done = 0
        self.command_failures = 0
        self.resyncs = 0  # prompts that went missing (line noise, slow commands)
        self._queue = collections.deque()
        self._queue_lock = threading.Lock()

    def _open(self):
        self.port_in_use = find_pleo_port() if self.settings.port == 'auto' else self.settings.port
        return SerialStream(self.port_in_use, self.settings.baud)

    # ---- requests from the node (any thread) ---------------------------------------------
    def command(self, text, resolve, timeout=0.0):
        """Queue one monitor command; resolve(Answer) or resolve(exception) later."""
        p.encode_command(text)  # ValueError now, not in the link thread
        if not self.connected:
            raise ConnectionLost('the Pleo is not connected')
        with self._queue_lock:
            self._queue.append(_Command(text, resolve, timeout or self.settings.answer_timeout))
        self.poke()

    def _next_command(self):
        with self._queue_lock:
            return self._queue.popleft() if self._queue else None

    def _fail_queued(self, error):
        while True:
            command = self._next_command()
            if command is None:
                return
            command.resolve(error)

    # ---- the session (link thread) ---------------------------------------------------------
    def run_session(self, link):
        self.parser.reset()
        try:
            self.exchange(link, '', self.settings.open_timeout)  # a bare "\n": the prompt
            for text in self.settings.startup_commands:
                answer = self.exchange(link, text, self.settings.answer_timeout)
                if answer.failed:
                    self.log.warning('startup', f'pleo: {text!r} answered: {answer.text}')
            self.mark_connected(self.port_in_use)  # ready: services may send commands now
            self.deliver(Connected(self.port_in_use))
            self._serve(link)
        except ConnectionLost as exc:
            self._fail_queued(exc)
            raise
        finally:
            self._fail_queued(ConnectionLost('the Pleo link closed'))

    def _serve(self, link):
        next_poll = time.monotonic()
        while True:
            command = self._next_command()
            if command is not None:
                self._run_command(link, command)
                continue
            if self.settings.battery_interval and time.monotonic() >= next_poll:
                self._poll_battery(link)
                next_poll = time.monotonic() + self.settings.battery_interval
                continue
            self._pump(link, IDLE_SLICE)
            self.idle(0)

    def _run_command(self, link, command):
        try:
            answer = self.exchange(link, command.text, command.timeout)
        except LinkTimeout:
            command.resolve(
                TimeoutError(f'no prompt after {command.text!r} within {command.timeout:.1f} s')
            )
            self._resync(link, f'no prompt after {command.text!r}')
            return
        self.commands_done += 1
        self.command_failures += answer.failed
        command.resolve(answer)

    def _poll_battery(self, link):
        try:
            answer = self.exchange(link, 'STATS POWER', self.settings.open_timeout)
        except LinkTimeout:
            self._resync(link, 'no prompt after the battery poll')
            return
        value = p.battery_value(answer.lines)
        if value is not None:
            self.battery = value
            self.deliver(Battery(value))

    def _resync(self, link, reason):
        """A prompt went missing: one flipped bit in "> " loses it. Ask for a fresh prompt
        instead of reconnecting, which would unload the application and move the joints."""
        self.resyncs += 1
        self.log.warning(
            'resync', f'pleo: {reason}; asking for a fresh prompt ({self.resyncs} so far)'
        )
        try:
            self.exchange(link, '', self.settings.open_timeout)
        except LinkTimeout:
            raise ConnectionLost(f'monitor stopped answering ({reason})') from None
        self._drain(link, RESYNC_SETTLE)  # a slow command's own prompt may come next

    def _drain(self, link, seconds):
        """Deliver log and dump lines for a while; prompts in that time answer nothing."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            self._pump(link, remaining)
        self.parser.forget_answer()

    def exchange(self, link, text, timeout):
        """Send one command and read until the prompt; log and dump lines go out on the way."""
        self._pump(link, 0.0)  # the PDK's "clear the input": deliver what waits,
        self.parser.forget_answer()  # and drop stray text from before this command
        link.write(p.encode_command(text))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LinkTimeout(f'no prompt within {timeout:.1f} s')
            prompt = self._pump(link, min(remaining, 0.5))
            if prompt is not None:
                lines = prompt.lines
                if lines and text and lines[0].strip() == text.strip():
                    lines = lines[1:]  # the monitor's echo of the command
                return Answer(text, lines)

    def _pump(self, link, timeout):
        """Read what arrives within timeout; deliver records; → the Prompt, if one came."""
        try:
            data = link.read(timeout=max(timeout, 0.001))
        except LinkTimeout:
            return None
        records, errors = self.parser.feed(data)
        for error in errors:
            self.reject(error, 'line')
        prompt = None
        for record in records:
            if isinstance(record, p.Prompt):
                prompt = record
            else:
                self.deliver(record)
        return prompt
