"""Searches in a string answered from its bytes: ``strchr``, ``strchrnul``, ``strspn``,
``strcspn`` and ``strpbrk`` as if-then-elses over the symbolic bytes before the first byte that
ends the search for sure (as :mod:`angr_ram.procedures.strings` does for lengths and comparisons),
over the values of a pointer that selects among a few strings; angr's procedure, or a fresh value
the path records as a stub, when that end is not in reach. ``memrchr`` (a length, no end) reads
its ``n`` bytes; ``rawmemchr`` (no length, no end) reads up to the byte it looks for."""

from __future__ import annotations

import angr
import claripy

from angr_ram.procedures.byte_scan import Bytes, by_cases, count_answer, first_match, is_zero
from angr_ram.procedures.heap import holds_for_sure
from angr_ram.procedures.libc import single_value
from angr_ram.procedures.stubs import record

MAX_SET = 256       # strspn/strcspn/strpbrk sets longer than this go to the fallback


def _members(state, ptr, readable: int):
    """The bytes of the set string at ``ptr`` up to its first concrete NUL, each with the condition
    that it belongs to the set (it and every byte before it non-zero), or None if no concrete NUL
    is within the readable bytes."""
    a = Bytes(state, ptr, readable)
    out, alive, i = [], claripy.BoolV(True), 0
    while i <= MAX_SET:
        b = a[i]
        if b is None:
            return None
        if is_zero(b):
            return out
        out.append((b, claripy.And(alive, b != 0) if b.symbolic else alive))
        if b.symbolic:
            alive = claripy.And(alive, b != 0)
        i += 1
    return None


def _member(c, members):
    """``c`` (a byte) is one of ``members``: a Python bool when that is decided without a solver,
    else a claripy boolean."""
    terms = []
    for b, cond in members:
        if not c.symbolic and not b.symbolic:
            if c.concrete_value == b.concrete_value:
                if cond.is_true():
                    return True
                terms.append(cond)
            continue
        terms.append(c == b if cond.is_true() else claripy.And(cond, c == b))
    if not terms:
        return False
    return claripy.Or(*terms) if len(terms) > 1 else terms[0]


def _not(x):
    return (not x) if isinstance(x, bool) else claripy.Not(x)


def _or(x, y):
    if isinstance(x, bool):
        return True if x else y
    if isinstance(y, bool):
        return True if y else x
    return claripy.Or(x, y)


def _scan(state, s, rs: int, members, reject: bool, value):
    """The first position ``i`` of ``s`` whose byte is not in ``members`` (``reject``: is in them,
    or is the NUL) as an if-then-else of ``value(i, byte)``, or None if no position ends the scan
    for sure within the readable bytes."""
    sb = Bytes(state, s, rs)
    arms = []
    i = 0
    while True:
        c = sb[i]
        if c is None:
            return None
        if is_zero(c):
            stop = True                 # the NUL ends both scans (it is never in the set)
        else:
            m = _member(c, members)
            stop = _or(m, c == 0 if c.symbolic else False) if reject else _not(m)
        if stop is True:
            end = value(i, c)
            break
        if stop is not False:
            arms.append((stop, value(i, c)))
        i += 1
    return first_match(arms, end)


def span(state, s, chars, reject: bool):
    """``strspn(s, chars)`` (``reject``: ``strcspn``) as an if-then-else over the bytes, or None."""
    def one(ps, rs, pc, rc):
        members = _members(state, pc, rc)
        if members is None:
            return None
        return _scan(state, ps, rs, members, reject, lambda i, c: claripy.BVV(i, 64))
    return by_cases(state, [s, chars], one)


def first_of(state, s, chars):
    """``strpbrk(s, chars)``: a pointer to the first byte of ``s`` in ``chars``, or NULL."""
    def one(ps, rs, pc, rc):
        members = _members(state, pc, rc)
        if members is None:
            return None
        null = claripy.BVV(0, 64)

        def value(i, c):
            if not c.symbolic:
                return null if c.concrete_value == 0 else ps + i
            return claripy.If(c == 0, null, ps + i)
        return _scan(state, ps, rs, members, True, value)
    return by_cases(state, [s, chars], one)


def find_byte(state, s, ch, at_end: bool = False):
    """``strchr(s, ch)``: a pointer to the first byte of ``s`` equal to ``(char) ch`` (the NUL
    itself when ``ch`` is 0), or NULL (``at_end``: ``strchrnul``, the NUL's address instead); over
    the values of a pointer that selects among a few strings (angr's procedure searches from one
    symbolic address chunk by chunk)."""
    c = ch[7:0]
    null = claripy.BVV(0, 64)

    def one(ps, rs):
        def value(i, b):
            if at_end:
                return ps + i
            hit = b == c
            if not hit.symbolic:
                return ps + i if hit.is_true() else null
            return claripy.If(hit, ps + i, null)
        return _scan(state, ps, rs, [(c, claripy.BoolV(True))], True, value)
    return by_cases(state, [s], one)


class RamStrchr(angr.SimProcedure):
    """``strchr`` as an if-then-else over the bytes (angr's procedure when the end is not in reach)."""

    def run(self, s, ch):  # pylint: disable=arguments-differ
        r = find_byte(self.state, s, ch)
        count_answer(self.state, r is not None)
        if r is not None:
            return r
        return self.inline_call(angr.SIM_PROCEDURES["libc"]["strchr"], s, ch).ret_expr


class RamStrchrnul(angr.SimProcedure):
    """``strchrnul`` (a GNU function angr has no procedure for; SQLite's formatter calls it): as
    ``strchr`` but the end of ``s`` when ``ch`` is not in it; angr's ``strchr`` and ``strlen``
    when the end is not in reach."""

    def run(self, s, ch):  # pylint: disable=arguments-differ
        r = find_byte(self.state, s, ch, at_end=True)
        count_answer(self.state, r is not None)
        if r is not None:
            return r
        hit = self.inline_call(angr.SIM_PROCEDURES["libc"]["strchr"], s, ch).ret_expr
        end = s + self.inline_call(angr.SIM_PROCEDURES["libc"]["strlen"], s).ret_expr
        return claripy.If(hit == 0, end, hit)


class _NoModel(angr.SimProcedure):
    """A function angr has no procedure for, answered exactly from the bytes when their end is in
    reach; else a fresh return value within the readable bound, and the path names the function
    among its stubs (a result through it may not replay)."""

    def fallback(self, name: str, bound: int | None = None):
        record(self.state, name)
        r = claripy.BVS(f"{name}_ret", 64)
        if bound is not None:
            self.state.add_constraints(r.ULE(bound))
        return r


class RamStrspn(_NoModel):
    """``strspn``: the length of the prefix of ``s`` made of bytes in ``accept``."""

    def run(self, s, accept):  # pylint: disable=arguments-differ
        r = span(self.state, s, accept, reject=False)
        count_answer(self.state, r is not None)
        return r if r is not None else self.fallback("strspn", self.state.libc.max_str_len)


class RamStrcspn(_NoModel):
    """``strcspn``: the length of the prefix of ``s`` with no byte in ``reject``."""

    def run(self, s, reject):  # pylint: disable=arguments-differ
        r = span(self.state, s, reject, reject=True)
        count_answer(self.state, r is not None)
        return r if r is not None else self.fallback("strcspn", self.state.libc.max_str_len)


class RamStrpbrk(_NoModel):
    """``strpbrk``: the first byte of ``s`` in ``accept``, or NULL."""

    def run(self, s, accept):  # pylint: disable=arguments-differ
        r = first_of(self.state, s, accept)
        count_answer(self.state, r is not None)
        if r is not None:
            return r
        n = self.fallback("strpbrk", self.state.libc.max_str_len)
        return claripy.If(n == 0, claripy.BVV(0, 64), s + n - 1)


class RamRawmemchr(_NoModel):
    """``rawmemchr(s, c)`` (a GNU function angr has no procedure for; Debian's grep finds a line's
    end with it, knowing a sentinel is there): the first byte from ``s`` equal to ``(char) c``, with
    no bound and no NUL ending the search; an if-then-else over the bytes up to the first that
    matches for sure, or to the object's end where one of them matches (the path forks on it); a fresh
    value the path records as a stub when no match is in reach."""

    def run(self, s, c):  # pylint: disable=arguments-differ
        ch = c[7:0]

        def one(ps, rs):
            sb, arms, i = Bytes(self.state, ps, rs), [], 0
            while True:
                b = sb[i]
                if b is None:       # the object's end: a match must be among the bytes seen
                    if arms and holds_for_sure(self.state, claripy.Or(*(c for c, _ in arms)), "rawmemchr in reach"):
                        return first_match(arms[:-1], arms[-1][1])
                    return None
                hit = b == ch
                if hit.is_true():
                    return first_match(arms, ps + i)
                if hit.symbolic:
                    arms.append((hit, ps + i))
                i += 1
        r = by_cases(self.state, [s], one, strings=False)     # no NUL ends the search
        count_answer(self.state, r is not None)
        return r if r is not None else s + self.fallback("rawmemchr", self.state.libc.max_str_len)


MEMRCHR_LIMIT = 1 << 12     # bytes memrchr reads as an if-then-else; a longer or symbolic length: a stub


class RamMemrchr(_NoModel):
    """``memrchr(s, c, n)`` (a GNU function angr has no procedure for; Debian's GNU make looks for
    a name's last ``/`` with it): the last of the first ``n`` bytes of ``s`` equal to ``(char) c``,
    or NULL; an if-then-else over the bytes, from the first, so a later match takes over."""

    def run(self, s, c, n):  # pylint: disable=arguments-differ
        k = single_value(self.state, n)
        if k is None or k > MEMRCHR_LIMIT:
            return self.fallback("memrchr")
        r = claripy.BVV(0, 64)
        if k == 0:
            return r
        data = self.state.memory.load(s, k)
        ch = c[7:0]
        if not data.symbolic and not ch.symbolic:
            i = data.concrete_value.to_bytes(k, "big").rfind(bytes([ch.concrete_value]))
            return r if i < 0 else s + i
        for i in range(k):
            hit = data.get_byte(i) == ch
            if hit.symbolic:
                r = claripy.If(hit, s + i, r)
            elif hit.is_true():
                r = s + i
        return r


SEARCH_PROCEDURES = {"memrchr": RamMemrchr, "rawmemchr": RamRawmemchr, "__rawmemchr": RamRawmemchr, "strchr": RamStrchr, "strchrnul": RamStrchrnul, "strspn": RamStrspn,
                     "strcspn": RamStrcspn, "strpbrk": RamStrpbrk}
