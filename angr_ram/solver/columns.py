"""Columns: the values of one variable or expression node over an evaluator's rows (numpy arrays,
:class:`WideColumn` for variables wider than 64 bits), the cache of node values that successive
queries share, and the distinct rows of several columns."""

from __future__ import annotations

from collections import OrderedDict

import claripy
import numpy as np

_U64 = np.uint64
VALUE_BYTES = 64 << 20    # node values kept across queries, compacted (least recently used go first)


def mask(n: int):
    """The all-ones ``n``-bit value as a uint64 (n <= 64)."""
    return _U64((1 << n) - 1) if n < 64 else _U64(0xFFFFFFFFFFFFFFFF)


class _ValueCache:
    """Values of expression nodes per input layout, shared by the queries of a process: the
    constraints of successive queries share most of their sub-expressions. Bounded in bytes.

    Values are stored compactly: an array with one value throughout as that scalar (the
    evaluation is elementwise, so a scalar stands for it), a 64-bit array whose values fit in
    8, 16 or 32 bits in that width (widened again when read)."""

    def __init__(self, budget: int):
        self.budget = budget
        self.used = 0
        self.items: OrderedDict = OrderedDict()

    def get(self, key):
        r = self.items.get(key)
        if r is not None:
            self.items.move_to_end(key)
            if getattr(r, "dtype", None) in _NARROW:
                return r.astype(_U64)
        return r

    def put(self, key, value) -> None:
        value = _compact(value)
        old = self.items.pop(key, None)
        if old is not None:
            self.used -= getattr(old, "nbytes", 8)
        self.items[key] = value
        self.used += getattr(value, "nbytes", 8)
        while self.used > self.budget and self.items:
            _, old = self.items.popitem(last=False)
            self.used -= getattr(old, "nbytes", 8)


_NARROW = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32))
_NARROW_MAX = tuple((t, int(np.iinfo(t).max)) for t in _NARROW)


def _compact(value):
    """``value`` as stored by :class:`_ValueCache` (see there)."""
    if not isinstance(value, np.ndarray) or value.ndim != 1 or not value.size:
        return value
    if value.dtype == np.bool_:
        return value[0] if value.all() or not value.any() else value
    lo, hi = value.min(), value.max()          # no temporary array, unlike value != value[0]
    if lo == hi:
        return value[0]
    if value.dtype == np.uint64:
        top = int(hi)
        for t, most in _NARROW_MAX:
            if top <= most:
                return value.astype(t)
    return value


def _new_value_cache() -> _ValueCache:
    return _ValueCache(VALUE_BYTES)


OWN_VALUE_BYTES = 128 << 20    # node values one evaluator keeps of its own rows


class _OwnValues(dict):
    """Node values of one evaluator alone, for rows no other evaluation shares (a model's
    neighbours, the product of a cut's ports): kept as computed, with none of
    :class:`_ValueCache`'s hashing of the rows or compaction, the oldest dropped beyond
    :data:`OWN_VALUE_BYTES` (a joint image over 2^22 rows kept 32 MB per node, and Debian's join
    grew by 900 MB in one step until the step's memory budget abandoned it)."""

    get = dict.get

    def __init__(self, budget: int = OWN_VALUE_BYTES):
        super().__init__()
        self.budget, self.used = budget, 0

    def put(self, key, value) -> None:
        old = dict.pop(self, key, None)
        if old is not None:
            self.used -= getattr(old, "nbytes", 8)
        self[key] = value
        self.used += getattr(value, "nbytes", 8)
        while self.used > self.budget and len(self) > 1:
            oldest = next(iter(self))
            self.used -= getattr(dict.pop(self, oldest), "nbytes", 8)


class WideColumn:
    """The values of a variable wider than 64 bits over an evaluator's rows, as 64-bit limbs
    (``limbs[j]`` holds bits ``64j .. 64j+63``). Only its bit ranges of at most 64 bits are read
    (:meth:`Evaluator.bits`): an input read as one wide ``claripy.BVS`` is used byte by byte."""

    __slots__ = ("length", "limbs")

    def __init__(self, length: int, limbs: list):
        self.length = length
        self.limbs = limbs

    @classmethod
    def full(cls, length: int, value: int, size: int) -> WideColumn:
        """``size`` rows of ``value``."""
        return cls(length, [np.full(size, (value >> lo) & 0xFFFFFFFFFFFFFFFF, dtype=_U64)
                            for lo in range(0, length, 64)])

    def __len__(self) -> int:
        return len(self.limbs[0])

    def __getitem__(self, idx) -> WideColumn:
        return WideColumn(self.length, [limb[idx] for limb in self.limbs])

    def value(self, i: int) -> int:
        """Row ``i`` as an int."""
        return sum(int(limb[i]) << (64 * j) for j, limb in enumerate(self.limbs))

    def set_bits(self, lo: int, width: int, values) -> WideColumn:
        """A copy whose bits ``lo .. lo+width-1`` (inside one limb) are ``values``."""
        j, sh = divmod(lo, 64)
        limbs = [limb.copy() for limb in self.limbs]
        m = _U64(((1 << width) - 1) << sh)
        limbs[j] = (limbs[j] & ~m) | ((np.asarray(values, dtype=_U64) << _U64(sh)) & m)
        return WideColumn(self.length, limbs)

    def bits(self, hi: int, lo: int):
        """Bits ``[hi:lo]`` (at most 64) of every row."""
        out = None
        for j, limb in enumerate(self.limbs):
            l_lo, l_hi = 64 * j, 64 * j + 63
            if l_hi < lo or l_lo > hi:
                continue
            a, b = max(lo, l_lo), min(hi, l_hi)
            part = ((limb >> _U64(a - l_lo)) & mask(b - a + 1)) << _U64(a - lo)
            out = part if out is None else out | part
        return out

    def tobytes(self) -> bytes:
        return b"".join(limb.tobytes() for limb in self.limbs)

    @staticmethod
    def concatenate(parts: list) -> WideColumn:
        return WideColumn(parts[0].length, [np.concatenate([p.limbs[j] for p in parts])
                                            for j in range(len(parts[0].limbs))])


def column_of(values: list, length: int):
    """The column of a ``length``-bit variable taking ``values`` (ints) over the rows."""
    if length <= 64:
        return np.array(values, dtype=_U64)
    return WideColumn(length, [np.array([(v >> lo) & 0xFFFFFFFFFFFFFFFF for v in values], dtype=_U64)
                               for lo in range(0, length, 64)])


def concatenate_columns(parts: list):
    """``np.concatenate`` of columns, wide ones included."""
    if isinstance(parts[0], WideColumn):
        return WideColumn.concatenate(parts)
    return np.concatenate(parts)


BITMAP_BITS = 24     # packed rows this wide are deduplicated by marking a bitmap (2 MiB), not sorting


def unique_rows(cols) -> np.ndarray:
    """The distinct rows of the uint64 columns ``cols`` (all the same length), sorted as
    ``np.unique(np.stack(cols, axis=1), axis=0)`` sorts them. Where the columns' values fit in 64
    bits together, each row is packed into one word (the first column highest) and the words are
    deduplicated: ``np.unique`` with ``axis=0`` sorts rows as structured records, 8 s for the 4M
    rows of a 22-bit joint enumeration; packed, a fraction of a second."""
    cols = [np.asarray(c, dtype=np.uint64) for c in cols]
    if not cols:
        return np.zeros((0, 0), dtype=np.uint64)
    if not len(cols[0]):
        return np.zeros((0, len(cols)), dtype=np.uint64)
    widths = [int(c.max()).bit_length() for c in cols]
    total = sum(widths)
    if total > 64:
        return np.unique(np.stack(cols, axis=1), axis=0)
    key = np.zeros(len(cols[0]), dtype=np.uint64)
    shifts = []
    pos = total
    for c, w in zip(cols, widths, strict=True):
        pos -= w
        shifts.append(pos)
        if w:
            key |= c << np.uint64(pos)
    if total <= BITMAP_BITS:
        seen = np.zeros(1 << total, dtype=bool)
        seen[key] = True
        keys = np.flatnonzero(seen).astype(np.uint64)
    else:
        keys = np.unique(key)
    out = np.empty((len(keys), len(cols)), dtype=np.uint64)
    for j, (w, sh) in enumerate(zip(widths, shifts, strict=True)):
        out[:, j] = (keys >> np.uint64(sh)) & np.uint64((1 << w) - 1)
    return out


def column(node, values: np.ndarray) -> np.ndarray:
    """``values`` of ``node`` as the evaluator holds them (booleans for a Bool node)."""
    return values.astype(bool) if isinstance(node, claripy.ast.Bool) else values
