"""Values of an expression found next to a model, without z3.

Reading every outcome of a merged state enumerates the values of one expression (its exit code,
a pointer) under the merged path constraint, one z3 check per value and about one more per gap
between values; on merged formulas each check takes 0.1-1 s. Most of those values are one input
byte away from a model already found: another digit, another run length, the other branch of one
merged iteration. This layer evaluates all single-variable changes of a model at once (every value
of each input byte the expression reads, every ``k`` of a quantified clause; on big formulas only
the byte values the formulas name and their neighbours) with the vectorized evaluator of
:mod:`angr_ram.plugins.enumeration`, and keeps the rows that satisfy every quantifier-free
constraint and every instance of the quantified clauses (phi2(1..k) for the row's own k); the models
it returns are real models of the query, each searched around in turn until nothing new turns up.
The caller still asks z3 whether any value is left, so nothing is assumed complete.
"""

from __future__ import annotations

import claripy
import numpy as np

from ..dag import count_nodes
from ..plugins import enumeration
from ..plugins.enumeration import Evaluator, _Unsupported, deep_recursion

MAX_DOMAIN_BITS = 8         # a variable of at most this many bits is changed to every value it can take
MAX_ROWS = 1 << 14          # candidate rows evaluated per model
MAX_ROUNDS = 64             # models searched around per call
FULL_DOMAINS = 1 << 22      # changed variables x 256 x expression nodes up to which every byte value is tried


def _small_values(exprs) -> set[int]:
    """The byte values a change of an input byte is tried with: the constants the expressions
    compare and compute with (below 256), each with its two neighbours and its negation, and the
    ends and middle of the byte range. The values a program tells apart are usually among them; a
    value missed here is still found by the caller's z3 check."""
    out = {0, 1, 2, 3, 126, 127, 128, 129, 254, 255}
    seen: set = set()
    todo = list(exprs)
    while todo:
        x = todo.pop()
        if not isinstance(x, claripy.ast.Base) or x.hash() in seen:
            continue
        seen.add(x.hash())
        if x.op == "BVV":
            c = x.args[0]
            for d in (c - 1, c, c + 1, (-c) & 0xFF):
                if 0 <= d < 256:
                    out.add(d)
        else:
            todo += [a for a in x.args if isinstance(a, claripy.ast.Base)]
    return out


def _reads(e, lets: dict) -> set:
    """The variables ``e`` depends on, through the definitions of the let symbols it uses."""
    out, todo = set(), list(e.variables)
    while todo:
        name = todo.pop()
        if name in out:
            continue
        out.add(name)
        if name in lets:
            todo += list(lets[name].variables)
    return out


def _domains(names, variables: dict, clauses, exprs, named) -> dict[str, np.ndarray]:
    """The values each variable of ``names`` is changed to: every value of a byte while the
    evaluation stays cheap (``len(names)`` x 256 x the nodes of ``exprs`` up to
    :data:`FULL_DOMAINS`), else :func:`_small_values` of the formulas ``named``; the ``k`` of a
    clause among ``names`` takes the clause's ``k_j``."""
    changed = [n for n in names if variables[n].op == "BVS" and variables[n].length <= MAX_DOMAIN_BITS]
    if len(changed) * count_nodes(*exprs) << MAX_DOMAIN_BITS <= FULL_DOMAINS:
        small = set(range(1 << MAX_DOMAIN_BITS))      # cheap enough to try every value
    else:
        small = _small_values(named)
    domains: dict[str, np.ndarray] = {}
    for name in changed:
        domains[name] = np.array(sorted(x for x in small if x < 1 << variables[name].length), dtype=np.uint64)
    for cl in clauses:
        if cl.k.args[0] in names:
            domains[cl.k.args[0]] = np.array(sorted(cl.ks), dtype=np.uint64)
    return domains


def _rows(base: dict, domains: dict, free: list) -> tuple[dict, int]:
    """The assignments that change one variable of ``base`` to each value of its domain, as
    columns of the variables ``free``, and their number."""
    cols = {n: [] for n in free}
    for name, dom in domains.items():
        for n in free:
            cols[n].append(dom if n == name else np.full(len(dom), base.get(n, 0), dtype=np.uint64))
    size = sum(len(d) for d in domains.values())
    return {n: np.concatenate(parts) for n, parts in cols.items()}, size


def _holding(ev, rest, clauses, cols: dict, size: int):
    """The rows of ``ev`` that satisfy every formula of ``rest`` and every clause (each instance
    up to the row's own ``k``)."""
    mask = np.ones(size, dtype=bool)
    for c in rest:
        mask &= np.broadcast_to(ev.bool(c), (size,))
        if not mask.any():
            return mask
    for cl in clauses:
        if mask.any():
            mask &= cl.rows_hold(ev, cols[cl.k.args[0]], size)
    return mask


def _model_at(i: int, base: dict, cols: dict, ev, size: int, lets: dict, variables: dict) -> dict:
    """The full model of row ``i``: ``base`` with the row's free variables and let symbols."""
    m = {n: int(c[i]) for n, c in cols.items()}
    for name in lets:
        leaf = variables.get(name)
        if leaf is not None:
            m[name] = int(np.broadcast_to(ev.ev(leaf), (size,))[i])
    return {**base, **m}


def _free(variables: dict, lets: dict) -> list | None:
    """The variables an assignment row gives values to (None if one is a free boolean, outside
    the evaluator's terms)."""
    if any(v.op != "BVS" for n, v in variables.items() if n not in lets):
        return None
    return [n for n in variables if n not in lets]


def neighbour_values(model: dict, e, qf: list, clauses: list, variables: dict, known: set) -> dict[int, dict]:
    """New values of ``e`` (not in ``known``) with a model of each: the models one variable away
    from ``model``, and from each model found, that satisfy ``qf`` and every clause of ``clauses``
    (:meth:`~.clauses.QuantifiedClause.holds`). ``variables`` names the query's variables (the keys
    of a full model). Empty when the expressions cannot be evaluated here."""
    lets, rest = enumeration.split_lets(qf)
    free = _free(variables, lets)
    if free is None or e.length > 64:
        return {}
    # a change of a variable that ``e`` does not read (through let definitions too) keeps its value
    reads = _reads(e, lets)
    domains = _domains([n for n in variables if n in reads and n not in lets], variables, clauses, [e, *rest], [e, *qf])
    if not domains:
        return {}
    found: dict[int, dict] = {}
    queue = [model]
    seen = set(known)
    per_base = sum(len(d) for d in domains.values())
    if per_base > MAX_ROWS:
        return found
    expanded = 0
    with deep_recursion():
        while queue and expanded < MAX_ROUNDS:
            # every model waiting is searched around in one evaluation (as many as MAX_ROWS allows):
            # the evaluator's cost is mostly per node, not per row
            take = min(len(queue), MAX_ROUNDS - expanded, MAX_ROWS // per_base)
            bases, queue = queue[:take], queue[take:]
            expanded += take
            parts = [_rows(b, domains, free)[0] for b in bases]
            cols = {n: np.concatenate([p[n] for p in parts]) for n in free}
            owner = np.repeat(np.arange(take), per_base)
            size = take * per_base
            ev = Evaluator.over(cols, size, lets, shared=False)
            try:
                vals = np.broadcast_to(ev.ev(e), (size,))
                fresh = np.flatnonzero(~np.isin(vals, np.fromiter(seen, dtype=np.uint64, count=len(seen))))
                if not len(fresh):
                    continue
                if len(fresh) < size:         # the constraints are evaluated on the rows with new values only
                    cols = {n: c[fresh] for n, c in cols.items()}
                    size, vals, owner = len(fresh), vals[fresh], owner[fresh]
                    ev = Evaluator.over(cols, size, lets, shared=False)
                mask = _holding(ev, rest, clauses, cols, size)
                for i in np.flatnonzero(mask):
                    v = int(vals[i])
                    if v in seen:
                        continue
                    m = _model_at(i, bases[owner[i]], cols, ev, size, lets, variables)
                    if any(cl.holds(m) for cl in clauses):
                        continue         # never taken: the rows were checked against every instance
                    seen.add(v)
                    found[v] = m
                    queue.append(m)
            except _Unsupported:
                return found
    return found


def neighbour_model(model: dict, failing: list, qf: list, clauses: list, variables: dict) -> dict | None:
    """A model of ``qf`` and ``clauses`` one variable away from ``model``, which fails the formulas
    ``failing`` (among ``qf``): only the variables those formulas read (through let definitions)
    are changed. None if no such change satisfies everything, or the formulas cannot be evaluated
    here."""
    lets, rest = enumeration.split_lets(qf)
    free = _free(variables, lets)
    if free is None:
        return None
    reads: set = set()
    for f in failing:
        reads |= _reads(f, lets)
    domains = _domains([n for n in variables if n in reads and n not in lets], variables, clauses, rest, qf)
    if not domains:
        return None
    cols, size = _rows(model, domains, free)
    if size > MAX_ROWS:
        return None
    with deep_recursion():
        ev = Evaluator.over(cols, size, lets, shared=False)
        try:
            mask = np.ones(size, dtype=bool)
            for f in failing:             # the formulas the model fails first: they rule out most rows
                mask &= np.broadcast_to(ev.bool(f), (size,))
                if not mask.any():
                    return None
            rows = np.flatnonzero(mask)
            cols = {n: c[rows] for n, c in cols.items()}
            size = len(rows)
            ev = Evaluator.over(cols, size, lets, shared=False)
            mask = _holding(ev, rest, clauses, cols, size)
            for i in np.flatnonzero(mask):
                m = _model_at(i, model, cols, ev, size, lets, variables)
                if not any(cl.holds(m) for cl in clauses):
                    return m
        except _Unsupported:
            return None
    return None
