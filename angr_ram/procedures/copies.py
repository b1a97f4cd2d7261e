"""The string copies (``strcpy``, ``stpcpy``, ``strcat``, ``strncpy``, ``stpncpy``, ``strncat``) and the
fortified forms of the copies that ``-D_FORTIFY_SOURCE`` (on in Debian's builds) calls instead.

angr models none of the fortified ``__strcpy_chk``, ``__stpcpy_chk``, ``__strcat_chk``,
``__strncpy_chk``, ``__stpncpy_chk``, ``__strncat_chk``: each was a stub returning an unconstrained
pointer *without copying anything*, so every Debian program that copies a string (GNU make does)
went on with the destination's old bytes. angr's ``__memcpy_chk`` family copies but never checks.
angr's ``strcpy`` measures the source with angr's ``strlen`` (a fresh length symbol that reaches every
later query) and its ``strncpy`` leaves the rest of the destination unpadded.

Here every copy measures the source with angr-ram's ``strlen`` (an if-then-else over its symbolic
bytes, :mod:`.strings`) and copies that many bytes; ``strncpy`` pads with NULs to ``n`` as C
requires. A fortified form first checks the copy against the destination's size (the compiler's
``__builtin_object_size``, ``(size_t) -1`` when unknown) as glibc does; a copy that may or may not
overflow forks on it, and the overflowing side ends as a ``buffer-overflow-detected`` error path
(glibc's ``__chk_fail``: the native process is killed by ``SIGABRT``; :mod:`.aborts`)."""

from __future__ import annotations

import angr
import claripy

from angr_ram.core.named_classes import module_class
from angr_ram.memory.relocatable import reading_length
from angr_ram.procedures.aborts import abort_path
from angr_ram.procedures.heap import holds_for_sure
from angr_ram.procedures.libc import single_value
from angr_ram.procedures.strings import RamStrlen, RamStrnlen

UNKNOWN_SIZE = (1 << 64) - 1        # __builtin_object_size of an object the compiler cannot see
MAX_PAD = 1 << 16                   # strncpy pads at most this many bytes exactly (else angr's memset)


def _memcpy(proc, dst, src, n):
    with reading_length(proc.state, src, n):
        proc.inline_call(angr.SIM_PROCEDURES["libc"]["memcpy"], dst, src, n)


def _wide(n):
    return n.zero_extend(64 - n.size()) if n.size() < 64 else n


def _length(proc, s, bound=None):
    """``strlen(s)`` (or ``strnlen(s, bound)``) by angr-ram's procedures, as 64 bits."""
    if bound is None:
        return _wide(proc.inline_call(RamStrlen, s).ret_expr)
    return _wide(proc.inline_call(RamStrnlen, s, bound).ret_expr)


def check_size(proc, need, destlen, what: str) -> None:
    """glibc's fortify check: ``need`` bytes into an object of ``destlen`` bytes; where ``need`` may
    exceed it the path forks, and the side where it does is a ``buffer-overflow-detected`` error."""
    size = single_value(proc.state, destlen)
    if size == UNKNOWN_SIZE:
        return
    over = claripy.UGT(_wide(need), _wide(destlen))
    if size is not None and not need.symbolic:
        if need.concrete_value > size:
            abort_path(proc, "buffer-overflow-detected", f"{what}: {need.concrete_value} bytes into a "
                                                         f"{size}-byte object")
        return
    if holds_for_sure(proc.state, over, f"{what} overflow"):
        abort_path(proc, "buffer-overflow-detected", f"{what}: the copy exceeds its {'?' if size is None else size}-byte destination")
    proc.state.add_constraints(claripy.Not(over))


def copy_string(proc, dst, src, n=None):
    """``strcpy(dst, src)`` (``n``: the length of ``src`` if already measured); that length (64 bits)."""
    n = _length(proc, src) if n is None else n
    _memcpy(proc, dst, src, n + 1)
    return n


def copy_bounded(proc, dst, src, bound):
    """``strncpy(dst, src, bound)``: at most ``bound`` bytes of ``src``, then NULs up to ``bound``; the
    number of bytes of ``src`` copied (``strnlen(src, bound)``)."""
    m = _length(proc, src, bound)
    _memcpy(proc, dst, src, m)
    k = single_value(proc.state, bound)
    if k is not None and k <= MAX_PAD:
        if k:
            old = proc.state.memory.load(dst, k, endness="Iend_BE")
            padded = [claripy.If(claripy.UGT(m, i), old[8 * (k - i) - 1:8 * (k - i - 1)], claripy.BVV(0, 8))
                      if m.symbolic else (old[8 * (k - i) - 1:8 * (k - i - 1)] if i < m.concrete_value
                                          else claripy.BVV(0, 8))
                      for i in range(k)]
            proc.state.memory.store(dst, claripy.Concat(*padded) if k > 1 else padded[0], endness="Iend_BE")
    else:
        proc.inline_call(angr.SIM_PROCEDURES["libc"]["memset"], dst + m, claripy.BVV(0, 8), _wide(bound) - m)
    return m


def append_string(proc, dst, src, bound=None, d=None, n=None):
    """``strcat(dst, src)`` (``strncat`` with ``bound``; ``d``, ``n``: the lengths of ``dst`` and of what
    is appended, if already measured); those two lengths."""
    d = _length(proc, dst) if d is None else d
    n = _length(proc, src, bound) if n is None else n
    _memcpy(proc, dst + d, src, n)
    proc.state.memory.store(dst + d + n, claripy.BVV(0, 8))
    return d, n


class RamStrcpy(angr.SimProcedure):
    """``strcpy(dst, src)``."""

    def run(self, dst, src):  # pylint: disable=arguments-differ
        copy_string(self, dst, src)
        return dst


class RamStpcpy(angr.SimProcedure):
    """``stpcpy(dst, src)``: the address of the copy's NUL."""

    def run(self, dst, src):  # pylint: disable=arguments-differ
        return dst + copy_string(self, dst, src)


class RamStrcat(angr.SimProcedure):
    """``strcat(dst, src)``."""

    def run(self, dst, src):  # pylint: disable=arguments-differ
        append_string(self, dst, src)
        return dst


class RamStrncpy(angr.SimProcedure):
    """``strncpy(dst, src, n)``."""

    def run(self, dst, src, n):  # pylint: disable=arguments-differ
        copy_bounded(self, dst, src, n)
        return dst


class RamStpncpy(angr.SimProcedure):
    """``stpncpy(dst, src, n)``: ``dst + strnlen(src, n)``."""

    def run(self, dst, src, n):  # pylint: disable=arguments-differ
        return dst + copy_bounded(self, dst, src, n)


class RamStrncat(angr.SimProcedure):
    """``strncat(dst, src, n)``."""

    def run(self, dst, src, n):  # pylint: disable=arguments-differ
        append_string(self, dst, src, n)
        return dst


class StrcpyChk(angr.SimProcedure):
    """``__strcpy_chk(dst, src, destlen)``."""

    def run(self, dst, src, destlen):  # pylint: disable=arguments-differ
        n = _length(self, src)
        check_size(self, n + 1, destlen, "__strcpy_chk")
        copy_string(self, dst, src, n)
        return dst


class StpcpyChk(angr.SimProcedure):
    """``__stpcpy_chk(dst, src, destlen)``."""

    def run(self, dst, src, destlen):  # pylint: disable=arguments-differ
        n = _length(self, src)
        check_size(self, n + 1, destlen, "__stpcpy_chk")
        return dst + copy_string(self, dst, src, n)


class StrcatChk(angr.SimProcedure):
    """``__strcat_chk(dst, src, destlen)``."""

    def run(self, dst, src, destlen):  # pylint: disable=arguments-differ
        d, n = _length(self, dst), _length(self, src)
        check_size(self, d + n + 1, destlen, "__strcat_chk")
        append_string(self, dst, src, d=d, n=n)
        return dst


class StrncpyChk(angr.SimProcedure):
    """``__strncpy_chk(dst, src, n, destlen)``: glibc checks ``n`` itself against ``destlen``."""

    def run(self, dst, src, n, destlen):  # pylint: disable=arguments-differ
        check_size(self, _wide(n), destlen, "__strncpy_chk")
        copy_bounded(self, dst, src, n)
        return dst


class StpncpyChk(angr.SimProcedure):
    """``__stpncpy_chk(dst, src, n, destlen)``."""

    def run(self, dst, src, n, destlen):  # pylint: disable=arguments-differ
        check_size(self, _wide(n), destlen, "__stpncpy_chk")
        return dst + copy_bounded(self, dst, src, n)


class StrncatChk(angr.SimProcedure):
    """``__strncat_chk(dst, src, n, destlen)``: the existing string, what is appended and the NUL must fit."""

    def run(self, dst, src, n, destlen):  # pylint: disable=arguments-differ
        d, m = _length(self, dst), _length(self, src, n)
        check_size(self, d + m + 1, destlen, "__strncat_chk")
        append_string(self, dst, src, n, d=d, n=m)
        return dst


class _MemChk(angr.SimProcedure):
    """A fortified ``mem*`` function (``memset``'s second argument is its byte): ``n`` checked against
    ``destlen``, then angr's model."""

    model = ""

    def run(self, dst, src, n, destlen):  # pylint: disable=arguments-differ
        check_size(self, _wide(n), destlen, f"__{self.model}_chk")
        if self.model == "memset":
            return self.inline_call(angr.SIM_PROCEDURES["libc"]["memset"], dst, src, n).ret_expr
        with reading_length(self.state, src, n):
            return self.inline_call(angr.SIM_PROCEDURES["libc"][self.model], dst, src, n).ret_expr


def _mem_chk(model: str) -> type:
    return module_class(globals(), f"{model.capitalize()}Chk", (_MemChk,), {"model": model, "__doc__": f"``__{model}_chk``."})


class ExplicitBzeroChk(angr.SimProcedure):
    """``__explicit_bzero_chk(s, n, destlen)``: ``n`` zero bytes."""

    def run(self, s, n, destlen):  # pylint: disable=arguments-differ
        check_size(self, _wide(n), destlen, "__explicit_bzero_chk")
        self.inline_call(angr.SIM_PROCEDURES["libc"]["memset"], s, claripy.BVV(0, 8), n)


class ExplicitBzero(angr.SimProcedure):
    """``explicit_bzero(s, n)``."""

    def run(self, s, n):  # pylint: disable=arguments-differ
        self.inline_call(angr.SIM_PROCEDURES["libc"]["memset"], s, claripy.BVV(0, 8), n)


class _MemCopy(angr.SimProcedure):
    """angr's ``memcpy``/``memmove``/``mempcpy``, whose load of the length's largest value reads only
    the length's bytes of a source of symbolic size (``memcpy(p, copy, strlen(copy) + 1)``)."""

    model = ""

    def run(self, dst, src, n):  # pylint: disable=arguments-differ
        with reading_length(self.state, src, n):
            return self.inline_call(angr.SIM_PROCEDURES["libc"][self.model], dst, src, n).ret_expr


def _mem_copy(model: str) -> type:
    return module_class(globals(), f"Ram{model.capitalize()}", (_MemCopy,),
                        {"model": model, "__doc__": f"``{model}`` (:class:`_MemCopy`)."})


COPY_PROCEDURES = {**{m: _mem_copy(m) for m in ("memcpy", "memmove", "mempcpy")}, "strcpy": RamStrcpy, "stpcpy": RamStpcpy, "__stpcpy": RamStpcpy, "strcat": RamStrcat,
                   "strncpy": RamStrncpy, "stpncpy": RamStpncpy, "__stpncpy": RamStpncpy, "strncat": RamStrncat}
FORTIFIED_PROCEDURES = {"__strcpy_chk": StrcpyChk, "__stpcpy_chk": StpcpyChk, "__strcat_chk": StrcatChk,
                        "__strncpy_chk": StrncpyChk, "__stpncpy_chk": StpncpyChk, "__strncat_chk": StrncatChk,
                        **{f"__{m}_chk": _mem_chk(m) for m in ("memcpy", "memmove", "mempcpy", "memset")},
                        "__explicit_bzero_chk": ExplicitBzeroChk, "explicit_bzero": ExplicitBzero}
