"""claripy's model cache, as angr-ram's frontends use it: exact, and evaluated in linear time.

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
"unsat during min()". :class:`ExactModelCacheMixin` takes the shortcut only without extra
constraints; with them, what the models give is kept and z3 is asked for the rest. It also
evaluates cached models with :func:`~angr_ram.solver.model_eval.fast_eval_ast` (claripy's
``replace_dict`` re-walks shared sub-expressions: exponential on if-then-else DAGs).

It is a frontend mixin, claripy's seam: angr-ram's frontends (:mod:`angr_ram.solver.frontends`)
use it in place of ``ModelCacheMixin``; claripy's own classes are left alone. The functions below
take the stock method as their first argument, so that a benchmark can give stock angr's
frontends the same answers (``bench.claripy_fixes``).
"""

from __future__ import annotations

import claripy
from claripy import errors
from claripy.errors import UnsatError
from claripy.frontend.mixin.model_cache_mixin import ModelCache, ModelCacheMixin

from angr_ram.solver.model_eval import fast_eval_ast

MEMO_ENTRIES = 512      # constraints whose truth a model remembers (:func:`satisfied_by`)


def satisfied_by(model, constraints) -> bool:
    """Whether the cached ``model`` satisfies every constraint (claripy's ``eval_constraints``).
    A model remembers the answer for up to :data:`MEMO_ENTRIES` constraints (by their structural
    hash; a model's values never change and its copies in sibling states are the same object):
    making the tests of 2,480 of join's unfinished paths from their cached models evaluated
    166,000 constraints, most of them the same ones against the same models."""
    memo = model.__dict__.get("_ram_truth")
    if memo is None:
        memo = model._ram_truth = {}     # not pickled: ModelCache.__getstate__ keeps the model alone
    for c in constraints:
        h = c.hash()
        truth = memo.get(h)
        if truth is None:
            try:
                truth = bool(fast_eval_ast(model, c, True))
            except errors.ClaripyZeroDivisionError:
                truth = False
            if len(memo) < MEMO_ENTRIES:
                memo[h] = truth
        if not truth:
            return False
    return True


def exact_batch_eval(stock, self, asts, n, extra_constraints=(), exact=None):
    """``batch_eval`` whose "exhausted" shortcut (``stock``) holds only without extra constraints."""
    if not extra_constraints:
        return stock(self, asts, n, extra_constraints=extra_constraints, exact=exact)
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


def _extremum(stock, self, e, extra_constraints, signed, exact, which):
    if not extra_constraints:
        return stock(self, e, extra_constraints=extra_constraints, signed=signed, exact=exact)
    parent = getattr(super(ModelCacheMixin, self), which)
    return parent(e, extra_constraints=extra_constraints, signed=signed, exact=exact)


def exact_min(stock, self, e, extra_constraints=(), signed=False, exact=None):
    """``min``: with extra constraints, z3's answer, not the least cached value."""
    return _extremum(stock, self, e, extra_constraints, signed, exact, "min")


def exact_max(stock, self, e, extra_constraints=(), signed=False, exact=None):
    """``max``: with extra constraints, z3's answer, not the greatest cached value."""
    return _extremum(stock, self, e, extra_constraints, signed, exact, "max")


class ExactModelCacheMixin(ModelCacheMixin):
    """claripy's ``ModelCacheMixin``, exact under extra constraints and evaluated in linear time
    (the module docstring)."""

    def _get_models(self, extra_constraints=()):
        for m in self._models:
            if satisfied_by(m, extra_constraints):
                yield m

    def _get_batch_solutions(self, asts, n=None, extra_constraints=(), allow_unconstrained=True):
        results = set()
        for m in self._get_models(extra_constraints):
            try:
                results.add(tuple(fast_eval_ast(m, a, allow_unconstrained) for a in asts))
            except (ZeroDivisionError, KeyError):
                continue
            if len(results) == n:
                break
        return results

    def batch_eval(self, asts, n, extra_constraints=(), exact=None):
        return exact_batch_eval(ModelCacheMixin.batch_eval, self, asts, n, extra_constraints, exact)

    def eval(self, e, n, extra_constraints=(), exact=None):
        return tuple(r[0] for r in ExactModelCacheMixin.batch_eval(self, [e], n, extra_constraints, exact))

    def min(self, e, extra_constraints=(), signed=False, exact=None):
        return exact_min(ModelCacheMixin.min, self, e, extra_constraints, signed, exact)

    def max(self, e, extra_constraints=(), signed=False, exact=None):
        return exact_max(ModelCacheMixin.max, self, e, extra_constraints, signed, exact)


MAX_MODELS_TRIED = 8        # cached models tried per child solver by :func:`combined_model`


def combined_model(composite_solver, constraints, fallback=None) -> dict | None:
    """A model of ``constraints`` (name: value) made of the models ``composite_solver``'s children
    have cached, without z3: for each child, the first of its cached models (at most
    :data:`MAX_MODELS_TRIED`) that satisfies the child's constraints, else ``fallback(child)`` (a
    dict or None: a model found some other way than z3); the union (each model over its child's
    variables, which no other child has) is kept only if it satisfies every one of ``constraints``
    (variables no model names are 0, as in a test's input): those a cached model was checked
    against are not evaluated again. None when a constrained child has no model, or evaluation fails."""
    children = getattr(composite_solver, "_solver_list", None)
    if children is None:
        children = [composite_solver]
    values: dict = {}
    checked: set = set()        # constraints a child's model was checked against
    try:
        for child in children:
            if not child.variables:
                continue
            found = None
            for i, m in enumerate(getattr(child, "_models", ())):
                if i >= MAX_MODELS_TRIED:
                    break
                if satisfied_by(m, child.constraints):
                    found = m
                    break
            if found is not None:       # its own variables only: children's variables are disjoint
                names = child.variables
                values.update((k, v) for k, v in found.model.items() if k in names)
                checked.update(c.hash() for c in child.constraints)
                continue
            other = fallback(child) if fallback is not None else None
            if other is None:
                return None
            names = child.variables
            values.update((k, v) for k, v in other.items() if k in names)
        whole = ModelCache(values)
        rest = [c for c in constraints if c.hash() not in checked]
        return values if satisfied_by(whole, rest) else None
    except Exception:  # noqa: BLE001 - a constraint the linear evaluator cannot walk: no model, z3 decides
        return None
