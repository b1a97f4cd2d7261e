"""claripy's model cache answers only what its cached models prove.

claripy's ``ModelCacheMixin`` keeps the models z3 returned and answers ``eval``, ``min`` and
``max`` from them. Once an expression's values have all been enumerated without extra
constraints it is marked *exhausted*, and from then on ``eval`` returns the cached models'
values however few of them satisfy the query's extra constraints, and ``min``/``max`` the least
or greatest of those. That is exact only without extra constraints: a cached model names only
the variables of the solver's constraints, so an extra constraint on another variable (an angr
stub's return value, ``ret != 0``) is evaluated with that variable at 0 and may reject every
model, although a model with another value of it exists. ``eval(stdin, 1, extra_constraints=
[ret != 0])`` after ``stdin == 'x'`` answered "unsatisfiable" (claripy 9.2.213), and a test for a
feasible outcome was dropped; claripy's own ``min`` asks ``eval`` for two values first and raised
"unsat during min()". Inside angr-ram runs the shortcut is taken only without extra
constraints; with them, what the models give is kept and z3 is asked for the rest.
"""

from __future__ import annotations

import claripy
from claripy.errors import UnsatError
from claripy.frontend.mixin.model_cache_mixin import ModelCacheMixin

from angr_ram.core.patches import PatchSet
from angr_ram.core.scope import in_run

MODEL_CACHE = PatchSet("model-cache", in_run)


@MODEL_CACHE.patch(ModelCacheMixin, "batch_eval")
def batch_eval_exact(original, self, asts, n, extra_constraints=(), exact=None):
    """``ModelCacheMixin.batch_eval`` whose "exhausted" shortcut holds only without extra constraints."""
    if not extra_constraints:
        return original(self, asts, n, extra_constraints=extra_constraints, exact=exact)
    results = self._get_batch_solutions(asts, n=n, extra_constraints=extra_constraints)
    if len(results) == n:
        return results
    constraints = tuple(extra_constraints)
    if results:
        constraints = (claripy.And(*[claripy.Or(*[a != v for a, v in zip(asts, r, strict=True)]) for r in results]),
                       *constraints)
    try:
        results.update(super(ModelCacheMixin, self).batch_eval(asts, n - len(results), extra_constraints=constraints,
                                                               exact=exact))
    except UnsatError:
        if not results:
            raise
    return results


def _extremum(original, self, e, extra_constraints, signed, exact, which):
    if not extra_constraints:
        return original(self, e, extra_constraints=extra_constraints, signed=signed, exact=exact)
    parent = getattr(super(ModelCacheMixin, self), which)
    return parent(e, extra_constraints=extra_constraints, signed=signed, exact=exact)


@MODEL_CACHE.patch(ModelCacheMixin, "min")
def min_exact(original, self, e, extra_constraints=(), signed=False, exact=None):
    """``ModelCacheMixin.min``: with extra constraints, z3's answer, not the least cached value."""
    return _extremum(original, self, e, extra_constraints, signed, exact, "min")


@MODEL_CACHE.patch(ModelCacheMixin, "max")
def max_exact(original, self, e, extra_constraints=(), signed=False, exact=None):
    """``ModelCacheMixin.max``: with extra constraints, z3's answer, not the greatest cached value."""
    return _extremum(original, self, e, extra_constraints, signed, exact, "max")
