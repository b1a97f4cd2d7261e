"""Every function of z3, claripy and angr that the solver package replaces, declared in one place.

Two sets (:mod:`angr_ram.core.patches`), each with its own gate:

* ``z3-check`` (:data:`CHECK`): ``z3.Solver.check`` counted, timed and given the run's budget
  (:mod:`angr_ram.solver.z3_check`); acts in a run and while :func:`counting` counts.
* ``z3-backend`` (:data:`BACKEND`): claripy's z3 backend and angr's simplification, inside runs
  (:mod:`angr_ram.solver.z3_setup`: bit-blasting solvers, limits kept by clones, scopes popped
  after a failed evaluation, extrema by galloping, simplification bounded by the deadline and
  kept when too deep; :mod:`angr_ram.solver.simplify_reuse`: large subterms simplified once). claripy has no seam for these: its frontends reach the one process-wide
  ``BackendZ3`` (``claripy.backends.z3``, whose conversion caches every expression shares), so a
  subclass used by angr-ram's frontends alone would convert every expression twice.

What has a seam is not patched: z3's destructors of objects whose constructor was interrupted
are quieted through ``sys.unraisablehook`` (:func:`~.z3_setup.quiet_half_built_z3_objects`); seeding (:class:`~.frontends.SeedingMixin`)
and the exact, linear-time model cache (:class:`~.model_cache.ExactModelCacheMixin`) are mixins
of angr-ram's frontends (:mod:`angr_ram.solver.frontends`).
"""

from __future__ import annotations

import contextlib

import z3
from angr.state_plugins.solver import SimSolver
from claripy.backends import backend_z3

from angr_ram.core.patches import PatchSet
from angr_ram.core.scope import in_run
from angr_ram.solver import simplify_reuse, z3_check, z3_setup

CHECK = PatchSet("z3-check", z3_check.gate)
CHECK.patch(z3.Solver, "check")(z3_check.check)

BACKEND = PatchSet("z3-backend", in_run)
for _owner, _name, _fn in ((backend_z3.BackendZ3, "solver", z3_setup.fast_solver_setup),
                           (backend_z3.BackendZ3, "_batch_eval", z3_setup.batch_eval_pops_its_scope),
                           (backend_z3.BackendZ3, "clone_solver", z3_setup.clone_with_limits),
                           (backend_z3.BackendZ3, "simplify", z3_setup.simplify_in_time),
                           (backend_z3.BackendZ3, "_extrema", z3_setup.model_guided_extrema),
                           (SimSolver, "simplify", simplify_reuse.simplify_reusing)):
    BACKEND.patch(_owner, _name)(_fn)

SETS = (CHECK, BACKEND)
NAMES = tuple(s.name for s in SETS)        # what a technique holds for the solver package


@contextlib.contextmanager
def counting():
    """A :class:`~.z3_check.Counter` of the z3 checks made inside the block, in a run or not
    (stock angr's included)."""
    with z3_check.counter() as c, CHECK.hold():
        yield c
