"""``qsort`` and ``qsort_r`` as glibc sorts: the program's comparison function is called.

angr has no model of them: a stub that sorts nothing (126 of Debian's programs in ``/usr/bin``
import ``qsort``), so a program that sorts its input and prints it printed it unsorted on every
path. glibc 2.36 sorts with a merge sort (``msort``: stable) whenever it can allocate the
temporary array; the result of a stable sort under a consistent comparison is unique, so these
procedures sort by insertion, also stable, calling the comparison function through angr's
continuations (``SimProcedure.call``) on two element pointers, as many times as insertion needs:
at most ``n(n-1)/2`` calls for ``n`` elements.

A comparison whose result is symbolic (elements that hold input) forks the state on its sign
inside a step of RelocatableMemory or of QuantifiedMerging alone (``> 0``: the pair is out of order
and swapped; else not), and each fork sorts on exactly. An element count or size with several values, or more than :data:`MAX_ELEMENTS`
elements or :data:`MAX_SIZE` bytes each, leave the call a stub that sorts nothing (recorded on
the path, :mod:`.stubs`), as does a symbolic comparison outside such a step.
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.procedures.libc import single_value
from angr_ram.procedures.stubs import record

MAX_ELEMENTS = 512        # at most n(n-1)/2 = 130816 calls of the comparison function
MAX_SIZE = 4096           # bytes per element
COMPARE = "int compare(void *a, void *b)"
COMPARE_R = "int compare(void *a, void *b, void *arg)"


class Qsort(angr.SimProcedure):
    """``qsort(base, nmemb, size, compar)``."""

    local_vars = ("i", "j", "n", "size")
    name_for_stub = "qsort"

    def run(self, base, nmemb, size, compar):  # pylint: disable=arguments-differ
        self._start(base, nmemb, size, compar, None)

    def _start(self, base, nmemb, size, compar, arg):
        n, s = single_value(self.state, nmemb), single_value(self.state, size)
        if n is None or s is None or n > MAX_ELEMENTS or not 0 < s <= MAX_SIZE:
            if n is None or n > 1:
                record(self.state, self.name_for_stub)
            return
        if n < 2:
            return
        self.n, self.size, self.i, self.j = n, s, 1, 1
        self._compare(base, compar, arg)

    def _compare(self, base, compar, arg):
        a = base + (self.j - 1) * self.size
        b = base + self.j * self.size
        if arg is None:
            self.call(compar, [a, b], "after_compare", prototype=COMPARE)
        else:
            self.call(compar, [a, b, arg], "after_compare", prototype=COMPARE_R)

    def after_compare(self, base, nmemb, size, compar):  # pylint: disable=arguments-differ
        self._step(base, compar, None)

    def _step(self, base, compar, arg):
        if self._out_of_order(self.state.regs.eax):
            a = base + (self.j - 1) * self.size
            b = base + self.j * self.size
            x = self.state.memory.load(a, self.size)
            y = self.state.memory.load(b, self.size)
            self.state.memory.store(a, y)
            self.state.memory.store(b, x)
            self.j -= 1
            if self.j > 0:
                return self._compare(base, compar, arg)
        self.i += 1
        self.j = self.i
        if self.i < self.n:
            return self._compare(base, compar, arg)
        return None

    def _out_of_order(self, ret) -> bool:
        """Whether the comparison said the earlier element is greater (forks when it may say either)."""
        greater = claripy.SGT(ret, 0)
        if not greater.symbolic:
            return greater.is_true()
        can = self.state.solver.satisfiable(extra_constraints=[greater])
        cannot = self.state.solver.satisfiable(extra_constraints=[claripy.Not(greater)])
        if can and cannot:
            if value_forking_enabled():
                raise ForkRequest([Target(greater, "value"), Target(claripy.Not(greater), "value")],
                                  f"{self.name_for_stub}: the sign of a comparison")
            record(self.state, self.name_for_stub)
            return False
        return can


class QsortR(Qsort):
    """``qsort_r(base, nmemb, size, compar, arg)`` (glibc's order: the argument last)."""

    name_for_stub = "qsort_r"

    def run(self, base, nmemb, size, compar, arg):  # pylint: disable=arguments-differ
        self._start(base, nmemb, size, compar, arg)

    def after_compare(self, base, nmemb, size, compar, arg):  # pylint: disable=arguments-differ
        self._step(base, compar, arg)


SORTING_PROCEDURES = {"qsort": Qsort, "qsort_r": QsortR}
