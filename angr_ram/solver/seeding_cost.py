"""Whether seeding pays in a run: its cost weighed against the z3 time its answers save.

Seeding (:mod:`.seeding`) evaluates candidate assignments on a query's expressions before z3 is
asked. On small queries that costs microseconds; on queries over large expressions (a line of
symbolic length from ``fgets``, 99 bytes each an if-then-else over the line's end) a try costs
tens of milliseconds, z3 answers them in a few, and a crackme script ran 2.5x slower than stock
angr. The run's counters (:class:`~angr_ram.core.stats.RunStats`) give both sides: the seconds
and answers of the tries, and the seconds and count of z3's checks.
"""

from __future__ import annotations

from angr_ram.solver.evaluator import is_let

COST_TRIAL = 8               # tries before seeding's cost is weighed against z3's (worth_trying)
COST_FLOOR = 0.005           # ... and only where a try costs at least this many seconds on average
RETRY = 8                    # every this-many-th query is seeded anyway (the estimate stays current)
PROBE_TRIAL = 4              # fact probes before their cost is weighed (worth_probing)
PROBE_HIT_RATE = 0.1        # ... probing goes on while at least this share of probes learn a fact


def worth_trying(stats) -> bool:
    """Whether seeding is expected to save more than it costs in this run: after
    :data:`COST_TRIAL` tries, a try costs its average seconds (below :data:`COST_FLOOR` it is
    always worth it), and saves the answer rate times an average z3 check's seconds. Where it does
    not pay (queries over large expressions that z3 answers at once: a line of symbolic length
    from ``fgets``), queries go straight to z3, except every :data:`RETRY`-th, which keeps
    the estimate current."""
    tries = stats.seeded_answers + stats.seeded_misses
    if tries < COST_TRIAL or (tries + stats.seeded_skipped_cost) % RETRY == 0:
        return True
    cost = stats.seeded_seconds / tries
    if cost < COST_FLOOR:
        return True
    per_check = stats.z3_seconds / stats.z3_checks if stats.z3_checks else 0.0
    return cost <= per_check * stats.seeded_answers / tries


def worth_probing(stats) -> bool:
    """Whether asking the solver if a compared term has one value (a path fact,
    :mod:`angr_ram.solver.path_facts`) is expected to pay in this run: after
    :data:`PROBE_TRIAL` probes that cost at least :data:`COST_FLOOR` each on average, only while
    at least :data:`PROBE_HIT_RATE` of them learnt a fact; every :data:`RETRY`-th is asked
    anyway. A probe is two solver queries; on a line of symbolic length (a crackme over
    ``fgets``) each took 70 ms and none learnt anything: a third of the run."""
    if stats is None:
        return True
    n = stats.fact_probes
    if n < PROBE_TRIAL or (n + stats.fact_probes_skipped) % RETRY == 0:
        return True
    if stats.fact_probe_seconds / n < COST_FLOOR:
        return True
    return stats.fact_probe_hits >= PROBE_HIT_RATE * n


def too_many_variables(exprs, limit: int) -> bool:
    """Whether ``exprs`` have more than ``limit`` variables besides let-bound ones: read from
    claripy's variable sets, without walking the expressions (a query over a line of symbolic
    length with the stack bytes under it: 112 variables, and the walk cost 7 ms a query)."""
    names = set()
    for e in exprs:
        names |= e.variables
        if len(names) > limit and sum(not is_let(n) for n in names) > limit:
            return True
    return False
