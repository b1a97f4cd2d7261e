"""angr-ram's claripy frontends: claripy's own mixin lists with angr-ram's layers inserted.

claripy builds a solver as a class line of frontend mixins over ``FullFrontend`` (which asks the
backend, z3); a composite solver makes its independent children from a *template* frontend
(``SolverComposite(template_solver=...)``). These are the classes angr-ram's solver chain uses
there instead of claripy's, with :class:`SeedingMixin` placed right above
``FullFrontend`` (candidate models are tried after claripy's caches and before z3) and
:class:`~angr_ram.solver.model_cache.ExactModelCacheMixin` in place of claripy's model cache.
:func:`adopt` gives a state angr-ram's equivalent of the stock frontend angr made for it.
"""

from __future__ import annotations

import claripy
from angr import sim_options as o
from claripy import backends
from claripy.frontend import FullFrontend, mixin

from angr_ram.solver.model_cache import ExactModelCacheMixin
from angr_ram.solver.seeding import enabled, seeded_batch_eval, seeded_check, seeded_eval, seeded_satisfiable


def _next(cls: type, name: str):
    """``name`` of the class after ``cls`` in the frontend's method order, as a function of
    ``(frontend, *args, **kwargs)`` (the "original" the seeded answers fall back to)."""
    return lambda frontend, *a, **kw: getattr(super(cls, frontend), name)(*a, **kw)


class SeedingMixin:
    """claripy frontend mixin, placed right above ``FullFrontend`` (claripy's last step before z3):
    inside a run that seeds models (:func:`enabled`) ``satisfiable``, ``check_satisfiability``,
    ``batch_eval`` and ``eval`` first try the candidate assignments (:func:`attempt`); a satisfying
    one answers, anything else goes on to z3. angr-ram's frontends include it
    (:data:`RamChildSolver`, :data:`SeededSolver`); claripy's own are left alone."""

    def satisfiable(self, extra_constraints=(), exact=None):
        if not enabled():
            return super().satisfiable(extra_constraints=extra_constraints, exact=exact)
        return seeded_satisfiable(_next(SeedingMixin, "satisfiable"), self, extra_constraints, exact)

    def check_satisfiability(self, extra_constraints=(), exact=None):
        if not enabled():
            return super().check_satisfiability(extra_constraints=extra_constraints, exact=exact)
        return seeded_check(_next(SeedingMixin, "check_satisfiability"), self, extra_constraints, exact)

    def batch_eval(self, exprs, n, extra_constraints=(), exact=None):
        if not enabled():
            return super().batch_eval(exprs, n, extra_constraints=extra_constraints, exact=exact)
        return seeded_batch_eval(_next(SeedingMixin, "batch_eval"), self, exprs, n, extra_constraints, exact)

    def eval(self, e, n, extra_constraints=(), exact=None):
        if not enabled():
            return super().eval(e, n, extra_constraints=extra_constraints, exact=exact)
        return seeded_eval(_next(SeedingMixin, "eval"), self, e, n, extra_constraints, exact)


class RamChildSolver(
    mixin.ConstraintDeduplicatorMixin,
    mixin.SatCacheMixin,
    mixin.SimplifySkipperMixin,
    ExactModelCacheMixin,
    SeedingMixin,
    FullFrontend,
):
    """claripy's ``SolverCompositeChild`` with the exact model cache and seeding before z3: one independent component of a
    state's constraints (the template of :func:`angr_ram.solver.substituting.composite`)."""

    def __init__(self, backend=backends.z3, **kwargs):
        super().__init__(backend, **kwargs)

    def __repr__(self) -> str:
        return f"<RamChildSolver with {len(self.variables)} variables>"


class SeededSolver(
    mixin.ConcreteHandlerMixin,
    mixin.EagerResolutionMixin,
    mixin.ConstraintFilterMixin,
    mixin.ConstraintDeduplicatorMixin,
    mixin.SimplifySkipperMixin,
    mixin.SatCacheMixin,
    ExactModelCacheMixin,
    mixin.ConstraintExpansionMixin,
    mixin.SimplifyHelperMixin,
    SeedingMixin,
    FullFrontend,
):
    """claripy's ``Solver`` with the exact model cache and seeding before z3 (a small one-off solver
    of angr-ram's layers, and a state's solver after :func:`adopt`)."""

    def __init__(self, backend=backends.z3, **kwargs):
        super().__init__(backend, **kwargs)


def composite(timeout=None, track: bool = False) -> claripy.SolverComposite:
    """claripy's composite solver (independent constraint sets solved apart) whose children are
    :class:`RamChildSolver`."""
    return claripy.SolverComposite(template_solver=RamChildSolver(timeout=timeout, track=track), track=track)


def adopt(state) -> bool:
    """Give ``state`` angr-ram's equivalent of the claripy frontend angr made (or would make) for
    it from its options: :func:`composite` for ``SolverComposite``, :class:`SeededSolver` for
    ``Solver``, with the same constraints. Other frontends (angr-ram's own, VSA, replacement,
    hybrid, cacheless) are kept. Seeding acts only in runs configured for it, so an adopted state
    answers as claripy's would, but exactly and with linear-time model evaluation
    (:mod:`angr_ram.solver.model_cache`). True if the frontend was replaced."""
    old = state.solver._solver
    track = o.CONSTRAINT_TRACKING_IN_SOLVER in state.options
    if type(old) is claripy.SolverComposite:
        new = composite(track=track)
    elif type(old) is claripy.Solver:
        new = SeededSolver(track=track)
    else:
        return False
    if old.constraints:
        new.add(old.constraints)
    state.solver._stored_solver = new
    return True
