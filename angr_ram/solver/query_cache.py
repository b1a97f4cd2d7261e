"""Run-wide query caching: syntactic, and address-aware (equal up to renaming of base addresses).

A satisfiability question ``SAT(constraints /\\ goals)`` (``satisfiable``, ``is_true``,
``is_false``) is first sliced to the constraints that share input bytes with the goals
(:mod:`.independence`; base addresses do not connect constraints: under substitution they are
constants), then looked up:

* ``syntactic``: key = the substituted slice and goals, compared exactly (like KLEE's cache).
* ``aa``: key = a canonical digest of the *unsubstituted* slice and goals in which every base
  address is numbered by first occurrence and stands for the size of its object
  (:class:`~.persistent_cache.Canonicalizer`); a hit is then confirmed as in Algorithm 1 of the
  address-aware query caching paper: the numbering gives a bijection between the base addresses of
  the two queries, which must map objects to objects of equal size and make the rest structurally
  equal (:func:`isomorphic`). Such queries are equisatisfiable for programs whose behaviour does
  not depend on the numeric value of addresses.

Model queries (``eval`` / ``batch_eval`` of one solution) are cached as well: the cache keeps the
model (an assignment of every non-address variable of the sliced query) and, on a hit, evaluates
the new query's constraints under it, with the new address constraints substituted. The model is
used only when every constraint and goal holds, so a translated model is always a real solution;
a model that does not carry over is counted as rejected and the solver is asked. Only one-solution
queries are cached: a shorter answer to ``eval(e, n)`` claims there are no other solutions, and
that cannot be checked without the solver.

Engine-internal queries that compare a pointer with concrete heap addresses (a resolution that
excludes an unmapped gap between objects) are not address-agnostic: they are asked inside
:func:`address_specific` and are never answered or remembered by the address-aware part; nor are
queries over bases that a segment model has embedded in a segment (contiguity is then visible).

One cache serves every state of a run. With ``validate=True`` every hit is also answered by the
solver, and a mismatch raises :class:`~angr_ram.core.errors.CacheMismatch` naming both queries.
With ``persist`` the answers are also kept on disk (:mod:`.persistent_cache`).
"""

from __future__ import annotations

import collections
import contextvars
import logging

from claripy.errors import UnsatError
from claripy.frontend.mixin.model_cache_mixin import ModelCache

from angr_ram.core.context import setting
from angr_ram.core.errors import AngrRamError
from angr_ram.core.scope import LRU
from angr_ram.solver.independence import Footprints, components, slice_constraints
from angr_ram.solver.isomorphism import isomorphic
from angr_ram.solver.model_eval import fast_eval_ast
from angr_ram.solver.persistent_cache import Canonicalizer, PersistentStore

_SPECIFIC = contextvars.ContextVar("angr_ram_address_specific", default=False)
_MODEL_LEAVES = ("BVS", "BoolS")


def address_specific():
    """Queries asked inside this block are not address-agnostic (see the module docstring)."""
    return setting(_SPECIFIC, True)


log = logging.getLogger(__name__)

class CacheMismatch(AngrRamError):
    """A cached answer differs from the solver's answer (validation mode)."""


SETTLED_LIMIT = 200_000    # constraints remembered per substitution as made true, or not, by it


class _Query:
    """One question in the cache's terms: kind, slice, goals, expressions and keys."""

    __slots__ = ("kind", "sliced", "goals", "exprs", "syn", "aa", "names")

    def __init__(self, kind, sliced, goals, exprs, syn, aa, names):
        self.kind, self.sliced, self.goals, self.exprs = kind, sliced, goals, exprs
        self.syn, self.aa, self.names = syn, aa, names

    def describe(self) -> str:
        """The query for error messages."""
        return f"{self.kind} of {list(self.exprs)} with goals {list(self.goals)} under {self.sliced}"


def _well_formed(kind: str, raw, n: str) -> bool:
    """Whether a record read from disk has the shape answers of ``kind`` have: a bool for ``sat``,
    at most ``n`` ints for ``evalN``, ``"unsat"`` or [position, value] int pairs for ``model``."""
    if kind == "sat":
        return isinstance(raw, bool)
    if kind == "model":
        return raw == "unsat" or (isinstance(raw, list) and all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in p)
            and p[0] >= 0 for p in raw))
    if kind.startswith("eval"):
        return isinstance(raw, list) and n.isdigit() and len(raw) <= int(n) and all(isinstance(x, int) for x in raw)
    return False


class SyntacticKeys:
    """Key policy of the ``syntactic`` cache: a query is found again only as the same substituted
    expressions (no address-aware key)."""

    name = "syntactic"

    def __init__(self, canon: Canonicalizer):
        self.canon = canon

    def address_aware(self, kind, sliced, goals, exprs, sizes, embedded, stats):  # noqa: ARG002
        """``(key, variable names)`` under which an equal query over other objects is found: none."""
        return None, None


class AddressAwareKeys(SyntacticKeys):
    """Key policy of the ``aa`` cache: the canonical key of the unsubstituted query with its bases
    numbered and sized (:class:`~.persistent_cache.Canonicalizer`), except for a query that must
    stay address-specific (:func:`address_specific`, or one over bases embedded in a segment)."""

    name = "aa"

    def address_aware(self, kind, sliced, goals, exprs, sizes, embedded, stats):
        tagged = _SPECIFIC.get()
        if not tagged and embedded:
            tagged = any(not x.variables.isdisjoint(embedded) for x in (*sliced, *goals, *exprs))
        if tagged:
            if stats is not None:
                stats.cache_tagged += 1
            return None, None
        return self.canon.key(kind, sliced, goals, exprs, sizes)


KEY_POLICIES = {p.name: p for p in (SyntacticKeys, AddressAwareKeys)}


class QueryCache:
    """A run-wide cache of satisfiability and model answers (modes ``syntactic`` and ``aa``), each
    map bounded to ``limit`` entries (least recently used first out)."""

    def __init__(self, mode: str, validate: bool = False, stats=None, persist=None, limit: int = 100_000):
        if mode not in KEY_POLICIES:
            raise AngrRamError(f"unknown cache mode {mode!r}; use None, 'syntactic' or 'aa'")
        self.mode = mode
        self.validate = validate
        self.stats = stats
        if not isinstance(limit, int) or limit <= 0:
            raise AngrRamError(f"the query cache limit must be a positive number of entries, not {limit!r}")
        self.limit = limit
        self._syntactic: LRU = LRU(limit)
        self._aa: LRU = LRU(limit)
        self._aa_size = 0
        self._canon = Canonicalizer(max(limit * 5, 1000))
        self.keys = KEY_POLICIES[mode](self._canon)
        self._footprints = Footprints(max(limit * 2, 1000))
        self.store = None
        self.misses: collections.deque | None = None      # debug mode (keep_misses)
        self.store_error: str | None = None   # why the persistent store could not be used (the run goes on without it)
        self.store_failed: str | None = None  # why it stopped working during the run (set when closed)
        if persist:
            try:
                self.store = PersistentStore(None if persist is True else persist)
            except AngrRamError as e:
                self.store_error = str(e)
                log.info("%s; the run goes on without it", e)

    def __len__(self) -> int:
        return len(self._syntactic) + self._aa_size

    # ------------------------------------------------------------------ debugging misses
    def keep_misses(self, n: int = 1000) -> None:
        """Debug mode: remember the last ``n`` queries that went to the solver in ``self.misses``
        (pairs of query and base sizes), to be compared with :meth:`first_difference`."""
        self.misses = collections.deque(maxlen=n)

    def _missed(self, q: _Query, sizes) -> None:
        if self.misses is not None:
            self.misses.append((q, dict(sizes)))

    def first_difference(self, a, b) -> str:
        """Why two remembered misses ``a`` and ``b`` (entries of ``self.misses``: query and base
        sizes) did not share an address-aware key: the first differing node of their expressions,
        goals or constraints (constraints sorted by canonical form), or which group differs in size."""
        (qa, sa), (qb, sb) = a, b
        if qa.kind != qb.kind:
            return f"kinds differ: {qa.kind} vs {qb.kind}"
        canon = self._canon
        for label, xs, ys in (("expression", qa.exprs, qb.exprs), ("goal", qa.goals, qb.goals),
                              ("constraint", qa.sliced, qb.sliced)):
            if len(xs) != len(ys):
                return f"{len(xs)} vs {len(ys)} {label}s: {[str(x)[:120] for x in xs]} vs {[str(y)[:120] for y in ys]}"
            if label != "expression":
                xs = sorted(xs, key=lambda e: canon.local(e, sa)[0])
                ys = sorted(ys, key=lambda e: canon.local(e, sb)[0])
            for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
                d = canon.first_difference(x, y, sa, sb)
                if d is not None:
                    return f"{label} {i} {d}"
        return "every root agrees up to renaming; the bases are shared differently between roots"

    def close(self) -> None:
        """Flush and close the on-disk store, if any."""
        if self.store is not None:
            self.store.close()
            self.store_failed = self.store.failed
            self.store = None

    # ------------------------------------------------------------------ keys
    def _prepare(self, kind, constraints, goals, exprs, subst, sizes, embedded, opened=False) -> _Query:
        focus = (*goals, *exprs)
        if not opened:
            constraints = self._open(constraints, subst)
        sliced = tuple(slice_constraints(constraints, focus, subst.names, self._footprints)) if focus else tuple(constraints)
        syn = (kind, frozenset(subst(c).hash() for c in sliced), frozenset(subst(g).hash() for g in goals),
               tuple(subst(x).hash() for x in exprs))
        aa, names = self.keys.address_aware(kind, sliced, goals, exprs, sizes, embedded, self.stats)
        return _Query(kind, sliced, goals, exprs, syn, aa, names)

    def _aa_lookup(self, q: _Query, sizes):
        """The answer stored under ``q``'s canonical key. The key encodes the whole query with its
        bases numbered (and sized), so equal keys already give the bijection of Algorithm 1 (up to
        a 256-bit digest collision); validation mode re-checks it structurally."""
        for e, result in self._aa.lookup(q.aa, ()):
            if not self.validate or self._confirm(q, e, sizes):
                return result
        return None

    def _confirm(self, q: _Query, e: _Query, sizes) -> bool:
        """Algorithm 1's check: the numbering maps bases one-to-one, sizes agree, rest equal."""
        if len(e.sliced) != len(q.sliced) or len(e.goals) != len(q.goals) or len(e.exprs) != len(q.exprs):
            raise CacheMismatch(f"canonical keys agree but the query shapes differ: {q.describe()} vs {e.describe()}")
        mapping = dict(zip(q.names, e.names, strict=True))
        back = dict(zip(e.names, q.names, strict=True))
        ops = self._canon.operands
        ok = all(isomorphic(x, y, sizes, sizes, mapping, back, set(), ops) for x, y in zip(q.exprs, e.exprs, strict=True)) \
            and self._match(q.goals, e.goals, sizes, mapping, back) and self._match(q.sliced, e.sliced, sizes, mapping, back)
        if not ok and self.stats is not None:
            self.stats.cache_unconfirmed += 1
        return ok

    def _match(self, xs, ys, sizes, mapping, back) -> bool:
        plain = self._canon.plain
        pool = list(ys)
        for x in xs:
            hx = plain(x, sizes)
            for i, y in enumerate(pool):
                if plain(y, sizes) != hx:
                    continue
                m2, b2 = dict(mapping), dict(back)
                if isomorphic(x, y, sizes, sizes, m2, b2, operands=self._canon.operands):
                    mapping.update(m2)
                    back.update(b2)
                    del pool[i]
                    break
            else:
                return False
        return True

    def _disk_key(self, q: _Query, subst):
        """The store key: the address-aware key, or for queries it does not cover the canonical key
        of the substituted query (which has no base addresses left; its variable order is then
        kept in ``q.names``)."""
        if q.aa is not None:
            return q.aa
        key, q.names = self._canon.key(q.kind, [subst(c) for c in q.sliced], [subst(g) for g in q.goals],
                                       [subst(x) for x in q.exprs], {})
        return key

    def _lookup(self, q: _Query, subst, sizes):
        """``(answer, where, disk key)`` from memory or disk; answer None on a miss. A model answer
        is a dict of variable values."""
        hit = self._syntactic.lookup(q.syn)
        if hit is not None:
            return hit, "syntactic", None
        if q.aa is not None:
            hit = self._aa_lookup(q, sizes)
            if hit is not None:
                return (self._positional(hit, q) if q.kind == "model" and hit is not _UNSAT else hit), "aa", None
        if self.store is None:
            return None, None, None
        key = self._disk_key(q, subst)
        raw = self.store.get(key)
        if raw is not None and not _well_formed(q.kind, raw, q.kind[4:]):
            raw = None                       # a garbled record (or another program's): a miss, counted
            if self.stats is not None:
                self.stats.cache_disk_garbled += 1
        if raw is None:
            return None, None, key
        if q.kind != "model":
            hit = raw
        elif raw == "unsat":
            hit = _UNSAT
        else:
            hit = self._positional(raw, q)
        self._remember(q, sizes, hit, None)        # later queries of this run hit in memory, as in the first run
        return hit, "disk", key

    @staticmethod
    def _positional(raw, q: _Query) -> dict:
        """A model stored by variable position, in ``q``'s variable names."""
        names = q.names
        return {names[i]: v for i, v in raw if i < len(names)}

    def _remember(self, q: _Query, sizes, result, disk) -> None:  # pylint: disable=unused-argument
        self._syntactic.put(q.syn, result)
        stored = result
        if q.kind == "model" and result is not _UNSAT and (q.aa is not None or disk is not None):
            pos = {n: i for i, n in enumerate(q.names)}
            stored = [[pos[n], v] for n, v in result.items() if n in pos]
        if q.aa is not None:
            entries = self._aa.lookup(q.aa)
            if entries is None:
                entries = []
                self._aa_size -= sum(len(old) for old in self._aa.put(q.aa, entries))
            entries.append((q, stored))
            self._aa_size += 1
        if self.store is not None and disk is not None:
            self.store.put(disk, "unsat" if result is _UNSAT else stored)
        if self.stats is not None:
            self.stats.cache_size = len(self)

    def _count(self, where: str) -> None:
        st = self.stats
        if st is not None:
            setattr(st, f"cache_hits_{where}", getattr(st, f"cache_hits_{where}") + 1)

    # ------------------------------------------------------------------ satisfiability
    def satisfiable(self, constraints, goals, subst, sizes, solve, embedded=frozenset()) -> bool:
        """``SAT(constraints /\\ goals)``, from the cache or from ``solve()`` (then remembered).

        Without goals (angr adds a branch guard to the constraints, then asks) the constraints are
        split into independent components, each looked up on its own.
        """
        st = self.stats
        if st is not None:
            st.cache_queries += 1
        if not goals:
            return self._satisfiable_components(constraints, subst, sizes, solve, embedded)
        q = self._prepare("sat", constraints, tuple(goals), (), subst, sizes, embedded)
        hit, where, disk = self._lookup(q, subst, sizes)
        if hit is not None:
            return self._hit(hit, where, solve, q.describe)
        result = solve()
        self._missed(q, sizes)
        self._remember(q, sizes, result, disk if self.store is not None else None)
        return result

    def _hit(self, hit: bool, where: str, solve, describe) -> bool:
        """Count a hit of cache ``where``; in validation mode check it against the solver."""
        self._count(where)
        if self.validate:
            truth = solve()
            if truth != hit:
                raise CacheMismatch(f"{where} cache answered {hit} but the solver says {truth} for {describe()}")
        return hit

    def _satisfiable_components(self, constraints, subst, sizes, solve, embedded) -> bool:
        comps = components(self._open(constraints, subst), subst.names, self._footprints)
        qs = [self._prepare("sat", c, (), (), subst, sizes, embedded, opened=True) for c in comps]
        answers = [self._lookup(q, subst, sizes) for q in qs]
        if any(a is False for a, _, _ in answers) or all(a is True for a, _, _ in answers):
            wheres = {w for a, w, _ in answers if a is not None}
            where = next((w for w in ("disk", "aa") if w in wheres), "syntactic")
            return self._hit(all(a is True for a, _, _ in answers), where, solve, lambda: f"{constraints}")
        result = solve()
        unknown = [(q, disk) for q, (a, _, disk) in zip(qs, answers, strict=True) if a is None]
        for q, _ in unknown:
            self._missed(q, sizes)
        if result or len(unknown) == 1:
            # satisfiable: every component is; unsatisfiable with one unknown component (the others
            # are known satisfiable): that component is the unsatisfiable one
            for q, disk in unknown:
                self._remember(q, sizes, result, disk)
        return result

    def _open(self, constraints, subst) -> list:
        """``constraints`` without those on placed bases alone that the placement makes true: no
        question is left in them (a parser's loop over a heap buffer adds hundreds, each its own
        component, which were keyed and looked up on every query)."""
        names, fps = subst.names, self._footprints
        settled = getattr(subst, "settled", None)
        if settled is None:      # (a substitution of another kind: nothing remembered)
            settled = {}
        elif len(settled) > SETTLED_LIMIT:
            settled.clear()
        out = []
        for c in constraints:
            h = c.hash()
            true = settled.get(h)
            if true is None:
                true = False
                if not fps.outside(c, names):
                    v = subst(c)
                    true = v.op == "BoolV" and v.args[0] is True
                settled[h] = true
            if not true:
                out.append(c)
        return out

    # ------------------------------------------------------------------ solution sets
    def solutions(self, constraints, expr, n: int, extra, subst, sizes, solve, embedded=frozenset()) -> tuple:
        """Up to ``n`` distinct values of the address-free ``expr`` (``solve()`` asks the solver).

        Such a set is the same for two queries that are equal up to renaming of bases: for every
        value v the queries with ``expr == v`` added are again renamings of each other, hence
        equisatisfiable. The set is stored as given by the solver.
        """
        st = self.stats
        if st is not None:
            st.cache_queries += 1
        q = self._prepare(f"eval{n}", constraints, tuple(extra), (expr,), subst, sizes, embedded)
        hit, where, disk = self._lookup(q, subst, sizes)
        if hit is not None:
            values = tuple(hit)
            self._count(where)
            if self.validate:
                truth = solve()
                if sorted(truth) != sorted(values):
                    raise CacheMismatch(f"{where} cache answered {values} but the solver says {truth} for {q.describe()}")
            return values
        values = tuple(solve())
        self._missed(q, sizes)
        self._remember(q, sizes, list(values), disk if self.store is not None else None)
        return values

    # ------------------------------------------------------------------ models
    def model(self, constraints, exprs, extra, subst, sizes, solve, embedded=frozenset()) -> tuple | None:
        """Values of ``exprs`` in one solution of ``constraints /\\ extra``, or None when there is
        none. ``solve(sliced)`` must return ``(values, model)`` or ``(None, None)`` when unsat, where
        ``model`` maps every variable of the substituted slice, extra constraints and expressions to
        its value (or is None when it cannot be kept)."""
        st = self.stats
        if st is not None:
            st.cache_queries += 1
        q = self._prepare("model", constraints, tuple(extra), tuple(exprs), subst, sizes, embedded)
        hit, where, disk = self._lookup(q, subst, sizes)
        if hit is _UNSAT:
            self._count(where)
            if self.validate and solve(q.sliced)[0] is not None:
                raise CacheMismatch(f"{where} cache answered unsat but the solver found a model for {q.describe()}")
            return None
        if hit is not None:
            values = self._translate(hit, q, subst)
            if values is not None:
                self._count(where)
                return values
            if st is not None:
                st.cache_models_rejected += 1
        values, model = solve(q.sliced)
        self._missed(q, sizes)
        if values is None:
            self._remember(q, sizes, _UNSAT, disk if self.store is not None else None)
        elif model is not None:
            self._remember(q, sizes, model, disk if self.store is not None else None)
        return values

    @staticmethod
    def _translate(model: dict, q: _Query, subst):
        """The values of ``q.exprs`` under ``model`` if it satisfies every constraint of ``q``."""
        mc = ModelCache(model)
        try:
            for c in (*q.sliced, *q.goals):
                if fast_eval_ast(mc, subst(c), False) is not True:
                    return None
            return tuple(fast_eval_ast(mc, subst(x), False) for x in q.exprs)
        except KeyError:
            return None


class _Unsat:
    """The cached answer "no solution" of a model query."""

    def __repr__(self) -> str:
        return "UNSAT"


_UNSAT = _Unsat()


def model_leaves(exprs) -> list | None:
    """The distinct variables of ``exprs`` (BVS/BoolS leaves), or None if one is of another kind."""
    seen, out = set(), []
    for e in exprs:
        for leaf in e.leaf_asts():
            if leaf.op not in ("BVS", "BoolS", "BVV", "BoolV", "FPV", "StringV"):
                return None
            if leaf.op in _MODEL_LEAVES and leaf.args[0] not in seen:
                seen.add(leaf.args[0])
                out.append(leaf)
    return out


__all__ = ["CacheMismatch", "QueryCache", "UnsatError", "address_specific",
           "components", "isomorphic", "model_leaves", "slice_constraints"]
