"""One velocity watchdog for every robot that drives: keep a command alive, stop when stale.

Robots differ in how a velocity reaches them (P2OS: VEL + RVEL packets that must be resent;
iPaq: fields that ride on the next telemetry poll; AIBO: walk segments), but not in the rule
around it: the last command holds until ``timeout`` passes without a new one, then the robot
gets one stop and stays stopped until the next command. ``VelocityWatchdog`` is that rule once.

How a client uses it::

    self.watchdog = VelocityWatchdog(send=self._send_velocity, stop=self._send_stop,
                                     timeout=0.5, repeat_period=0.5)
    # the node, for each cmd_vel already in robot units (any thread):
    self.watchdog.command((mm_s, rad_s))   # send() runs now, in the caller's thread
    # the client's link thread, in its loop:
    wait = min(wait, self.watchdog.seconds_left())  # wake in time for the next duty
    self.watchdog.poll()                   # resend if due; stop() once if stale

No threads, no rclpy, no I/O of its own: ``clock`` is injectable, so tests step time by hand.
"""

import threading
import time


class VelocityWatchdog:
    """Keeps the last velocity command alive; one stop when commands stop.

    send(velocity): hand one velocity (opaque here: whatever the client's units are) to the
        robot; called by command() at once, in the caller's thread, and by poll() to resend.
    stop(): hand the robot its stop; called by poll() once when a command went stale.
    timeout: s without command() before stop(); 0 = never stale (settable at run time).
    repeat_period: s between resends by poll() for a robot that forgets a command unless it
        is repeated; None = never resent (the client carries the velocity itself).
    clock: () -> s, monotonic (time.monotonic; a test's fake clock).

    stop() runs under the watchdog's lock, so a command() from another thread cannot slip in
    between the decision and the stop (it waits, then goes out after the stop); keep stop()
    short, and never wait in it for a lock that a thread calling command() may hold.
    Exceptions from send() and stop() propagate to the caller (command() or poll()).
    """

    def __init__(self, send, stop, *, timeout=0.5, repeat_period=None, clock=time.monotonic):
        if timeout < 0:
            raise ValueError('timeout must be >= 0 (0 = never)')
        if repeat_period is not None and repeat_period <= 0:
            raise ValueError('repeat_period must be positive (None = never resend)')
        self._send = send
        self._stop = stop
        self.timeout = timeout
        self.repeat_period = repeat_period
        self._clock = clock
        self._lock = threading.RLock()
        self._velocity = None  # the command being kept alive; None = stopped / idle
        self._given = 0.0  # when command() last ran
        self._sent = 0.0  # when the velocity last went out
        self.timeouts = 0  # stops sent because commands went stale

    @property
    def active(self):
        """True while a command is kept alive (between command() and its stop or clear())."""
        return self._velocity is not None

    def command(self, velocity):
        """A new velocity command (not None): send it now and keep it alive from here."""
        if velocity is None:
            raise ValueError('velocity must not be None')
        with self._lock:
            self._velocity = velocity
            self._given = self._clock()
        self._send(velocity)
        with self._lock:
            self._sent = self._clock()

    def clear(self):
        """Forget the command without sending anything (the robot was stopped another way:
        a stop or e-stop service, motor power off): nothing to resend, no stop owed."""
        with self._lock:
            self._velocity = None

    def next_deadline(self):
        """Clock time by which poll() has work to do, or None while idle."""
        with self._lock:
            if self._velocity is None:
                return None
            deadlines = []
            if self.repeat_period is not None:
                deadlines.append(self._sent + self.repeat_period)
            if self.timeout > 0:
                deadlines.append(self._given + self.timeout)
        return min(deadlines) if deadlines else None

    def seconds_left(self, default=float('inf')):
        """Seconds until next_deadline() (may be <= 0: due now); default while idle."""
        deadline = self.next_deadline()
        return default if deadline is None else deadline - self._clock()

    def poll(self, now=None):
        """Do what is due at now (default: the clock): resend the command after repeat_period,
        or, when no command came for timeout, forget it and call stop() once.
        Returns 'stop', 'resend' or None (nothing due)."""
        now = self._clock() if now is None else now
        with self._lock:
            velocity = self._velocity
            if velocity is None:
                return None
            if self.timeout > 0 and now - self._given >= self.timeout:
                self._velocity = None
                self._stop()
                self.timeouts += 1
                return 'stop'
            if self.repeat_period is None or now - self._sent < self.repeat_period:
                return None
        self._send(velocity)
        with self._lock:
            self._sent = now
        return 'resend'
