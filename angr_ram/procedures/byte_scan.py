"""Reading a string's bytes for the procedures that answer from them (:mod:`strings`,
:mod:`string_search`, :mod:`number_parsing`): the bytes at a pointer read lazily in chunks, a
result built for every value of pointers that select among a few objects, the first-match
if-then-else, and the count of calls answered exactly."""

from __future__ import annotations

import claripy

from angr_ram.memory.pointers import MAX_POINTERS, pointer_cases

CHUNK = 16          # bytes read per memory access while scanning


def by_cases(state, ptrs, one, most: int | None = None, strings: bool = True):
    """``one(p1, n1, p2, n2, ...)`` for every combination of the pointers' cases, as an
    if-then-else on their conditions; None when a pointer has no cases or ``one`` gives None.
    ``most`` bounds the readable bytes ``n`` (:func:`~angr_ram.memory.pointers.readable_at`);
    ``strings``: ``one`` reads no byte past a string's NUL (an object of symbolic size is then
    readable up to a terminator that is inside it on every path)."""
    cases = [pointer_cases(state, p, most, strings) for p in ptrs]
    if any(c is None for c in cases):
        return None
    combos = [[]]
    for cs in cases:
        combos = [c + [x] for c in combos for x in cs]
        if len(combos) > MAX_POINTERS:
            return None
    results = []
    for combo in combos:
        args = [v for _, p, n in combo for v in (p, n)]
        r = one(*args)
        if r is None:
            return None
        conds = [c for c, _, _ in combo if c is not None]
        results.append((claripy.And(*conds) if len(conds) > 1 else conds[0] if conds else None, r))
    out = results[-1][1]
    for cond, r in reversed(results[:-1]):
        out = claripy.If(cond, r, out)
    return out


class Bytes:
    """The bytes of a buffer at ``ptr``, read lazily in chunks up to ``readable`` bytes. In an
    object of symbolic size they are read from its store: ``readable`` then ends at a terminator
    inside the object on every path (:func:`~angr_ram.memory.pointers.terminated_in_bounds`), and
    a chunk through the memory would report the bytes past a shorter path's size, which the
    function never reads on that path, as an over-read."""

    def __init__(self, state, ptr, readable: int):
        self.state, self.ptr, self.readable = state, ptr, readable
        self.bytes: list = []
        self.sized = _sized_object(state, ptr)

    def __getitem__(self, i: int):
        """Byte ``i`` (an 8-bit expression), or None past the readable range."""
        while i >= len(self.bytes):
            n = min(CHUNK, self.readable - len(self.bytes))
            if n <= 0:
                return None
            if self.sized is not None:
                obj, off = self.sized
                v = obj.store.read(off + len(self.bytes), n)
            else:
                v = self.state.memory.load(self.ptr + len(self.bytes), n, endness="Iend_BE")
            self.bytes.extend(v.chop(8))
        return self.bytes[i]


def _sized_object(state, ptr):
    """``(object, offset)`` when ``ptr`` is concrete after substitution and inside a heap object
    of symbolic size; else None."""
    if not state.has_plugin("ram"):
        return None
    a = state.ram.substitute(ptr)
    if a.symbolic or not state.ram.in_heap_range(a.concrete_value):
        return None
    hit = state.ram.find(a.concrete_value)
    if hit is None or hit[0].limit is None:
        return None
    return hit


def until_nul(state, addr, limit: int) -> list:
    """The bytes at ``addr`` (8-bit expressions, loaded one at a time) before the first that is a
    concrete NUL, at most ``limit`` of them: an array without a NUL is not read past ``limit``."""
    out = []
    for k in range(limit):
        b = state.memory.load(addr + k, 1)
        if not b.symbolic and b.concrete_value == 0:
            break
        out.append(b)
    return out


def is_zero(b) -> bool:
    return not b.symbolic and b.concrete_value == 0


def first_match(arms, last):
    """``If(c1, v1, If(c2, v2, ... last))`` for ``arms`` = [(c1, v1), (c2, v2), ...]."""
    r = last
    for cond, v in reversed(arms):
        r = claripy.If(cond, v, r)
    return r


def count_answer(state, exact: bool) -> None:
    """Count one call answered exactly (or handed to angr's procedure) in the run's stats."""
    st = state.ram.stats if state.has_plugin("ram") else None
    if st is not None:
        if exact:
            st.string_exact += 1
        else:
            st.string_fallback += 1
