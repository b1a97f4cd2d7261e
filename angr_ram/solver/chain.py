"""The solver chain: the layers a query of an angr-ram state passes, built in one place.

A query (:class:`Query`: claripy's frontend call, its name and arguments) enters at the top of the
chain and each layer either answers it or hands it to the layer below, as the solvers of KLEE's
``ConstructSolverChain`` do. :func:`build_chain` lists the layers in order:

0. :class:`FactsLayer`: the path's facts (terms its constraints fix to one value) rewritten into
   the query, as KLEE rewrites equalities before it solves.
1. :class:`QueryCacheLayer`: the run's query cache (syntactic or address-aware, with its
   persistent store) answers from an earlier query of the same shape; a miss goes down in the
   cache's own terms (its slice of the constraints, already substituted).
2. :class:`SubstitutionLayer`: the state's address constraints substituted into the query's
   expressions and extra constraints (the stored constraints are substituted once, when added).
3. :class:`RunLayer`: the run's scope active (budgets, patch gates), seeding's source of stored
   constants, the run's query counter and solver time.
4. :class:`SmallDomainLayer`: queries over let-bound lookups evaluated over their small domains.
5. :class:`ClaripyLayer`: claripy's composite solver, whose children are
   :class:`~angr_ram.solver.frontends.RamChildSolver` (independent constraint sets apart, claripy's
   caches and model reuse, seeding, then z3).

Each layer holds only the layer below; what a layer needs of the state (its constraints, the
substitution, the run's cache) it reads from the :class:`~angr_ram.solver.substituting.SubstitutingFrontend`
that asks. A layer that has nothing to do for a frontend (no cache bound, no let-bound lookup) hands
the query down unchanged.
"""

from __future__ import annotations

import time

from claripy.errors import UnsatError

from angr_ram.core.scope import current
from angr_ram.solver import enumeration, seeding
from angr_ram.solver.evaluator import uses_float
from angr_ram.solver.query_cache import model_leaves


class Query:
    """One call of claripy's frontend API: ``name(*args, **kwargs)``; ``substituted`` once its
    expressions are in the inner solver's terms (address constraints substituted)."""

    __slots__ = ("name", "args", "kwargs", "substituted")

    def __init__(self, name: str, args: tuple = (), kwargs: dict | None = None, substituted: bool = False):
        self.name, self.args, self.kwargs, self.substituted = name, args, kwargs or {}, substituted

    def __repr__(self) -> str:
        return f"<Query {self.name}{' substituted' if self.substituted else ''}>"

    @property
    def extra(self) -> tuple:
        return tuple(self.kwargs.get("extra_constraints") or ())


def _true(c) -> bool:
    return c.op == "BoolV" and c.args[0] is True


class Layer:
    """A layer of the chain: answers a query or hands it to ``below``."""

    label = "layer"

    def __init__(self, below: Layer | None):
        self.below = below

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def ask(self, fe, q: Query):
        return self.below.ask(fe, q)

    def describe(self, fe) -> list[str]:
        """What this layer is for ``fe`` (empty: it hands every query down)."""
        return [self.label]


class QueryCacheLayer(Layer):
    """The run's query cache (:mod:`angr_ram.solver.query_cache`) in front of the solver."""

    label = "query cache"

    def describe(self, fe) -> list[str]:
        return [] if fe.cache is None else [f"query cache ({fe.cache.mode})"]

    def ask(self, fe, q: Query):
        cache = fe.cache
        if cache is None or q.substituted:
            return self.below.ask(fe, q)
        name, kw = q.name, q.kwargs
        exact = kw.get("exact")
        if name == "check_satisfiability":
            sat = self.ask(fe, Query("satisfiable", (), {"extra_constraints": q.extra, "exact": exact}))
            return "SAT" if sat else "UNSAT"
        if name == "satisfiable":
            goals = tuple(c for c in q.extra if not _true(c))
            return cache.satisfiable(fe.constraints, goals, fe.subst, fe.sizes, lambda: self.below.ask(fe, q),
                                     fe.embedded)
        if name == "eval":
            e, n = q.args
            if n == 1:
                return self._one_model(fe, (e,), q.extra, exact)
            if e.variables.isdisjoint(fe.sizes):
                extra = tuple(c for c in q.extra if not _true(c))
                down = Query("eval", (e, n), {"extra_constraints": extra, "exact": exact})
                return cache.solutions(fe.constraints, e, n, extra, fe.subst, fe.sizes,
                                       lambda: self.below.ask(fe, down), fe.embedded)
        elif name == "batch_eval":
            exprs, n = q.args
            if n == 1 and exprs:
                return [self._one_model(fe, tuple(exprs), q.extra, exact)]
        return self.below.ask(fe, q)

    def _one_model(self, fe, exprs, extra_constraints, exact):
        """One solution of ``exprs`` through the cache; raises UnsatError when there is none."""
        subst = fe.subst
        extra = tuple(c for c in extra_constraints if not _true(c))

        def solve(sliced):
            sub = subst.many(exprs)
            ex = tuple(subst(c) for c in extra)
            leaves = model_leaves([*sub, *ex, *subst.many(sliced)])
            asked = [*sub, *(leaves or ())]
            try:
                rows = self.below.ask(fe, Query("batch_eval", (asked, 1), {"extra_constraints": ex, "exact": exact},
                                                substituted=True))
            except UnsatError:
                return None, None
            if not rows:
                return None, None
            row = rows[0]
            model = None if leaves is None else {v.args[0]: x for v, x in zip(leaves, row[len(sub):], strict=True)}
            return tuple(row[:len(sub)]), model

        values = fe.cache.model(fe.constraints, exprs, extra, subst, fe.sizes, solve, fe.embedded)
        if values is None:
            raise UnsatError("angr-ram: no solution (query cache)")
        return values


# which positional arguments of each query are expressions to substitute
_ONE_EXPR = frozenset(("eval", "max", "min", "is_true", "is_false"))


def with_exprs(q: Query, f) -> tuple:
    """``q``'s positional arguments with ``f`` applied to each that is an expression (the first of
    eval/max/min/is_true/is_false, each of batch_eval's list, both of solution's unless an int)."""
    name, args = q.name, q.args
    if name in _ONE_EXPR:
        return (f(args[0]), *args[1:])
    if name == "batch_eval":
        return ([f(x) for x in args[0]], *args[1:])
    if name == "solution":
        e, v = args
        return (f(e), v if isinstance(v, int) else f(v))
    return args


class FactsLayer(Layer):
    """The path's facts (terms its constraints fix to one value, :mod:`angr_ram.solver.path_facts`)
    rewritten into the query's expressions and extra constraints."""

    label = "path facts"

    def describe(self, fe) -> list[str]:
        return [f"{self.label} ({len(fe.facts)})"] if len(fe.facts) else []

    def ask(self, fe, q: Query):
        facts = fe.facts
        if not len(facts) or q.substituted:
            return self.below.ask(fe, q)
        r = facts.rewrite
        name, kw = q.name, q.kwargs
        extra = tuple(r(c) for c in kw.get("extra_constraints") or ())
        if any(c.op == "BoolV" and c.args[0] is False for c in extra):
            if name in ("satisfiable", "check_satisfiability"):
                return False if name == "satisfiable" else "UNSAT"
            raise UnsatError("angr-ram: an extra constraint is false by the path's facts")
        if extra:
            kw = {**kw, "extra_constraints": extra}

        def rewritten(e):       # claripy answers a constant without the extra constraints: keep e
            x = r(e)
            return e if extra and not fe.subst(x).symbolic else x
        return self.below.ask(fe, Query(name, with_exprs(q, rewritten), kw))


class SubstitutionLayer(Layer):
    """The state's address constraints substituted into the query (:mod:`angr_ram.solver.substitution`)."""

    label = "substitution"

    def ask(self, fe, q: Query):
        if q.substituted:
            return self.below.ask(fe, q)
        s = fe.subst
        name, args = q.name, with_exprs(q, s)
        kw = q.kwargs
        extra = kw.get("extra_constraints")
        if extra:
            kw = {**kw, "extra_constraints": tuple(s(c) for c in extra)}
        elif "extra_constraints" in kw:
            kw = {**kw, "extra_constraints": ()}
        return self.below.ask(fe, Query(name, args, kw, substituted=True))


class RunLayer(Layer):
    """The run around the solver: its scope active (z3 budgets, the patch sets' gates), seeding's
    source of the state's stored constants, and the run's query count and solver time."""

    label = "run scope"

    def ask(self, fe, q: Query):
        scope = fe.scope
        if scope is not None and current() is not scope:
            with scope.active():
                return self.ask(fe, q)
        t = time.perf_counter()
        try:
            with seeding.source(fe.constants):
                return self.below.ask(fe, q)
        finally:
            st = fe.stats
            if st is not None:
                st.solver_queries += 1
                st.solver_seconds += time.perf_counter() - t


class SmallDomainLayer(Layer):
    """Queries over let-bound lookups answered by evaluating their small domains
    (:mod:`angr_ram.solver.enumeration`)."""

    label = "small-domain evaluation"

    def describe(self, fe) -> list[str]:
        return [self.label] if fe.has_lets or fe.has_floats else []

    def ask(self, fe, q: Query):
        if fe.has_lets or fe.has_floats or any(uses_float(x) for x in enumeration.query_exprs(q.name, q.args) + q.extra):
            r = enumeration.solve(fe._sync(), q.name, q.args, q.kwargs, fe.stats)
            if r is not enumeration.UNHANDLED:
                return r
        return self.below.ask(fe, q)


class ClaripyLayer(Layer):
    """claripy's composite solver (:func:`angr_ram.solver.substituting.composite`): independent
    constraint sets apart, claripy's caches and model reuse, seeding, z3."""

    label = "claripy"

    def __init__(self):
        super().__init__(None)

    def describe(self, fe) -> list[str]:
        inner = fe._sync()
        out = [type(inner).__name__]
        out += [c.__name__ for c in type(inner._template_frontend).__mro__[1:]
                if c.__name__.endswith(("Mixin", "Frontend")) and c.__module__.startswith(("claripy", "angr_ram"))
                and c.__name__ not in ("ConstrainedFrontend", "Frontend")]
        return out

    def ask(self, fe, q: Query):
        return getattr(fe._sync(), q.name)(*q.args, **q.kwargs)


LAYERS = (FactsLayer, QueryCacheLayer, SubstitutionLayer, RunLayer, SmallDomainLayer)
"""The layers above claripy, top to bottom."""


def build_chain(config=None) -> Layer:
    """The chain for a run with ``config`` (a :class:`~angr_ram.run.config.RunConfig`; None: every
    layer, each acting only when its frontend asks for it): the top layer, each holding the next.
    Without a query cache in the config there is no cache layer."""
    layers = [cls for cls in LAYERS if not (cls is QueryCacheLayer and config is not None and config.cache is None)]
    top: Layer = ClaripyLayer()
    for cls in reversed(layers):
        top = cls(top)
    return top


def chain_of(top: Layer) -> list[Layer]:
    """The layers of the chain under ``top``, top to bottom."""
    out = []
    while top is not None:
        out.append(top)
        top = top.below
    return out


DEFAULT_CHAIN = build_chain()
