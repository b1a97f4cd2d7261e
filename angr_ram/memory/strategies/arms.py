"""The arms of a value: ``(guard, value)`` pairs with the if-then-else selections pulled out.

A pointer loaded from a table at a symbolic index is a selection, ``If(i == 0, t0, If(i == 1, t1,
...))``, and the address computed from it wraps the selection in arithmetic: ``base +
(SignExt(If(...)) << 2)``. Some arms are narrow (a concrete table entry), others wide (an
uninitialized word read past the end of the table): a range over the whole value then spans
everything the wide arm can hold, and a decision taken for the whole value (one range, one
error) loses the narrow arms' feasible paths. :func:`value_arms` pushes unary and arithmetic
operations into the selections' arms, so each arm is judged on its own: a narrow arm's few
addresses or jump targets are used, a wide one becomes an error path with its guard.
"""

from __future__ import annotations

import itertools

import claripy

# operations an if-then-else is pulled out of: op(If(c, a, b), y) == If(c, op(a, y), op(b, y))
_PUSHABLE = frozenset({
    "SignExt", "ZeroExt", "Extract", "Concat", "Reverse", "__neg__", "__invert__",
    "__add__", "__sub__", "__mul__", "__lshift__", "__rshift__", "LShR", "__and__", "__or__", "__xor__",
})


class _TooMany(Exception):
    pass


def _and(g, c):
    return c if g is None else claripy.And(g, c)


def value_arms(e, limit: int = 64) -> list[tuple[object, object]] | None:
    """``(guard, value)`` pairs covering ``e``: under each guard (None: always) ``e`` equals that
    value, and the guards of different arms exclude each other; ``value`` is an if-then-else only
    where the selection sits under an operation this does not look into. None when there are more
    than ``limit`` arms."""
    memo: dict[int, list] = {}

    def go(x):
        if not isinstance(x, claripy.ast.BV) or not x.symbolic:
            return [(None, x)]
        k = x.hash()
        if k in memo:
            return memo[k]
        if x.op == "If":
            c, t, f = x.args
            out = [(_and(g, c), v) for g, v in go(t)] + [(_and(g, claripy.Not(c)), v) for g, v in go(f)]
        elif x.op in _PUSHABLE:
            per = [go(a) for a in x.args]
            if all(len(p) == 1 and p[0][0] is None for p in per):
                out = [(None, x)]
            else:
                n = 1
                for p in per:
                    n *= len(p)
                if n > limit:
                    raise _TooMany
                out = []
                for combo in itertools.product(*per):
                    g = None
                    for gi, _ in combo:
                        if gi is not None:
                            g = _and(g, gi)
                    out.append((g, x.make_like(x.op, tuple(v for _, v in combo))))
        else:
            out = [(None, x)]
        if len(out) > limit:
            raise _TooMany
        memo[k] = out
        return out

    try:
        return go(e)
    except _TooMany:
        return None
