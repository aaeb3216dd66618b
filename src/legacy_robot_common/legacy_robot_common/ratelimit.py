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

    def _admit(self, key, text):
        """The text to log now (with the count of suppressed ones), or None to stay quiet."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._period:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return None
            self._last[key] = now
            skipped = self._suppressed.pop(key, 0)
        return f'{text} ({skipped} similar messages suppressed)' if skipped else text

    # One call site per severity: rclpy refuses a call site whose severity changes.
    def info(self, key, text):
        text = self._admit(key, text)
        if text is not None:
            self._logger.info(text)
        return text is not None

    def warning(self, key, text):
        text = self._admit(key, text)
        if text is not None:
            self._logger.warning(text)
        return text is not None

    def error(self, key, text):
        text = self._admit(key, text)
        if text is not None:
            self._logger.error(text)
        return text is not None
