"""The solver chain: the layers a query of an angr-ram state passes, in order, and the seeding
layer alone over a fake inner solver (as KLEE's solver tests do)."""

import os

import angr
import claripy
from claripy.solvers import Solver, SolverCompositeChild

import angr_ram
from angr_ram.core.scope import RunScope
from angr_ram.core.stats import RunStats
from angr_ram.run.config import RunConfig
from angr_ram.solver.frontends import RamChildSolver, SeededSolver, SeedingMixin

from .conftest import BUILD


def _claripy_names(cls):
    return [c.__name__ for c in cls.__mro__ if c is not SeedingMixin]


def test_angr_rams_frontends_are_claripys_with_seeding_right_above_z3():
    """claripy's own class lines, unchanged but for the seeding mixin just before FullFrontend."""
    for ours, theirs in ((RamChildSolver, SolverCompositeChild), (SeededSolver, Solver)):
        assert _claripy_names(ours)[1:] == _claripy_names(theirs)[1:]
        mro = ours.__mro__
        assert mro[mro.index(SeedingMixin) + 1].__name__ == "FullFrontend"


def test_the_chain_of_a_users_state_follows_its_config():
    """A user's script, options as a RunConfig: the state's solver chain, top to bottom, and the
    config's z3 budget at its bottom."""
    p = angr.Project(os.fspath(BUILD / "symtab_O0"), auto_load_libs=False)
    sm = p.factory.simulation_manager(p.factory.entry_state(
        stdin=angr.SimFileStream(name="stdin", content=claripy.BVS("x", 16), has_end=True)))
    tech = sm.use_technique(angr_ram.RelocatableMemory(RunConfig(cache="aa", solver_timeout_ms=4321)))
    sm.run(n=3)
    fe = sm.active[0].solver._solver
    assert fe.layers() == ["substitution", "query cache (aa)", "SolverComposite", "ConstraintDeduplicatorMixin",
                           "SatCacheMixin", "SimplifySkipperMixin", "ModelCacheMixin", "SeedingMixin", "FullFrontend"]
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
