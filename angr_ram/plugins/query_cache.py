"""Run-wide query caching: syntactic, and address-aware (equal up to renaming of base addresses).

A satisfiability question ``SAT(constraints /\\ goals)`` (``satisfiable``, ``is_true``,
``is_false``) is first sliced to the constraints that share variables with the goals (base
addresses do not connect constraints: under substitution they are constants), then looked up:

* ``syntactic``: key = the substituted slice and goals, compared exactly (like KLEE's cache).
* ``aa``: key = a structural hash of the *unsubstituted* slice and goals in which every base
  address hashes to the size of its object; a hit needs a bijection between the base addresses of
  the two queries that maps objects to objects of equal size and makes the rest structurally equal
  (Algorithm 1 of the address-aware query caching paper). Such queries are equisatisfiable for
  programs whose behaviour does not depend on the numeric value of addresses.

One cache serves every state of a run. With ``validate=True`` every hit is also answered by the
solver, and a mismatch raises :class:`~angr_ram.errors.CacheMismatch` naming both queries.
"""

from __future__ import annotations

import claripy

from ..errors import AngrRamError


class CacheMismatch(AngrRamError):
    """A cached answer differs from the solver's answer (validation mode)."""


def slice_constraints(constraints, goals, ignore) -> list:
    """The constraints that share (non-``ignore``) variables with ``goals``, transitively."""
    want = set()
    for g in goals:
        want |= g.variables - ignore
    if not goals:
        return list(constraints)
    rest = [(c, c.variables - ignore) for c in constraints]
    out, changed = [], True
    while changed:
        changed = False
        keep = []
        for c, vs in rest:
            if vs & want:
                want |= vs
                out.append(c)
                changed = True
            else:
                keep.append((c, vs))
        rest = keep
    return out


def components(constraints, ignore) -> list[list]:
    """Independent groups of constraints (no shared non-``ignore`` variable between groups)."""
    groups: list[tuple[set, list]] = []
    for c in constraints:
        vs = set(c.variables - ignore)
        merged_vars, merged = vs, [c]
        rest = []
        for gv, gc in groups:
            if gv & vs:
                merged_vars |= gv
                merged = gc + merged
            else:
                rest.append((gv, gc))
        groups = rest + [(merged_vars, merged)]
    return [gc for _, gc in groups]


class AddressAwareHasher:
    """Structural hashes in which each base address stands for the size of its object."""

    def __init__(self):
        self.memo: dict[tuple[int, frozenset], int] = {}

    def __call__(self, e, sizes: dict[str, int]) -> int:
        """Hash of ``e`` with every base name in ``sizes`` abstracted to its object size."""
        bases = frozenset(n for n in e.variables if n in sizes)
        if not bases:
            return e.hash()
        key = (e.hash(), frozenset((n, sizes[n]) for n in bases))
        h = self.memo.get(key)
        if h is None:
            if e.op == "BVS":
                h = hash(("ram-base", sizes[e.args[0]]))
            else:
                h = hash((e.op, e.length, tuple(self(a, sizes) if isinstance(a, claripy.ast.Base) else a
                                                for a in e.args)))
            self.memo[key] = h
        return h


def isomorphic(a, b, sizes_a: dict, sizes_b: dict, mapping: dict, back: dict) -> bool:
    """Structural equality of ``a`` and ``b`` up to a size-preserving bijection of base addresses
    (extended in ``mapping``/``back``)."""
    if a is b and not (a.variables & sizes_a.keys()):
        return True
    if a.op != b.op or a.length != b.length or len(a.args) != len(b.args):
        return False
    if a.op == "BVS":
        na, nb = a.args[0], b.args[0]
        if na in sizes_a or nb in sizes_b:
            if na not in sizes_a or nb not in sizes_b or sizes_a[na] != sizes_b[nb]:
                return False
            if mapping.get(na, nb) != nb or back.get(nb, na) != na:
                return False
            mapping[na], back[nb] = nb, na
            return True
        return na == nb
    for x, y in zip(a.args, b.args, strict=True):
        if isinstance(x, claripy.ast.Base):
            if not isinstance(y, claripy.ast.Base) or not isomorphic(x, y, sizes_a, sizes_b, mapping, back):
                return False
        elif x != y:
            return False
    return True


class QueryCache:
    """A run-wide cache of satisfiability answers (modes ``syntactic`` and ``aa``)."""

    def __init__(self, mode: str, validate: bool = False, stats=None):
        if mode not in ("syntactic", "aa"):
            raise AngrRamError(f"unknown cache mode {mode!r}; use None, 'syntactic' or 'aa'")
        self.mode = mode
        self.validate = validate
        self.stats = stats
        self._syntactic: dict[frozenset, bool] = {}
        self._aa: dict[int, list] = {}
        self._hasher = AddressAwareHasher()

    def __len__(self) -> int:
        return len(self._syntactic) + sum(len(v) for v in self._aa.values())

    # ------------------------------------------------------------------ keys
    def _keys(self, constraints, goals, subst, sizes):
        sliced = slice_constraints(constraints, goals, subst.names)
        syn = frozenset(subst(c).hash() for c in sliced) | frozenset(("goal", subst(g).hash()) for g in goals)
        if self.mode == "syntactic":
            return sliced, syn, None
        h = self._hasher
        aa = hash((frozenset(h(c, sizes) for c in sliced), frozenset(h(g, sizes) for g in goals)))
        return sliced, syn, aa

    def _aa_lookup(self, aa, sliced, goals, sizes):
        for entry in self._aa.get(aa, ()):
            e_sliced, e_goals, e_sizes, result = entry
            if len(e_sliced) != len(sliced) or len(e_goals) != len(goals):
                continue
            mapping, back = {}, {}
            if self._match(goals, e_goals, sizes, e_sizes, mapping, back) and \
                    self._match(sliced, e_sliced, sizes, e_sizes, mapping, back):
                return result, entry
        return None, None

    def _match(self, xs, ys, sx, sy, mapping, back) -> bool:
        h = self._hasher
        pool = list(ys)
        for x in xs:
            hx = h(x, sx)
            for i, y in enumerate(pool):
                if h(y, sy) != hx:
                    continue
                m2, b2 = dict(mapping), dict(back)
                if isomorphic(x, y, sx, sy, m2, b2):
                    mapping.update(m2)
                    back.update(b2)
                    del pool[i]
                    break
            else:
                return False
        return True

    # ------------------------------------------------------------------ the question
    def satisfiable(self, constraints, goals, subst, sizes, solve) -> bool:
        """``SAT(constraints /\\ goals)``, from the cache or from ``solve()`` (then remembered).

        Without goals (angr adds a branch guard to the constraints, then asks) the constraints are
        split into independent components, each looked up on its own.
        """
        st = self.stats
        if st is not None:
            st.cache_queries += 1
        if not goals:
            return self._satisfiable_components(constraints, subst, sizes, solve)
        sliced, syn, aa = self._keys(constraints, goals, subst, sizes)
        hit, where = self._lookup(sliced, goals, syn, aa, sizes)
        if hit is not None:
            return self._hit(hit, where, solve, lambda: f"goals {list(goals)} under {sliced}")
        result = solve()
        self._remember(syn, aa, sliced, goals, sizes, result)
        return result

    def _hit(self, hit: bool, where: str, solve, describe) -> bool:
        """Count a hit of cache ``where``; in validation mode check it against the solver."""
        if self.stats is not None:
            setattr(self.stats, f"cache_hits_{where}", getattr(self.stats, f"cache_hits_{where}") + 1)
        if self.validate:
            truth = solve()
            if truth != hit:
                raise CacheMismatch(f"{where} cache answered {hit} but the solver says {truth} for {describe()}")
        return hit

    def _lookup(self, sliced, goals, syn, aa, sizes):
        hit = self._syntactic.get(syn)
        if hit is not None:
            return hit, "syntactic"
        if aa is not None:
            hit, _ = self._aa_lookup(aa, sliced, goals, sizes)
            if hit is not None:
                return hit, "aa"
        return None, None

    def _satisfiable_components(self, constraints, subst, sizes, solve) -> bool:
        comps = components(constraints, subst.names)
        keyed = [(c, *self._keys(c, (), subst, sizes)[1:]) for c in comps]
        answers = [self._lookup(c, (), syn, aa, sizes) for c, syn, aa in keyed]
        if any(a is False for a, _ in answers) or all(a is True for a, _ in answers):
            where = "aa" if any(w == "aa" for _, w in answers) else "syntactic"
            return self._hit(all(a is True for a, _ in answers), where, solve, lambda: f"{constraints}")
        result = solve()
        if result:
            for (c, syn, aa), (a, _) in zip(keyed, answers, strict=True):
                if a is None:
                    self._remember(syn, aa, c, (), sizes, True)
        elif len(comps) == 1:
            self._remember(keyed[0][1], keyed[0][2], comps[0], (), sizes, False)
        return result

    def _remember(self, syn, aa, sliced, goals, sizes, result) -> None:
        self._syntactic[syn] = result
        if aa is not None:
            used = set().union(*(x.variables for x in (*sliced, *goals))) if (sliced or goals) else set()
            self._aa.setdefault(aa, []).append((tuple(sliced), tuple(goals),
                                                {n: sizes[n] for n in used if n in sizes}, result))
        if self.stats is not None:
            self.stats.cache_size = len(self)
