"""Values of an expression found next to a model, without z3.

Reading every outcome of a merged state enumerates the values of one expression (its exit code,
a pointer) under the merged path constraint, one z3 check per value and about one more per gap
between values; on merged formulas each check takes 0.1-1 s. Most of those values are one input
byte away from a model already found: another digit, another run length, the other branch of one
merged iteration. This layer evaluates all single-variable changes of a model at once (every value
of each input byte the expression reads, every ``k`` of a quantified clause; on big formulas only
the byte values the formulas name and their neighbours) with the vectorized evaluator of
:mod:`angr_ram.solver.evaluator`, and keeps the rows that satisfy every quantifier-free
constraint and every instance of the quantified clauses (phi2(1..k) for the row's own k); the models
it returns are real models of the query, each searched around in turn until nothing new turns up.
The caller still asks z3 whether any value is left, so nothing is assumed complete.
"""

from __future__ import annotations

import claripy
import numpy as np

from angr_ram.core.dag import count_nodes
from angr_ram.solver import evaluator
from angr_ram.solver.columns import WideColumn, concatenate_columns
from angr_ram.solver.evaluator import Evaluator, _Unsupported, deep_recursion

MAX_DOMAIN_BITS = 8         # a variable of at most this many bits is changed to every value it can take;
                            # a wider one byte by byte (the bytes the expressions read)
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


def _reads(exprs, lets: dict, variables: dict) -> set:
    """The units of change the expressions ``exprs`` depend on, through the definitions of the let
    symbols they use: ``(name, lo, width)`` for each input variable, a whole one of at most
    :data:`MAX_DOMAIN_BITS` bits, else each byte of it that is read (an input given as one wide
    ``claripy.BVS`` is read byte by byte through ``Extract``s, as separate byte variables are)."""
    out: set = set()
    seen: set = set()
    todo = list(exprs)
    while todo:
        x = todo.pop()
        h = x.hash()
        if h in seen or not x.variables:
            continue
        seen.add(h)
        if x.op == "BVS":
            name = x.args[0]
            if name in lets:
                todo.append(lets[name])
            elif name in variables:
                out |= _units(name, x.length, 0, x.length - 1)
        elif x.op == "Extract" and x.args[2].op == "BVS" and x.args[2].args[0] not in lets \
                and x.args[2].args[0] in variables:
            out |= _units(x.args[2].args[0], x.args[2].length, x.args[1], x.args[0])
        elif x.op == "BoolS":
            continue
        else:
            todo += [a for a in x.args if isinstance(a, claripy.ast.Base)]
    return out


def _units(name: str, length: int, lo: int, hi: int) -> set:
    """The units of change of variable ``name`` (``length`` bits) that bits ``lo..hi`` lie in."""
    if length <= MAX_DOMAIN_BITS:
        return {(name, 0, length)}
    return {(name, 8 * b, min(8, length - 8 * b)) for b in range(lo // 8, hi // 8 + 1)}


def _domains(units, variables: dict, clauses, exprs, named) -> dict[tuple, np.ndarray]:
    """The values each unit of ``units`` (:func:`_reads`) is changed to: every value of a byte
    while the evaluation stays cheap (``len(units)`` x 256 x the nodes of ``exprs`` up to
    :data:`FULL_DOMAINS`), else :func:`_small_values` of the formulas ``named``; the ``k`` of a
    clause among them takes the clause's ``k_j``."""
    changed = sorted(u for u in units if variables[u[0]].op == "BVS")
    if len(changed) * count_nodes(*exprs) << MAX_DOMAIN_BITS <= FULL_DOMAINS:
        small = set(range(1 << MAX_DOMAIN_BITS))      # cheap enough to try every value
    else:
        small = _small_values(named)
    domains: dict[tuple, np.ndarray] = {}
    for unit in changed:
        domains[unit] = np.array(sorted(x for x in small if x < 1 << unit[2]), dtype=np.uint64)
    for cl in clauses:
        name = cl.k.args[0]
        unit = (name, 0, variables[name].length) if name in variables else None
        if unit is not None and any(u[0] == name for u in units):
            for u in [u for u in domains if u[0] == name]:
                del domains[u]
            domains[unit] = np.array(sorted(cl.ks), dtype=np.uint64)
    return domains


def _column(base: dict, n: str, length: int, size: int):
    value = base.get(n, 0)
    if length > 64:
        return WideColumn.full(length, value, size)
    return np.full(size, value, dtype=np.uint64)


def _rows(base: dict, domains: dict, free: list, variables: dict) -> tuple[dict, int]:
    """The assignments that change one unit of ``base`` to each value of its domain, as columns
    of the variables ``free``, and their number."""
    cols = {n: [] for n in free}
    for (name, lo, width), dom in domains.items():
        for n in free:
            col = _column(base, n, variables[n].length, len(dom))
            if n == name:
                if isinstance(col, WideColumn):
                    col = col.set_bits(lo, width, dom)
                else:
                    m = np.uint64(((1 << width) - 1) << lo)
                    col = (col & ~m) | (dom << np.uint64(lo))
            cols[n].append(col)
    size = sum(len(d) for d in domains.values())
    return {n: concatenate_columns(parts) for n, parts in cols.items()}, size


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
    m = {n: c.value(i) if isinstance(c, WideColumn) else int(c[i]) for n, c in cols.items()}
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


def neighbour_values(model: dict, e, qf: list, clauses: list, variables: dict, known: set,
                     limit: int | None = None) -> dict[int, dict]:
    """New values of ``e`` (not in ``known``) with a model of each: the models one variable away
    from ``model``, and from each model found, that satisfy ``qf`` and every clause of ``clauses``
    (:meth:`~.clauses.QuantifiedClause.holds`). ``variables`` names the query's variables (the keys
    of a full model). Empty when the expressions cannot be evaluated here. At most ``limit``
    values (None: all within :data:`MAX_ROUNDS`): a caller that asks for a few values of a free
    64-bit pointer (angr's 257 of a symbolic jump target) does not build 200,000 models."""
    lets, rest = evaluator.split_lets(qf)
    free = _free(variables, lets)
    if free is None or e.length > 64:
        return {}
    # a change of a variable that ``e`` does not read (through let definitions too) keeps its value
    domains = _domains(_reads([e], lets, variables), variables, clauses, [e, *rest], [e, *qf])
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
        while queue and expanded < MAX_ROUNDS and (limit is None or len(found) < limit):
            # every model waiting is searched around in one evaluation (as many as MAX_ROWS allows):
            # the evaluator's cost is mostly per node, not per row
            take = min(len(queue), MAX_ROUNDS - expanded, MAX_ROWS // per_base)
            bases, queue = queue[:take], queue[take:]
            expanded += take
            parts = [_rows(b, domains, free, variables)[0] for b in bases]
            cols = {n: concatenate_columns([p[n] for p in parts]) for n in free}
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
                    if limit is not None and len(found) >= limit:
                        break
            except _Unsupported:
                return found
    return found


def neighbour_model(model: dict, failing: list, qf: list, clauses: list, variables: dict) -> dict | None:
    """A model of ``qf`` and ``clauses`` one variable away from ``model``, which fails the formulas
    ``failing`` (among ``qf``): only the variables those formulas read (through let definitions)
    are changed. None if no such change satisfies everything, or the formulas cannot be evaluated
    here."""
    lets, rest = evaluator.split_lets(qf)
    free = _free(variables, lets)
    if free is None:
        return None
    domains = _domains(_reads(failing, lets, variables), variables, clauses, rest, qf)
    if not domains:
        return None
    cols, size = _rows(model, domains, free, variables)
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
