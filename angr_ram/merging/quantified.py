"""Quantified clauses of pattern-merged states and their solving procedure.

claripy has no quantifiers, so a merged path constraint is stored in the state as one boolean
placeholder ``qm_forall_<t>_<n>`` whose meaning is kept in its run's
:class:`~.clauses.ClauseTable` ``t`` (owned by the merging technique, carried by reference by
every frontend of its states):

    placeholder  <=>  phi1 /\\ k in {k_j} /\\ (forall i. 1 <= i <= k -> phi2(i)) /\\ phi3(k)

Placeholders survive state copies and further merges like any claripy variable. A state whose
constraints mention one gets a :class:`~.frontend.QuantifiedFrontend`, which answers every query with
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

import contextlib
import time

import claripy
from claripy.backends import z3 as bz3
from claripy.errors import UnsatError
from claripy.frontend.mixin.model_cache_mixin import ModelCache

from angr_ram.core.errors import AngrRamError
from angr_ram.core.scope import LRU
from angr_ram.merging.clauses import PREFIX, ClauseTable, QuantifiedClause, SolveStats
from angr_ram.merging.model_reuse import ModelStore
from angr_ram.solver.model_eval import fast_eval_ast
from angr_ram.solver.z3_setup import gallop_extremum

__all__ = ["PREFIX", "ClauseTable", "QuantifiedClause", "SolveStats", "SolverMismatch", "extremum", "solve"]

REPAIR_ROUNDS = 4
_MISSING = object()


class _Undecidable(Exception):  # noqa: N818 - a control-flow signal inside extremum()
    """z3 answered unknown to a bound of an extremum search."""


class SolverMismatch(UnsatError):
    """The solving procedure and z3's quantified query disagree (validation mode)."""


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
    return all(fast_eval_ast(mc, f, True) is True for f in formulas)


def solve(table: ClauseTable, constraints, extra=()) -> dict | None:
    """A model (variable name -> value) of ``constraints /\\ extra`` with their quantified clauses
    (from ``table``) expanded, or None if there is none. The model is checked against the full
    query; with ``table.validate`` the answer is compared with z3's on the quantified query.
    Answers are memoized per (constraints, extra) in the table (a model is never changed by its
    users)."""
    key = (tuple(c.hash() for c in constraints), tuple(c.hash() for c in extra))
    hit = table.answers.lookup(key, _MISSING)
    if hit is not _MISSING:
        table.stats.memo += 1
        return hit
    result = _solve(table, constraints, extra)
    table.answers.put(key, result)
    if table.validate:
        clauses = table.clauses_of(constraints)
        qf = [c for c in (*constraints, *extra) if not any(v.startswith(PREFIX) for v in c.variables)]
        truth = _fallback(qf, clauses, _variables(qf, clauses), {cl.placeholder.args[0]: True for cl in clauses})
        if (truth is None) != (result is None):
            raise SolverMismatch(f"quantified solving answered {'unsat' if result is None else 'sat'}, "
                                 f"z3 says {'unsat' if truth is None else 'sat'} for {list(constraints)} + {list(extra)}")
    return result


SEATED_MEMO = 4096      # constraints whose z3 form and variables a table's solver keeps


class _Scoped:
    """The z3 solver of one clause table and the z3 form of the constraint set it is seated on
    (a placeholder's clause with the quantifier stripped to its first instance, the family axioms,
    and the clause instances earlier repairs learned). Each query asserts all of it, with its own
    formulas, in one z3 scope (:meth:`query`), popped after it.

    KLEE keeps one solver scope per constraint, so that sibling states do not re-assert their
    shared prefix. z3 preprocesses (propagates values, solves equations) only within a scope: on
    pattern-merged strtok at M = 8 the same queries took 36-215 ms with one scope per constraint,
    4x longer with the query's own formulas in a second scope than in the first, and 1-17 ms with
    everything in one, re-asserting included. What a prefix of constraints converts to, and its
    variables, are still kept in Python, so a sibling's query reuses them."""

    def __init__(self):
        import z3
        self.solver = z3.Solver()
        self.funcs: dict = {}
        self.levels: list[int] = []            # constraint hashes of the seated set
        self.vars: list[dict] = [{}]           # variables of the first i constraints
        self.clauses: list[list] = [[]]        # clauses of the first i constraints
        self.converted: list[list] = []        # the z3 formulas of each seated constraint
        self.facts: dict[str, list] = {}       # placeholder -> clause instances learned by repairs
        self._axioms: tuple = (None, [])       # (seated clauses and family count, their family axioms)
        # hash -> (z3 form, variables) of constraints seated before: sibling states that alternate
        # seat the same constraints again past their common prefix
        self.known = LRU(SEATED_MEMO)

    @property
    def variables(self) -> dict:
        """Variables of the seated constraints (and of their clauses)."""
        return self.vars[-1]

    def seat(self, table: ClauseTable, constraints) -> _Scoped:
        """Make ``constraints`` the seated set (reusing the longest prefix it shares with the last)."""
        hs = [c.hash() for c in constraints]
        common = 0
        for a, b in zip(self.levels, hs, strict=False):
            if a != b:
                break
            common += 1
        del self.levels[common:], self.vars[common + 1:], self.clauses[common + 1:], self.converted[common:]
        for c, h in zip(constraints[common:], hs[common:], strict=True):
            seated = self.clauses[-1]
            if c.op == "BoolS" and c.args[0].startswith(PREFIX):
                cl = table.clauses[c.args[0]]
                seated = [*seated, cl]
                self.converted.append(cl.z3_parts(self.funcs, quantified=False))
                new = _variables((), [cl])
            else:
                got = self.known.lookup(h)
                if got is None:
                    got = ([bz3.convert(c)], _variables([c], ()))
                    self.known.put(h, got)
                self.converted.append(got[0])
                new = got[1]
            self.levels.append(h)
            old = self.vars[-1]
            self.vars.append({**old, **new} if new.keys() - old.keys() else old)
            self.clauses.append(seated)
        return self

    def parts(self) -> list:
        """The z3 formulas a query of the seated set asserts: its constraints, and for each of its
        clauses the family axioms (``F(j) == member_j``) and the instances learned so far."""
        out = [f for fs in self.converted for f in fs]
        seated = self.clauses[-1]
        key = (tuple(id(cl) for cl in seated), len(self.funcs))   # the axioms change with these only
        if self._axioms[0] != key:
            self._axioms = (key, [a for cl in seated for a in cl.family_axioms(self.funcs)])
        out += self._axioms[1]
        for cl in seated:
            out += self.facts.get(cl.placeholder.args[0], ())
        return out

    @contextlib.contextmanager
    def query(self, formulas: list):
        """The solver, inside a scope holding the seated set and the z3 ``formulas`` (popped after)."""
        self.solver.push()
        try:
            self.solver.add(*self.parts(), *formulas)
            yield self.solver
        finally:
            self.solver.pop()

    def learn(self, learned: list) -> None:
        """Keep the ``(placeholder, instance)`` facts ``learned`` by repairs with their clause: the
        clause implies them, so every later query of a set holding it asserts them from the start
        instead of failing a round to find each again."""
        for name, f in learned:
            self.facts.setdefault(name, []).append(f)
        learned.clear()


def _base_solver(table: ClauseTable, constraints) -> _Scoped:
    """The table's scoped solver, seated on ``constraints``."""
    if table.scoped is None:
        table.scoped = _Scoped()
    return table.scoped.seat(table, list(constraints))


def _query_variables(base: _Scoped, extra) -> dict:
    """The variables of a query: its constraint set's (memoized) and those of ``extra``."""
    known = base.variables
    if all(v in known or v.startswith(PREFIX) for e in extra for v in e.variables):
        return known                   # claripy keeps each expression's variable names: no walk
    more = _variables(extra, ())
    return {**base.variables, **more} if more.keys() - base.variables.keys() else base.variables


_UNDECIDED = object()       # the stripped rounds could not decide: ask the real ForAll query


def _rounds(s, stats: SolveStats, clauses, qf, variables: dict, placeholders: dict, learned: list | None = None,
            models: ModelStore | None = None):
    """Strip, check, duplicate and repair on ``s`` (inside the caller's scope). Repairs add
    instances of the clauses, which the clauses imply, so they stay true for every later query
    of a set holding them: each is also appended to ``learned`` with its clause's placeholder,
    for the caller to keep (:meth:`_Scoped.learn`). A checked model, None (unsat) or
    :data:`_UNDECIDED`. The time of each check is reported to ``models``."""
    import z3
    for round_ in range(REPAIR_ROUNDS + 1):
        start = time.perf_counter()
        r = s.check()
        if models is not None:
            models.checked(time.perf_counter() - start)
        if r == z3.unknown:       # never taken for unsat: ask the real ForAll query instead
            stats.unknown += 1
            return _UNDECIDED
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
                    fact = z3.Implies(z3.UGE(bz3.convert(cl.k), i), bz3.convert(inst))
                    s.add(fact)
                    if learned is not None:
                        learned.append((cl.placeholder.args[0], fact))
    return _UNDECIDED


def _check_top_level(constraints, extra) -> None:
    for c in (*constraints, *extra):
        if c.op != "BoolS" and any(v.startswith(PREFIX) for v in c.variables):
            raise AngrRamError(f"a quantified placeholder inside a formula ({c.shallow_repr(max_depth=3)}): "
                               "the solving procedure only keeps top-level placeholders exact")


def _solve(table: ClauseTable, constraints, extra=()) -> dict | None:
    stats = table.stats
    stats.queries += 1
    clauses = table.clauses_of(constraints)
    qf = [c for c in (*constraints, *extra)
          if not any(v.startswith(PREFIX) for v in c.variables)]
    _check_top_level(constraints, extra)
    base = _base_solver(table, constraints)
    variables = _query_variables(base, extra)
    placeholders = {cl.placeholder.args[0]: True for cl in clauses}
    query = ModelStore.query((*constraints, *extra))
    if table.settings.reuse_models:
        if table.models.known_unsat(query):
            return None
        model = table.models.find(query, qf, clauses, variables)
        if model is not None:
            return model
    learned: list = []
    try:
        with base.query([bz3.convert(c) for c in extra]) as s:
            model = _rounds(s, stats, clauses, qf, variables, placeholders, learned, table.models)
    finally:
        base.learn(learned)
    if model is _UNDECIDED:
        model = _fallback(qf, clauses, variables, placeholders, stats)
    if model is not None:
        table.models.add(query, model)
    else:
        table.models.add_unsat(query)
    return model


def extremum(table: ClauseTable, constraints, extra, key, want_max: bool) -> int | None:
    """The unsigned maximum (or minimum) of ``key`` under the quantified query, found on the
    stripped formula; None if it cannot be confirmed there (the caller then searches).

    Stripping only weakens the query, so the stripped extremum bounds the real one; it *is* the
    real one when a model of the full query attains it. The search is
    :func:`~angr_ram.solver.z3_setup.gallop_extremum` from a model's value: a key whose values
    span R costs about 2 log2(R) z3 checks, however far they are from 0 (an address on the stack).
    """
    import z3
    stats = table.stats
    stats.extrema += 1
    clauses = table.clauses_of(constraints)
    qf = [c for c in (*constraints, *extra) if not any(v.startswith(PREFIX) for v in c.variables)]
    base = _base_solver(table, constraints)
    zkey = bz3.convert(key)
    bits = key.length
    extra_z3 = [bz3.convert(c) for c in extra]
    with base.query(extra_z3) as s:
        r = s.check()
        if r == z3.unknown:
            return None           # the caller searches with the solving procedure instead
        if r != z3.sat:
            raise UnsatError("angr-ram: quantified query is unsatisfiable")
        model = s.model()
    found = {"model": model}

    def value_in(a: int, b: int) -> int | None:
        with base.query([*extra_z3, z3.UGE(zkey, a), z3.ULE(zkey, b)]) as s:
            r = s.check()
            m = s.model() if r == z3.sat else None
        if r == z3.unknown:
            raise _Undecidable     # a bound z3 cannot decide is not a bound: search instead
        if m is None:
            return None
        found["model"] = m
        return m.eval(zkey, model_completion=True).as_long()

    try:
        best = gallop_extremum(value_in, model.eval(zkey, model_completion=True).as_long(),
                               0, (1 << bits) - 1, want_max)
    except _Undecidable:
        return None
    model = found["model"]
    variables = _query_variables(base, extra)
    full = {**_model_of(model, variables), **{cl.placeholder.args[0]: True for cl in clauses}}
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
