"""scanf's floating-point conversions (``%a %e %f %g`` and their upper case; no length: ``float``,
``l``: ``double``, ``L``: ``long double``) over symbolic input, as this machine's glibc reads them.

angr's scanf knows no floating-point type (``SimProcedureError``: the path ended). glibc's reading
differs from ``strtod``'s: it consumes the longest text that can start a number and pushes back one
byte, so ``"1e+x"`` gives 1 with ``"1e+"`` consumed, ``"0xg"`` fails with ``"0x"`` consumed, and
``"nan("`` at the end of input gives a NaN with ``"("`` left. So the texts the input can hold are
walked as :func:`angr_ram.posix.float_parsing.texts` walks ``strtod``'s (each with the
constraint that chooses it, a partition of the path), and each text is read by the machine's own
``fscanf`` (in the C locale: :mod:`angr_ram.procedures.host_libc`) from a stream holding it (followed by the end of input, or by a byte that stops it, where
the two differ): the conversion's result, the value's bytes and the bytes consumed. :func:`readings`
groups the texts by that reading; the scan forks on the bytes consumed and on success (it needs
both to go on) and keeps the value an if-then-else over the readings."""

from __future__ import annotations

import ctypes
import functools

import claripy

from angr_ram.core.errors import MemoryFault
from angr_ram.posix.float_parsing import MAX_TEXTS, texts
from angr_ram.procedures.host_libc import c_locale

STOP = b"\x01"                                   # a byte no number continues with

_LIBC = ctypes.CDLL(None)
_LIBC.fmemopen.restype = ctypes.c_void_p
_LIBC.fmemopen.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]
_LIBC.ftell.restype = ctypes.c_long
_LIBC.ftell.argtypes = [ctypes.c_void_p]
_LIBC.fclose.argtypes = [ctypes.c_void_p]


@functools.lru_cache(maxsize=1 << 14)
def host_scan(text: bytes, spec: bytes, size: int) -> tuple[int, bytes, int]:
    """``(fscanf's result, the value's bytes, bytes consumed)`` of this machine's glibc reading
    ``spec`` (one conversion, e.g. ``b"%5lf"``) from a stream holding exactly ``text``."""
    if not text:
        return -1, bytes(size), 0
    data = ctypes.create_string_buffer(text, len(text))
    out = ctypes.create_string_buffer(16)
    f = _LIBC.fmemopen(data, len(text), b"r")
    if not f:
        raise OSError(ctypes.get_errno(), "fmemopen failed")
    try:
        with c_locale():
            r = _LIBC.fscanf(ctypes.c_void_p(f), ctypes.c_char_p(spec), out)
        used = _LIBC.ftell(ctypes.c_void_p(f))
    finally:
        _LIBC.fclose(f)
    return r, out.raw[:size], used


def readings(state, window, end_at, spec: bytes, size: int) -> list[tuple[tuple[int, bytes, int], object]]:
    """The readings of a conversion whose input bytes ``window`` gives (``window[i]``: byte ``i``, a
    NUL where the input ended) and ``end_at(i)`` the condition that the input ends before byte
    ``i``: ``((result, value bytes, consumed), condition)``, the conditions a partition of the path."""
    found = texts(state, window)
    if found is None:
        raise MemoryFault("symbolic-format-argument", f"scanf float with more than {MAX_TEXTS} texts")
    arms: dict[tuple, list] = {}
    for text, conds in found:
        at_end, stopped = host_scan(text, spec, size), host_scan(text + STOP, spec, size)
        if at_end == stopped:
            arms.setdefault(at_end, []).append(claripy.And(*conds))
            continue
        end = end_at(len(text))
        arms.setdefault(at_end, []).append(claripy.And(*conds, end))
        arms.setdefault(stopped, []).append(claripy.And(*conds, claripy.Not(end)))
    return [(key, claripy.Or(*conds)) for key, conds in arms.items()]


def choose(arms: list, make):
    """An if-then-else over ``arms`` ((key, condition), the conditions a partition) of ``make(key)``."""
    value = make(arms[-1][0])
    for key, cond in reversed(arms[:-1]):
        value = claripy.If(cond, make(key), value)
    return value
