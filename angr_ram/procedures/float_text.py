"""printf's floating-point conversions (``%e %E %f %F %g %G %a %A``) as glibc writes them.

angr's format parser knows these conversions' argument type (``double``) but writes none: every
``printf("%f")`` ended its path with "Unimplemented format specifier". :func:`double_text` gives
the text for a double's 64 bits under a conversion's flags, width and precision by asking this
machine's C library (``snprintf`` through ctypes, in the C locale: :mod:`.host_libc`), the glibc a
test's native replay runs with:
glibc's digits have quirks no re-implementation is sure to share (``%#g`` of 999999.5 is
``1.e+06``, ``%.0a`` rounds the leading hexadecimal digit: ``0x2p+0`` for 1.5), and a NaN keeps its
sign (``-nan``). The caller (:mod:`.libc`) gives a concrete value: a symbolic one forks the state
once per value first.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import struct

from angr.errors import SimProcedureError

from angr_ram.procedures.host_libc import c_locale

FLOAT_CONVERSIONS = frozenset(b"eEfFgGaA")
MAX_FIELD = 1 << 16         # a width or precision above this is not formatted (an error for the path)

_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None)
_SNPRINTF = _LIBC.snprintf
_SNPRINTF.restype = ctypes.c_int


def double_text(conv: bytes, flags: bytes, width: int | None, precision: int | None, bits: int,
                size: int = 64) -> bytes:
    """The C library's text of conversion ``conv`` (one byte of :data:`FLOAT_CONVERSIONS`) with
    ``flags`` (of ``-+ #0``), ``width`` and ``precision`` (None: not given) of the double whose
    64 bits are ``bits`` (``size`` 80: the x87 ``long double`` of those 80 bits, ``%L`` + ``conv``)."""
    if len(conv) != 1 or conv[0] not in FLOAT_CONVERSIONS or flags.strip(b"-+ #0"):
        raise SimProcedureError(f"not a floating-point conversion: {flags + conv!r}")
    if (width or 0) > MAX_FIELD or (precision or 0) > MAX_FIELD:
        raise SimProcedureError(f"printf floating-point field wider than {MAX_FIELD} bytes")
    spec = (b"%" + flags + (b"%d" % width if width else b"") + (b"" if precision is None else b".%d" % precision)
            + (b"L" if size == 80 else b"") + conv)
    if size == 80:
        value = ctypes.c_longdouble.from_buffer_copy((bits & (1 << 80) - 1).to_bytes(16, "little"))
    else:
        value = ctypes.c_double(struct.unpack("<d", struct.pack("<Q", bits & (1 << 64) - 1))[0])
    with c_locale():
        n = _SNPRINTF(None, 0, spec, value)
        buf = ctypes.create_string_buffer(n + 1)
        _SNPRINTF(buf, n + 1, spec, value)
    return buf.raw[:n]
