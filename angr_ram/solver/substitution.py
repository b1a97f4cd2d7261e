"""Substitution of address constraints (symbolic base -> hidden concrete address) into expressions.

claripy's ``replace_dict`` re-walks shared sub-expressions and is exponential on DAG-shaped ASTs;
this rewrite is iterative, memoized by AST hash, and skips every sub-expression whose variables do
not mention a symbolic base. Results are hash-consed claripy ASTs, so constants fold on the way up
(``alpha + 8`` becomes a BVV).
"""

from __future__ import annotations

import claripy

BASE_PREFIX = "ram_base_"


class Substitution:
    """A fixed binding of base-variable names to concrete addresses, with a memo of rewritten ASTs."""

    __slots__ = ("bindings", "names", "memo", "settled", "_leaves")

    def __init__(self, bindings: dict[str, int], bits: int = 64):
        self.bindings = dict(bindings)
        self.names = set(bindings)
        self.memo: dict[int, claripy.ast.Base] = {}
        self.settled: dict[int, bool] = {}   # constraint hash -> made true by these bindings (query_cache)
        self._leaves = {n: claripy.BVV(c, bits) for n, c in bindings.items()}

    def add(self, name: str, address: int, bits: int = 64) -> None:
        """Bind a new base name. Safe on a substitution shared by several states: base names are
        unique per run, so no other state's expressions mention ``name``."""
        self.bindings[name] = address
        self.names.add(name)
        self._leaves[name] = claripy.BVV(address, bits)

    def touches(self, e) -> bool:
        """True if ``e`` mentions a bound base address."""
        return not isinstance(e, (int, bool)) and e.symbolic and not self.names.isdisjoint(e.variables)

    def __call__(self, e):
        """Return ``e`` with every bound base replaced by its concrete address."""
        if not self.touches(e):
            return e
        memo = self.memo
        h = e.hash()
        r = memo.get(h)
        if r is not None:
            return r
        names, leaves = self.names, self._leaves
        stack = [e]
        while stack:
            node = stack[-1]
            nh = node.hash()
            if nh in memo:
                stack.pop()
                continue
            if node.op == "BVS":
                memo[nh] = leaves.get(node.args[0], node)
                stack.pop()
                continue
            pending = [a for a in node.args
                       if isinstance(a, claripy.ast.Base) and a.symbolic and not names.isdisjoint(a.variables)
                       and a.hash() not in memo]
            if pending:
                stack.extend(pending)
                continue
            new_args = tuple(
                memo[a.hash()] if isinstance(a, claripy.ast.Base) and a.symbolic
                and not names.isdisjoint(a.variables) else a
                for a in node.args)
            memo[nh] = node.make_like(node.op, new_args, simplify=True, length=node.length)
            stack.pop()
        return memo[h]

    def many(self, exprs):
        """Substitute into every expression of an iterable."""
        return [self(x) for x in exprs]
