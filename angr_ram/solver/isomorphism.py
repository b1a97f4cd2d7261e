"""Structural equality of expressions up to a renaming of their variables: the address-aware
query cache's test that two queries are the same query over other objects (:mod:`.query_cache`).
"""

from __future__ import annotations

import claripy


def isomorphic(a, b, sizes_a: dict, sizes_b: dict, mapping: dict, back: dict, seen: set | None = None,
               operands=None) -> bool:
    """Structural equality of ``a`` and ``b`` up to a bijection of variables (extended in
    ``mapping``/``back``) that maps base addresses to bases of equal object size and other
    variables to variables of the same kind and width. Linear in the DAG size: constant
    sub-expressions are compared by identity (claripy hash-conses ASTs), and a pair already matched
    is not re-walked (the mapping only grows, so it stays matched). ``operands(node, sizes)``, when
    given, lists a node's operands in a renaming-invariant order (commutative operators)."""
    if seen is None:
        seen = set()
    stack = [(a, b)]
    while stack:
        x, y = stack.pop()
        if not x.variables or not y.variables:
            if x.hash() != y.hash():
                return False
            continue
        key = (x.hash(), y.hash())
        if key in seen:
            continue
        if x.op != y.op or x.length != y.length or len(x.args) != len(y.args):
            return False
        if x.op in ("BVS", "BoolS", "FPS", "StringS"):
            na, nb = x.args[0], y.args[0]
            if (na in sizes_a) != (nb in sizes_b) or (na in sizes_a and sizes_a[na] != sizes_b[nb]):
                return False
            if x.args[1:] != y.args[1:] and x.op != "BVS":
                return False
            if mapping.get(na, nb) != nb or back.get(nb, na) != na:
                return False
            mapping[na], back[nb] = nb, na
            seen.add(key)
            continue
        xs, ys = (x.args, y.args) if operands is None else (operands(x, sizes_a), operands(y, sizes_b))
        for u, v in zip(xs, ys, strict=True):
            if isinstance(u, claripy.ast.Base):
                if not isinstance(v, claripy.ast.Base):
                    return False
                stack.append((u, v))
            elif u != v:
                return False
        seen.add(key)
    return True
