"""angr-ram's claripy frontends: claripy's own mixin lists with angr-ram's layers inserted.

claripy builds a solver as a class line of frontend mixins over ``FullFrontend`` (which asks the
backend, z3); a composite solver makes its independent children from a *template* frontend
(``SolverComposite(template_solver=...)``). These are the classes angr-ram's solver chain uses
there instead of claripy's, with :class:`~angr_ram.plugins.seeding.SeedingMixin` placed right above
``FullFrontend``: candidate models are tried after claripy's caches and before z3.
"""

from __future__ import annotations

from claripy import backends
from claripy.frontend import FullFrontend, mixin

from .seeding import SeedingMixin


class RamChildSolver(
    mixin.ConstraintDeduplicatorMixin,
    mixin.SatCacheMixin,
    mixin.SimplifySkipperMixin,
    mixin.ModelCacheMixin,
    SeedingMixin,
    FullFrontend,
):
    """claripy's ``SolverCompositeChild`` with seeding before z3: one independent component of a
    state's constraints (the template of :func:`angr_ram.plugins.solver.composite`)."""

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
    mixin.ModelCacheMixin,
    mixin.ConstraintExpansionMixin,
    mixin.SimplifyHelperMixin,
    SeedingMixin,
    FullFrontend,
):
    """claripy's ``Solver`` with seeding before z3 (a small one-off solver of angr-ram's layers)."""

    def __init__(self, backend=backends.z3, **kwargs):
        super().__init__(backend, **kwargs)
