"""Seeded models: answer a satisfiability or one-model query with a cheap candidate assignment
before z3 is asked: in angr-ram's claripy frontends (:mod:`.frontends`), whose
:class:`~.frontends.SeedingMixin` sits right above ``FullFrontend`` and calls this module.

z3 can spend minutes on a query that one well-chosen input satisfies: after a strong hash
(``hashv == stored_hashv`` in uthash's bucket chain) the satisfying input is one of the keys the
program holds in memory, which a model search finds only by inverting the hash. Before claripy's
full frontend hands a query to z3 (its own model cache having failed), this layer evaluates the
query's constraints on a batch of candidate assignments at once, with the vectorized evaluator of
:mod:`.evaluator`:

* the models claripy already holds for the query's constraints (models of sibling queries);
* all-zero;
* constants placed over the input bytes, in both byte orders, at every position: first those of
  the query's own goals, then those of its constraints, then the concrete words the program
  stores in its heap objects (stored keys, hashes, lengths), each on a sibling model and on zero.

The later tiers cost a full evaluation each and answer where the program's stored constants matter
(a bucket lookup), rarely elsewhere: a caller that knows its querying site (resolution: the
instruction) names it with :func:`site`; a site where fewer than one in :data:`SITE_RATE` of its
last tries answered from them skips them, except every :data:`SITE_RETRY`-th query (counted in
``seeded_tiers_skipped``).

First of all, a sibling model that satisfies the query's own constraints answers: claripy keeps
only models of the solver's constraints, so nothing else is evaluated (counted in
``seeded_siblings``). claripy's composite solver reaches this layer through
``check_satisfiability``, which does not look at those models; its ``eval`` and ``batch_eval`` have
tried them already, and skip this step.

A candidate that satisfies every constraint is a real model (let-bound symbols take their defining
values, so their definitions hold), so the answer is exact; it also goes into claripy's model cache
like a model z3 returns. Nothing satisfies: the query goes to z3 as before. Unsatisfiable queries
always need z3. Counted in ``seeded_answers`` and ``seeded_misses``.
"""

from __future__ import annotations

import contextvars
import re
import time

import claripy
import numpy as np
from claripy.errors import UnsatError

from angr_ram.core.context import setting
from angr_ram.core.scope import LRU, current, memo
from angr_ram.solver.columns import WideColumn, column_of
from angr_ram.solver.evaluator import Evaluator, _leaves, _Unsupported, dag_nodes, deep_recursion, split_lets
from angr_ram.solver.neighbours import neighbour_values
from angr_ram.solver.seed_constants import _pieces, _query_constants
from angr_ram.solver.seeding_cost import too_many_variables, worth_trying

MAX_CANDIDATES = 1024   # assignments evaluated per batch (at most three batches per query)
MAX_VARIABLES = 64      # free variables of a query beyond which seeding is not tried
MAX_WIDE_BITS = 8 * 4096   # a free variable wider than 64 bits (one BVS for a whole input) up to this
SIBLING_MODELS = 2      # claripy's cached models used as candidates and as bases for placements
RELAXED_ROWS = 1 << 16       # combinations of let values enumerated by the relaxed check
UNSAT = object()             # :func:`attempt`'s answer when the relaxed query is unsatisfiable
SITE_TRIAL = 4               # tries of the later tiers at a site before its rate counts
SITE_RATE = 8                # ... skipped while fewer than one in this many tries answered
SITE_RETRY = 8               # ... but tried again at every this-many-th query there
SITE_WINDOW = 32             # tries (and answers) counted are those of about this many last tries

# constants of the state whose query is running (see :func:`source`)
_SOURCE: contextvars.ContextVar = contextvars.ContextVar("angr_ram_seeding_source", default=None)
# the querying site, when its caller names it (see :func:`site`)
_SITE: contextvars.ContextVar = contextvars.ContextVar("angr_ram_seeding_site", default=None)


def source(fn):
    """While the block runs, ``fn()`` gives the memory constants of the querying state (a callable,
    called only when a query is actually seeded; None: none)."""
    return setting(_SOURCE, fn)


def site(key):
    """While the block runs, queries are attributed to the site ``key`` (a hashable value, such as
    an instruction address) for the skipping of later candidate tiers."""
    return setting(_SITE, key)


class _SiteRecord:
    """Queries at one site that reached the later tiers, tries of them and answers from them."""

    __slots__ = ("answers", "queries", "tries")

    def __init__(self):
        self.queries = self.tries = self.answers = 0

    def skip(self) -> bool:
        """Whether this query skips the later tiers (counted as one more query)."""
        self.queries += 1
        if self.tries < SITE_TRIAL or self.answers * SITE_RATE >= self.tries:
            return False
        return self.queries % SITE_RETRY != 0

    def tried(self, answered: bool) -> None:
        if self.tries >= SITE_WINDOW:      # halve the history: the rate follows recent tries
            self.tries //= 2
            self.answers //= 2
        self.tries += 1
        self.answers += answered


def _site_record() -> _SiteRecord | None:
    key = _SITE.get()
    if key is None:
        return None
    m = memo("seeding.sites", lambda: LRU(4096))
    rec = m.lookup(key)
    if rec is None:
        rec = _SiteRecord()
        m.put(key, rec)
    return rec


def enabled() -> bool:
    """True inside a run that seeds models (``RelocatableMemory(seeded_models=True)``, the default)."""
    scope = current()
    return scope is not None and scope.config is not None and scope.config.seeded_models


def _natural(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


class Seeder:
    """Builds the candidates of one query and evaluates them (one instance per query)."""

    def __init__(self, constraints, extra, models):
        self.lets, self.rest = split_lets((*constraints, *extra))
        leaves = _leaves([*constraints, *extra])
        self.free = [v for n, v in sorted(leaves.items(), key=lambda kv: _natural(kv[0]))
                     if n not in self.lets]
        self.leaves = leaves
        self.models = models
        self.extra = extra
        self.constraints = constraints

    def usable(self) -> bool:
        """Whether every free variable is a bit-vector (of at most 64 bits, or of whole bytes up
        to :data:`MAX_WIDE_BITS`: an input given as one wide ``claripy.BVS``), and there are few."""
        return 0 < len(self.free) <= MAX_VARIABLES and all(
            v.op == "BVS" and (v.length <= 64 or (v.length % 8 == 0 and v.length <= MAX_WIDE_BITS))
            for v in self.free)

    def _columns(self, rows: list[dict]) -> dict:
        return {v.args[0]: column_of([r[v.args[0]] for r in rows], v.length) for v in self.free}

    def _bases(self) -> list[dict]:
        names = [v.args[0] for v in self.free]
        bases = []
        for m in self.models[:SIBLING_MODELS]:
            bases.append({n: m.get(n, 0) for n in names})
        bases.append(dict.fromkeys(names, 0))
        return bases

    def tiers(self, memory_constants):
        """Batches of candidate assignments of the free variables, cheapest and likeliest first
        (each at most MAX_CANDIDATES rows): sibling models and zero with the goals' constants
        placed, then the constants stored in memory, then those of the constraints."""
        bases = self._bases()
        slots = []             # input bytes in stream order: (name, shift)
        for v in self.free:
            if v.length % 8 == 0:
                slots += [(v.args[0], v.length - 8 * (k + 1)) for k in range(v.length // 8)]
        seen: set = set()
        sources = (lambda: _query_constants(self.extra),          # computed only when reached
                   lambda: sorted(memory_constants(), key=lambda c: (-c[1], c[0])),
                   lambda: _query_constants(self.constraints))
        for tier, source_of in enumerate(sources):
            consts = source_of()
            rows = list(bases) if tier == 0 else []
            for value, n in consts:
                for piece in _pieces(value, n):
                    if piece in seen or len(piece) > len(slots):
                        continue
                    seen.add(piece)
                    for p in range(len(slots) - len(piece) + 1):
                        for base in bases:
                            row = dict(base)
                            for k, byte in enumerate(piece):
                                name, shift = slots[p + k]
                                row[name] = (row[name] & ~(0xFF << shift)) | (byte << shift)
                            rows.append(row)
                    if len(rows) >= MAX_CANDIDATES:
                        break
                if len(rows) >= MAX_CANDIDATES:
                    break
            if rows:
                yield rows[:MAX_CANDIDATES]

    def sibling(self):
        """``(evaluator, row)`` of the first sibling model that satisfies the query's own
        constraints, or None. claripy keeps only models that satisfy the solver's constraints (it
        drops those a new constraint falsifies, and answers ``satisfiable`` from them the same
        way), so only the query's own constraints are evaluated: on a merged state's large
        constraints this is a few nodes instead of thousands."""
        if not self.models:
            return None
        rows = self._bases()[:len(self.models)]
        cols = self._columns(rows)
        ev = Evaluator.over(cols, len(rows), self.lets)
        mask = np.ones(len(rows), dtype=bool)
        own = {id(c) for c in self.extra}
        for c in self.rest:
            if id(c) in own:
                mask &= ev.bool(c)
                if not mask.any():
                    return None
        return ev, int(np.argmax(mask))

    def solve(self, rows: list[dict]):
        """The evaluator over ``rows`` and the index of the first row satisfying every constraint
        (``None`` when none does)."""
        cols = self._columns(rows)
        ev = Evaluator.over(cols, len(rows), self.lets)
        mask = np.ones(len(rows), dtype=bool)
        for c in reversed(self.rest):       # the query's own and the newest constraints first
            mask &= ev.bool(c)
            if not mask.any():
                return ev, None
        return ev, int(np.argmax(mask))

    def model(self, ev, i: int) -> dict:
        """The full model of row ``i``: the free variables and the let-bound symbols' values."""
        out = {}
        for v in self.free:
            col = ev.vars.get(v.args[0])
            out[v.args[0]] = (col.value(i) if isinstance(col, WideColumn)
                              else int(np.broadcast_to(ev.ev(v), (ev.size,))[i]))
        for name in self.lets:
            leaf = self.leaves.get(name)
            if leaf is not None:
                out[name] = int(np.broadcast_to(ev.ev(leaf), (ev.size,))[i])
        return out


def attempt(frontend, extra_constraints, siblings: bool = True):
    """``(evaluator, row, model)`` of a candidate satisfying ``frontend``'s constraints and
    ``extra_constraints``, or None (then the caller asks z3). ``siblings=False`` when claripy's
    model cache has just tried its models on the same query (``satisfiable``, ``eval`` and
    ``batch_eval`` reach this layer only after that; ``check_satisfiability`` does not)."""
    constraints = list(frontend.constraints)
    extra = tuple(extra_constraints or ())
    if not constraints and not extra:
        return None
    if too_many_variables((*constraints, *extra), MAX_VARIABLES):
        return None
    models = [m.model for m in list(getattr(frontend, "_models", ()))[:SIBLING_MODELS]]
    s = Seeder(constraints, extra, models)
    if not s.usable():
        return None
    src = _SOURCE.get()
    mem = src if src is not None else frozenset
    stats = current().stats
    if not worth_trying(stats):
        stats.seeded_skipped_cost += 1
        return None
    t0 = time.perf_counter()
    try:
        with deep_recursion():
            found = _first_candidate(s, mem, extra, stats, siblings)
            if found is UNSAT:
                return UNSAT
            ev, i = found
            if i is None:
                stats.seeded_misses += 1
                return None
            model = s.model(ev, i)
    except (_Unsupported, OverflowError):
        return None
    finally:
        stats.seeded_seconds += time.perf_counter() - t0
    stats.seeded_answers += 1
    hook = getattr(frontend, "_model_hook", None)
    if hook is not None:
        hook(model)
    return ev, i, model


def _first_candidate(s: Seeder, mem, extra, stats, siblings: bool = True):
    """UNSAT (the constraints without the let definitions are unsatisfiable), or the evaluator of
    the first tier of candidates that has a satisfying row and that row's index (``(ev, None)``
    when no tier has one)."""
    ev, i = None, None
    if s.lets and _relaxed_unsat(s.lets, s.rest, extra):
        stats.relaxed_unsat += 1
        return UNSAT
    found = s.sibling() if siblings else None
    if found is not None:
        stats.seeded_siblings += 1
        return found
    rec = None
    for k, rows in enumerate(s.tiers(mem)):
        if k == 1:
            rec = _site_record()
            if rec is not None and rec.skip():
                stats.seeded_tiers_skipped += 1
                rec = None
                break
        ev, i = s.solve(rows)
        if i is not None:
            break
    if rec is not None:
        rec.tried(i is not None)
    return ev, i


def _value_set(e, limit: int = MAX_CANDIDATES) -> list | None:
    """The values an if-then-else selection of constants can take (its leaves), or None when a
    leaf is not a constant or there are more than ``limit``."""
    out: set = set()
    for x in dag_nodes(e, lambda x: (x.args[1], x.args[2]) if x.op == "If" else ()):
        if x.op == "If":
            continue
        if x.op == "BVV":
            out.add(x.args[0])
            if len(out) > limit:
                return None
        else:
            return None
    return sorted(out)


def _relaxed_unsat(lets: dict, rest: list, goals: tuple) -> bool:
    """Whether the constraints over let-bound symbols alone, connected to the goals, are
    unsatisfiable when each symbol ranges over the constants its definition selects from (a
    relaxation of the query, so its unsatisfiability is the query's). A resolution question such as
    "in this object and not in it" is decided on the few pointers a table holds, without the hash
    that selects among them (z3 bit-blasts the hash and can take minutes)."""
    only_lets = [c for c in rest if c.variables and c.variables <= lets.keys()]
    if goals:
        names = set().union(*(g.variables for g in goals)) & lets.keys()
    else:       # the whole state: every constraint over let-bound symbols alone
        names = set().union(*(c.variables for c in only_lets))
    if not names:
        return False
    picked, grew = [], True
    while grew:
        grew = False
        left = []
        for c in only_lets:
            if c.variables & names:
                names |= c.variables
                picked.append(c)
                grew = True
            else:
                left.append(c)
        only_lets = left
    if not picked:
        return False
    sets = {}
    size = 1
    for n in sorted(names):
        vs = _value_set(lets[n])
        if vs is None:
            return False
        sets[n] = vs
        size *= len(vs)
        if size > RELAXED_ROWS:
            return False
    grids = np.meshgrid(*(np.array(v, dtype=np.uint64) for v in sets.values()), indexing="ij")
    cols = {n: g.ravel() for n, g in zip(sets, grids, strict=True)}
    ev = Evaluator.over(cols, size, {})
    mask = np.ones(size, dtype=bool)
    for c in picked:
        mask &= ev.bool(c)
    return not mask.any()


def value_at(ev, e, i: int):
    """The value of ``e`` in row ``i`` of ``ev`` as claripy gives it (int or bool)."""
    if isinstance(e, claripy.ast.Bool):
        return bool(np.broadcast_to(ev.bool(e), (ev.size,))[i])
    if e.length > 64:
        raise _Unsupported("wide value")
    return int(np.broadcast_to(ev.ev(e), (ev.size,))[i])


def seeded_satisfiable(original, self, extra_constraints=(), exact=None):
    """claripy's last step before z3 for ``satisfiable``: a satisfying candidate answers True."""
    r = attempt(self, extra_constraints, siblings=False)
    if r is not None:
        return r is not UNSAT
    return original(self, extra_constraints=extra_constraints, exact=exact)


def seeded_check(original, self, extra_constraints=(), exact=None):
    """``check_satisfiability`` likewise ("SAT" from a satisfying candidate). Without extra
    constraints a cached model answers: claripy keeps only the models that satisfy every
    constraint added since (its ``satisfiable`` answers from them; a composite solver asks its
    children's ``check_satisfiability``, which went to z3 each time a branch was added)."""
    if not extra_constraints and getattr(self, "_models", None):
        return "SAT"
    r = attempt(self, extra_constraints)
    if r is not None:
        return "UNSAT" if r is UNSAT else "SAT"
    return original(self, extra_constraints=extra_constraints, exact=exact)


def seeded_batch_eval(original, self, exprs, n, extra_constraints=(), exact=None):
    """One solution of ``exprs`` from a satisfying candidate; several solutions of one expression
    with the neighbours of each model (:func:`enumerate_values`); else z3."""
    exprs = list(exprs)
    if n > 1 and len(exprs) == 1 and isinstance(exprs[0], claripy.ast.BV) and exprs[0].length <= 64:
        return enumerate_values(original, self, exprs[0], n, tuple(extra_constraints or ()), exact)
    if n == 1 and exprs:
        r = attempt(self, extra_constraints, siblings=False) if _evaluable(exprs) else None
        if r is UNSAT:
            raise UnsatError("angr-ram: unsatisfiable without the let definitions (seeding)")
        if r is not None:
            ev, i, _ = r
            try:
                return [tuple(value_at(ev, e, i) for e in exprs)]
            except _Unsupported:
                pass
    return original(self, exprs, n, extra_constraints=extra_constraints, exact=exact)


def seeded_eval(original, self, e, n, extra_constraints=(), exact=None):
    """One solution of ``e`` from a satisfying candidate (more solutions: z3)."""
    if n == 1 and _evaluable([e]):
        r = attempt(self, extra_constraints, siblings=False)
        if r is UNSAT:
            raise UnsatError("angr-ram: unsatisfiable without the let definitions (seeding)")
        if r is not None:
            ev, i, _ = r
            try:
                return (value_at(ev, e, i),)
            except _Unsupported:
                pass
    return original(self, e, n, extra_constraints=extra_constraints, exact=exact)


def enumerate_values(original, frontend, e, n: int, extra: tuple, exact=None) -> list[tuple]:
    """Up to ``n`` values of ``e`` under ``frontend``'s constraints and ``extra``, each from a real
    model, like claripy's ``batch_eval``: a model (seeded or z3's), then the values one variable
    away from it (:func:`angr_ram.merging.neighbours.neighbour_values`, every row checked against
    every constraint by evaluation), then the next model with every value found so far excluded,
    until z3 finds none. A merged path's exit code takes dozens of values, most one input byte
    apart, and on its large constraints each z3 check takes a good fraction of a second."""

    qf = [*frontend.constraints, *extra]
    variables = _leaves([*qf, e])
    found: list[int] = []
    while len(found) < n:
        got = _value_and_model(original, frontend, e, (*extra, *(e != v for v in found)), exact)
        if got is None:
            break
        found.append(got[0])
        if len(found) < n and got[1] is not None:
            model = {name: got[1].get(name, 0) for name in variables}
            try:
                near = neighbour_values(model, e, qf, [], variables, set(found), limit=n - len(found))
            except (_Unsupported, OverflowError, RecursionError):
                near = {}
            hook = getattr(frontend, "_model_hook", None)
            for v in sorted(near)[:n - len(found)]:
                found.append(v)
                if hook is not None:      # claripy's cache answers later calls from its models only
                    hook(near[v])
    if not found:
        raise UnsatError("unsat")        # as claripy's batch_eval
    return [(v,) for v in found]


def _value_and_model(original, frontend, e, extra: tuple, exact):
    """``(value of e, the model it came from or None)`` of one solution, or None when unsat."""
    models: list[dict] = []
    hook = getattr(frontend, "_model_hook", None)

    def keep(m):
        models.append(m)
        hook(m)

    if hook is not None:
        frontend._model_hook = keep
    try:
        rows = seeded_batch_eval(original, frontend, [e], 1, extra, exact)
    except UnsatError:
        return None
    finally:
        if hook is not None:
            del frontend._model_hook
    if not rows:
        return None
    return rows[0][0], (models[-1] if models else None)


def _evaluable(exprs) -> bool:
    return all(isinstance(e, claripy.ast.Bool) or (isinstance(e, claripy.ast.BV) and e.length <= 64) for e in exprs)
