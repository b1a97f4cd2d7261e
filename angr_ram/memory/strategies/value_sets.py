"""The values an expression can take, read from its structure alone: no solver call.

When z3 gives up on a pointer's values (a bucket pointer selected by a hash of a four-byte key
that z3 cannot invert in its budget), the step used to be set aside whole, and with it every path
below it. A pointer is often a selection: an if-then-else over table entries, each an object's
address, bound to a ``ram_let`` symbol (:meth:`angr_ram.memory.relocatable.RelocatableMixin._let`),
offset by a constant, or read back from the object it selects. Its possible values are computed
bottom-up:

* an if-then-else over input-dependent conditions can take the values of either arm (its guard is
  ignored, so the set may be larger than the feasible one, never smaller);
* a let symbol takes the values of its definition that satisfy the path constraints on it alone
  (after substitution of the objects' bases: ``let + 0x34`` inside one object);
* a part that depends on let symbols only (a field read through a selected pointer: bytes chosen by
  conditions on the let) is evaluated on every combination of its lets' values
  (:class:`angr_ram.solver.evaluator.Evaluator`), so the conditions on the same let agree: the
  eight bytes of a pointer read from one of three objects are three values, not 3^8;
* other operations combine their operands' values.

Resolution and the string procedures use this set when the solver gives up, each case guarded by
``pointer == value`` so that infeasible cases do nothing. :func:`possible_values` returns None (the
caller keeps the solver's failure) for an input symbol outside an if-then-else's arms, an operation
it does not evaluate, or more than :data:`MAX_VALUES` values; it visits at most :data:`MAX_NODES`
nodes and evaluates at most :data:`MAX_ROWS` combinations of let values.
"""

from __future__ import annotations

import itertools

import claripy
import numpy as np

from angr_ram.solver.evaluator import LET_PREFIX, Evaluator, _Unsupported, split_lets
from angr_ram.solver.semantics import OPS, SCALAR

MAX_VALUES = 256        # values of one node
MAX_PAIRS = 1 << 14     # value combinations of one operation's operands
MAX_NODES = 20_000      # nodes visited by one call
MAX_ROWS = 1 << 12      # combinations of let values a let-only part is evaluated on (a column per node)


class _Unbounded(Exception):
    """The expression's value set is not finite and small, or not computed here."""


class _Evaluator:
    def __init__(self, lets: dict, substitute, let_constraints=()):
        self.lets, self.substitute = lets, substitute
        self.let_constraints = list(let_constraints)     # (let names, constraint over them only)
        self.memo: dict = {}
        self.visited = 0
        self.in_progress: set = set()

    def values(self, e) -> frozenset:
        key = e.hash()
        got = self.memo.get(key)
        if got is None:
            self.visited += 1
            if self.visited > MAX_NODES:
                raise _Unbounded("too many nodes")
            got = self._values(e)
            if len(got) > MAX_VALUES:
                raise _Unbounded("too many values")
            self.memo[key] = got
        return got

    def _let_values(self, name: str) -> frozenset:
        if not name.startswith(LET_PREFIX) or name not in self.lets:
            raise _Unbounded(f"input symbol {name}")
        if name in self.in_progress:
            raise _Unbounded(f"let {name} defined through itself")
        self.in_progress.add(name)
        try:
            vals = self.values(self.substitute(self.lets[name]))
        finally:
            self.in_progress.discard(name)
        own = [c for names, c in self.let_constraints if names == {name}]
        if not own or not vals:
            return vals
        column = np.fromiter(sorted(vals), dtype=np.uint64)
        keep = self._holding(own, {name: column}, len(column))
        return frozenset(int(v) for v in column[keep])

    @staticmethod
    def _holding(constraints, columns: dict, rows: int):
        """Boolean mask of the rows on which all ``constraints`` hold (a constraint this module
        cannot evaluate is left out: the values stay a superset)."""
        ev = Evaluator.over(columns, rows, {}, shared=False)
        keep = np.ones(rows, dtype=bool)
        for c in constraints:
            try:
                keep &= np.broadcast_to(np.asarray(ev.ev(c), dtype=bool), (rows,))
            except _Unsupported:
                continue
        return keep

    def _by_assignment(self, e) -> frozenset:
        """The values of ``e``, whose symbols are all lets, on every combination of their values."""
        names = sorted(e.variables)
        domains = [np.fromiter(sorted(self._let_values(n)), dtype=np.uint64) for n in names]
        rows = 1
        for d in domains:
            rows *= len(d)
        if rows > MAX_ROWS or e.length is None or e.length > 64:
            raise _Unbounded("too many combinations of let values")
        grids = np.meshgrid(*domains, indexing="ij") if len(domains) > 1 else domains
        columns = {n: np.ascontiguousarray(g).reshape(-1) for n, g in zip(names, grids, strict=True)}
        ev = Evaluator.over(columns, rows, {}, shared=False)
        try:
            r = ev.ev(e)
        except _Unsupported as x:
            raise _Unbounded(str(x)) from None
        r = np.broadcast_to(np.asarray(r, dtype=np.uint64), (rows,))
        mine = set(names)
        cs = [c for ns, c in self.let_constraints if ns <= mine]
        if cs:
            r = r[self._holding(cs, columns, rows)]
        out = np.unique(r)
        if len(out) > MAX_VALUES:
            raise _Unbounded("too many values")
        return frozenset(int(v) for v in out)

    @staticmethod
    def _combine(sets, value) -> frozenset:
        """``value(combo)`` for every combination of one value from each of ``sets``."""
        total = 1
        for s in sets:
            total *= len(s)
        if total > MAX_PAIRS:
            raise _Unbounded("too many combinations")
        out = set()
        for combo in itertools.product(*sets):
            out.add(value(combo))
            if len(out) > MAX_VALUES:
                raise _Unbounded("too many values")
        return frozenset(out)

    def _values(self, e) -> frozenset:
        if not e.symbolic:
            return frozenset((e.concrete_value,))
        op, args = e.op, e.args
        if op != "BVS" and all(n.startswith(LET_PREFIX) for n in e.variables):
            return self._by_assignment(e)
        if op == "If":
            return self.values(args[1]) | self.values(args[2])
        if op == "BVS":
            name = args[0]
            return self._let_values(name)
        fn = OPS.get(op)
        if fn is None or not isinstance(e, claripy.ast.BV):
            raise _Unbounded(f"operation {op}")
        operands = [i for i, x in enumerate(args) if isinstance(x, claripy.ast.Base)]

        def value(combo):        # claripy's semantics (the scalar form) on one value per operand
            vals = list(args)
            for i, v in zip(operands, combo, strict=True):
                vals[i] = v
            try:
                return fn(SCALAR, vals, e)
            except (claripy.errors.ClaripyZeroDivisionError, _Unsupported):
                raise _Unbounded(f"{op} not evaluated here") from None
        return self._combine([self.values(args[i]) for i in operands], value)


def possible_values(state, expr) -> list[int] | None:
    """A finite superset of the values ``expr`` (already substituted, :meth:`AddressSpace.substitute`)
    can take in ``state``, sorted, read from the expression's structure and the definitions of the
    let-bound symbols in it; None when there is no such set of at most :data:`MAX_VALUES` values."""
    lets, let_constraints = {}, []
    space = state.ram if state.has_plugin("ram") else None
    substitute = space.substitute if space is not None else (lambda x: x)
    if any(name.startswith(LET_PREFIX) for name in expr.variables):
        lets, rest = split_lets(state.solver.constraints)
        for c in rest:       # constraints on lets alone (after substitution): they narrow the lets' values
            if not c.variables or not any(n.startswith(LET_PREFIX) for n in c.variables):
                continue
            c = substitute(c)
            names = set(c.variables)
            if names and all(n.startswith(LET_PREFIX) for n in names):
                let_constraints.append((names, c))
    ev = _Evaluator(lets, substitute, let_constraints)
    try:
        return sorted(ev.values(expr))
    except (_Unbounded, RecursionError):
        return None
