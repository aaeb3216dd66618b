"""What the tries against real rabbits share: the bridge as its own process with a ROS observer,
and a table of steps (what, ok, seconds, detail)."""

import contextlib
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / 'test' / 'support'))

from ros_observer import Observer, ros_args, start_module  # noqa: E402

from legacy_robot_interfaces.msg import RabbitEvent  # noqa: E402


def wait(predicate, seconds, step=0.1):
    """Poll predicate (OSError counts as not yet) until true or seconds pass."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            if predicate():
                return True
        except OSError:
            pass
        time.sleep(step)
    return False


class Steps:
    def __init__(self):
        self.rows = []

    def run(self, what, check):
        """check() → (ok, detail); an exception fails the step, the next steps still run."""
        start = time.monotonic()
        try:
            ok, detail = check()
        except Exception as exc:
            ok, detail = False, f'{type(exc).__name__}: {exc}'
        seconds = time.monotonic() - start
        self.rows.append((what, ok, seconds, detail))
        print(
            f'{"ok  " if ok else "FAIL"} {what:<36} {seconds:6.2f} s  {" ".join(detail.split())}'
        )

    @property
    def passed(self):
        return bool(self.rows) and all(ok for _, ok, _, _ in self.rows)


class Bridge:
    """nabaztag_bridge in namespace ns with parameters; call(), events, seen()."""

    def __init__(self, ns, parameters, rabbit):
        self.ns, self.rabbit = ns, rabbit
        self.process = start_module('nabaztag_bridge.node', *ros_args(ns, parameters))
        self.ros = Observer(ns)
        self.events = self.ros.listen(RabbitEvent, 'events')
        if not self.ros.spin_until(
            lambda: self.ros.node.count_publishers(f'{ns}/events') == 1, 30
        ):
            raise RuntimeError('the bridge did not come up')

    def call(self, srv, service, timeout=15, **fields):
        reply = self.ros.call(srv, service, srv.Request(serial=self.rabbit, **fields), timeout)
        return reply.success, reply.message

    def seen(self, kind, since, timeout=15, **fields):
        """Whether an event of kind with fields arrived after events[since] within timeout."""

        def match():
            return any(
                e.kind == kind and all(getattr(e, k) == v for k, v in fields.items())
                for e in self.events[since:]
            )

        return self.ros.spin_until(match, timeout)

    def last_event(self, since):
        if len(self.events) <= since:
            return 'no event'
        e = self.events[-1]
        return f'event {e.kind} ears {e.ear0},{e.ear1} rfid {e.rfid!r}'

    def close(self, log_path):
        self.ros.close()
        self.process.terminate()
        out, err = self.process.communicate(timeout=20)
        pathlib.Path(log_path).write_text(out + err)


@contextlib.contextmanager
def bridge(ns, parameters, rabbit, log_path):
    running = Bridge(ns, parameters, rabbit)
    try:
        yield running
    finally:
        running.close(log_path)
