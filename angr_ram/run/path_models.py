"""A model of each finished path, taken when it finishes: its outcome and its test never lost.

A path's outcome is a function of its inputs; listing every value it can take asks z3 about that
function, which may be out of reach (``md5sum``'s digest of a symbolic stdin: z3 bit-blasts MD5),
and choosing a test's readable input after the run has only a short budget per test. What is
always cheap is one model of the path's constraints over the variables its outcome and inputs are
made of (the constraints rarely mention the hard function), taken during the run as KLEE writes a
test when its path ends: :func:`record_models` stores it in the state's globals
(:data:`MODEL_KEY`), bounded per path. Then :func:`model_value` evaluates any expression of those
variables under it with no solver (a linear walk, :mod:`angr_ram.solver.model_eval`): the path's
first outcome, and an input that drives the path when no better one is found in time.
"""

from __future__ import annotations

import claripy
from angr.errors import SimUnsatError

from angr_ram.core.guard import StepAbandoned
from angr_ram.run.inputs import program_inputs
from angr_ram.run.outcomes import Outcome
from angr_ram.solver.model_eval import eval_under
from angr_ram.solver.z3_check import gave_up

MODEL_KEY = "angr_ram_path_model"
MODEL_SECONDS = 2.0        # one path's model query at most (the run's step budget guards it)
LISTING_SECONDS = 5.0      # listing a path's outcomes (summary and tests) when its model already gave one
LISTING_GAVE_UP = "angr_ram_listing_gave_up"   # in a finished state's globals: listing it timed out once
_DONE = "angr_ram_path_model_done"


def _leaves(state) -> list:
    exprs = [i.expr for i in program_inputs(state) if i.expr is not None]
    o = Outcome(state)
    if o.expr is not None:
        exprs.append(o.expr)
    seen, out = set(), []
    for e in exprs:
        if not isinstance(e, claripy.ast.Base) or not e.symbolic:
            continue
        for leaf in e.leaf_asts():
            if leaf.op == "BVS" and leaf.args[0] not in seen:
                seen.add(leaf.args[0])
                out.append(leaf)
    return out


def take_model(state) -> dict | None:
    """Values (name: int) of the bit-vector variables of ``state``'s inputs and outcome in one
    model of its path, or None if the path has none (or z3 gave up)."""
    leaves = _leaves(state)
    if not leaves:
        return {}
    whole = claripy.Concat(*leaves) if len(leaves) > 1 else leaves[0]
    try:
        v = state.solver.eval(whole)
    except (SimUnsatError, claripy.errors.UnsatError):
        return None
    except Exception as e:  # noqa: BLE001 - claripy's many solver errors: z3 gave up, not a failed run
        if gave_up(e) is None:
            raise
        return None
    model, pos = {}, whole.length
    for leaf in leaves:
        pos -= leaf.length
        model[leaf.args[0]] = (v >> pos) & ((1 << leaf.length) - 1)
    return model


def record_models(simgr, guard=None, stash: str = "deadended", start: int = 0) -> int:
    """Take the model of every path in ``stash`` from index ``start`` on that has none yet (each at
    most :data:`MODEL_SECONDS` under ``guard``), then let its z3 solver objects go (``downsize``:
    about 150 KB a path on Debian's join; the tests build one again when they ask); the stash's
    length (the next call's ``start``: a stash only grows by appending, so each step looks at its
    new paths alone)."""
    states = simgr.stashes.get(stash, [])
    for s in states[min(start, len(states)):]:
        if s.globals.get(_DONE):
            continue
        s.globals[_DONE] = True
        try:
            if guard is None:
                m = take_model(s)
            else:
                with guard.step(seconds=MODEL_SECONDS, memory_mb=0):
                    m = take_model(s)
        except StepAbandoned:
            continue
        if m is not None:
            s.globals[MODEL_KEY] = m
        s.downsize()       # its z3 solver let go until the tests ask again (a finished path's is rarely needed)
    return len(states)


def path_model(state) -> dict | None:
    """The model :func:`record_models` took of ``state``'s path, or None."""
    return state.globals.get(MODEL_KEY) if hasattr(state, "globals") else None


def model_value(state, expr) -> int | None:
    """``expr``'s value under ``state``'s recorded model (variables it lacks are 0), or None."""
    m = path_model(state)
    if m is None:
        return None
    if not expr.symbolic:
        return expr.concrete_value
    try:
        return eval_under(expr, m)
    except (KeyError, ZeroDivisionError):
        return None
