"""Values of an expression found next to a model, without z3.

Reading every outcome of a merged state enumerates the values of one expression (its exit code,
a pointer) under the merged path constraint, one z3 check per value and about one more per gap
between values; on merged formulas each check takes 0.1-1 s. Most of those values are one input
byte away from a model already found: another digit, another run length, the other branch of one
merged iteration. This layer evaluates all single-variable changes of a model at once (every value
of each input byte, every ``k`` of a quantified clause) with the vectorized evaluator of
:mod:`angr_ram.plugins.enumeration`, keeps the rows that satisfy every quantifier-free constraint,
and checks one row per new value of the expression against the full quantified clauses; the models
it returns are real models of the query, each found again around itself until nothing new turns up.
The caller still asks z3 whether any value is left, so nothing is assumed complete.
"""

from __future__ import annotations

import numpy as np

from ..plugins import enumeration
from ..plugins.enumeration import Evaluator, _Unsupported, deep_recursion

MAX_DOMAIN_BITS = 8         # a variable of at most this many bits is changed to every value it can take
MAX_ROWS = 1 << 14          # candidate rows evaluated per model
MAX_ROUNDS = 64             # models expanded per call


def _split(constraints) -> tuple[dict, list]:
    lets, rest = {}, []
    for c in constraints:
        d = enumeration._definition(c)
        if d is not None and d[0] not in lets:
            lets[d[0]] = d[1]
        else:
            rest.append(c)
    return lets, rest


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


def _clause_holds(ev: Evaluator, cl, k, size: int):
    """Rows (boolean array) whose assignment satisfies the quantified clause ``cl``: its value of
    ``k`` is one of ``cl.ks`` and phi1, phi3(k) and every instance phi2(1..k) hold. Instance ``i``
    is evaluated once for all rows with ``k >= i``."""
    ok = np.zeros(size, dtype=bool)
    base = np.broadcast_to(ev.bool(cl.phi1), (size,))
    prefix = np.ones(size, dtype=bool)         # instances 1..i hold
    i = 0
    for kv in sorted(cl.ks):
        while i < kv and cl.phi2 is not None and prefix.any():
            i += 1
            inst = cl.instance(i)
            prefix = prefix & (np.broadcast_to(ev.bool(inst), (size,)) if inst is not None else False)
        third = cl.third(kv)
        if third is None or (cl.phi2 is not None and i < kv):
            continue
        ok |= (k == np.uint64(kv)) & base & prefix & np.broadcast_to(ev.bool(third), (size,))
    return ok


def neighbour_values(model: dict, e, qf: list, clauses: list, variables: dict, known: set) -> dict[int, dict]:
    """New values of ``e`` (not in ``known``) with a model of each: the models one variable away
    from ``model``, and from each model found, that satisfy ``qf`` and every clause of ``clauses``
    (:meth:`~.clauses.QuantifiedClause.holds`). ``variables`` names the query's variables (the keys
    of a full model). Empty when the expressions cannot be evaluated here."""
    lets, rest = _split(qf)
    if any(v.op != "BVS" for n, v in variables.items() if n not in lets):
        return {}               # a free boolean: not in the evaluator's terms
    # a change of a variable that ``e`` does not read (through let definitions too) keeps its value
    reads = _reads(e, lets)
    domains: dict[str, np.ndarray] = {}
    for name, v in variables.items():
        if name in reads and name not in lets and v.length <= MAX_DOMAIN_BITS:
            domains[name] = np.arange(1 << v.length, dtype=np.uint64)
    for cl in clauses:
        if cl.k.args[0] in reads:
            domains[cl.k.args[0]] = np.array(sorted(cl.ks), dtype=np.uint64)
    if not domains or e.length > 64:
        return {}
    free = [n for n in variables if n not in lets and variables[n].op == "BVS"]
    found: dict[int, dict] = {}
    queue = [model]
    seen = set(known)
    with deep_recursion():
        for _ in range(MAX_ROUNDS):
            if not queue:
                break
            base = queue.pop(0)
            cols = {n: [] for n in free}
            for name, dom in domains.items():
                for n in free:
                    cols[n].append(dom if n == name else np.full(len(dom), base.get(n, 0), dtype=np.uint64))
            size = sum(len(d) for d in domains.values())
            if size > MAX_ROWS:
                return found
            cols = {n: np.concatenate(parts) for n, parts in cols.items()}
            ev = Evaluator.over(cols, size, lets)
            try:
                vals = np.broadcast_to(ev.ev(e), (size,))
                fresh = np.flatnonzero(~np.isin(vals, np.fromiter(seen, dtype=np.uint64, count=len(seen))))
                if not len(fresh):
                    continue
                if len(fresh) < size:         # the constraints are evaluated on the rows with new values only
                    cols = {n: c[fresh] for n, c in cols.items()}
                    size, vals = len(fresh), vals[fresh]
                    ev = Evaluator.over(cols, size, lets)
                mask = np.ones(size, dtype=bool)
                for c in rest:
                    mask &= np.broadcast_to(ev.bool(c), (size,))
                    if not mask.any():
                        break
                for cl in clauses:
                    if mask.any():
                        mask &= _clause_holds(ev, cl, cols[cl.k.args[0]], size)
                if not mask.any():
                    continue
                for i in np.flatnonzero(mask):
                    v = int(vals[i])
                    if v in seen:
                        continue
                    m = {n: int(cols[n][i]) for n in free}
                    for name in lets:
                        leaf = variables.get(name)
                        if leaf is not None:
                            m[name] = int(np.broadcast_to(ev.ev(leaf), (size,))[i])
                    m = {**base, **m}
                    if any(cl.holds(m) for cl in clauses):
                        continue         # never taken: the rows were checked against every instance
                    seen.add(v)
                    found[v] = m
                    queue.append(m)
            except _Unsupported:
                return found
    return found
