"""``QuantifiedFrontend``: the solver of a pattern-merged state.

A claripy frontend that answers with the solving procedure (:func:`.quantified.solve`) while a
quantified placeholder is among the state's constraints, and delegates to the inner frontend (any
claripy frontend, e.g. angr-ram's substituting one) otherwise.
"""

from __future__ import annotations

import claripy
from claripy.errors import UnsatError
from claripy.frontend import Frontend

from angr_ram.merging.clauses import PREFIX, ClauseTable
from angr_ram.merging.quantified import extremum, solve
from angr_ram.merging.value_enumeration import solve_many


class QuantifiedFrontend(Frontend):
    """A claripy frontend that answers with :func:`solve` while a quantified clause is present and
    delegates to ``inner`` (any claripy frontend, e.g. angr-ram's substituting one) otherwise."""

    def __init__(self, inner, table: ClauseTable):
        super().__init__()
        self.inner = inner
        self.table = table

    def __getattr__(self, name):
        if name in ("inner", "table"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def constraints(self):
        """The stored constraints (placeholders included)."""
        return self.inner.constraints

    @property
    def variables(self):
        """Variables of the stored constraints."""
        return self.inner.variables

    def _quantified(self) -> bool:
        return any(v.startswith(PREFIX) for v in self.inner.variables)

    def _subst(self, e):
        s = getattr(self.inner, "subst", None)
        return s(e) if s is not None else e

    def _constraints(self):
        return [self._subst(c) for c in self.inner.constraints]

    # ---------------------------------------------------------------- copying
    def branch(self):
        return QuantifiedFrontend(self.inner.branch(), self.table)

    def blank_copy(self):
        return QuantifiedFrontend(self.inner.blank_copy(), self.table)

    def _blank_copy(self, c):
        c.inner, c.table = self.inner.blank_copy(), self.table

    def _copy(self, c):
        c.inner, c.table = self.inner.branch(), self.table

    def finalize(self):
        self.inner.finalize()

    def downsize(self):
        self.inner.downsize()

    def add(self, constraints, **kwargs):
        return self.inner.add(constraints, **kwargs)

    def simplify(self):
        return self.inner.constraints if self._quantified() else self.inner.simplify()

    def split(self):
        return [self]

    def merge(self, others, merge_conditions, common_ancestor=None):
        inner_anc = common_ancestor.inner if isinstance(common_ancestor, QuantifiedFrontend) else common_ancestor
        ok, merged = self.inner.merge([o.inner if isinstance(o, QuantifiedFrontend) else o for o in others],
                                      merge_conditions, common_ancestor=inner_anc)
        return ok, QuantifiedFrontend(merged, self.table)

    def combine(self, others):
        return QuantifiedFrontend(self.inner.combine([o.inner if isinstance(o, QuantifiedFrontend) else o
                                                      for o in others]), self.table)

    # ---------------------------------------------------------------- queries
    def _model(self, extra):
        return solve(self.table, self._constraints(), [self._subst(c) for c in extra])

    def check_satisfiability(self, extra_constraints=(), exact=None):
        if not self._quantified():
            return self.inner.check_satisfiability(extra_constraints, exact)
        return "SAT" if self._model(extra_constraints) is not None else "UNSAT"

    def satisfiable(self, extra_constraints=(), exact=None):
        if not self._quantified():
            return self.inner.satisfiable(extra_constraints=extra_constraints, exact=exact)
        return self._model(extra_constraints) is not None

    def batch_eval(self, exprs, n, extra_constraints=(), exact=None):
        if not self._quantified():
            return self.inner.batch_eval(exprs, n, extra_constraints=extra_constraints, exact=exact)
        exprs = [self._subst(e) for e in exprs]
        found = solve_many(self.table, self._constraints(), [self._subst(c) for c in extra_constraints], exprs, n)
        if not found:
            raise UnsatError("angr-ram: quantified query is unsatisfiable")
        return found

    def eval(self, e, n, extra_constraints=(), exact=None):
        if not self._quantified():
            return self.inner.eval(e, n, extra_constraints=extra_constraints, exact=exact)
        return tuple(r[0] for r in self.batch_eval([e], n, extra_constraints, exact))

    def solution(self, e, v, extra_constraints=(), exact=None):
        if not self._quantified():
            return self.inner.solution(e, v, extra_constraints=extra_constraints, exact=exact)
        return self.satisfiable([*extra_constraints, e == v])

    def is_true(self, e, extra_constraints=(), exact=None):
        if not self._quantified():
            return self.inner.is_true(e, extra_constraints=extra_constraints, exact=exact)
        return not self.satisfiable([*extra_constraints, claripy.Not(e)])

    def is_false(self, e, extra_constraints=(), exact=None):
        if not self._quantified():
            return self.inner.is_false(e, extra_constraints=extra_constraints, exact=exact)
        return not self.satisfiable([*extra_constraints, e])

    def _extremum(self, e, extra_constraints, signed, want_max):
        e = self._subst(e)
        bits = e.length
        off = (1 << (bits - 1)) if signed else 0
        key = (e + off) if signed else e            # order-preserving map to unsigned
        extra = [self._subst(c) for c in extra_constraints]
        found = extremum(self.table, self._constraints(), extra, key, want_max)
        if found is None:
            lo, hi = 0, (1 << bits) - 1
            if not self.satisfiable(extra_constraints):
                raise UnsatError("angr-ram: quantified query is unsatisfiable")
            while lo < hi:                          # the stripped bound failed: plain bisection
                if want_max:
                    mid = (lo + hi + 1) // 2
                    if self.satisfiable([*extra_constraints, claripy.UGE(key, mid)]):
                        lo = mid
                    else:
                        hi = mid - 1
                else:
                    mid = (lo + hi) // 2
                    if self.satisfiable([*extra_constraints, claripy.ULE(key, mid)]):
                        hi = mid
                    else:
                        lo = mid + 1
            found = lo
        v = (found - off) % (1 << bits)
        return v - (1 << bits) if signed and v >= (1 << (bits - 1)) else v

    def max(self, e, extra_constraints=(), signed=False, exact=None):
        if not self._quantified():
            return self.inner.max(e, extra_constraints=extra_constraints, signed=signed, exact=exact)
        return self._extremum(e, extra_constraints, signed, True)

    def min(self, e, extra_constraints=(), signed=False, exact=None):
        if not self._quantified():
            return self.inner.min(e, extra_constraints=extra_constraints, signed=signed, exact=exact)
        return self._extremum(e, extra_constraints, signed, False)

    def unsat_core(self, extra_constraints=()):
        return self.inner.unsat_core(extra_constraints=extra_constraints)
