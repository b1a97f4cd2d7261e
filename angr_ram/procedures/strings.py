"""String and memory comparisons answered from the bytes themselves, without new symbols.

angr's ``strlen`` searches with ``memory.find`` and, when the result is deep, binds it to a fresh
64-bit ``strlen_N`` symbol; ``strcmp``/``strncmp`` then compare with symbolic lengths. On a heap
string whose bytes are mostly concrete (a hash table's stored keys) against a few input bytes,
every branch on the result becomes a query over that 64-bit symbol and a 129-byte chunk, which
the small-domain enumeration cannot decide and z3 needs tens of milliseconds for (json-c's key
lookup: 656 z3 checks, 84 s, all in ``strcmp``).

These procedures read the bytes (through the relocatable memory: a pointer ``base + k`` reads the
object's store, no solver call) up to the first byte that ends the operation for sure (a concrete
NUL, a concrete difference, the length) and return an if-then-else over the symbolic bytes before
it, the exact C semantics: ``strlen`` is ``If(s[0] == 0, 0, If(s[1] == 0, 1, ...))``. Queries on
the result mention only the input bytes. When the end is not found within ``state.libc.max_str_len``
bytes inside the pointer's object, when the pointer is symbolic after substitution, or when a
length is symbolic, the procedure falls back to angr's own (same behaviour as before). Bytes are
read past a symbolic NUL only inside the same object (or the stack and globals), so no access is
reported that the C function would not make.
"""

from __future__ import annotations

import angr
import claripy
from angr.procedures.stubs import format_parser

from angr_ram.memory.pointers import pointer_cases
from angr_ram.memory.relocatable import reading_length
from angr_ram.procedures.byte_scan import Bytes, by_cases, count_answer, first_match, is_zero
from angr_ram.procedures.libc import FORMAT, single_value

MAX_COMPARE = 4096  # memcmp lengths above this go to angr's procedure
# bytes a string function reads on the stack and in globals (angr's max_str_len, 128, cut a longer
# line short), of which at most max_str_len symbolic: past them, angr's procedure
STRING_SCAN = 4096


def _diff(x, y):
    """``(unsigned char) x - (unsigned char) y`` as the C function's int, widened to 64 bits."""
    return (x.zero_extend(24) - y.zero_extend(24)).sign_extend(32)


def string_length(state, ptr, maxlen: int | None = None):
    """``strnlen(ptr, maxlen)`` as an if-then-else over the symbolic bytes (and over the values of
    a pointer that selects among a few strings), or None if no concrete NUL (or ``maxlen``) is
    reached within the readable bytes."""
    return by_cases(state, [ptr], lambda p, n: _length(state, p, n, maxlen), STRING_SCAN)


def nonzero_terms(state) -> set:
    """Hashes of the terms the path's constraints hold above zero by a constant lower bound
    (``x >= k``, ``x > k``, ``x != 0``; conjunctions looked into): a template's ``?`` bytes, which
    lie within ``lo..hi``. Read syntactically, no solver call."""
    out = set()
    todo = list(state.solver.constraints)
    while todo:
        c = todo.pop()
        op = c.op
        if op == "And":
            todo.extend(c.args)
            continue
        if op in ("UGE", "UGT", "__ne__") and len(c.args) == 2:
            x, k = c.args
            if x.symbolic and not k.symbolic and (k.concrete_value > 0 or op != "UGE"):
                if op != "__ne__" or k.concrete_value == 0:
                    out.add(x.hash())
    return out


def _length(state, ptr, readable: int, maxlen: int | None):
    s = Bytes(state, ptr, readable)
    symbolic_before = []
    nonzero = None
    i = 0
    while maxlen is None or i < maxlen:
        b = s[i]
        if b is None:
            return None
        if is_zero(b):
            break
        if b.symbolic:
            if nonzero is None:
                nonzero = nonzero_terms(state)
            if b.hash() not in nonzero:      # a byte the path keeps above zero ends nothing
                symbolic_before.append((i, b))
                if len(symbolic_before) > state.libc.max_str_len:
                    return None
        i += 1
    r = claripy.BVV(i, 64)
    for j, b in reversed(symbolic_before):
        r = claripy.If(b == 0, claripy.BVV(j, 64), r)
    return r


def compare(state, a, b, n: int | None, strings: bool):
    """``strncmp`` (``strings``; ``n`` None: ``strcmp``) or ``memcmp`` of ``a`` and ``b`` as an
    if-then-else over the first position where they differ, or None when the end is not found
    within the readable bytes of both."""
    return by_cases(state, [a, b], lambda pa, ra, pb, rb: _compare(state, pa, ra, pb, rb, n, strings),
                    STRING_SCAN, strings)


def _compare(state, a, ra: int, b, rb: int, n: int | None, strings: bool):
    if not strings and n is not None and n > min(ra, rb):
        return None
    sa, sb = Bytes(state, a, ra), Bytes(state, b, rb)
    arms = []      # (condition, value) before the last position
    i = 0
    end = claripy.BVV(0, 64)
    while n is None or i < n:
        x, y = sa[i], sb[i]
        if x is None or y is None:
            return None
        if not x.symbolic and not y.symbolic:
            xv, yv = x.concrete_value, y.concrete_value
            if xv != yv or (strings and xv == 0):
                end = _diff(x, y)
                break
        elif strings and (is_zero(x) or is_zero(y)):
            end = _diff(x, y)
            break
        else:
            stop = x != y
            if strings and x.symbolic and y.symbolic:
                stop = claripy.Or(stop, x == 0)
            arms.append((stop, _diff(x, y)))
            if len(arms) > state.libc.max_str_len:
                return None
        i += 1
    return first_match(arms, end)


@FORMAT.patch(format_parser.FormatParser, "_sim_strlen")
def format_string_length(stock_sim_strlen, self, str_addr):
    """The printf family's ``strlen`` (of the format and of ``%s`` arguments) as :class:`RamStrlen`
    computes it: angr's made a fresh length symbol for every string whose end lies past
    ``max_str_len`` or behind a symbolic byte, and GNU make's messages carried those symbols into
    every later query."""
    r = string_length(self.state, str_addr)
    count_answer(self.state, r is not None)
    return r if r is not None else stock_sim_strlen(self, str_addr)


def _leaves(r) -> set[int] | None:
    """The values of an if-then-else over concrete values (a length of :func:`string_length`), or
    None when a leaf is symbolic."""
    todo, out = [r], set()
    while todo:
        e = todo.pop()
        if e.op == "If":
            todo += e.args[1:]
        elif e.symbolic:
            return None
        else:
            out.add(e.concrete_value)
    return out


class _StockStrlen(angr.SIM_PROCEDURES["libc"]["strlen"]):
    """angr's ``strlen`` as it was before :func:`exact_angr_strlen` replaced it: the fallback of
    :class:`RamStrlen`, which has already looked for the end (through the patch, the same search
    again and its answer counted twice)."""

    run = angr.SIM_PROCEDURES["libc"]["strlen"].run


@FORMAT.patch(angr.SIM_PROCEDURES["libc"]["strlen"], "run")
def exact_angr_strlen(stock_run, self, s, wchar=False, maxlen=None):
    """angr's ``strlen``, which its ``puts``, ``fputs``, ``strcpy``, ``strcat``, ``strstr``... call
    inline, as :class:`RamStrlen` computes it: angr's searched ``max_str_len`` (128) bytes and made
    a fresh length symbol past them, and ``puts`` of a 150-byte string was unsatisfiable (the path
    lost). ``max_null_index`` (the longest length, which ``fputs`` writes) comes with it."""
    if wchar or maxlen is not None:
        return stock_run(self, s, wchar=wchar, maxlen=maxlen)
    r = string_length(self.state, s)
    count_answer(self.state, r is not None)
    if r is None:
        return stock_run(self, s)
    self.max_null_index = max(_leaves(r))
    return r


class RamStrlen(angr.SimProcedure):
    """``strlen`` without a fresh length symbol (angr's procedure when the end is not in reach)."""

    def run(self, s):  # pylint: disable=arguments-differ
        r = string_length(self.state, s)
        count_answer(self.state, r is not None)
        if r is not None:
            return r
        return self.inline_call(_StockStrlen, s).ret_expr


class RamStrnlen(angr.SimProcedure):
    """``strnlen(s, n)`` for a single-valued ``n``."""

    def run(self, s, n):  # pylint: disable=arguments-differ
        k = single_value(self.state, n)
        r = string_length(self.state, s, k) if k is not None else None
        count_answer(self.state, r is not None)
        if r is not None:
            return r
        return self.inline_call(angr.SIM_PROCEDURES["libc"]["strnlen"], s, n).ret_expr


class RamStrcmp(angr.SimProcedure):
    """``strcmp`` as an if-then-else over the first differing position."""

    def run(self, a, b):  # pylint: disable=arguments-differ
        r = compare(self.state, a, b, None, strings=True)
        count_answer(self.state, r is not None)
        if r is not None:
            return r
        return self.inline_call(angr.SIM_PROCEDURES["libc"]["strcmp"], a, b).ret_expr


class RamStrncmp(angr.SimProcedure):
    """``strncmp`` for a single-valued length."""

    def run(self, a, b, n):  # pylint: disable=arguments-differ
        k = single_value(self.state, n)
        r = compare(self.state, a, b, k, strings=True) if k is not None else None
        count_answer(self.state, r is not None)
        if r is not None:
            return r
        return self.inline_call(angr.SIM_PROCEDURES["libc"]["strncmp"], a, b, n).ret_expr


class RamMemcmp(angr.SimProcedure):
    """``memcmp`` for a single-valued length of at most ``MAX_COMPARE`` bytes inside both objects."""

    def run(self, a, b, n):  # pylint: disable=arguments-differ
        k = single_value(self.state, n)
        r = compare(self.state, a, b, k, strings=False) if k is not None and k <= MAX_COMPARE else None
        count_answer(self.state, r is not None)
        if r is not None:
            return r
        return self.inline_call(angr.SIM_PROCEDURES["libc"]["memcmp"], a, b, n).ret_expr


class RamStrcoll(RamStrcmp):
    """``strcoll`` in the C locale, the one the models give a program: ``strcmp``'s order, bytes
    compared as unsigned char (angr's procedure calls angr's ``strcmp``, which returns 1 for every
    difference between symbolic bytes: ``expr "\x8f\x02" "<=" "\x8f\xfd"`` answered 0)."""


STRING_PROCEDURES = {"strlen": RamStrlen, "strnlen": RamStrnlen, "strcmp": RamStrcmp, "strcoll": RamStrcoll,
                     "strncmp": RamStrncmp, "memcmp": RamMemcmp, "bcmp": RamMemcmp}


class RamStrdup(angr.SimProcedure):
    """``strdup(s)``: a heap object (``state.heap``: angr-ram's in its runs) holding a copy of ``s``,
    its length from :class:`RamStrlen` (angr's ``strdup`` measured with angr's ``strlen``, whose
    fresh length symbol made GNU make's path unsatisfiable: every path lost)."""

    def run(self, s):  # pylint: disable=arguments-differ
        n = self.inline_call(RamStrlen, s).ret_expr
        return _copy(self, s, n)


class RamStrndup(angr.SimProcedure):
    """``strndup(s, n)``: a heap copy of at most ``n`` bytes of ``s``, NUL-terminated."""

    def run(self, s, n):  # pylint: disable=arguments-differ
        k = self.inline_call(RamStrnlen, s, n).ret_expr
        return _copy(self, s, k)


def concrete_string(proc, p, limit: int) -> bytes | None:
    """The string at ``p`` as bytes, measured by :class:`RamStrlen`; None if its length or a byte may
    vary on the path, or it is longer than ``limit``."""
    n = single_value(proc.state, proc.inline_call(RamStrlen, p).ret_expr)
    if n is None or n > limit:
        return None
    if n == 0:
        return b""
    v = single_value(proc.state, proc.state.memory.load(p, n, endness="Iend_BE"))
    return None if v is None else v.to_bytes(n, "big")


def _copy(proc, s, length):
    """A new heap object holding the first ``length`` bytes of ``s``, then a NUL. Its size is the
    largest ``length + 1`` on the path (a concrete size: the string functions read such an object
    exactly, where one of symbolic size sent them to angr's, which scans past it)."""
    length = length.zero_extend(64 - length.size()) if length.size() < 64 else length
    cap = single_value(proc.state, length)
    if cap is None:
        cap = proc.state.solver.max(length)
    else:
        length = claripy.BVV(cap, 64)
    dst = proc.state.heap._malloc(claripy.BVV(cap + 1, 64))
    cases = pointer_cases(proc.state, s, cap + 1) if length.symbolic and cap else None
    if cases is not None and len(cases) == 1 and cases[0][2] > cap:
        # the source's object holds ``cap`` bytes on every path: copied as they are, its NUL at
        # ``length`` with them (angr's memcpy of a symbolic length, then a NUL stored at a symbolic
        # offset, made every byte an if-then-else: too many for a string function to read)
        proc.state.memory.store(dst, proc.state.memory.load(s, cap))
    else:
        with reading_length(proc.state, s, length):
            proc.inline_call(angr.SIM_PROCEDURES["libc"]["memcpy"], dst, s, length)
        if length.symbolic:
            proc.state.memory.store(dst + length, claripy.BVV(0, 8))
    proc.state.memory.store(dst + cap, claripy.BVV(0, 8))     # a concrete NUL ends the object
    return dst


STRING_PROCEDURES.update({"strdup": RamStrdup, "strndup": RamStrndup, "__strdup": RamStrdup})
