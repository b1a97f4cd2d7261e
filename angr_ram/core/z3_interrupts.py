"""z3 under the run guard (:mod:`.guard`): interrupts counted per context and drained before the
next check, answers given while an interrupt arrived not trusted, z3's own Ctrl-C handling turned
off, and z3's memory capped for a step."""

from __future__ import annotations

import contextlib

import claripy
import z3


def _z3_memory_cap(mb: float):
    """Let z3 allocate at most ``mb`` MiB more than it holds now; returns what to restore."""
    try:
        before = z3.get_param("memory_max_size")
        held = z3.Z3_get_estimated_alloc_size() / 2**20
        z3.set_param("memory_max_size", max(1, int(held + mb)))
        return before
    except Exception:  # noqa: BLE001 - a z3 without the parameter: no cap
        return None


def _z3_memory_restore(before) -> None:
    with contextlib.suppress(Exception):
        z3.set_param("memory_max_size", int(before or 0))


# z3 4.13 keeps an interrupt that arrives while no check runs, and the next check of a plain
# solver in that context then answers "sat" with a model that violates its constraints (checked:
# interrupt, then x == 255 /\ x == 3 is "sat" with x = 3). One check consumes it. So every
# interrupt is counted per context (``_INTERRUPTS``); before a check, a context with interrupts it
# has not drained gets a throw-away check first (:func:`drain_z3`, done by :func:`fresh_answer`
# and by the guard when a step ends); a check during which an interrupt arrived is not trusted.
_INTERRUPTS: dict[int, int] = {}     # context pointer -> interrupts sent to it
_DRAINED: dict[int, int] = {}        # context pointer -> interrupts consumed by a throw-away check


def _key(ctx) -> int:
    return ctx.ref().value or 0


def thread_context():
    """The z3 context claripy uses in the calling thread (z3's main context in the main thread)."""
    try:
        return claripy.backends.z3._context
    except Exception:  # noqa: BLE001 - claripy without per-thread contexts: z3's main one
        return z3.main_ctx()


def interrupt_z3(ctx=None) -> None:
    """Make the z3 check in progress in ``ctx`` (default: z3's main context) return ``unknown``;
    the interrupt is counted, so that a check that had not started yet is not trusted."""
    ctx = ctx if ctx is not None else z3.main_ctx()
    k = _key(ctx)
    _INTERRUPTS[k] = _INTERRUPTS.get(k, 0) + 1
    with contextlib.suppress(Exception):
        ctx.interrupt()


def interrupts_sent(ctx) -> int:
    """How many interrupts were sent to ``ctx``."""
    return _INTERRUPTS.get(_key(ctx), 0)


def drain_z3(ctx) -> None:
    """Consume the interrupts sent to ``ctx`` with a throw-away check (in the thread that owns it)."""
    k = _key(ctx)
    sent = _INTERRUPTS.get(k, 0)
    if _DRAINED.get(k, 0) == sent:
        return
    with contextlib.suppress(Exception):
        z3.Solver(ctx=ctx).check()
    _DRAINED[k] = sent


def fresh_answer(check, ctx):
    """``check()`` (a z3 check in ``ctx``), made safe against the guard's interrupts: pending
    interrupts are drained first, and an answer given while an interrupt arrived is ``unknown``."""
    drain_z3(ctx)
    before = interrupts_sent(ctx)
    r = check()
    if interrupts_sent(ctx) != before:
        drain_z3(ctx)
        return z3.unknown
    return r


_QUIET: dict[int, object] = {}     # context pointer -> a raw z3 params object {ctrl_c: false}, kept for the process


def quiet_ctrl_c(solver) -> None:
    """Turn off z3's own SIGINT handling for ``solver`` (it would take the user's Ctrl-C as a
    cancelled check and hide it from the run); marks the solver so it is done once. Uses one raw
    params object per context: ``solver.set`` would build a ``ParamsRef`` per solver, and one whose
    construction fails deep in a recursion leaves an object whose ``__del__`` raises."""
    if getattr(solver, "ram_quiet_ctrl_c", False):
        return
    try:
        ctx = solver.ctx
        k = _key(ctx)
        params = _QUIET.get(k)
        if params is None:
            params = z3.Z3_mk_params(ctx.ref())
            z3.Z3_params_inc_ref(ctx.ref(), params)
            z3.Z3_params_set_bool(ctx.ref(), params, z3.to_symbol("ctrl_c", ctx), False)
            _QUIET[k] = params
        z3.Z3_solver_set_params(ctx.ref(), solver.solver, params)
        solver.ram_quiet_ctrl_c = True
    except Exception:  # noqa: BLE001, S110 - z3 keeps its own Ctrl-C handling for this solver
        pass
