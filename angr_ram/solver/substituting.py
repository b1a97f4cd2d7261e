"""The solver layer: address-constraint substitution in front of claripy.

``state.solver._solver`` is a :class:`SubstitutingFrontend`. It keeps the path constraints exactly
as the program produced them (over symbolic bases) and an *inner* claripy solver that holds their
substituted form. Every query (satisfiable, eval, batch_eval, min, max, solution, is_true,
is_false, unsat_core, eval_to_ast) substitutes its expression and extra constraints and asks the
inner solver. A relocation only swaps the substitution's memo; the inner solver is rebuilt lazily
on the next query, so relocating is O(1) and never rewrites the stored constraints.
"""

from __future__ import annotations

import time

import claripy
from angr.state_plugins.solver import SimSolver
from claripy.frontend import Frontend

from angr_ram.solver import enumeration, path_facts
from angr_ram.solver.chain import DEFAULT_CHAIN, Layer, Query, build_chain, chain_of
from angr_ram.solver.evaluator import uses_float
from angr_ram.solver.frontends import composite
from angr_ram.solver.model_cache import combined_model, satisfied_by
from angr_ram.solver.seeding_cost import worth_probing
from angr_ram.solver.substitution import Substitution

_EMPTY = Substitution({})
SHIPPED_MODELS = 8      # cached models per solver component that travel with a pickled state


class SubstitutingFrontend(Frontend):
    """A claripy frontend that substitutes address constraints into every query."""

    def __init__(self, inner=None, stats=None, timeout: int | None = None, chain: Layer = DEFAULT_CHAIN):
        super().__init__()
        self.timeout = timeout      # milliseconds per z3 call (None: claripy's default)
        self.constraints: list = []
        self.inner = inner if inner is not None else composite(timeout)
        self.subst: Substitution = _EMPTY
        self._epoch = None          # memo dict of the substitution the inner solver was built with
        self.stats = stats
        self._variables = frozenset()
        self.cache = None
        self.sizes: dict = {}
        self.embedded = frozenset()
        self.has_lets = False       # some constraint binds a let symbol (see plugins/enumeration.py)
        self.has_floats = False     # some constraint computes with floating point (solver/float_semantics.py)
        self.scope = None           # the run's RunScope, active during every query
        self.constants = None       # the state's stored constants, for seeded models (a callable)
        self.chain = chain          # the layers every query passes (angr_ram.solver.chain)
        self.facts = path_facts.NO_FACTS   # terms the constraints fix to one value (path_facts)
        self.known_sat = None       # (constraints, substitution memo) when satisfiable() was last true

    # ------------------------------------------------------------------ plumbing
    def bind(self, subst: Substitution, cache=None, sizes=None, embedded=frozenset(), scope=None) -> None:
        """Use ``subst`` (the state's current address constraints), and the run's query cache with
        the sizes of the objects behind base names and the bases embedded in segments, and its run
        scope, for the next queries."""
        self.subst = subst
        if scope is not None:
            self.scope = scope
        self.cache = cache
        self.embedded = embedded
        if sizes is not None:
            self.sizes = sizes

    def __getstate__(self):
        """Pickled without the inner solver and the substitution: both are rebuilt from the stored
        constraints and the state's address constraints at the next query (see
        :mod:`angr_ram.run.shipping`). The inner solver's cached models travel along (claripy's own
        pickling drops them), so the rebuilt solver answers what they answer without z3."""
        d = {k: v for k, v in self.__dict__.items() if k not in ("inner", "subst", "_epoch", "constants", "known_sat")}
        if self.inner is not None:
            d["_shipped_models"] = [m for child in getattr(self.inner, "_solver_list", ())
                                    for m in list(getattr(child, "_models", ()))[:SHIPPED_MODELS]]
        return d

    def __setstate__(self, s):
        self.__dict__.update(s)
        self.__dict__.setdefault("chain", DEFAULT_CHAIN)
        self.__dict__.setdefault("facts", path_facts.NO_FACTS)
        self.__dict__.setdefault("has_floats", False)
        self.known_sat = None
        self.inner, self.subst, self._epoch, self.constants = None, _EMPTY, None, None

    def _sync(self):
        s = self.subst
        if self.inner is None:
            self.inner = composite(self.timeout)
            if self.constraints:      # unpickled: the substituted constraints are added again
                self.inner.add(s.many(self.constraints))
                self._restore_models(self.__dict__.pop("_shipped_models", ()))
            self._epoch = s.memo
        if self._epoch is not s.memo:
            if self._epoch is not None and any(s.touches(c) for c in self.constraints):
                inner = composite(self.timeout)
                inner.add(s.many(self.constraints))
                self.inner = inner
            self._epoch = s.memo
        return self.inner

    def _restore_models(self, models) -> None:
        """Give each child of the rebuilt inner solver the shipped models over exactly its variables
        that satisfy its constraints (checked by evaluation, so a model is never wrong)."""
        if not models:
            return
        for child in getattr(self.inner, "_solver_list", ()):
            cache = getattr(child, "_models", None)
            if cache is None:
                continue
            for m in models:
                if m.model.keys() == child.variables and satisfied_by(m, child.constraints):
                    cache.add(m)

    def cached_model(self) -> dict | None:
        """A model of the path's constraints (name: value) from the models the inner solver has
        cached, checked by evaluation and asking z3 nothing (:func:`~.model_cache.combined_model`);
        A component without a cached model (one whose queries small-domain evaluation answered:
        let-bound table lookups) gets one from :func:`~.enumeration.one_model`, also without z3.
        None when there is none, or the inner solver was built under another placement of bases."""
        if self.inner is None or self._epoch is not self.subst.memo:
            return None
        if not self.constraints:
            return {}
        return combined_model(self.inner, self.inner.constraints, fallback=enumeration.one_model)

    def set_timeout(self, timeout: int | None) -> None:
        """Use ``timeout`` milliseconds per z3 call from now on (the inner solver is rebuilt)."""
        self.timeout = timeout
        inner = composite(timeout)
        if self.constraints:
            inner.add(self.subst.many(self.constraints))
        self.inner, self._epoch = inner, self.subst.memo

    def layers(self) -> list[str]:
        """The layers a query passes, top to bottom (:mod:`angr_ram.solver.chain`), as they act for
        this frontend: the run's query cache (when one is bound), substitution, the run scope,
        small-domain evaluation (when a constraint binds a let symbol), then claripy's composite
        solver and the class line of its children's frontend down to z3
        (:class:`~.frontends.RamChildSolver`: claripy's caches, seeding, ``FullFrontend``)."""
        return [d for layer in chain_of(self.chain) for d in layer.describe(self)]

    def _ask(self, name: str, args: tuple = (), **kwargs):
        extra = kwargs.get("extra_constraints")
        if extra and any(isinstance(c, bool) for c in extra):
            # angr passes Python booleans too (posix's fd lookup: ``concrete_fd == opened_fd``)
            kwargs["extra_constraints"] = tuple(claripy.BoolV(c) if isinstance(c, bool) else c for c in extra)
        return self.chain.ask(self, Query(name, args, kwargs))

    def _extra(self, extra_constraints):
        return tuple(self.subst(c) for c in extra_constraints) if extra_constraints else ()

    @property
    def variables(self):
        """Variables of the stored (unsubstituted) constraints."""
        return self._variables

    # ------------------------------------------------------------------ copying
    def _blank_copy(self, c):
        c.constraints = []
        c.inner = None
        c.subst, c._epoch, c.stats, c._variables = self.subst, None, self.stats, frozenset()
        c.cache, c.sizes, c.embedded = self.cache, self.sizes, self.embedded
        c.has_lets = c.has_floats = False
        c.facts = path_facts.NO_FACTS
        c.known_sat = None
        c.timeout, c.scope, c.constants, c.chain = self.timeout, self.scope, self.constants, self.chain

    def _copy(self, c):
        c.constraints = list(self.constraints)
        c.inner = self.inner.branch() if self.inner is not None else None   # None: unpickled, not yet rebuilt
        c.subst, c._epoch, c.stats, c._variables = self.subst, self._epoch, self.stats, self._variables
        c.cache, c.sizes, c.embedded = self.cache, self.sizes, self.embedded
        c.has_lets, c.has_floats = self.has_lets, self.has_floats
        c.facts = self.facts
        c.known_sat = self.known_sat
        c.timeout, c.scope, c.constants, c.chain = self.timeout, self.scope, self.constants, self.chain

    def finalize(self):
        if self.inner is not None:
            self.inner.finalize()

    def downsize(self):
        if self.inner is not None:
            self.inner.downsize()

    # ------------------------------------------------------------------ constraints
    def add(self, constraints, invalidate_cache=True):  # pylint: disable=unused-argument
        """Store ``constraints`` (rewritten by the path's facts) and add their substituted form to
        the inner solver; learn the facts they state or fix (:mod:`~angr_ram.solver.path_facts`)."""
        facts = self.facts
        added = [facts.rewrite(c) for c in constraints]
        added = [c for c in added if not (c.op == "BoolV" and c.args[0] is True)]
        if not added:
            return []
        self._store(added)
        for c in added:
            self._learn(c)
        return added

    def _learn(self, c) -> None:
        stated = path_facts.stated_equality(c)
        if stated is not None and not self.facts.knows(stated[0]):
            self.facts = self.facts.with_fact(*stated)
        pinned = path_facts.equated_slice(c)
        if pinned is not None:
            terms = [pinned]
        elif stated is None and path_facts.takes_nonzero_side(c):
            terms = path_facts.compared_offsets(c)[:path_facts.PROBED_TERMS]
        else:
            return
        for term in terms:
            if self.facts.knows(term):
                continue
            stats = self.stats
            if not worth_probing(stats):
                stats.fact_probes_skipped += 1
                continue
            t0 = time.perf_counter()
            value = self._single_value(term)
            if stats is not None:
                stats.fact_probes += 1
                stats.fact_probe_seconds += time.perf_counter() - t0
                stats.fact_probe_hits += value is not None
            if value is not None:
                self.facts = self.facts.with_fact(term, value)

    def _single_value(self, term):
        """The one value ``term`` has under the constraints (a model, then one query), else None."""
        try:
            first = self._ask("eval", (term, 1))
            if not first:
                return None
            value = claripy.BVV(first[0], term.length)
            if self._ask("satisfiable", extra_constraints=(term != value,)):
                return None
        except claripy.ClaripyError:
            return None
        return value

    def _store(self, added) -> None:
        inner = self._sync()
        self.constraints.extend(added)
        self._variables = self._variables.union(*(c.variables for c in added))
        if not self.has_lets:
            self.has_lets = any(enumeration.is_let(n) for c in added for n in c.variables)
        if not self.has_floats:
            self.has_floats = any(uses_float(c) for c in added)
        inner.add(self.subst.many(added))

    def simplify(self):
        self._sync().simplify()
        return self.constraints

    def merge(self, others, merge_conditions, common_ancestor=None):
        """Merge with ``others`` under ``merge_conditions`` (one per solver), as claripy does."""
        if common_ancestor is not None:
            base = list(common_ancestor.constraints)
            n = len(base)
            options = [claripy.And(cond, *s.constraints[n:]) for cond, s in zip(merge_conditions, [self, *others], strict=True)]
        else:
            base = []
            options = [claripy.And(cond, *s.constraints) for cond, s in zip(merge_conditions, [self, *others], strict=True)]
        merged = self.blank_copy()
        merged.add([*base, claripy.Or(*options)])
        return True, merged

    def combine(self, others):
        c = self.branch()
        for o in others:
            c.add(o.constraints)
        return c

    def split(self):
        return [self]

    # ------------------------------------------------------------------ queries (down the chain)
    def check_satisfiability(self, extra_constraints=(), exact=None):
        return self._ask("check_satisfiability", extra_constraints=extra_constraints, exact=exact)

    def satisfiable(self, extra_constraints=(), exact=None):
        """Whether the constraints (and ``extra_constraints``) have a model. Without extra
        constraints, a path to which nothing was added since this was last true, under the same
        placement of its bases, is satisfiable without asking: angr asks it of every successor,
        and a successor of a concrete branch or jump has its parent's constraints."""
        mark = (len(self.constraints), self.subst.memo)
        if not extra_constraints:
            known = self.known_sat
            if known is not None and known[0] == mark[0] and known[1] is mark[1]:
                if self.stats is not None:
                    self.stats.satisfiable_known += 1
                return True
        r = self._ask("satisfiable", extra_constraints=extra_constraints, exact=exact)
        if r and not extra_constraints:
            self.known_sat = mark
        return r

    def eval(self, e, n, extra_constraints=(), exact=None):
        return self._ask("eval", (e, n), extra_constraints=extra_constraints, exact=exact)

    def batch_eval(self, exprs, n, extra_constraints=(), exact=None):
        return self._ask("batch_eval", (exprs, n), extra_constraints=extra_constraints, exact=exact)

    def max(self, e, extra_constraints=(), signed=False, exact=None):
        return self._ask("max", (e,), extra_constraints=extra_constraints, signed=signed, exact=exact)

    def min(self, e, extra_constraints=(), signed=False, exact=None):
        return self._ask("min", (e,), extra_constraints=extra_constraints, signed=signed, exact=exact)

    def solution(self, e, v, extra_constraints=(), exact=None):
        return self._ask("solution", (e, v), extra_constraints=extra_constraints, exact=exact)

    def is_true(self, e, extra_constraints=(), exact=None):
        return self._ask("is_true", (e,), extra_constraints=extra_constraints, exact=exact)

    def is_false(self, e, extra_constraints=(), exact=None):
        return self._ask("is_false", (e,), extra_constraints=extra_constraints, exact=exact)

    def unsat_core(self, extra_constraints=()):
        return self._ask("unsat_core", extra_constraints=extra_constraints)

    def _concrete_value(self, e):
        return None

    def _concrete_constraint(self, e):
        return None


def chain_for(scope) -> Layer:
    """The solver chain of the run whose scope is ``scope``, built once from its config."""
    if scope is None or scope.config is None:
        return DEFAULT_CHAIN
    return scope.memo("solver-chain", lambda: build_chain(scope.config))


class RamSolver(SimSolver):
    """``state.solver`` for angr-ram states: every query goes through :class:`SubstitutingFrontend`."""

    @property
    def _solver(self):
        fe = self._stored_solver
        if fe is None:
            space = self.state.ram
            fe = self._stored_solver = SubstitutingFrontend(stats=space.stats, timeout=space.solver_timeout,
                                                            chain=chain_for(space.scope))
        space = self.state.ram
        fe.bind(space.substitution(), space.cache, space.base_sizes, space.embedded_names(), space.scope)
        fe.constants = space.stored_constants
        return fe

    @classmethod
    def install(cls, state) -> RamSolver:
        """Replace ``state.solver`` by a RamSolver holding the same constraints."""
        old = state.solver
        constraints = list(old.constraints)
        new = cls()
        state.register_plugin("solver", new)
        new.all_variables = old.all_variables
        new.temporal_tracked_variables = old.temporal_tracked_variables
        new.eternal_tracked_variables = old.eternal_tracked_variables
        if constraints:
            new._solver.add(constraints)
        return new
