"""Many values of expressions under quantified constraints (:func:`solve_many`): the enumeration
behind ``eval(e, n)`` of a pattern-merged state, with the solving procedure of :mod:`.quantified`
for each value, neighbour values read off each model, and an interval search when blocking checks
get slow (:class:`CheckClock`).
"""

from __future__ import annotations

import bisect
import time

import claripy
from claripy.backends import z3 as bz3
from claripy.frontend.mixin.model_cache_mixin import ModelCache

from angr_ram.merging.clauses import PREFIX, ClauseTable, SolveStats
from angr_ram.merging.model_reuse import ModelStore
from angr_ram.merging.quantified import (
    _UNDECIDED,
    _base_solver,
    _check_top_level,
    _fallback,
    _query_variables,
    _rounds,
    _Scoped,
    solve,
)
from angr_ram.solver.model_eval import fast_eval_ast
from angr_ram.solver.neighbours import neighbour_values

# the time (seconds) a check is taken to cost before an enumeration has measured any (see CheckClock)
INTERVAL_CHECK = 0.25
NO_TIMEOUT = 4294967295        # z3's "no timeout"


class CheckClock:
    """The z3 checks of one enumeration, timed: a check that asks ``n`` intervals at once (or
    blocks ``n`` values found) stands for ``n`` checks of one, so it gets as long as those are
    expected to take, by the mean time of this enumeration's checks so far (at least
    ``SolveSettings.slow_blocking_check``), before z3 is stopped and fewer are asked at a time. The limit is
    measured, not a constant: a constant stops the union checks that would save the most on big
    merged formulas, and more of them on a loaded machine, where every check is slower. On rle at
    M = 10 the union of the last 12 gaps was unsat in 2.6-3.2 s; the constant limit (1.5 s) led to
    3.5 s of stopped checks and then 9.7 s of single ones."""

    def __init__(self, floor: float = 1.0):
        self.floor = floor         # seconds: the least limit (SolveSettings.slow_blocking_check)
        self.total = 0.0
        self.count = 0

    def add(self, seconds: float) -> None:
        """Count one check that took ``seconds``."""
        self.total += seconds
        self.count += 1

    def mean(self) -> float:
        """Mean seconds per check so far (``INTERVAL_CHECK`` before the first)."""
        return self.total / self.count if self.count else INTERVAL_CHECK

    def limit_ms(self, n: int) -> int:
        """The time limit (milliseconds) for one check that stands for ``n`` checks."""
        return int(1000 * max(self.floor, n * self.mean()))


def solve_many(table: ClauseTable, constraints, extra, exprs, n: int) -> list[tuple]:
    """Up to ``n`` distinct value tuples of ``exprs`` under the quantified query, each from a
    checked model (like claripy's ``batch_eval``). The values found so far are blocked inside one
    solver scope, so the constraint set is not re-asserted per value; a single expression whose
    blocking check got slow goes on by :func:`_enumerate_by_intervals`. With ``table.validate``
    every model goes through :func:`solve` (and its comparison with z3's quantified query)."""
    found: list[tuple] = []

    def block(row):
        return claripy.Or(*[e != v for e, v in zip(exprs, row, strict=True)])

    if table.validate:
        while len(found) < n:
            m = solve(table, constraints, [*extra, *(block(r) for r in found)])
            if m is None:
                break
            mc = ModelCache(m)
            found.append(tuple(fast_eval_ast(mc, e, True) for e in exprs))
        return found
    stats = table.stats
    clauses = table.clauses_of(constraints)
    qf = [c for c in (*constraints, *extra) if not any(v.startswith(PREFIX) for v in c.variables)]
    _check_top_level(constraints, extra)
    base = _base_solver(table, constraints)
    variables = _query_variables(base, [*extra, *exprs])
    placeholders = {cl.placeholder.args[0]: True for cl in clauses}
    learned: list = []
    extra_z3 = [bz3.convert(c) for c in extra]
    settings = table.settings
    clock = CheckClock(settings.slow_blocking_check)
    split = False
    try:
        with base.query(extra_z3) as s:
            blocked_qf = list(qf)
            while len(found) < n:
                stats.queries += 1
                start = time.perf_counter()
                # several values blocked at once: limited like a union of intervals
                limited = len(exprs) == 1 and settings.neighbours and len(found) > 1
                model = None
                query = ModelStore.query((*constraints, *extra)) if not found else None
                if query is not None and n == 1 and settings.reuse_models:   # an enumeration starts from z3's model
                    model = table.models.find(query, qf, clauses, variables)
                if model is None:
                    if limited:
                        s.set("timeout", clock.limit_ms(len(found)))
                    t0 = time.perf_counter()
                    try:
                        model = _rounds(s, stats, clauses, blocked_qf, variables, placeholders, learned, table.models)
                    finally:
                        if limited:
                            s.set("timeout", NO_TIMEOUT)
                    if model is not _UNDECIDED:
                        clock.add(time.perf_counter() - t0)
                    if query is not None and isinstance(model, dict):
                        table.models.add(query, model)
                if model is _UNDECIDED and limited:
                    split = True       # z3 did not answer in time: split the range at the values found
                    break
                if model is _UNDECIDED:
                    model = _fallback(blocked_qf, clauses, variables, placeholders, stats)
                if model is None:
                    break
                mc = ModelCache(model)
                row = tuple(fast_eval_ast(mc, e, True) for e in exprs)
                rows = [row]
                if len(exprs) == 1 and n > 1 and settings.neighbours:
                    near = neighbour_values(model, exprs[0], qf, clauses, variables, {r[0] for r in found} | {row[0]})
                    stats.neighbours += len(near)
                    rows += [(v,) for v in sorted(near)][:n - len(found) - 1]
                found += rows
                if len(exprs) == 1 and time.perf_counter() - start > settings.slow_blocking_check:
                    split = True       # the blocked values weigh on z3: split the range instead
                    break
                for r in rows:
                    blocked = block(r)
                    blocked_qf.append(blocked)     # the query now excludes every value found
                    s.add(bz3.convert(blocked))
    finally:
        base.learn(learned)
    if split and len(found) < n:           # the whole range, less the values found
        found += [(v,) for v in _enumerate_by_intervals(base, extra_z3, stats, clauses, qf, variables, placeholders,
                                                        exprs[0], n - len(found), [(0, (1 << exprs[0].length) - 1)],
                                                        {r[0] for r in found}, clock, settings.neighbours)]
    return found


def _without(intervals: list[tuple[int, int]], values: set) -> list[tuple[int, int]]:
    """``intervals`` (in the same order) with ``values`` cut out of them."""
    out = []
    vs = sorted(values)
    for lo, hi in intervals:
        inside = vs[bisect.bisect_left(vs, lo):bisect.bisect_right(vs, hi)]
        out += [(a + 1, b - 1) for a, b in zip([lo - 1, *inside], [*inside, hi + 1], strict=True) if a + 1 <= b - 1]
    return out


def _enumerate_by_intervals(base: _Scoped, extra_z3: list, stats: SolveStats, clauses, qf, variables: dict,
                            placeholders: dict, e, n: int, todo: list[tuple[int, int]],
                            known: set | None = None, clock: CheckClock | None = None,
                            neighbours: bool = True) -> list[int]:
    """Up to ``n`` values of ``e`` (unsigned) in the intervals ``todo``, by splitting an interval
    at each value found: a value ``v`` in ``[lo, hi]`` leaves ``[lo, v - 1]`` and ``[v + 1, hi]``
    to search, each one check with two bounds. Blocking the values found instead makes each
    check carry every earlier value, and on some merged states z3's time per check grows with
    their number (rle at M = 10: 0.1 s for the first of 95 exit codes, 20-300 s for the last
    ones). About two checks per value, fewer where a model's neighbours (:mod:`angr_ram.solver.neighbours`) show
    values first (``known``: the values found before, cut out of ``todo`` first): then every interval
    left is asked in one check first, with a time limit from ``clock`` (the enumeration's check
    times), and half as many at a time each time z3 does not answer in time, down to one by one.
    Each check asserts ``base``'s seated set, ``extra_z3`` and the bounds in one scope; the repair
    instances it finds are kept for the later ones (:meth:`_Scoped.learn`)."""
    found: list[int] = []
    clock = clock or CheckClock()
    taken = set(known or ())
    union = 1 << 30 if neighbours else 1      # intervals one check asks at once (at first: all)
    learned: list = []
    todo = list(reversed(todo))
    cut = set(taken)                   # values still to cut out of the intervals
    while todo and len(found) < n:
        if cut:                        # values found meanwhile (and a model's neighbours) split intervals
            todo = _without(todo, cut)
            cut.clear()
            if not todo:
                break
        lo, hi = todo.pop()
        group = [(lo, hi)]
        while len(group) < union and todo:    # is any value left in these gaps at once?
            group.append(todo.pop())
        whole = len(group) > 1
        if whole:
            bounds = [claripy.Or(*[claripy.And(claripy.UGE(e, a), claripy.ULE(e, b)) for a, b in group])]
        else:
            bounds = ([claripy.UGE(e, lo)] if lo > 0 else []) + ([claripy.ULE(e, hi)] if hi < (1 << e.length) - 1 else [])
        try:
            with base.query([*extra_z3, *[bz3.convert(b) for b in bounds]]) as s:
                stats.queries += 1
                if whole:              # worth it only if cheaper than the intervals one by one
                    s.set("timeout", clock.limit_ms(len(group)))
                start = time.perf_counter()
                try:
                    model = _rounds(s, stats, clauses, qf + bounds, variables, placeholders, learned)
                finally:
                    if whole:
                        s.set("timeout", NO_TIMEOUT)
                if model is not _UNDECIDED:        # a stopped check says nothing of a check's time
                    clock.add(time.perf_counter() - start)
        finally:
            base.learn(learned)
        if model is _UNDECIDED and not whole:
            model = _fallback(qf + bounds, clauses, variables, placeholders, stats)
        if model is _UNDECIDED:        # the union weighs on z3: half as many intervals at a time
            todo += reversed(group)
            union = len(group) // 2
            continue
        if model is None:
            continue                   # no value in these gaps
        v = fast_eval_ast(ModelCache(model), e, True)
        found.append(v)
        taken.add(v)
        if neighbours and len(found) < n:
            near = neighbour_values(model, e, qf, clauses, variables, taken)
            stats.neighbours += len(near)
            for w in sorted(near)[:n - len(found)]:
                found.append(w)
                taken.add(w)
                cut.add(w)
        if whole:
            todo += reversed(group)
            cut.add(v)                 # v is in one of these intervals
            continue
        if v < hi:
            todo.append((v + 1, hi))
        if v > lo:
            todo.append((lo, v - 1))
    return found
