"""This machine's C library through ctypes, for the models that compute with glibc itself (printf's
and scanf's floating-point conversions, ``strtod``, ``strftime``): its handle and the C locale.

A native replay runs the program in the C locale (:data:`angr_ram.run.replay.NATIVE_ENV`), so these
models must give the C locale's text whatever locale the analysing process chose
(``locale.setlocale`` in a user's script changes the decimal point ``snprintf`` and ``fscanf``
use): the ``*_l`` functions take :data:`C_LOCALE`, the others run inside :func:`c_locale`, which
switches the calling thread only (``uselocale``) and switches it back.
"""

from __future__ import annotations

import contextlib
import ctypes

LIBC = ctypes.CDLL(None, use_errno=True)
LC_ALL_MASK = 0x1FBF                 # glibc's LC_ALL_MASK: every category
LIBC.newlocale.restype = ctypes.c_void_p
LIBC.newlocale.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p]
LIBC.uselocale.restype = ctypes.c_void_p
LIBC.uselocale.argtypes = [ctypes.c_void_p]
C_LOCALE = LIBC.newlocale(LC_ALL_MASK, b"C", None)


@contextlib.contextmanager
def c_locale():
    """Inside the block, the calling thread's C library works in the C locale."""
    previous = LIBC.uselocale(C_LOCALE)
    try:
        yield
    finally:
        LIBC.uselocale(previous)
