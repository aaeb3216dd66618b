"""Log repeated problems (bad frames, reconnects) at most once per period."""
import threading
import time


class RateLimitedLogger:
    """Wraps any logger with info/warning/error methods (logging or rclpy).

    Messages are grouped by key; within ``period`` seconds of the last emitted
    message of a key, further ones are only counted, and the count is appended
    to the next emitted message so nothing disappears silently.
    """

    def __init__(self, logger, period=5.0, clock=time.monotonic):
        self._logger = logger
        self._period = period
        self._clock = clock
        self._last = {}
        self._suppressed = {}
        self._lock = threading.Lock()

    def _emit(self, level, key, text):
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return False
            self._last[key] = now
            skipped = self._suppressed.pop(key, 0)
        if skipped:
            text = f'{text} ({skipped} similar messages suppressed)'
        getattr(self._logger, level)(text)
        return True

    def info(self, key, text):
        return self._emit('info', key, text)

    def warning(self, key, text):
        return self._emit('warning', key, text)

    def error(self, key, text):
        return self._emit('error', key, text)
