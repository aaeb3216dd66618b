"""The bits of Python 2 (2.5/2.6, 32-bit) arithmetic the PDK tools' output depends on.

The tools ran on CPython 2, so byte-exact output needs C integer division and
the order in which a Python 2 dict iterates its string keys (docs/protocols/pleo.md §2.1, §2.5,
§2.6).
"""

MASK32 = 0xFFFFFFFF
PERTURB_SHIFT = 5
DICT_MIN_SIZE = 8


def c_div(numerator, denominator):
    """C integer division: truncates toward zero (Python's // floors)."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator >= 0) else -quotient


def string_hash(text):
    """CPython 2's hash of a byte string on a 32-bit build, as an unsigned 32-bit number."""
    data = text.encode('latin-1')
    if not data:
        return 0
    value = (data[0] << 7) & MASK32
    for byte in data:
        value = ((1000003 * value) & MASK32) ^ byte
    value ^= len(data)
    return 0xFFFFFFFE if value == MASK32 else value  # -1 is reserved: it becomes -2


class _Dict:
    """Slot placement of CPython 2's dict (open addressing, perturbed probing, resizing)."""

    def __init__(self):
        self.slots = [None] * DICT_MIN_SIZE
        self.used = 0

    def insert(self, key):
        if key in self.slots:
            return
        self._place(key, self.slots)
        self.used += 1
        if self.used * 3 >= len(self.slots) * 2:
            self._resize(4 * self.used)

    @staticmethod
    def _place(key, slots):
        mask = len(slots) - 1
        hashed = string_hash(key)
        index = hashed & mask
        perturb = hashed
        while slots[index & mask] is not None:
            index = (index << 2) + index + perturb + 1
            perturb >>= PERTURB_SHIFT
        slots[index & mask] = key

    def _resize(self, minimum_used):
        size = DICT_MIN_SIZE
        while size <= minimum_used:
            size <<= 1
        old, self.slots = self.slots, [None] * size
        for key in old:
            if key is not None:
                self._place(key, self.slots)

    def keys(self):
        return [key for key in self.slots if key is not None]


def dict_order(keys):
    """The order a Python 2 dict built by inserting ``keys`` (strings) in turn iterates them."""
    table = _Dict()
    for key in keys:
        table.insert(key)
    return table.keys()
