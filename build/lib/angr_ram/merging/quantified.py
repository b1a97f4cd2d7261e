"""Quantified clauses of pattern-merged states and their solving procedure.

claripy has no quantifiers, so a merged path constraint is stored in the state as one boolean
placeholder ``qm_forall_<t>_<n>`` whose meaning is kept in its run's :class:`ClauseTable` ``t``
(owned by the merging technique, carried by reference by every frontend of its states):

    placeholder  <=>  phi1 /\\ k in {k_j} /\\ (forall i. 1 <= i <= k -> phi2(i)) /\\ phi3(k)

Placeholders survive state copies and further merges like any claripy variable. A state whose
constraints mention one gets a :class:`QuantifiedFrontend`, which answers every query with
:func:`solve`, the paper's procedure (section 5):

1. *strip*: instantiate the quantifier at ``i = 1`` (guarded by ``k >= 1``) and solve the
   quantifier-free rest with z3; ``phi3(k)`` and hole terms use z3 functions for variable
   families (``F(j) = stdin_j``);
2. check the model against the full clause by evaluating every instance ``i = 1..k``;
3. *duplicate*: copy the values of the family members of instance 1 to the failing instances;
4. *repair*: add the failing instances and solve again (a few rounds);
5. *fallback*: the z3 query with a real ``ForAll``.

Every model returned has been checked against the full quantified query.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import claripy
from claripy.backends import z3 as bz3
from claripy.errors import UnsatError
from claripy.frontend import Frontend
from claripy.frontend.mixin.model_cache_mixin import ModelCache

from ..dag import count_nodes
from ..errors import AngrRamError
from ..scope import LRU
from .synthesis import Template

PREFIX = "qm_forall_"
REPAIR_ROUNDS = 4
_TABLE_IDS = itertools.count(1)     # process-unique table numbers keep placeholders of runs apart


@dataclass
class SolveStats:
    """How the quantified queries were answered."""

    queries: int = 0
    strip: int = 0
    duplicate: int = 0
    repair: int = 0
    fallback: int = 0
    unsat: int = 0
    unknown: int = 0              # stripped queries z3 could not decide (asked as the real ForAll query)
    extrema: int = 0              # min/max questions (each answered with a few checks)
    extrema_stripped: int = 0     # ... whose stripped extremum was confirmed at once


class ClauseTable:
    """The quantified clauses of one merging run with its solving counters, validation flag and
    memo of base solvers. Every placeholder it hands out names this table.

    :param validate: also ask z3 the real ``ForAll`` query and compare (raises on a difference).
    :param stats: counters to update (a fresh :class:`SolveStats` if None).
    :param bases: how many constraint sets keep a prepared z3 solver.
    """

    def __init__(self, validate: bool = False, stats: SolveStats | None = None, bases: int = 256):
        self.clauses: dict[str, QuantifiedClause] = {}
        self.stats = stats if stats is not None else SolveStats()
        self.validate = validate
        self.bases: LRU = LRU(bases)
        self.number = next(_TABLE_IDS)
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self.clauses)

    def __repr__(self) -> str:
        return f"<ClauseTable {self.number}: {len(self.clauses)} clauses, {self.stats.queries} queries>"

    def register(self, **kw) -> QuantifiedClause:
        """A new clause with a fresh placeholder of this table."""
        c = QuantifiedClause(**kw)
        name = f"{PREFIX}{self.number}_{next(self._ids)}"
        c.placeholder = claripy.BoolS(name, explicit_name=True)
        self.clauses[name] = c
        return c

    def clauses_of(self, constraints) -> list[QuantifiedClause]:
        """The clauses whose placeholders occur in ``constraints``; a placeholder this table does not
        know (a state of another run) is an error, never a free boolean."""
        names = set()
        for c in constraints:
            names |= {v for v in c.variables if v.startswith(PREFIX)}
        missing = sorted(n for n in names if n not in self.clauses)
        if missing:
            raise AngrRamError(f"quantified placeholders {', '.join(missing)} belong to another run than "
                               f"clause table {self.number}: states of different merging runs cannot be mixed")
        return [self.clauses[n] for n in sorted(names)]


class SolverMismatch(UnsatError):
    """The solving procedure and z3's quantified query disagree (validation mode)."""


@dataclass
class QuantifiedClause:
    """``phi1 /\\ k in ks /\\ forall i in [1, k]. phi2(i) /\\ phi3(k)``."""

    k: claripy.ast.BV
    ks: tuple[int, ...]
    phi1: claripy.ast.Bool
    phi2: Template | None
    phi3: Template
    members: dict = field(default_factory=dict)     # (family, index, bits) -> claripy variable
    placeholder: claripy.ast.Bool | None = None

    def k_range(self):
        """``k in ks`` as a claripy formula."""
        ks = sorted(self.ks)
        if ks == list(range(ks[0], ks[-1] + 1)):
            return claripy.And(claripy.UGE(self.k, ks[0]), claripy.ULE(self.k, ks[-1]))
        return claripy.Or(*[self.k == v for v in ks])

    def size(self) -> int:
        """AST nodes of the clause: phi1, the range of k and the two templates."""
        return (count_nodes(self.phi1) + count_nodes(self.k_range()) + (self.phi2.size() if self.phi2 else 0)
                + self.phi3.size())

    def instance(self, i: int):
        """``phi2(i)`` as a claripy formula (None if a family member is unknown)."""
        return self.phi2.instantiate(i, self.members)

    # ---------------------------------------------------------------- z3 encodings
    def z3_template(self, tpl: Template, x, funcs: dict):
        """``tpl`` in z3 with ``x`` (a 64-bit z3 term) for the bound variable."""
        import z3
        body = bz3.convert(tpl.body)
        subs = []
        for h in tpl.holes:
            idx = x * h.a + h.b
            if h.kind == "const":
                term = z3.Extract(h.bits - 1, 0, idx) if h.bits < 64 else (idx if h.bits == 64 else z3.ZeroExt(h.bits - 64, idx))
            else:
                term = self._family(h.family, h.bits, funcs)(idx)
            subs.append((bz3.convert(h.placeholder), term))
        return z3.substitute(body, *subs) if subs else body

    def _family(self, family: str, bits: int, funcs: dict):
        import z3
        key = (family, bits)
        if key not in funcs:
            funcs[key] = z3.Function(f"qm_family_{family}_{bits}", z3.BitVecSort(64), z3.BitVecSort(bits))
        return funcs[key]

    def family_axioms(self, funcs: dict) -> list:
        """``F(j) == member_j`` for every known member of the families used."""
        out = []
        for (family, idx, bits), var in self.members.items():
            if (family, bits) in funcs:
                import z3
                out.append(funcs[(family, bits)](z3.BitVecVal(idx, 64)) == bz3.convert(var))
        return out

    def z3_parts(self, funcs: dict, quantified: bool) -> list:
        """The clause in z3: with the quantifier stripped (instance 1 only) or a real ForAll."""
        import z3
        K = bz3.convert(self.k)
        parts = [bz3.convert(self.phi1), bz3.convert(self.k_range()), self.z3_template(self.phi3, K, funcs)]
        if self.phi2 is not None:
            if quantified:
                X = z3.BitVec(f"qm_i_{id(self)}", 64)
                parts.append(z3.ForAll([X], z3.Implies(z3.And(z3.UGE(X, 1), z3.ULE(X, K)),
                                                       self.z3_template(self.phi2, X, funcs))))
            else:
                one = self.instance(1)
                if one is not None:
                    parts.append(z3.Implies(z3.UGE(K, 1), bz3.convert(one)))
        return parts

    def holds(self, model: dict) -> list[int]:
        """The instances ``i`` in ``1..k`` that ``model`` violates (phi1, range and phi3 included
        as instance 0)."""
        mc = ModelCache(model)
        kv = model.get(self.k.args[0])
        if kv is None:
            return [0]
        bad = []
        third = self.phi3.instantiate(kv, self.members)
        for f in (self.phi1, self.k_range(), third):
            if f is None or mc.eval_ast(f, allow_unconstrained=True) is not True:
                return [0]
        if self.phi2 is not None:
            for i in range(1, kv + 1):
                inst = self.instance(i)
                if inst is None or mc.eval_ast(inst, allow_unconstrained=True) is not True:
                    bad.append(i)
        return bad


def _variables(exprs, clauses) -> dict[str, claripy.ast.Base]:
    out = {}
    for e in exprs:
        for leaf in e.leaf_asts():
            if leaf.op in ("BVS", "BoolS") and not leaf.args[0].startswith(PREFIX):
                out[leaf.args[0]] = leaf
    for cl in clauses:
        out[cl.k.args[0]] = cl.k
        for v in cl.members.values():
            out[v.args[0]] = v
        bodies = [cl.phi1, cl.phi3.body] + ([cl.phi2.body] if cl.phi2 is not None else [])
        for f in bodies:
            for leaf in f.leaf_asts():
                if leaf.op in ("BVS", "BoolS") and not leaf.args[0].startswith("qm_hole_"):
                    out[leaf.args[0]] = leaf
    return out


def _model_of(m, variables: dict) -> dict:
    import z3
    out = {}
    for name, v in variables.items():
        val = m.eval(bz3.convert(v), model_completion=True)
        if v.op == "BoolS":
            out[name] = z3.is_true(val)
        else:
            out[name] = val.as_long()
    return out


def _qf_holds(model: dict, formulas) -> bool:
    mc = ModelCache(model)
    return all(mc.eval_ast(f, allow_unconstrained=True) is True for f in formulas)


def solve(table: ClauseTable, constraints, extra=()) -> dict | None:
    """A model (variable name -> value) of ``constraints /\\ extra`` with their quantified clauses
    (from ``table``) expanded, or None if there is none. The model is checked against the full
    query; with ``table.validate`` the answer is compared with z3's on the quantified query."""
    result = _solve(table, constraints, extra)
    if table.validate:
        clauses = table.clauses_of(constraints)
        qf = [c for c in (*constraints, *extra) if not any(v.startswith(PREFIX) for v in c.variables)]
        truth = _fallback(qf, clauses, _variables(qf, clauses), {cl.placeholder.args[0]: True for cl in clauses})
        if (truth is None) != (result is None):
            raise SolverMismatch(f"quantified solving answered {'unsat' if result is None else 'sat'}, "
                                 f"z3 says {'unsat' if truth is None else 'sat'} for {list(constraints)} + {list(extra)}")
    return result


def _base_solver(table: ClauseTable, constraints, clauses):
    """A z3 solver holding ``constraints`` (placeholders stripped to their first instance) and the
    family axioms, shared by every query over the same constraint set (queries push and pop)."""
    import z3
    key = tuple(c.hash() for c in constraints)
    hit = table.bases.lookup(key)
    if hit is not None:
        return hit
    funcs: dict = {}
    s = z3.Solver()
    s.add(*[bz3.convert(c) for c in constraints if not any(v.startswith(PREFIX) for v in c.variables)])
    for cl in clauses:
        s.add(*cl.z3_parts(funcs, quantified=False))
    for cl in clauses:
        s.add(*cl.family_axioms(funcs))
    table.bases.put(key, (s, funcs))
    return s, funcs


def _solve(table: ClauseTable, constraints, extra=()) -> dict | None:
    import z3
    stats = table.stats
    stats.queries += 1
    clauses = table.clauses_of(constraints)
    qf = [c for c in (*constraints, *extra)
          if not any(v.startswith(PREFIX) for v in c.variables)]
    variables = _variables(qf, clauses)
    s, _ = _base_solver(table, constraints, clauses)
    placeholders = {cl.placeholder.args[0]: True for cl in clauses}
    s.push()
    try:
        s.add(*[bz3.convert(c) for c in extra])
        for round_ in range(REPAIR_ROUNDS + 1):
            r = s.check()
            if r == z3.unknown:       # never taken for unsat: ask the real ForAll query instead
                stats.unknown += 1
                break
            if r != z3.sat:
                stats.unsat += 1
                return None
            model = {**_model_of(s.model(), variables), **placeholders}
            bad = {id(cl): cl.holds(model) for cl in clauses}
            if not any(bad.values()):
                if round_ == 0:
                    stats.strip += 1
                else:
                    stats.repair += 1
                return model
            if round_ == 0:
                dup = _duplicate(model, clauses, bad)
                if dup is not None and _qf_holds(dup, qf) and not any(cl.holds(dup) for cl in clauses):
                    stats.duplicate += 1
                    return dup
            for cl in clauses:
                for i in bad[id(cl)]:
                    if i == 0 or cl.phi2 is None:
                        continue
                    inst = cl.instance(i)
                    if inst is not None:
                        s.add(z3.Implies(z3.UGE(bz3.convert(cl.k), i), bz3.convert(inst)))
    finally:
        s.pop()
    return _fallback(qf, clauses, variables, placeholders, stats)


def extremum(table: ClauseTable, constraints, extra, key, want_max: bool) -> int | None:
    """The unsigned maximum (or minimum) of ``key`` under the quantified query, found on the
    stripped formula; None if it cannot be confirmed there (the caller then searches).

    Stripping only weakens the query, so the stripped extremum bounds the real one; it *is* the
    real one when a model of the full query attains it. The search jumps to each model's value
    and probes the next value first, so a key with few values costs few z3 checks.
    """
    import z3
    stats = table.stats
    stats.extrema += 1
    clauses = table.clauses_of(constraints)
    qf = [c for c in (*constraints, *extra) if not any(v.startswith(PREFIX) for v in c.variables)]
    s, _ = _base_solver(table, constraints, clauses)
    zkey = bz3.convert(key)
    bits = key.length
    s.push()
    try:
        s.add(*[bz3.convert(c) for c in extra])
        r = s.check()
        if r == z3.unknown:
            return None           # the caller searches with the solving procedure instead
        if r != z3.sat:
            raise UnsatError("angr-ram: quantified query is unsatisfiable")
        model = s.model()
        best = model.eval(zkey, model_completion=True).as_long()
        lo, hi = (best, (1 << bits) - 1) if want_max else (0, best)
        probes = 0
        while lo < hi:
            if probes < 3:            # next value first: keys with few values end here
                bound = lo + 1 if want_max else hi - 1
            else:
                bound = (lo + hi + 1) // 2 if want_max else (lo + hi) // 2
            probes += 1
            s.push()
            s.add(z3.UGE(zkey, bound) if want_max else z3.ULE(zkey, bound))
            r = s.check()
            if r == z3.unknown:
                s.pop()
                return None       # a bound z3 cannot decide is not a bound: search instead
            if r == z3.sat:
                model = s.model()
                best = model.eval(zkey, model_completion=True).as_long()
                lo, hi = (best, hi) if want_max else (lo, best)
            elif want_max:
                hi = bound - 1
            else:
                lo = bound + 1
            s.pop()
        variables = _variables(qf, clauses)
        full = {**_model_of(model, variables), **{cl.placeholder.args[0]: True for cl in clauses}}
    finally:
        s.pop()
    if any(cl.holds(full) for cl in clauses) and _solve(table, constraints, [*extra, key == best]) is None:
        return None
    stats.extrema_stripped += 1
    if table.validate:
        beyond = claripy.UGT(key, best) if want_max else claripy.ULT(key, best)
        clauses_qf = _variables(qf, clauses)
        holds = {cl.placeholder.args[0]: True for cl in clauses}
        if (_fallback([*qf, key == best], clauses, clauses_qf, holds) is None
                or _fallback([*qf, beyond], clauses, clauses_qf, holds) is not None):
            raise SolverMismatch(f"quantified {'max' if want_max else 'min'} {best} disagrees with z3")
    return best


def _duplicate(model: dict, clauses, bad) -> dict | None:
    """Copy instance 1's family members to the failing instances (assignment duplication)."""
    out = dict(model)
    for cl in clauses:
        if cl.phi2 is None or 0 in bad[id(cl)]:
            return None
        for i in bad[id(cl)]:
            for h in cl.phi2.holes:
                if h.kind != "var":
                    continue
                src = cl.members.get((h.family, h.a + h.b, h.bits))
                dst = cl.members.get((h.family, h.a * i + h.b, h.bits))
                if src is None or dst is None or src.args[0] not in out:
                    return None
                out[dst.args[0]] = out[src.args[0]]
    return out


def _fallback(qf, clauses, variables, placeholders, stats: SolveStats | None = None) -> dict | None:
    """The z3 query with real ``ForAll`` quantifiers (counted into ``stats`` if given)."""
    import z3
    if stats is not None:
        stats.fallback += 1
    funcs: dict = {}
    s = z3.Solver()
    s.add(*[bz3.convert(c) for c in qf])
    for cl in clauses:
        s.add(*cl.z3_parts(funcs, quantified=True))
    for cl in clauses:
        s.add(*cl.family_axioms(funcs))
    r = s.check()
    if r == z3.unsat:
        return None
    if r != z3.sat:           # unknown: the state is set aside (unknown stash), never pruned
        raise claripy.ClaripySolverInterruptError(f"quantified query: z3 answered {r} ({s.reason_unknown()})")
    model = {**_model_of(s.model(), variables), **placeholders}
    if any(cl.holds(model) for cl in clauses) or not _qf_holds(model, qf):
        raise UnsatError("angr-ram: z3's model of a quantified query fails the query")
    return model


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
        found: list[tuple] = []
        while len(found) < n:
            block = [claripy.Or(*[e != v for e, v in zip(exprs, row, strict=True)]) for row in found]
            m = self._model([*extra_constraints, *block] if block else extra_constraints)
            if m is None:
                break
            mc = ModelCache(m)
            found.append(tuple(mc.eval_ast(e, allow_unconstrained=True) for e in exprs))
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
