"""Contents of one memory object: a concrete-offset map plus an ordered list of symbolic writes.

Shaped like the segment-offset-plane store (boostMap + iteList): writes at concrete offsets go to
a per-byte map, writes at symbolic offsets are appended to a list. Every record carries a sequence
number, so "the concrete entry is newer than every symbolic write that may collide with it" is a
comparison of two integers instead of a move between structures. Concrete reads never build an
if-then-else unless a newer symbolic write exists; symbolic reads build one only over the stored
entries (never over default contents such as calloc's zeros).

Values are kept in memory order: the first byte of a value is its most significant byte
(angr's convention below the endness conversion).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, replace

import claripy

from angr_ram.memory.affine_runs import affine_runs, concrete_values, run_condition, run_value

BV = claripy.ast.BV


@dataclass(frozen=True)
class Fill:
    """Default contents of ``[lo, hi)``: zeros, or the bytes of an unconstrained symbol."""

    lo: int
    hi: int
    symbol: BV | None = None  # None means zero-filled (calloc); else a BVS covering the range
    skip: int = 0             # bytes of ``symbol`` that lie before ``lo`` (after a split)

    def byte(self, off: int) -> BV:
        """Default byte at concrete offset ``off`` (``lo <= off < hi``)."""
        if self.symbol is None:
            return claripy.BVV(0, 8)
        top = self.symbol.length - (off - self.lo + self.skip) * 8
        return claripy.Extract(top - 1, top - 8, self.symbol)

    def shifted(self, delta: int, lo: int | None = None, hi: int | None = None) -> Fill:
        """This fill clipped to ``[lo, hi)`` (old offsets) and moved by ``delta`` bytes."""
        nlo = self.lo if lo is None else max(self.lo, lo)
        nhi = self.hi if hi is None else min(self.hi, hi)
        return Fill(nlo + delta, nhi + delta, self.symbol, self.skip + (nlo - self.lo))


@dataclass(frozen=True)
class SymbolicWrite:
    """A write of ``size`` bytes at a symbolic offset, applied in sequence order."""

    seq: int
    offset: BV
    value: BV
    size: int
    align: int  # a power of two that provably divides ``offset``
    limit: BV | None = None   # multi-write: only its first ``limit`` bytes are written (symbolic length)
    guard: object = None      # multi-write: written only where this condition holds


def known_alignment(e: BV | int, limit: int = 64) -> int:
    """Largest power of two (up to ``limit``) that syntactically divides ``e`` for every model."""
    if isinstance(e, int):
        return limit if e == 0 else min(limit, e & -e)
    op = e.op
    if op == "BVV":
        v = e.args[0]
        return limit if v == 0 else min(limit, v & -v)
    if op in ("__add__", "__sub__", "If", "__or__", "__xor__"):
        args = e.args[1:] if op == "If" else e.args
        return min(known_alignment(a, limit) for a in args)
    if op == "__mul__":
        r = 1
        for a in e.args:
            r *= known_alignment(a, limit)
        return min(limit, r)
    if op == "__lshift__" and e.args[1].op == "BVV":
        return min(limit, known_alignment(e.args[0], limit) << min(e.args[1].args[0], 7))
    if op == "__and__":
        return min(limit, max(known_alignment(a, limit) for a in e.args))
    if op in ("ZeroExt", "SignExt"):
        return known_alignment(e.args[1], limit)
    if op == "Concat":
        low = e.args[-1]
        if low.op == "BVV" and low.args[0] == 0:
            return min(limit, 1 << low.length)
        return 1 if low.length >= 7 else min(known_alignment(low, limit), 1 << low.length)
    if op == "Extract" and e.args[1] == 0:
        return known_alignment(e.args[2], limit)
    return 1


class ObjectStore:
    """Byte contents of a memory object of ``size`` bytes (offsets are relative to the object)."""

    __slots__ = ("size", "fills", "conc", "syms", "seq")

    def __init__(self, size: int, uninit: BV | None = None):
        self.size = size
        self.fills: list[Fill] = [Fill(0, size, uninit)]
        # byte offset -> (seq, start offset of the written value, value in memory order)
        self.conc: dict[int, tuple[int, int, BV]] = {}
        self.syms: list[SymbolicWrite] = []
        self.seq = 0

    def copy(self) -> ObjectStore:
        """Independent copy (the map is copied, the immutable records are shared)."""
        o = ObjectStore.__new__(ObjectStore)
        o.size, o.fills, o.conc, o.syms, o.seq = self.size, list(self.fills), dict(self.conc), list(self.syms), self.seq
        return o

    def resized(self, n: int, uninit: BV | None = None) -> ObjectStore:
        """A copy of this store cut or extended to ``n`` bytes (realloc); new bytes use ``uninit``."""
        o = self.copy()
        o.size = n
        o.fills = [f.shifted(0, hi=n) for f in self.fills if f.lo < n]
        if n > self.size:
            tail = None if uninit is None else claripy.Extract((n - self.size) * 8 - 1, 0, uninit)
            o.fills.append(Fill(self.size, n, tail))
        else:
            o.conc = {b: r for b, r in self.conc.items() if b < n}
        return o

    def slice(self, lo: int, hi: int) -> ObjectStore:
        """The contents of ``[lo, hi)`` as a store of its own (splitting an object into chunks)."""
        o = ObjectStore.__new__(ObjectStore)
        o.size, o.seq = hi - lo, self.seq
        o.fills = [f.shifted(-lo, lo, hi) for f in self.fills if f.lo < hi and f.hi > lo]
        o.conc = {b - lo: (seq, start - lo, v) for b, (seq, start, v) in self.conc.items() if lo <= b < hi}
        o.syms = [replace(w, offset=w.offset - lo, align=min(w.align, (lo & -lo) or 64)) for w in self.syms]
        return o

    # ------------------------------------------------------------------ defaults
    def _fill_at(self, off: int) -> Fill:
        for f in self.fills:
            if f.lo <= off < f.hi:
                return f
        raise IndexError(f"offset {off} outside object of size {self.size}")

    def _default_symbolic(self, off: BV, n: int) -> BV:
        """Default contents of ``n`` bytes at symbolic offset ``off``."""
        if all(f.symbol is None for f in self.fills):
            return claripy.BVV(0, n * 8)
        # Uninitialized (malloc) contents read at a symbolic offset: a fresh unconstrained value.
        # This over-approximates (never loses a path); see docs/reference/semantics.md, "Uninitialized memory".
        return claripy.BVS("ram_uninit_read", n * 8)

    # ------------------------------------------------------------------ writes
    def write(self, off: int | BV, value: BV, n: int, align: int | None = None) -> None:
        """Store ``value`` (``n`` bytes, memory order) at offset ``off``; the caller checked bounds.

        ``align`` is a power of two known to divide ``off`` (computed syntactically when omitted).
        """
        self.seq += 1
        if isinstance(off, int) or not off.symbolic:
            o = off if isinstance(off, int) else off.concrete_value
            rec = (self.seq, o, value)
            conc = self.conc
            for b in range(o, o + n):
                conc[b] = rec
            return
        self.syms.append(SymbolicWrite(self.seq, off, value, n, align or known_alignment(off)))

    def write_multi(self, off: int, value: BV, n: int, length: BV, guard=None) -> None:
        """A write of symbolic ``length`` (at most ``n`` bytes of ``value``, memory order) at
        concrete offset ``off``: one record, byte ``off + i`` written where ``i < length`` (and
        ``guard``), instead of one conditional write per feasible length."""
        self.seq += 1
        if length.length < 64:
            length = claripy.ZeroExt(64 - length.length, length)
        elif length.length > 64:
            length = claripy.Extract(63, 0, length)
        self.syms.append(SymbolicWrite(self.seq, claripy.BVV(off, 64), value, n, off & -off if off else 64,
                                       length, guard))

    def embed(self, other: ObjectStore, at: int) -> None:
        """Copy ``other``'s contents into this store at offset ``at`` (segment building)."""
        base = self.seq
        end = at + other.size
        kept: list[Fill] = []
        for f in self.fills:  # clip the fills the embedded range overlaps, keep the rest
            if f.hi <= at or f.lo >= end:
                kept.append(f)
                continue
            if f.lo < at:
                kept.append(f.shifted(0, hi=at))
            if f.hi > end:
                kept.append(f.shifted(0, lo=end))
        self.fills = kept
        self.fills.extend(f.shifted(at) for f in other.fills)
        self.fills.sort(key=lambda f: f.lo)
        for b in range(at, at + other.size):
            self.conc.pop(b, None)
        for b, (seq, start, v) in other.conc.items():
            self.conc[b + at] = (base + seq, start + at, v)
        for w in other.syms:
            off = w.offset + at
            self.syms.append(replace(w, seq=base + w.seq, offset=off, align=known_alignment(off)))
        self.seq = base + other.seq

    # ------------------------------------------------------------------ reads
    def read(self, off: int | BV, n: int, align: int | None = None, reverse: bool = False) -> BV:
        """Value of ``n`` bytes at offset ``off`` in memory order (``reverse``: byte-reversed, the
        value of a little-endian load); the caller checked bounds.

        A symbolic-offset word read reverses each candidate value rather than the if-then-else
        over them: claripy would push a reversal of the whole selection down to one selection
        per byte, eight times the size and opaque to alignment reasoning on loaded pointers.
        """
        if isinstance(off, int) or not off.symbolic:
            v = self._read_concrete(off if isinstance(off, int) else off.concrete_value, n)
            return v.reversed if reverse and n > 1 else v
        return self._read_symbolic(off, n, align or known_alignment(off), reverse and n > 1)

    def _byte_record(self, b: int):
        r = self.conc.get(b)
        return r if r is not None else (0, None, None)

    def _newer_syms(self, seq: int) -> list[SymbolicWrite]:
        syms = self.syms
        if not syms or syms[-1].seq < seq:
            return []
        i = bisect_right(syms, seq, key=_seq)
        return syms[i:]

    def _read_concrete(self, o: int, n: int) -> BV:
        recs = [self._byte_record(b) for b in range(o, o + n)]
        oldest = min(r[0] for r in recs)
        if self._newer_syms(oldest):
            return claripy.Concat(*(self._byte_concrete(o + i, recs[i]) for i in range(n))) if n > 1 \
                else self._byte_concrete(o, recs[0])
        # fast path: whole read served by the concrete map (and default fill)
        first = recs[0]
        if first[1] == o and first[2] is not None and first[2].length == n * 8 and all(r is first for r in recs):
            return first[2]
        parts: list[BV] = []
        i = 0
        while i < n:
            seq, start, v = recs[i]
            j = i + 1
            if v is None:
                while j < n and recs[j][2] is None:
                    j += 1
                parts.extend(self._fill_at(o + k).byte(o + k) for k in range(i, j))
            else:
                while j < n and recs[j] is recs[i]:
                    j += 1
                hi_bit = v.length - (o + i - start) * 8
                parts.append(claripy.Extract(hi_bit - 1, hi_bit - (j - i) * 8, v))
            i = j
        return parts[0] if len(parts) == 1 else claripy.Concat(*parts)

    def _byte_plain(self, b: int, rec) -> BV:
        """Byte at concrete offset ``b`` as its map entry holds it (no symbolic write applied)."""
        _, start, v = rec
        if v is None:
            return self._fill_at(b).byte(b)
        hi_bit = v.length - (b - start) * 8
        return claripy.Extract(hi_bit - 1, hi_bit - 8, v)

    def _byte_concrete(self, b: int, rec) -> BV:
        """Byte at concrete offset ``b`` including symbolic writes newer than its map entry."""
        acc = self._byte_plain(b, rec)
        for w in self._newer_syms(rec[0]):
            acc = claripy.If(self._covers(w, b), _sym_byte(w, b), acc)
        return acc

    @staticmethod
    def _covers(w: SymbolicWrite, b: int | BV):
        if w.size == 1:
            c = w.offset == b
        else:
            c = claripy.And(claripy.ULE(w.offset, b), claripy.ULT(b, w.offset + w.size))
        if w.limit is not None:
            rel = (b - w.offset) if not isinstance(b, int) else (claripy.BVV(b, w.offset.length) - w.offset)
            if rel.length < 64:
                rel = claripy.ZeroExt(64 - rel.length, rel)
            c = claripy.And(c, claripy.ULT(rel, w.limit))
        if w.guard is not None:
            c = claripy.And(c, w.guard)
        return c

    def _read_symbolic(self, off: BV, n: int, align: int, reverse: bool = False) -> BV:
        word = n & (n - 1) == 0 and align >= n and all(
            w.size == n and w.align >= n and w.limit is None and w.guard is None for w in self.syms)
        if word:
            def conv(v):
                return v.reversed if reverse else v
            acc = conv(self._default_symbolic(off, n))
            for w in self.syms:
                acc = claripy.If(off == w.offset, conv(w.value), acc)
            starts = sorted(s for s in {b - b % n for b in self.conc} if s + n <= self.size)
            if len(starts) == self.size // n and starts and starts[-1] == self.size - n:
                # every aligned word in bounds was written (an array of row pointers filled by a
                # loop): the default is unreachable, and a fresh uninitialized value there (angr's
                # default options) only gives z3 a variable to reason about (4x slower checks)
                return select(off, starts, lambda s: conv(self._read_concrete(s, n)), None)
            return select(off, starts, lambda s: conv(self._read_concrete(s, n)), acc)
        # A byte whose map entry is older than every symbolic write reads as the writes applied,
        # newest last, over the concrete byte: the writes are applied once at ``x`` above a
        # selection of the plain bytes, not once per stored byte (a 4 KiB hash table with five
        # entries written at hashed offsets: 5 x 4096 if-then-elses per byte read, minutes).
        # Bytes written concretely after some symbolic write keep their own expression.
        out = []
        first = self.syms[0].seq if self.syms else None
        keys, newer = [], []
        for k in sorted(self.conc):
            (keys if first is None or self.conc[k][0] < first else newer).append(k)
        for i in range(n):
            x = off + i if i else off
            acc = select(x, keys, lambda b: self._byte_plain(b, self.conc[b]), self._default_symbolic(x, 1))
            for w in self.syms:
                acc = claripy.If(self._covers(w, x), _sym_byte(w, x), acc)
            out.append(select(x, newer, lambda b: self._byte_concrete(b, self.conc[b]), acc))
        if reverse:
            out.reverse()
        return out[0] if n == 1 else claripy.Concat(*out)

    def stored_offsets(self) -> int:
        """Number of bytes held in the concrete map (for statistics and tests)."""
        return len(self.conc)


CHAIN = 128


def _seq(w: SymbolicWrite) -> int:
    return w.seq


def select(off: BV, keys: list[int], value, default: BV | None) -> BV:
    """``value(k)`` where ``off == k`` for sorted concrete ``keys``, else ``default``.

    Up to ``CHAIN`` keys this is a chain of equalities (what z3 solves fastest); longer selections
    are split on ``off < key`` first, so the depth stays bounded (claripy converts recursively).
    With ``default=None`` the last key is the fallback. In a selection longer than ``CHAIN``, runs
    of concrete entries affine in their key (a table filled by a loop) are one arm each
    (:mod:`angr_ram.memory.affine_runs`).
    """
    if not keys:
        return default
    if len(keys) > CHAIN:    # (a short chain stays equalities: value sets judge its arms one by one)
        vals = [value(k) for k in keys]
        ints = concrete_values(vals)
        runs = affine_runs(keys, ints, vals[0].length) if ints is not None else []
        arms = _arms(off, keys, vals, runs) if runs else [(k, None, v) for k, v in zip(keys, vals, strict=True)]
        return _select_arms(off, arms, default)
    return _select_arms(off, [(k, None, k) for k in keys], default, value)


def _arms(off: BV, keys: list[int], vals: list, runs: list) -> list:
    """(first key, condition or None for ``off == key``, value) per run and per key outside runs."""
    out, i = [], 0
    width = vals[0].length
    for r in runs:
        out += [(keys[k], None, vals[k]) for k in range(i, r.i)]
        out.append((keys[r.i], run_condition(off, keys, r), run_value(off, keys, r, width)))
        i = r.j
    out += [(keys[k], None, vals[k]) for k in range(i, len(keys))]
    return out


def _select_arms(off: BV, arms: list, default: BV | None, value=None) -> BV:
    """The selection over ``arms`` sorted by first key (see :func:`select`); ``value`` maps a
    plain arm's third item to its value when the arms carry keys only."""
    if len(arms) > CHAIN:
        mid = len(arms) // 2
        return claripy.If(claripy.ULT(off, arms[mid][0]), _select_arms(off, arms[:mid], default, value),
                          _select_arms(off, arms[mid:], default, value))

    def val(arm):
        return value(arm[2]) if value is not None else arm[2]
    if default is None:
        acc, arms = val(arms[-1]), arms[:-1]
    else:
        acc = default
    for arm in reversed(arms):
        acc = claripy.If(off == arm[0] if arm[1] is None else arm[1], val(arm), acc)
    return acc


def _sym_byte(w: SymbolicWrite, b: int | BV) -> BV:
    """Byte of symbolic write ``w`` at offset ``b`` (assumes ``w`` covers ``b``)."""
    if w.size == 1:
        return w.value
    width = w.value.length
    rel = (b - w.offset) if not isinstance(b, int) else (claripy.BVV(b, w.offset.length) - w.offset)
    shift = (claripy.BVV(w.size - 1, rel.length) - rel) * 8
    if shift.length < width:
        shift = claripy.ZeroExt(width - shift.length, shift)
    elif shift.length > width:
        shift = claripy.Extract(width - 1, 0, shift)
    return claripy.Extract(7, 0, claripy.LShR(w.value, shift))
