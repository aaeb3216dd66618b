"""Bounded exponential back-off for reconnect loops."""


class Backoff:
    """Delays initial, initial*factor, ... capped at maximum; reset() after success."""

    def __init__(self, initial=0.2, maximum=5.0, factor=2.0):
        if initial <= 0 or maximum < initial or factor < 1:
            raise ValueError('back-off needs 0 < initial <= maximum and factor >= 1')
        self.initial = initial
        self.maximum = maximum
        self.factor = factor
        self._next = initial

    def next_delay(self):
        delay = self._next
        self._next = min(self._next * self.factor, self.maximum)
        return delay

    def reset(self):
        self._next = self.initial
