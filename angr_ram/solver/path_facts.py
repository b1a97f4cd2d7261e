"""Path facts: terms a path's constraints fix to one value, rewritten into what the path computes.

KLEE's constraint manager rewrites an expression that a constraint makes equal to a constant
(``--rewrite-equalities``) before it solves. Here a path's facts are such equalities, ``term ==
value``, and they are substituted into the values the path writes to registers and memory (angr's
write simplification), into the constraints it adds, and into its queries. A value equal on the
path to what it was is sound to use from then on: the path's constraints only grow.

Facts come from two places:

* a constraint ``term == value`` (``value`` a constant), as in KLEE, for a term of a few
  operations (a pointer compared with NULL, an input byte with a character);
* a branch that takes the non-zero side of a value built by a symbolic-offset write (a byte is
  ``If(off <= k && k < off + n, data, old)``): the offset the conditions compare is often fixed by
  that branch (the entry a hash put in one bucket is found in exactly one bucket). One query asks
  whether the offset has a single value; when it has, every later read of the table, every later
  condition and every pointer read from it fold to constants, and the walk of the remaining
  buckets costs no solver call. At most :data:`PROBED_TERMS` terms are asked per constraint;
* an equality over one narrow input slice (a byte of stdin, a byte of a script's wide ``BVS``) that
  is not stated as ``slice == constant``: ``strcmp`` of an input key with the string a hash lookup
  selected gives ``If(x == 98, 0, 98 - x) == 0``. One query asks whether the slice has a single value
  on the path; when it has, the hash of the key and every pointer the lookup selected fold to
  constants from then on (json-c's lookup at the seeds' size: the found entry's pointer was a
  366-node expression over the key's hash, rebuilt at every access through it).
"""

from __future__ import annotations

import claripy
from claripy.ast import Base

from angr_ram.core.dag import fold
from angr_ram.solver.evaluator import LET_PREFIX
from angr_ram.solver.substitution import BASE_PREFIX

PROBED_TERMS = 1            # offsets asked about per constraint
SLICE_NODES = 4096          # nodes of an equality looked at for the input bits it reads
CONDITION_NODES = 512       # nodes of a constraint looked at for the offsets its conditions compare
PINNED_BITS = 16            # an input slice this narrow at most is probed for a single value
STATED_DEPTH = 8            # a stated equality's term this deep at most (a table slot read as NULL is not one)
MEMO_LIMIT = 100_000        # rewritten nodes remembered per set of facts (all forgotten when full)

_RAM_NAMES = (BASE_PREFIX, LET_PREFIX)
_COMPARISONS = frozenset(("ULE", "ULT", "UGE", "UGT", "SLE", "SLT", "SGE", "SGT", "__le__", "__lt__",
                          "__ge__", "__gt__", "__eq__", "__ne__"))


class Facts:
    """An immutable set of equalities ``term == constant`` a path's constraints imply, and a memo of
    the expressions rewritten by them (shared by the states that hold the same facts)."""

    __slots__ = ("values", "needs", "memo")

    def __init__(self, values: dict | None = None):
        self.values: dict = values or {}      # term hash -> (term, constant)
        # what a node must have to contain a term: its depth and its variables, shallowest first
        self.needs = sorted(((t.depth, t.variables) for t, _ in self.values.values()), key=lambda n: n[0])
        self.memo: dict = {}

    def __len__(self) -> int:
        return len(self.values)

    def __repr__(self) -> str:
        return f"<Facts {len(self.values)}>"

    def __getstate__(self):
        return {"values": self.values}

    def __setstate__(self, s):
        self.__init__(s["values"])

    def knows(self, term) -> bool:
        return term.hash() in self.values

    def with_fact(self, term, value) -> Facts:
        """These facts and ``term == value``."""
        return Facts({**self.values, term.hash(): (term, value)})

    def _may_contain(self, x) -> bool:
        """Whether a known term can be ``x`` or inside it: one as deep or shallower, over a subset of
        its variables (the walk skips the rest, a hash of the input below an offset taken of it)."""
        depth, names = x.depth, x.variables
        for d, vs in self.needs:
            if d > depth:
                return False
            if vs <= names:
                return True
        return False

    def rewrite(self, e):
        """``e`` with every known term replaced by its value (constants folded on the way up)."""
        if not self.values or not isinstance(e, Base) or not self._may_contain(e):
            return e
        values, may_contain = self.values, self._may_contain
        if len(self.memo) > MEMO_LIMIT:
            self.memo = {}

        def known(x):
            hit = values.get(x.hash())
            if hit is not None:
                return hit[1]
            return None if may_contain(x) else x

        def rebuilt(x, value_of):
            args = tuple(value_of(a) if isinstance(a, Base) else a for a in x.args)
            if all(a is b for a, b in zip(args, x.args, strict=True)):
                return x
            return x.make_like(x.op, args, simplify=True)
        return fold(e, rebuilt, self.memo, known)


NO_FACTS = Facts()


def stated_equality(c):
    """``(term, constant)`` when ``c`` is ``term == constant`` over bit-vectors, ``term`` is no
    deeper than :data:`STATED_DEPTH` and mentions no symbolic base address or let-bound lookup
    (the address model and the small-domain layer own those: a base is placed by substitution),
    else None."""
    if c.op != "__eq__":
        return None
    a, b = c.args
    if not isinstance(a, claripy.ast.BV):
        return None
    if a.op == "BVV" and b.symbolic:
        a, b = b, a
    elif not (b.op == "BVV" and a.symbolic):
        return None
    if a.depth > STATED_DEPTH or _ram_named(a):
        return None
    return a, b


def equated_slice(c):
    """The input slice an equality ``c`` may pin to one value: the bits of the one input variable it
    mentions (besides base addresses, which may select among strings) that it reads, at most
    :data:`PINNED_BITS` of them, unless ``c`` is ``slice == constant`` itself; else None."""
    if c.op != "__eq__" or not isinstance(c.args[0], claripy.ast.BV):
        return None
    names = [n for n in c.variables if not n.startswith(_RAM_NAMES)]
    if len(names) != 1:
        return None
    if any(a.op == "BVS" or (a.op == "Extract" and a.args[2].op == "BVS") for a in c.args):
        return None
    var, hi, lo = None, -1, None
    seen, todo = set(), [c]
    while todo and len(seen) < SLICE_NODES:
        x = todo.pop()
        h = x.hash()
        if h in seen or names[0] not in x.variables:
            continue
        seen.add(h)
        if x.op == "BVS":
            var, hi, lo = x, x.length - 1, 0
        elif x.op == "Extract" and x.args[2].op == "BVS":
            var, hi, lo = x.args[2], max(hi, x.args[0]), x.args[1] if lo is None else min(lo, x.args[1])
        else:
            todo.extend(a for a in x.args if isinstance(a, Base))
    if var is None or todo or hi - lo + 1 > PINNED_BITS:
        return None
    return var if hi - lo + 1 == var.length else claripy.Extract(hi, lo, var)


def _ram_named(term) -> bool:
    return any(n.startswith(_RAM_NAMES) for n in term.variables)


def _offset(side):
    """The term a comparison side is: ``off + k`` and ``k + off`` are ``off``."""
    if side.op == "__add__" and len(side.args) == 2:
        a, b = side.args
        if b.op == "BVV" and a.symbolic:
            return a
        if a.op == "BVV" and b.symbolic:
            return b
    return side


def compared_offsets(c) -> list:
    """The symbolic terms that the conditions of the ``If``s in ``c`` compare with constants (none
    over a base address or a let-bound lookup), most compared first (looking at no more than :data:`CONDITION_NODES` nodes of ``c``)."""
    counts: dict = {}
    terms: dict = {}
    seen, todo = set(), [c]
    while todo and len(seen) < CONDITION_NODES:
        x = todo.pop()
        h = x.hash()
        if h in seen or x.depth <= 1:
            continue
        seen.add(h)
        if x.op == "If":
            _comparisons(x.args[0], counts, terms)
            todo.extend(a for a in x.args[1:] if isinstance(a, Base))
        else:
            todo.extend(a for a in x.args if isinstance(a, Base))
    return [terms[h] for h in sorted(counts, key=counts.get, reverse=True)]


def _comparisons(cond, counts, terms) -> None:
    todo, n = [cond], 0
    while todo and n < 16:
        x = todo.pop()
        n += 1
        if x.op in ("And", "Or", "Not"):
            todo.extend(x.args)
        elif x.op in _COMPARISONS:
            a, b = x.args
            for side, other in ((a, b), (b, a)):
                if other.op == "BVV" and side.symbolic:
                    t = _offset(side)
                    if t.depth > 1 and not _input_slice(t) and not _ram_named(t):
                        counts[t.hash()] = counts.get(t.hash(), 0) + 1
                        terms[t.hash()] = t


def _input_slice(t) -> bool:
    """Whether ``t`` is a slice of one variable (an input byte): compared with constants under a
    string search (is it the newline, the NUL?), a character, not a write's offset (a crackme's
    line of symbolic length: probing its bytes cost a quarter of the run)."""
    return t.op == "Extract" and t.args[2].op == "BVS"


def takes_nonzero_side(c) -> bool:
    """Whether ``c`` says a value is not a constant (``x != k``, ``Not(x == k)``)."""
    if c.op == "Not" and c.args[0].op == "__eq__":
        c = c.args[0]
    elif c.op != "__ne__":
        return False
    return any(a.op == "BVV" for a in c.args)
