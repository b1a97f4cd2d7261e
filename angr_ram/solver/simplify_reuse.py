"""Simplification that does not simplify again what it has simplified before.

angr z3-simplifies every symbolic value written to a register or to memory
(``SIMPLIFY_REGISTER_WRITES``, ``SIMPLIFY_MEMORY_WRITES``, on by default). z3's simplifier keeps
nothing between calls, so a value built on a large subterm that was itself simplified when it was
written (a hash of the input, a lookup that selects among table entries) costs the whole subterm
again at every write that uses it: expat's element table destroyed after parsing a symbolic name
wrote ``entry + 0x28`` and friends, each over a 5,000-node SipHash of the name, 45 ms a write,
2,100 writes, a third of the run, and simplification changed none of them.

Here each simplified value is remembered (by hash, with an estimate of its size, in the run's
memo). A later value is simplified with each remembered subterm of at least
:data:`PLACEHOLDER_NODES` nodes standing in as a fresh variable of its sort, and the subterms are put
back into the result. Only the new part of the expression is walked and simplified. Equivalence is
kept: a simplification valid for every value of the stand-in variable is valid for the subterm's
value; what is given up is a rewrite that would need to see inside an already simplified subterm
(below the size bound, subterms are simplified with the rest as before).
"""

from __future__ import annotations

import claripy
from claripy.ast import Base

from angr_ram.core.dag import fold
from angr_ram.core.scope import LRU, memo
from angr_ram.solver.path_facts import NO_FACTS
from angr_ram.solver.z3_setup import simplify_or_keep

PLACEHOLDER_NODES = 256      # a simplified subterm this large (estimated nodes) is not simplified again
REMEMBERED = 65_536          # simplified values remembered per run


def _table() -> LRU:
    return memo("simplify.outputs", lambda: LRU(REMEMBERED))


def _children(x) -> list:
    return [a for a in x.args if isinstance(a, Base) and a.depth > 1]


def _frontier(e, table: LRU) -> dict:
    """The remembered subterms of ``e`` of at least :data:`PLACEHOLDER_NODES` nodes that are not
    inside another such subterm (hash -> node)."""
    found: dict = {}
    seen = {e.hash()}
    todo = [e]
    while todo:
        for a in _children(todo.pop()):
            h = a.hash()
            if h in seen:
                continue
            seen.add(h)
            size = table.lookup(h)
            if size is not None and size >= PLACEHOLDER_NODES and isinstance(a, (claripy.ast.BV, claripy.ast.Bool)):
                found[h] = a
            else:
                todo.append(a)
    return found


def _rewrite(e, repl: dict):
    """``e`` with each node whose hash is in ``repl`` replaced (a :func:`~angr_ram.core.dag.fold`:
    each distinct node once, where claripy's ``replace_dict`` walks a subtree without replacements
    once per parent)."""
    def keep(x):
        r = repl.get(x.hash())
        return r if r is not None else (x if x.depth <= 1 else None)

    def rebuilt(x, value_of):
        args = tuple(value_of(a) if isinstance(a, Base) else a for a in x.args)
        return x if all(a is b for a, b in zip(args, x.args, strict=True)) else x.make_like(x.op, args)
    return fold(e, rebuilt, {}, keep)


def _remember(e, table: LRU) -> None:
    """Remember ``e`` as simplified, and every subterm of it of at least :data:`PLACEHOLDER_NODES`
    nodes (a subterm of a simplified expression is simplified: an instruction that narrows a
    register value, ``Extract`` of a ``ZeroExt``, brings it out on its own). Sizes are tree counts
    of the non-leaf nodes down to the remembered subterms (an over-estimate for shared ones)."""
    if e.depth <= 1 or table.lookup(e.hash()) is not None:
        return

    def known(x):
        return 0 if x.depth <= 1 else table.lookup(x.hash())

    def counted(x, size_of):
        n = 1 + sum(size_of(a) for a in x.args if isinstance(a, Base))
        if n >= PLACEHOLDER_NODES or x is e:
            table.put(x.hash(), n)
        return n
    fold(e, counted, {}, known)


def _stand_in(h: int, node):
    name = f"ram_simplified_{h & 0xFFFFFFFFFFFFFFFF:x}"
    if isinstance(node, claripy.ast.Bool):
        return claripy.BoolS(name, explicit_name=True)
    return claripy.BVS(name, node.length, explicit_name=True)


def simplify_reusing(original, self, e=None):
    """``SimSolver.simplify`` (through :func:`~.z3_setup.simplify_or_keep`) that leaves the large
    subterms it simplified before as they are, after the path's facts
    (:mod:`~angr_ram.solver.path_facts`) are rewritten into the value."""
    if e is None or not isinstance(e, Base) or e.depth <= 1:
        return simplify_or_keep(original, self, e)
    e = getattr(getattr(self, "_stored_solver", None), "facts", NO_FACTS).rewrite(e)   # the path's facts first
    if e.depth <= 1:
        return e
    table = _table()
    if table.lookup(e.hash()) is not None:
        return e
    found = _frontier(e, table)
    if not found:
        r = simplify_or_keep(original, self, e)
    else:
        stand_ins = {h: _stand_in(h, node) for h, node in found.items()}
        abstract = _rewrite(e, stand_ins)
        s = simplify_or_keep(original, self, abstract)
        r = e if s is abstract else _rewrite(s, {stand_ins[h].hash(): node for h, node in found.items()})
    if isinstance(r, Base):
        _remember(r, table)
    return r
