"""The solver chain: the layers a query of an angr-ram state passes, in order, and the seeding
layer alone over a fake inner solver (as KLEE's solver tests do)."""

import os

import angr
import claripy
import pytest
from claripy.frontend.mixin.model_cache_mixin import ModelCacheMixin
from claripy.solvers import Solver, SolverCompositeChild

import angr_ram
from angr_ram.core.scope import RunScope, current
from angr_ram.core.stats import RunStats
from angr_ram.run.config import RunConfig
from angr_ram.solver.chain import (
    LAYERS,
    ClaripyLayer,
    FactsLayer,
    Layer,
    Query,
    QueryCacheLayer,
    RunLayer,
    SmallDomainLayer,
    SubstitutionLayer,
    build_chain,
    chain_of,
)
from angr_ram.solver.frontends import RamChildSolver, SeededSolver, SeedingMixin
from angr_ram.solver.model_cache import ExactModelCacheMixin
from angr_ram.solver.path_facts import NO_FACTS, Facts
from angr_ram.solver.query_cache import QueryCache
from angr_ram.solver.substituting import SubstitutingFrontend
from angr_ram.solver.substitution import Substitution

from .conftest import BUILD


def _claripy_names(cls):
    return [c.__name__ for c in cls.__mro__ if c not in (SeedingMixin, ExactModelCacheMixin)]


def test_angr_rams_frontends_are_claripys_with_seeding_right_above_z3():
    """claripy's own class lines, unchanged but for the seeding mixin just before FullFrontend and
    the exact model cache just before claripy's (which it extends)."""
    for ours, theirs in ((RamChildSolver, SolverCompositeChild), (SeededSolver, Solver)):
        assert _claripy_names(ours)[1:] == _claripy_names(theirs)[1:]
        mro = ours.__mro__
        assert mro[mro.index(SeedingMixin) + 1].__name__ == "FullFrontend"
        assert mro[mro.index(ExactModelCacheMixin) + 1] is ModelCacheMixin


def test_the_chain_of_a_users_state_follows_its_config():
    """A user's script, options as a RunConfig: the state's solver chain, top to bottom, and the
    config's z3 budget at its bottom."""
    p = angr.Project(os.fspath(BUILD / "symtab_O0"), auto_load_libs=False)
    sm = p.factory.simulation_manager(p.factory.entry_state(
        stdin=angr.SimFileStream(name="stdin", content=claripy.BVS("x", 16), has_end=True)))
    tech = sm.use_technique(angr_ram.RelocatableMemory(RunConfig(cache="aa", solver_timeout_ms=4321)))
    sm.run(n=3)
    fe = sm.active[0].solver._solver
    assert fe.layers() == ["query cache (aa)", "substitution", "run scope", "SolverComposite",
                           "ConstraintDeduplicatorMixin", "SatCacheMixin", "SimplifySkipperMixin",
                           "ExactModelCacheMixin", "ModelCacheMixin", "SeedingMixin", "FullFrontend"]
    assert fe.chain is tech.scope.memo("solver-chain", None)        # built once per run, from its config
    assert fe.inner._template_frontend.timeout == 4321 and tech.config.solver_timeout_ms == 4321
    plain = angr_ram.RelocatableMemory()
    assert plain.cache is None and plain.config.solver_timeout_ms is None


class FakeZ3:
    """Stands for ``FullFrontend``: answers every query and records that it was asked."""

    def __init__(self, constraints):
        self.constraints = list(constraints)
        self.asked = []

    def satisfiable(self, extra_constraints=(), exact=None):
        self.asked.append("satisfiable")
        return True

    def check_satisfiability(self, extra_constraints=(), exact=None):
        self.asked.append("check_satisfiability")
        return "SAT"

    def eval(self, e, n, extra_constraints=(), exact=None):
        self.asked.append("eval")
        return (7,)

    def batch_eval(self, exprs, n, extra_constraints=(), exact=None):
        self.asked.append("batch_eval")
        return [(7,) * len(exprs)]


class Seeded(SeedingMixin, FakeZ3):
    pass


def test_the_seeding_layer_answers_from_a_candidate_and_passes_the_rest_down():
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    stats = RunStats()
    with RunScope(stats, config=RunConfig()).active():
        easy = Seeded([x == 0, y == 0])                 # the all-zero candidate satisfies it
        assert easy.satisfiable() is True
        assert easy.check_satisfiability() == "SAT"
        assert easy.eval(x + 5, 1) == (5,)
        assert easy.batch_eval([x, y + 1], 1) == [(0, 1)]
        assert easy.asked == [] and stats.seeded_answers == 4
        hard = Seeded([x * x == 2])                     # no candidate satisfies it: z3's question
        assert hard.satisfiable() is True and hard.eval(x, 1) == (7,)
        assert hard.asked == ["satisfiable", "eval"] and stats.seeded_misses >= 2
    with RunScope(RunStats(), config=RunConfig(seeded_models=False)).active():
        off = Seeded([x == 0])
        assert off.satisfiable() is True and off.eval(x, 1) == (7,)
        assert off.asked == ["satisfiable", "eval"]
    outside = Seeded([x == 0])                          # no run: claripy's path
    assert outside.satisfiable() is True and outside.asked == ["satisfiable"]


# ---------------------------------------------------------------------------------------- the chain
class Recorder(Layer):
    """Stands for the layers below the one under test: records each query and answers it."""

    def __init__(self, answer=True):
        super().__init__(None)
        self.queries, self.answer = [], answer

    def ask(self, fe, q):
        self.queries.append((q.name, q.args, dict(q.kwargs), q.substituted))
        return self.answer(q) if callable(self.answer) else self.answer


class FakeFrontend:
    """What the layers read of a SubstitutingFrontend."""

    def __init__(self, subst=None, cache=None, constraints=(), sizes=None, has_lets=False, scope=None, stats=None,
                 has_floats=False):
        self.subst = subst if subst is not None else Substitution({})
        self.cache, self.constraints, self.sizes = cache, list(constraints), sizes or {}
        self.embedded, self.has_lets, self.scope, self.stats, self.constants = frozenset(), has_lets, scope, stats, None
        self.facts = NO_FACTS
        self.has_floats = has_floats

    def _sync(self):
        raise AssertionError("a layer under test asked for the inner solver")


def test_build_chain_lists_the_layers_in_order_from_the_config():
    assert [type(x) for x in chain_of(build_chain(RunConfig(cache="aa")))] == [
        FactsLayer, QueryCacheLayer, SubstitutionLayer, RunLayer, SmallDomainLayer, ClaripyLayer]
    assert [type(x) for x in chain_of(build_chain(RunConfig()))] == [
        FactsLayer, SubstitutionLayer, RunLayer, SmallDomainLayer, ClaripyLayer]   # no cache configured: no layer
    assert [type(x) for x in chain_of(build_chain())] == [*LAYERS, ClaripyLayer]


def test_the_facts_layer_rewrites_known_terms_and_answers_a_query_its_facts_make_false():
    h, i = claripy.BVS("h", 32), claripy.BVS("i", 64)
    off = claripy.ZeroExt(32, h & 7) << 3
    fe = FakeFrontend()
    fe.facts = Facts().with_fact(off, claripy.BVV(16, 64))
    below = Recorder(answer=(7,))
    layer = FactsLayer(below)
    assert layer.ask(fe, Query("eval", (off + i, 1), {"extra_constraints": (i != off,)})) == (7,)
    ((name, (e, n), kw, substituted),) = below.queries
    assert name == "eval" and not substituted
    assert e.variables == i.variables and claripy.Solver().eval(e, 2, extra_constraints=[i == 1]) == (17,)
    assert h.variables.isdisjoint(kw["extra_constraints"][0].variables)
    # an extra constraint the facts make false: no solution, nothing asked below
    below.queries.clear()
    assert layer.ask(fe, Query("satisfiable", (), {"extra_constraints": (off == 8,)})) is False
    try:
        layer.ask(fe, Query("eval", (i, 1), {"extra_constraints": (off == 8,)}))
        raise AssertionError("no UnsatError")
    except claripy.errors.UnsatError:
        pass
    # a value the facts make constant keeps its form when extra constraints come with it
    # (claripy answers a constant without looking at them)
    layer.ask(fe, Query("eval", (off, 1), {"extra_constraints": (i == 3,)}))
    assert below.queries[-1][1][0] is off
    assert below.queries and len(below.queries) == 1


def test_the_substitution_layer_substitutes_expressions_and_extra_constraints_once():
    b, i = claripy.BVS("ram_base_b", 64), claripy.BVS("i", 64)
    fe = FakeFrontend(subst=Substitution({next(iter(b.variables)): 0x1000}))
    below = Recorder(answer=(5,))
    layer = SubstitutionLayer(below)
    assert layer.ask(fe, Query("eval", (b + i, 1), {"extra_constraints": (i == b,), "exact": None})) == (5,)
    ((name, (e, n), kw, substituted),) = below.queries
    assert name == "eval" and n == 1 and substituted
    assert e.variables == i.variables and claripy.Solver().eval(e, 2, extra_constraints=[i == 0]) == (0x1000,)
    assert "ram_base_b" not in str(kw["extra_constraints"][0])
    below.queries.clear()
    done = Query("batch_eval", ([b], 1), {"extra_constraints": ()}, substituted=True)
    layer.ask(fe, done)                                          # already in the solver's terms: as is
    assert below.queries[0][1][0][0] is b


def test_the_run_layer_activates_the_scope_and_counts_queries():
    stats = RunStats()
    scope = RunScope(stats, config=RunConfig())
    seen = []
    below = Recorder(answer=lambda q: seen.append(current()) or True)
    fe = FakeFrontend(scope=scope, stats=stats)
    assert current() is None
    assert RunLayer(below).ask(fe, Query("satisfiable", (), {"extra_constraints": ()})) is True
    assert seen == [scope] and stats.solver_queries == 1 and current() is None


def test_the_small_domain_layer_acts_only_on_let_bound_lookups_and_floating_point():
    below = Recorder(answer="below")
    x = claripy.BVS("x", 8)
    d = claripy.fpToFP(claripy.fp.RM.RM_NearestTiesEven, x.sign_extend(24), claripy.fp.FSORT_DOUBLE)
    assert SmallDomainLayer(below).ask(FakeFrontend(has_lets=False), Query("satisfiable")) == "below"
    assert SmallDomainLayer(below).ask(FakeFrontend(), Query("satisfiable", (), {"extra_constraints": (x == 2,)})) == "below"
    assert len(below.queries) == 2
    for fe, q in [(FakeFrontend(has_floats=True), Query("satisfiable")),
                  (FakeFrontend(), Query("satisfiable", (), {"extra_constraints": (claripy.fpLT(d, 2.5),)})),
                  (FakeFrontend(), Query("is_true", (claripy.fpGT(d, 0.5),)))]:
        with pytest.raises(AssertionError, match="inner solver"):      # it asks for the slice
            SmallDomainLayer(below).ask(fe, q)
    assert len(below.queries) == 2


def test_the_query_cache_layer_answers_a_repeated_query_without_going_down():
    i = claripy.BVS("i", 64)
    stats = RunStats()
    fe = FakeFrontend(cache=QueryCache("syntactic", stats=stats), constraints=[claripy.ULT(i, 4)])
    below = Recorder(answer=True)
    layer = QueryCacheLayer(below)
    q = Query("satisfiable", (), {"extra_constraints": (i == 2,), "exact": None})
    assert layer.ask(fe, q) is True and layer.ask(fe, q) is True
    assert len(below.queries) == 1 and stats.cache_hits_syntactic == 1
    assert layer.ask(fe, Query("check_satisfiability", (), {"extra_constraints": (i == 2,)})) == "SAT"
    assert len(below.queries) == 1                               # check_satisfiability: the same cached query
    assert layer.ask(FakeFrontend(), q) is True and len(below.queries) == 2     # no cache bound: down


def test_satisfiable_is_not_asked_again_until_a_constraint_is_added_or_the_bases_move():
    """angr asks ``satisfiable()`` of every successor; a successor of a concrete branch has its
    parent's constraints. Once true, it is answered without the chain until a constraint is added
    (then asked, and false when it is), the substitution changes (a relocation), or extra
    constraints are given; a copy inherits the answer, a blank copy does not."""
    stats = RunStats()
    x = claripy.BVS("x", 8)
    fe = SubstitutingFrontend(stats=stats)
    fe.add([x > 3])
    calls = []
    ask = fe.chain.ask
    fe.chain = type("Counting", (), {"ask": lambda self, f, q: calls.append(q.name) or ask(f, q)})()
    assert fe.satisfiable() and fe.satisfiable() and fe.branch().satisfiable()
    assert calls == ["satisfiable"] and stats.satisfiable_known == 2
    assert not fe.satisfiable(extra_constraints=(x < 2,)) and len(calls) == 2
    assert fe.blank_copy().satisfiable() and len(calls) == 3
    fe.bind(Substitution({}))                      # new placement: asked again
    assert fe.satisfiable() and len(calls) == 4
    fe.add([x < 3])
    assert not fe.satisfiable() and not fe.satisfiable() and len(calls) == 6
