"""Linear-time evaluation of expressions under claripy's cached models.

claripy's model cache evaluates an expression under a cached model with ``replace_dict``, which
re-walks shared sub-expressions at every occurrence: exponential on DAG-shaped ASTs such as the
if-then-else trees of symbolic-offset reads (6 s of a 31 s dsmm run on chainhash). This evaluator
walks the DAG once, memoized by AST hash per model content, on plain Python integers (the scalar
form of :mod:`.semantics`; claripy's concrete backend costs about 20 microseconds per node), and evaluates only the taken branch of an
if-then-else. Its values are claripy's; it raises KeyError for a missing variable when
``allow_unconstrained`` is False, and ZeroDivisionError on a division by zero, where claripy's
eager evaluation does, except inside an untaken if-then-else branch, whose value does not matter.
"""

from __future__ import annotations

import claripy
from claripy import backends

from angr_ram.core.scope import current
from angr_ram.solver.semantics import OPS, SCALAR, Unsupported

_LEAVES = ("BVS", "BoolS", "FPS", "StringS")

# Memos are kept per model *content*, not per ModelCache object: a composite solver combines its
# children's models into fresh ModelCache objects for every query that spans several children, and
# an object-bound memo would start empty each time. They belong to the active run scope, which
# bounds them: least recently used models go first, and a memo that grows past the scope's
# ``memo_entries`` is cleared. Without an active scope every evaluation starts a fresh memo.


def _memo_for(mc, allow_unconstrained: bool, kind: str) -> dict:
    scope = current()
    if scope is None:
        return {}
    key = (mc, allow_unconstrained, kind)       # ModelCache hashes and compares by its model's content
    memo = scope.model_memos.lookup(key)
    if memo is None:
        memo = {}
        scope.model_memos.put(key, memo)
    elif len(memo) > scope.memo_entries:
        memo.clear()
    return memo


def _leaf(model: dict, a, unconstrained: bool):
    name = a.args[0]
    if unconstrained:
        if a.op == "BVS":
            return claripy.BVV(model.get(name, 0), a.length)
        if a.op == "BoolS":
            return claripy.BoolV(model.get(name, True))
        if a.op == "FPS":
            return claripy.FPV(model.get(name, 0.0), a.args[1])
        return claripy.StringV(model.get(name, ""))
    if a.op == "BVS":
        return claripy.BVV(model[name], a.length)
    if a.op == "BoolS":
        return claripy.BoolV(model[name])
    if a.op == "FPS":
        return claripy.FPV(model[name], a.args[1])
    return claripy.StringV(model[name])


_Unsupported = Unsupported       # an operation the integer form does not evaluate (floating point, strings)


def _int_leaf(model: dict, a, unconstrained: bool):
    name = a.args[0]
    if a.op == "BVS":
        return model.get(name, 0) if unconstrained else model[name]
    if a.op == "BoolS":
        return model.get(name, True) if unconstrained else model[name]
    raise _Unsupported


def _walk(ast, memo: dict, visit):
    """Post-order walk of ``ast``'s DAG: ``visit(node)`` stores ``memo[node.hash()]`` and returns
    None, or returns the nodes whose values it needs first."""
    stack = [ast]
    while stack:
        node = stack[-1]
        if node.hash() in memo:
            stack.pop()
            continue
        need = visit(node)
        if need:
            stack.extend(need)
        else:
            stack.pop()
    return memo[ast.hash()]


def _int_eval(mc, ast, allow_unconstrained: bool):
    """Value of ``ast`` under model ``mc`` on Python ints; the taken branch of an ``If`` only."""
    memo = _memo_for(mc, allow_unconstrained, "int")
    model = mc.model

    def visit(node):
        op, h = node.op, node.hash()
        if op in ("BVV", "BoolV"):
            memo[h] = node.args[0]
        elif op in _LEAVES:
            memo[h] = _int_leaf(model, node, allow_unconstrained)
        elif op == "If":
            c = node.args[0].hash()
            if c not in memo:
                return [node.args[0]]
            branch = node.args[1] if memo[c] else node.args[2]
            if branch.hash() not in memo:
                return [branch]
            memo[h] = memo[branch.hash()]
        else:
            pending = [a for a in node.args if isinstance(a, claripy.ast.Base) and a.hash() not in memo]
            if pending:
                return pending
            vals = [memo[a.hash()] if isinstance(a, claripy.ast.Base) else a for a in node.args]
            fn = OPS.get(op)
            if fn is not None:
                memo[h] = fn(SCALAR, vals, node)
            else:
                memo[h] = _claripy_call(node, vals)
        return None

    return _walk(ast, memo, visit)


def _claripy_call(node, vals):
    """Any other operation through claripy's concrete backend, on bit-vector and bool values."""
    from claripy.backends.backend_concrete.bv import BVV

    args = []
    for a, v in zip(node.args, vals, strict=True):
        if isinstance(a, claripy.ast.BV):
            args.append(BVV(v, a.length))
        elif isinstance(a, claripy.ast.Bool) or not isinstance(a, claripy.ast.Base):
            args.append(v)
        else:
            raise _Unsupported
    r = backends.concrete.call(node.op, tuple(args))
    if isinstance(r, bool):
        return r
    if isinstance(r, BVV):
        return r.value
    raise _Unsupported


def fast_eval_ast(self, ast, allow_unconstrained: bool = True):
    """Drop-in replacement of ``ModelCache.eval_ast``: value of ``ast`` under this model.

    Bit-vector and boolean expressions are evaluated on Python integers; others (floating point,
    strings) through claripy's concrete backend.
    """
    if not ast.symbolic:
        return backends.concrete.eval(ast, 1)[0]
    try:
        return _int_eval(self, ast, allow_unconstrained)
    except _Unsupported:
        return _backend_eval(self, ast, allow_unconstrained)


def _backend_eval(self, ast, allow_unconstrained: bool):
    conc = backends.concrete
    memo = _memo_for(self, allow_unconstrained, "backend")
    model = self.model

    def visit(node):
        if node.op in _LEAVES:
            memo[node.hash()] = conc.convert(_leaf(model, node, allow_unconstrained))
            return None
        pending = [a for a in node.args if isinstance(a, claripy.ast.Base) and a.symbolic and a.hash() not in memo]
        if pending:
            return pending
        args = tuple((memo[a.hash()] if a.symbolic else conc.convert(a)) if isinstance(a, claripy.ast.Base) else a
                     for a in node.args)
        memo[node.hash()] = conc.call(node.op, args)
        return None

    v = _walk(ast, memo, visit)
    return v if isinstance(v, bool) else conc.eval(conc._abstract(v), 1)[0]


class _Values:
    """A model given as ``{name: value}`` (its memo lives for one evaluation)."""

    __slots__ = ("model",)

    def __init__(self, model: dict):
        self.model = model


def eval_under(ast, values: dict, allow_unconstrained: bool = True):
    """``ast``'s value with its variables set to ``values`` (name: int; missing ones 0 when
    ``allow_unconstrained``), with no solver."""
    return fast_eval_ast(_Values(values), ast, allow_unconstrained)
