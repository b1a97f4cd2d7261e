"""Memoized post-order folds over claripy ASTs, linear in the size of the DAG.

claripy's own walks (``replace_dict``) re-visit shared sub-expressions at every occurrence and are
exponential on DAG-shaped expressions; every angr-ram walk goes through :func:`fold` instead.
"""

from __future__ import annotations

from collections.abc import Callable

import claripy


def fold(root, combine: Callable, memo: dict, shortcut: Callable | None = None):
    """The value of ``root`` where each node's value is ``combine(node, value_of)`` computed after
    its AST children (``value_of(child)`` reads a child's value). ``shortcut(node)``, when it
    returns something other than None, is a node's value without visiting its children. Values are
    memoized in ``memo`` by node hash, so several folds can share it."""
    stack = [root]
    while stack:
        node = stack[-1]
        key = node.hash()
        if key in memo:
            stack.pop()
            continue
        if shortcut is not None:
            v = shortcut(node)
            if v is not None:
                memo[key] = v
                stack.pop()
                continue
        pending = [a for a in node.args if isinstance(a, claripy.ast.Base) and a.hash() not in memo]
        if pending:
            stack.extend(pending)
            continue
        memo[key] = combine(node, lambda a: memo[a.hash()])
        stack.pop()
    return memo[root.hash()]


def count_nodes(e, *more) -> int:
    """Distinct AST nodes of ``e`` (and of ``more``, shared nodes counted once)."""
    seen, stack = set(), [e, *more]
    while stack:
        n = stack.pop()
        if n.hash() in seen:
            continue
        seen.add(n.hash())
        stack.extend(a for a in n.args if isinstance(a, claripy.ast.Base))
    return len(seen)
