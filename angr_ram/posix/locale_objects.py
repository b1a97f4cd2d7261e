"""``newlocale``, ``uselocale``, ``duplocale`` and ``freelocale``: locale objects of the C locale.

angr stubs them (any return value): gnulib's ``c_strtod``/``c_strtold`` (GNU ``seq``, ``printf``'s
float conversions, ``sort -g``) make a C locale with ``newlocale`` and switch to it with
``uselocale``; under the stubs ``uselocale`` answered 0 and the program aborted, a path no native
run takes (Debian's ``seq`` under KLEE's inputs: an ``abort`` test whose native run exits 1).

* ``newlocale(mask, name, base)`` of ``"C"``, ``"POSIX"`` or ``""`` (the environment's: the C
  locale, in which a test's native run goes) is one object of the C locale; any other name, or one
  of several values, is 0 with ``ENOENT`` (a system may have other locales; a run assumes it has none);
* ``uselocale(l)`` returns the thread's locale (``LC_GLOBAL_LOCALE``, -1, until set) and makes ``l``
  the thread's when ``l`` is not 0;
* ``duplocale(l)`` is ``l`` (one object), ``freelocale`` does nothing.
"""

from __future__ import annotations

import errno

import angr
import claripy

from angr_ram.posix.startup import static_string
from angr_ram.procedures.libc import set_errno
from angr_ram.procedures.strings import concrete_string

LC_GLOBAL_LOCALE = -1
LOCALE_BYTES = 232            # sizeof(struct __locale_struct) on x86-64 glibc
CURRENT_KEY = "angr_ram_uselocale"
C_NAMES = (b"C", b"POSIX", b"")


def c_locale(proc) -> int:
    """The address of the C locale's object (zeros, one per project)."""
    return static_string(proc, b"\x01" + b"\0" * (LOCALE_BYTES - 2))


class Newlocale(angr.SimProcedure):
    def run(self, mask, name, base):  # pylint: disable=arguments-differ,unused-argument
        text = concrete_string(self, name, 256)
        if text in C_NAMES:
            return c_locale(self)
        set_errno(self.state, errno.ENOENT)
        return claripy.BVV(0, self.state.arch.bits)


class Uselocale(angr.SimProcedure):
    def run(self, new):  # pylint: disable=arguments-differ
        bits = self.state.arch.bits
        old = self.state.globals.get(CURRENT_KEY, claripy.BVV(LC_GLOBAL_LOCALE & (1 << bits) - 1, bits))
        if new.symbolic or new.concrete_value != 0:
            self.state.globals[CURRENT_KEY] = new
        return old


class Duplocale(angr.SimProcedure):
    def run(self, loc):  # pylint: disable=arguments-differ
        return loc


class Freelocale(angr.SimProcedure):
    def run(self, loc):  # pylint: disable=arguments-differ,unused-argument
        return None


LOCALE_OBJECT_PROCEDURES = {"newlocale": Newlocale, "__newlocale": Newlocale, "uselocale": Uselocale, "__uselocale": Uselocale, "duplocale": Duplocale, "__duplocale": Duplocale, "freelocale": Freelocale, "__freelocale": Freelocale}
