"""Models of earlier quantified queries, reused for the later queries that extend them.

Exploring a pattern-merged state asks the solving procedure about every branch and every
symbolic address, and on merged formulas each z3 check takes tens of milliseconds to a second.
Most of those queries extend one answered before: a successor's path constraint is its parent's plus the branch
condition; an address enumeration's next query excludes one more value. Such a query is often
satisfied by the earlier model, or by that model with one input byte changed (the other side of
the branch, the next position of the pointer). KLEE's counterexample cache answers queries from
models of their subsets the same way, and claripy's frontends keep models for plain states; a
quantified state's queries bypass claripy's, hence this store.

A stored model satisfies every formula it is stored with, each clause among them checked instance
by instance (:meth:`~.clauses.QuantifiedClause.holds`). It answers a query whose clauses are among
those formulas if it also satisfies the query's other formulas, evaluated here; a variable it
lacks occurs in none of its own formulas, so it is given 0 (false). Failing that, one variable the
failing formulas read is changed (:func:`~.neighbours.neighbour_model`) and the changed model is
checked against the whole query again, while such searches cost less than the z3 checks they are
expected to save. A query that contains a formula set found unsatisfiable before is unsatisfiable
too; any other query no model fits goes to z3.
"""

from __future__ import annotations

import time

from claripy.frontend.mixin.model_cache_mixin import ModelCache

from angr_ram.solver.model_eval import fast_eval_ast
from angr_ram.solver.neighbours import neighbour_model

MODELS_KEPT = 16           # the most recent models of a clause table tried for a query
MAX_EVALUATED = 64         # query formulas outside a stored model's own that are evaluated to reuse it
UNSAT_KEPT = 64            # the most recent formula sets without a model
AVERAGING = 0.1            # weight of the newest sample in the running averages of costs


class ModelStore:
    """The last :data:`MODELS_KEPT` checked models of one clause table, each with the hashes of
    the formulas it satisfies."""

    def __init__(self, stats, kept: int = MODELS_KEPT):
        self.stats = stats         # a SolveStats: counts the models reused as they are and changed
        self.kept = kept
        self._entries: list[tuple[frozenset, dict]] = []     # most recent first
        self._unsat: list[frozenset] = []                    # formula sets without a model, most recent first
        # running averages that decide whether changing a model is worth trying (see worth_changing)
        self.check_cost = 0.0      # seconds per z3 check of the solving procedure
        self.change_cost = 0.0     # seconds per search for a changed model
        self.change_rate = 1.0     # share of those searches that found one

    def checked(self, seconds: float) -> None:
        """Count one z3 check of the solving procedure that took ``seconds``."""
        self.check_cost += AVERAGING * (seconds - self.check_cost)

    def worth_changing(self) -> bool:
        """Whether a search for a changed model is expected to save time: it costs less than a z3
        check times the share of searches that succeed. Small merged formulas are checked by z3
        in a few milliseconds, as fast as the vectorized evaluation of their changed models."""
        return self.change_cost < self.change_rate * self.check_cost

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def query(formulas) -> dict:
        """The key the store's methods take for the query ``formulas``: hash -> formula (built
        once per query)."""
        return {f.hash(): f for f in formulas}

    def add(self, query: dict, model: dict) -> None:
        """Remember ``model``, which satisfies every formula of ``query`` (clauses included)."""
        held = frozenset(query)
        self._entries = [(held, model)] + [e for e in self._entries if e[0] != held][:self.kept - 1]

    def add_unsat(self, query: dict) -> None:
        """Remember that ``query`` has no model (so neither has any query containing its formulas)."""
        held = frozenset(query)
        self._unsat = [held] + [u for u in self._unsat if u != held][:UNSAT_KEPT - 1]

    def known_unsat(self, query: dict) -> bool:
        """Whether ``query`` contains a formula set remembered without a model."""
        keys = query.keys()
        for i, held in enumerate(self._unsat):
            if held <= keys:
                if i:
                    self._unsat.insert(0, self._unsat.pop(i))
                self.stats.unsat_reused += 1
                return True
        return False

    def find(self, query: dict, qf: list, clauses: list, variables: dict) -> dict | None:
        """A model of ``query`` (``qf`` its quantifier-free formulas, ``clauses`` its clauses,
        ``variables`` the names a full model gives values to) made from a stored one, or None. A
        stored model is tried if it was checked against every clause of the query and at most
        :data:`MAX_EVALUATED` of the query's formulas are not among its own; those are
        evaluated."""
        quantified = {cl.placeholder.hash() for cl in clauses}
        best = None                                      # (failing formulas, completed model)
        for held, model in self._entries:
            if not quantified <= held:
                continue                                 # a clause it was not checked against
            others = [query[h] for h in query.keys() - held]
            if len(others) > MAX_EVALUATED:
                continue
            full = _completed(model, variables)
            mc = ModelCache(full)
            failing = [f for f in others if fast_eval_ast(mc, f, True) is not True]
            if not failing:
                self.stats.models_reused += 1
                return full
            if best is None or len(failing) < len(best[0]):
                best = (failing, full)
        if best is None or not self.worth_changing():
            return None
        start = time.perf_counter()
        m = neighbour_model(best[1], best[0], qf, clauses, variables)
        self.change_cost += AVERAGING * (time.perf_counter() - start - self.change_cost)
        self.change_rate += AVERAGING * ((m is not None) - self.change_rate)
        if m is None:
            return None
        self.stats.models_changed += 1
        return m


def _completed(model: dict, variables: dict) -> dict:
    """``model`` with 0 (false) for each variable of ``variables`` it lacks."""
    missing = {n: (False if v.op == "BoolS" else 0) for n, v in variables.items() if n not in model}
    return {**model, **missing} if missing else model
