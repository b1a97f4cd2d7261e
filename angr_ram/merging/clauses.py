"""Quantified clauses of pattern-merged states and the run's table of them.

A pattern merge stores its path constraint in the merged state as one boolean placeholder
``qm_forall_<t>_<n>``; the clause it stands for,

    phi1 /\\ k in {k_j} /\\ (forall i. 1 <= i <= k -> phi2(i)) /\\ phi3(k),

is kept in the :class:`ClauseTable` ``t`` of the merging run (owned by the technique and carried
by reference by every solver of its states), with the run's solving counters and memo.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import claripy
import numpy as np
from claripy.backends import z3 as bz3
from claripy.frontend.mixin.model_cache_mixin import ModelCache

from angr_ram.core.dag import count_nodes
from angr_ram.core.errors import AngrRamError
from angr_ram.core.scope import LRU
from angr_ram.merging.model_reuse import ModelStore
from angr_ram.merging.synthesis import Template
from angr_ram.solver.model_eval import fast_eval_ast

PREFIX = "qm_forall_"
ANSWERS_KEPT = 4096         # memoized answers of quantified queries per clause table
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
    memo: int = 0                 # queries answered from the table's memo (asked before)
    neighbours: int = 0           # values of an enumeration found next to a model, without z3
    models_reused: int = 0        # queries answered by an earlier query's model (see .model_reuse)
    models_changed: int = 0       # ... by an earlier model with one variable changed
    unsat_reused: int = 0         # queries that contain formulas found unsatisfiable before


@dataclass(frozen=True)
class SolveSettings:
    """How the solving procedure (:mod:`.quantified`) of one merging run answers.

    :param neighbours: an enumeration first collects the values next to each model (neighbour
        models, :mod:`angr_ram.solver.neighbours`) before asking z3 for more.
    :param reuse_models: a query that extends an earlier one tries that one's model first
        (:mod:`.model_reuse`).
    :param slow_blocking_check: seconds: an enumeration whose blocking check took longer goes on
        by splitting the expression's range at the values found; also the least time limit of a
        check that stands for several (:class:`~.value_enumeration.CheckClock`).
    """

    neighbours: bool = True
    reuse_models: bool = True
    slow_blocking_check: float = 1.0


class ClauseTable:
    """The quantified clauses of one merging run with its solving counters, validation flag and
    memo of the solving procedure. Every placeholder it hands out names this table.

    :param validate: also ask z3 the real ``ForAll`` query and compare (raises on a difference).
    :param stats: counters to update (a fresh :class:`SolveStats` if None).
    :param settings: how the solving procedure answers (:class:`SolveSettings`).
    """

    def __init__(self, validate: bool = False, stats: SolveStats | None = None,
                 settings: SolveSettings | None = None):
        self.settings = settings if settings is not None else SolveSettings()
        self.clauses: dict[str, QuantifiedClause] = {}
        self.stats = stats if stats is not None else SolveStats()
        self.validate = validate
        self.answers: LRU = LRU(ANSWERS_KEPT)   # (constraints, extra) hashes -> model or None
        self.scoped = None            # the solving procedure's scoped z3 solver (made at first use)
        self.models = ModelStore(self.stats)   # checked models, for queries that extend theirs
        self.number = next(_TABLE_IDS)
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self.clauses)

    def __repr__(self) -> str:
        return f"<ClauseTable {self.number}: {len(self.clauses)} clauses, {self.stats.queries} queries>"

    def register(self, clause: QuantifiedClause | None = None, **kw) -> QuantifiedClause:
        """``clause`` (or a new clause of the fields ``kw``), given a fresh placeholder of this table."""
        c = clause if clause is not None else QuantifiedClause(**kw)
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
    _memo: dict = field(default_factory=dict, repr=False, compare=False)   # instances and the range of k

    def k_range(self):
        """``k in ks`` as a claripy formula."""
        if "range" not in self._memo:
            ks = sorted(self.ks)
            if ks == list(range(ks[0], ks[-1] + 1)):
                self._memo["range"] = claripy.And(claripy.UGE(self.k, ks[0]), claripy.ULE(self.k, ks[-1]))
            else:
                self._memo["range"] = claripy.Or(*[self.k == v for v in ks])
        return self._memo["range"]

    def size(self) -> int:
        """AST nodes of the clause: phi1, the range of k and the two templates."""
        return (count_nodes(self.phi1) + count_nodes(self.k_range()) + (self.phi2.size() if self.phi2 else 0)
                + self.phi3.size())

    def instance(self, i: int):
        """``phi2(i)`` as a claripy formula (None if a family member is unknown)."""
        key = ("phi2", i)
        if key not in self._memo:
            self._memo[key] = self.phi2.instantiate(i, self.members)
        return self._memo[key]

    def third(self, k: int):
        """``phi3(k)`` as a claripy formula (None if a family member is unknown)."""
        key = ("phi3", k)
        if key not in self._memo:
            self._memo[key] = self.phi3.instantiate(k, self.members)
        return self._memo[key]

    def rows_hold(self, ev, k, size: int):
        """:meth:`holds` over many assignments at once: a boolean array of the ``size`` rows of
        the vectorized evaluator ``ev`` (:mod:`angr_ram.solver.evaluator`) that satisfy the
        clause, ``k`` being the rows' values of :attr:`k`. Instance ``i`` is evaluated once, for
        all rows whose ``k`` reaches it."""
        ok = np.zeros(size, dtype=bool)
        base = np.broadcast_to(ev.bool(self.phi1), (size,))
        prefix = np.ones(size, dtype=bool)         # instances 1..i hold
        i = 0
        for kv in sorted(self.ks):
            while i < kv and self.phi2 is not None and prefix.any():
                i += 1
                inst = self.instance(i)
                prefix = prefix & (np.broadcast_to(ev.bool(inst), (size,)) if inst is not None else False)
            third = self.third(kv)
            if third is None or (self.phi2 is not None and i < kv):
                continue
            ok |= (k == np.uint64(kv)) & base & prefix & np.broadcast_to(ev.bool(third), (size,))
        return ok

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
        third = self.third(kv)
        for f in (self.phi1, self.k_range(), third):
            if f is None or fast_eval_ast(mc, f, True) is not True:
                return [0]
        if self.phi2 is not None:
            for i in range(1, kv + 1):
                inst = self.instance(i)
                if inst is None or fast_eval_ast(mc, inst, True) is not True:
                    bad.append(i)
        return bad
