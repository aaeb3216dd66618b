"""Bounded exponential back-off for reconnect loops."""


class Backoff:
    """Delays initial, initial*factor, ... capped at maximum; reset() after success."""

    # The cap: a robot on a local serial or TCP link costs nothing to try twice a second, and
    # a robot that comes back waits up to one cap before the next try (the fault suite measured
    # 2.5-4.4 s with a 5 s cap; the mixed soak up to 996 ms with a 1 s cap, where every
    # reconnect must take at most 1 s, SYNC handshake included).
    def __init__(self, initial=0.2, maximum=0.5, factor=2.0):
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
