"""Cheap, fast z3 solvers, time-outs that survive solver cloning, and simplification that gives
up on deep expressions.

claripy's ``BackendZ3.solver`` makes a general ``z3.Solver()``. Every query of a path then
pays for it twice:

* *fixed cost*: a new or cloned general solver sets up z3's combined solver (3 ms to clone with
  ``Solver.translate``, 8 ms for a first check) before it looks at the formula; a path adds a
  constraint at each branch, so each branch clones. That was 38% of a word-counting loop's run;
* *incremental mode*: claripy passes extra constraints as assumptions, so the general solver
  answers with its incremental SMT core instead of bit-blasting to SAT. A Jenkins hash preimage
  over four bytes takes 10 s a query that way and 0.02 s bit-blasted (``angr-ram bench
  --solver``).

Inside angr-ram runs claripy's solvers are :class:`BitBlastingSolver`: a bit-blasting tactic (below)
as a solver, which simplifies and bit-blasts every check (with or without assumptions) and clones in
0.07 ms. A formula outside bit-vectors (floats, strings) is declined by the tactic and checked by
a general ``z3.Solver``, so answers stay exact. The tactic knows ``timeout`` and ``max_memory``
but not the combined solver's ``soft_timeout``, so only those two are set.

The tactic is z3's ``qfbv`` preamble (simplify, propagate values, solve equations, eliminate
unconstrained terms, share bit-vector terms), then bit-blasting and SAT. ``qfbv``'s own later steps
(bit-vector size reduction, Ackermannization, a second simplify / solve-eqs / AIG pass over the
blasted formula) made its checks 2-3 times slower on the if-then-else-heavy path conditions of
merged states (``c_strtok``) and gained nothing measurable on the other programs tried (hash
tables, APR's hash, the bytecode interpreter); a query that asks for unsat cores or
proofs still gets ``qfbv``. Each check runs on a throw-away clone of the solver and keeps only the
answer (model, unsat core, reason): a tactic solver that ran the bit-blaster holds its state until
its next check (85 KB on a small merged formula), and a run keeps thousands of solvers alive
(wordcount, M = 8: 1.5 GB and every z3 call slower, against 0.45 GB).

The tactic re-blasts the whole formula at each check. On a big formula checked again and again
(an APR hash over a symbolic clock: 64-bit multiplications, 30 ms a check) z3's incremental
solver is cheaper, so a solver whose tactic check was slow keeps one as well and asks it first,
for a bounded time (it is the slow one on a hash preimage).

claripy's ``min``/``max`` bisect all bits of the expression, 65 checks for every address however
few values it has (78 region resolutions of the APR run asked 8400 checks). Inside a run they
gallop from a model's value inside the bounds the extra constraints give
(:func:`gallop_extremum`, which the quantified solving procedure uses too).

claripy's ``BackendZ3.solver`` also decides on every new solver whether z3 knows
``soft_timeout`` by rendering the whole parameter description to a string (10 ms); that answer
is computed once. claripy's ``BackendZ3.clone_solver`` keeps the assertions but not the
parameters: the clone gets its original's time-out and memory bound back.

claripy's ``BackendZ3._batch_eval`` (every ``eval_upto`` with more than one solution) pushes a
scope, adds ``expr != value`` after each model, and pops the scope after the last one, but not when
a check raises: a time-out, a resource limit or an interrupt left the scope and its exclusions in the
path's z3 solver, which the path and every path it forks (cloned solvers) then asked. The next check
that reached z3 answered for a formula without those values: "unsat" for a branch whose only models
were excluded, a lost path. The scope is now popped whatever ends the evaluation.

angr simplifies register and memory writes with z3's simplifier, which converts the result back
to claripy recursively: a merged state's expression can be deeper than Python's recursion limit.
Such an expression is kept unsimplified instead of ending the run.

These functions replace claripy's, angr's and z3's inside angr-ram runs only: :mod:`angr_ram.solver.patches`
declares where each goes and when it acts.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
import time
import weakref

import claripy
import z3
from claripy.backends import backend_z3

from angr_ram.core.scope import current

_SOFT_TIMEOUT: bool | None = None


def _limit(s: z3.Solver, timeout: int | None, max_memory: int | None) -> None:
    global _SOFT_TIMEOUT
    if timeout is not None and not getattr(s, "ram_tactic", False):
        if _SOFT_TIMEOUT is None:
            _SOFT_TIMEOUT = "soft_timeout" in str(s.param_descrs())
        if _SOFT_TIMEOUT:
            s.set("soft_timeout", timeout)
            s.set("solver2_timeout", timeout)
    if timeout is not None:
        s.set("timeout", timeout)
    if max_memory is not None:
        s.set("max_memory", max_memory)
    s.ram_limits = (timeout, max_memory)     # z3 cannot report a solver's parameters back


_FAILED = "fail tactic"       # z3's reason when the tactic below declines a formula
_TACTICS: dict = {}           # z3 context -> the guarded bit-blasting tactic (built once per context)


# qfbv's preamble, then bit-blasting and SAT: without qfbv's own later steps (bv-size reduction,
# Ackermannization, a second simplify / solve-eqs / AIG pass over the blasted formula), which cost
# more than they save on the if-then-else-heavy path conditions of merged states (see the module)
_BLAST_STEPS = ("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "simplify", "max-bv-sharing",
                "bit-blast", "sat")


def _bitblasting_tactic(ctx: z3.Context) -> z3.Tactic:
    t = _TACTICS.get(ctx)
    if t is None:
        blast = z3.Then(*(z3.Tactic(n, ctx) for n in _BLAST_STEPS), ctx=ctx)
        # unsat cores or proofs asked for: qfbv itself, which guards the steps that would lose them
        cores = z3.Or(z3.Probe("produce-unsat-cores", ctx), z3.Probe("produce-proofs", ctx))
        qfbv = z3.Cond(cores, z3.Tactic("qfbv", ctx), blast, ctx)
        t = _TACTICS[ctx] = z3.Cond(z3.Probe("is-qfbv", ctx), qfbv, z3.Tactic("fail", ctx), ctx)
    return t


SLOW_CHECK_SECONDS = 0.02  # a tactic check taking this much CPU time is slow
SLOW_CHECKS_NEEDED = 2     # consecutive slow tactic checks (in a solver and its originals) before it keeps an incremental one
INCREMENTAL_TRY_MS = 2000  # how long the incremental solver may try before the tactic takes over
MAX_INCREMENTAL = 64       # incremental solvers alive at once (each holds z3's whole solving state: megabytes)

_KEPT: weakref.WeakSet = weakref.WeakSet()     # the incremental solvers alive


def _is_timeout(reason: str) -> bool:
    return reason in ("timeout", "canceled")


class BitBlastingSolver(z3.Solver):
    """A z3 solver that simplifies and bit-blasts each check (the ``qfbv`` tactic).

    The tactic starts from scratch at every check. A solver whose last :data:`SLOW_CHECKS_NEEDED`
    tactic checks (its own and its originals') each took more than :data:`SLOW_CHECK_SECONDS` of the
    thread's CPU time (a formula too big to re-blast cheaply, for
    example 64-bit multiplications of a hash; CPU, not wall time: on a busy machine the first
    checks took longer, their solvers and every clone of them kept an incremental solver, and a
    merging run went from 60 s and 0.8 GB to 125-212 s and 6.3 GB) also keeps z3's general,
    incremental solver with the same assertions, and so do its clones; later checks go to that
    solver first, for at most :data:`INCREMENTAL_TRY_MS` (the general solver is slow on some
    formulas the tactic decides at once, such as a hash preimage), and to the tactic if it times
    out. One slow check is not enough (a single check over the threshold, which the process's
    history can decide, made a 16-byte matrix script keep 480 incremental solvers: 0.45 GB became
    3-4.5 GB), and at most :data:`MAX_INCREMENTAL` are alive at once: a solver past that bound
    checks with the tactic alone. A formula outside bit-vectors and booleans (floats, strings) is declined by the tactic and
    checked by the general solver. ``model()``, ``reason_unknown()`` and ``unsat_core()`` answer from the solver that
    answered the last check."""

    def __init__(self, solver=None, ctx=None):
        ctx = z3.get_ctx(ctx)
        if solver is None:
            solver = z3.Z3_mk_solver_from_tactic(ctx.ref(), _bitblasting_tactic(ctx).tactic)
        super().__init__(solver, ctx)
        self.ram_tactic = True
        self.general: z3.Solver | None = None        # the solver that answered the last check, if not the tactic
        self.incremental: z3.Solver | None = None    # the kept general solver
        self.slow = False                            # the last tactic checks here (or in the original) were slow
        self.slow_streak = 0                         # consecutive slow tactic checks here and in the originals
        self.stay_tactic = False                     # the incremental solver timed out here (or in the original)
        self._answer: tuple = (None, None, None)     # the last tactic check's model, reason for unknown, core

    # -- assertions go to both solvers ------------------------------------------------------
    def assert_exprs(self, *args):
        super().assert_exprs(*args)
        if self.incremental is not None:
            self.incremental.assert_exprs(*args)

    def assert_and_track(self, a, p):
        super().assert_and_track(a, p)
        if self.incremental is not None:
            self.incremental.assert_and_track(a, p)

    def push(self):
        super().push()
        if self.incremental is not None:
            self.incremental.push()

    def pop(self, num=1):
        super().pop(num)
        if self.incremental is not None:
            self.incremental.pop(num)

    def reset(self):
        super().reset()
        self.incremental, self.general, self.slow, self.stay_tactic = None, None, False, False
        self.slow_streak = 0
        self._answer = (None, None, None)

    # -- checks -----------------------------------------------------------------------------
    def _general_solver(self, timeout_cap: int | None = None) -> z3.Solver:
        g = z3.Solver(ctx=self.ctx)
        timeout, max_memory = getattr(self, "ram_limits", (None, None))
        if timeout_cap is not None:
            timeout = timeout_cap if timeout is None else min(timeout, timeout_cap)
        _limit(g, timeout, max_memory)
        g.add(self.assertions())
        return g

    def check(self, *assumptions):
        self.general = None
        if (self.slow and self.incremental is None and not self.stay_tactic and self.num_scopes() == 0
                and len(_KEPT) < MAX_INCREMENTAL):
            self.incremental = self._general_solver(INCREMENTAL_TRY_MS)   # built at scope 0: pops match
            _KEPT.add(self.incremental)
        if self.incremental is not None and not self.stay_tactic:
            limit = getattr(self, "ram_limits", (None, None))[0]
            r = self._incremental_check(assumptions, limit)
            if (r != z3.unknown or not _is_timeout(self.incremental.reason_unknown())
                    or (limit is not None and limit <= INCREMENTAL_TRY_MS)):     # the query's own time-out
                self.general = self.incremental
                return r
            self.stay_tactic = True          # slow here: the tactic decides this solver's checks
        t0 = time.thread_time()       # CPU time: a check is not "slow" because the machine is busy
        r = self._blast(assumptions)
        self.slow_streak = self.slow_streak + 1 if time.thread_time() - t0 > SLOW_CHECK_SECONDS else 0
        self.slow = self.slow_streak >= SLOW_CHECKS_NEEDED
        if r == z3.unknown and self._answer[1] == _FAILED:
            self.general = self._general_solver()
            return self.general.check(*assumptions)
        return r

    def _incremental_check(self, assumptions, limit: int | None) -> z3.CheckSatResult:
        """The kept incremental solver's check, within ``limit`` ms where that is below its own
        try (a step's budget, the run's deadline)."""
        inc = self.incremental
        own = getattr(inc, "ram_limits", (None, None))[0]
        if limit is None or (own is not None and limit >= own):
            return inc.check(*assumptions)
        inc.set("timeout", limit)
        try:
            return inc.check(*assumptions)
        finally:
            inc.set("timeout", own if own is not None else 4294967295)

    def _blast(self, assumptions) -> z3.CheckSatResult:
        """The tactic's check, on a throw-away clone whose answer is kept (the model, the reason
        for unknown, or the unsat core): a tactic solver keeps its bit-blaster's state until its
        next check, 85 KB on a small merged formula, and a run keeps thousands of solvers alive."""
        clone = z3.Solver(z3.Z3_solver_translate(self.ctx.ref(), self.solver, self.ctx.ref()), self.ctx)
        clone.ram_tactic = True
        limits = getattr(self, "ram_limits", None)
        if limits is not None:
            _limit(clone, *limits)
        r = clone.check(*assumptions)
        self._answer = (clone.model() if r == z3.sat else None,
                        clone.reason_unknown() if r == z3.unknown else None,
                        clone.unsat_core() if r == z3.unsat else None)
        return r

    def model(self):
        if self.general is not None:
            return self.general.model()
        m = self._answer[0]
        if m is None:
            raise z3.Z3Exception("model is not available")
        return m

    def reason_unknown(self):
        return self.general.reason_unknown() if self.general is not None else (self._answer[1] or "")

    def unsat_core(self):
        if self.general is not None:
            return self.general.unsat_core()
        core = self._answer[2]
        return core if core is not None else z3.AstVector(ctx=self.ctx)

    def translate(self, target):
        c = BitBlastingSolver(z3.Z3_solver_translate(self.ctx.ref(), self.solver, target.ref()), target)
        c.slow, c.slow_streak, c.stay_tactic = self.slow, self.slow_streak, self.stay_tactic
        return c


def fast_solver_setup(original, self, timeout=None, max_memory=None):
    """``BackendZ3.solver`` that makes a bit-blasting ``qfbv`` tactic solver (see the module)."""
    if not self.reuse_z3_solver or getattr(self._tls, "solver", None) is None:
        s = BitBlastingSolver(ctx=self._context)
        if threading.current_thread() != threading.main_thread():
            s.set(ctrl_c=False)
        backend_z3._add_memory_pressure(1024 * 1024 * 10)
        if self.reuse_z3_solver:
            self._tls.solver = s
    else:
        s = self._tls.solver
        s.reset()
    _limit(s, timeout, max_memory)
    return s


def drop_conversion_caches() -> None:
    """Empty claripy's conversion caches of this thread (every expression a backend converted, by
    hash: a dict per backend that claripy never empties, which after a uthash run holds 100,000 z3
    terms and keeps them alive in z3's context). Called when a run ends (:func:`angr_ram.run.runner.explore`,
    :meth:`RelocatableMemory.guarded`); the caches fill again as expressions are converted."""
    for b in claripy.backends.all_backends:
        with contextlib.suppress(Exception):
            b.downsize()


def batch_eval_pops_its_scope(original, self, exprs, n, extra_constraints=(), solver=None, model_callback=None):
    """``BackendZ3._batch_eval`` that leaves ``solver`` with the scopes it had, also when a check
    raises (claripy pops its scope only after the last model)."""
    depth = solver.num_scopes() if solver is not None else 0
    try:
        return original(self, exprs, n, extra_constraints=extra_constraints, solver=solver,
                        model_callback=model_callback)
    finally:
        if solver is not None and solver.num_scopes() > depth:
            solver.pop(solver.num_scopes() - depth)


def clone_with_limits(original, self, s):
    """``BackendZ3.clone_solver`` whose clone keeps the time-out and memory bound of ``s``."""
    c = original(self, s)
    limits = getattr(s, "ram_limits", None)
    if limits is not None:
        _limit(c, *limits)
    return c


def simplify_or_keep(original, self, e=None):
    """``SimSolver.simplify`` that keeps an expression too deep for claripy's conversion back from
    z3 (a ``RecursionError``) as it is."""
    try:
        return original(self, e)
    except (RecursionError, ctypes.ArgumentError) as exc:
        if not isinstance(exc, RecursionError) and "RecursionError" not in str(exc):
            raise           # a ctypes argument error of another kind: not ours to hide
        if e is None:
            return self.constraints
        return e


def is_half_built_del(unraisable) -> bool:
    """Whether an unraisable exception is z3's ``__del__`` of a half-built object: a z3 reference
    object releases in ``__del__`` the reference its constructor took, read from an attribute the
    constructor set; a constructor interrupted before that (a ``RecursionError`` deep in claripy's
    recursion, the run guard's interrupt) leaves an object whose ``__del__`` raises AttributeError
    from the garbage collector (``Statistics``, whose ``__getattr__`` looks the attribute up again:
    RecursionError). Such an object holds no reference: nothing is lost."""
    fn = getattr(unraisable, "object", None)
    return (isinstance(unraisable.exc_value, AttributeError | RecursionError) and getattr(fn, "__name__", "") == "__del__"
            and getattr(fn, "__module__", "").split(".")[0] == "z3")


def _quiet_hook(previous):
    def hook(unraisable):
        if not is_half_built_del(unraisable):
            previous(unraisable)
    hook.quiets_half_built_z3 = True
    return hook


def quiet_half_built_z3_objects() -> None:
    """From the first run to the end of the process (objects made in a run are collected after
    it), Python's hook for unraisable exceptions drops those of :func:`is_half_built_del` and hands
    every other to the hook it found (a script's own, pytest's): ``sys.unraisablehook`` is the seam
    Python gives for this, so z3's destructors stay z3's."""
    if not getattr(sys.unraisablehook, "quiets_half_built_z3", False):
        sys.unraisablehook = _quiet_hook(sys.unraisablehook)


TIMED_SIMPLIFY_MS = 10_000    # within this much of a step's deadline, simplification runs under z3.TryFor
_TIMED_TACTICS: dict = {}     # (context, ms bucket) -> claripy's simplification tactics under z3.TryFor


def simplify_in_time(original, self, expr):
    """``BackendZ3.simplify`` bounded by the run's deadline: claripy's tactic chain for boolean
    constraints (simplify, propagate, ``aig``) can run for seconds on a large formula without
    looking at z3's interrupt, so within ``TIMED_SIMPLIFY_MS`` of the deadline the chain runs under
    ``z3.TryFor`` with the time left, and an expression it could not finish is kept as it is (simplification is
    optional: the unsimplified constraint means the same). An expression too deep for claripy's
    conversion back from z3 is kept as it is too."""
    try:
        return _simplified(original, self, expr)
    except (RecursionError, ctypes.ArgumentError) as exc:
        if not isinstance(exc, RecursionError) and "RecursionError" not in str(exc):
            raise           # a ctypes argument error of another kind: not ours to hide
        return expr         # too deep for claripy's conversion back from z3 (a merged loop's
                            # constraints, reached through a frontend's own simplify): kept as it is


def _simplified(original, self, expr):
    sc = current()
    left = None if sc is None or sc.deadline is None else sc.deadline.left()
    if left is None:
        return original(self, expr)
    left *= 1000
    if left > TIMED_SIMPLIFY_MS:       # far from the deadline: claripy's own call (no timer per call)
        return original(self, expr)
    raw = self.convert(expr)
    if not isinstance(raw, z3.BoolRef):
        return original(self, expr)
    ms = max(1, int(left))
    bucket = 1 << max(0, ms.bit_length() - 1)       # a few tactic objects per context, not one per call
    key = (id(self._context), bucket)
    tactic = _TIMED_TACTICS.get(key)
    if tactic is None:
        tactic = _TIMED_TACTICS[key] = z3.TryFor(self._boolref_tactics, bucket, ctx=self._context)
    try:
        return self._abstract(tactic(raw).as_expr())
    except z3.Z3Exception:
        return expr


def gallop_extremum(value_in, best: int, lo: int, hi: int, want_max: bool) -> int:
    """The greatest (or least) value of a key in ``[lo, hi]``, given ``best``, one of its values,
    and ``value_in(a, b)``, which returns a value of the key in ``[a, b]`` or None if it has none.
    The search jumps to each value found and gallops beyond it (1, 2, 4, ... further) until a
    stride has no value, then bisects that stride: about ``2 log2(R)`` calls for values spanning
    ``R``, one when ``best`` is the extremum, however far the key is from 0 (a stack address)."""
    if want_max:
        lo = best
    else:
        hi = best
    step = 1
    while lo < hi:
        if step:
            bound = min(lo + step, hi) if want_max else max(hi - step, lo)
        else:
            bound = (lo + hi + 1) // 2 if want_max else (lo + hi) // 2
        w = value_in(bound, hi) if want_max else value_in(lo, bound)
        if w is not None:
            best = w
            lo, hi = (w, hi) if want_max else (lo, w)
            step = step * 2 if step else 0
        else:
            step = 0                  # the extremum is within the last stride: bisect it
            if want_max:
                hi = bound - 1
            else:
                lo = bound + 1
    return best


def _bounds(expr: z3.BitVecRef, constraints) -> tuple[int, int]:
    """The interval ``[lo, hi]`` that ``constraints`` put ``expr`` in syntactically (an ``And`` of
    unsigned bounds or an equality with a number, as angr-ram's resolution writes them); the whole
    unsigned range otherwise."""
    lo, hi = 0, (1 << expr.size()) - 1
    todo = list(constraints)
    while todo:
        c = todo.pop()
        if not z3.is_app(c):
            continue
        k = c.decl().kind()
        if k == z3.Z3_OP_AND:
            todo.extend(c.children())
            continue
        if k not in (z3.Z3_OP_UGEQ, z3.Z3_OP_ULEQ, z3.Z3_OP_EQ) or c.num_args() != 2:
            continue
        a, b = c.children()
        if not (a.eq(expr) and z3.is_bv_value(b)):
            continue
        n = b.as_long()
        if k != z3.Z3_OP_ULEQ:
            lo = max(lo, n)
        if k != z3.Z3_OP_UGEQ:
            hi = min(hi, n)
    return lo, hi


def model_guided_extrema(original, self, is_max, expr, extra_constraints, signed, solver, model_callback):
    """``BackendZ3._extrema`` (unsigned) by :func:`gallop_extremum` from a model's value, inside
    the bounds the extra constraints give: a single value costs 2 checks and a range of ``r``
    values about ``2 log2(r)``, where claripy bisects all of the expression's bits every time (65
    checks for an address)."""
    if signed or not z3.is_bv(expr):
        return original(self, is_max, expr, extra_constraints, signed, solver, model_callback)
    constraints = [self.convert(e) for e in extra_constraints]
    lo, hi = _bounds(expr, constraints)
    comment = "max" if is_max else "min"

    def value_in(a: int, b: int) -> int | None:
        self.solve_count += 1
        if not backend_z3.z3_solver_sat(solver, [*constraints, z3.UGE(expr, a), z3.ULE(expr, b)], comment):
            return None
        m = solver.model()
        if model_callback is not None:
            model_callback(self._generic_model(m))
        return m.eval(expr, model_completion=True).as_long()

    v = value_in(lo, hi)
    if v is None:          # no value at all: claripy's answer for that case
        return original(self, is_max, expr, extra_constraints, signed, solver, model_callback)
    return gallop_extremum(value_in, v, lo, hi, is_max)
