"""What a finished path produced: its exit code and its stdout, as concrete values."""

from __future__ import annotations

import claripy


def exit_code_expr(state):
    """The exit code of a terminated path as an 8-bit expression, or None if it did not exit."""
    for ev in reversed(list(state.history.events)):
        if ev.type == "terminate":
            code = ev.objects["exit_code"]
            code = code.ast if hasattr(code, "ast") else code
            if isinstance(code, int):
                return claripy.BVV(code & 0xFF, 8)
            return claripy.Extract(7, 0, code)
    return None


def path_outcomes(state, limit: int = 64) -> set[tuple[int | None, bytes]]:
    """Every (exit code, stdout) pair this path can produce (all solutions, up to ``limit``)."""
    code = exit_code_expr(state)
    out = state.posix.stdout
    data = out.concretize() if hasattr(out, "concretize") else [state.posix.dumps(1)]
    chunks = state.posix.stdout.content if hasattr(state.posix.stdout, "content") else []
    exprs = [c[0] if isinstance(c, tuple) else c for c in chunks]
    if not exprs and code is None:
        return {(None, b"".join(data) if isinstance(data, list) else data)}
    parts = ([code] if code is not None else []) + exprs
    whole = claripy.Concat(*parts) if len(parts) > 1 else parts[0]
    if not whole.symbolic:
        vals = [whole.concrete_value]
    else:
        vals = state.solver.eval_upto(whole, limit)
    res = set()
    nbits = whole.length
    for v in vals:
        raw = v.to_bytes(nbits // 8, "big")
        if code is not None:
            res.add((raw[0], raw[1:]))
        else:
            res.add((None, raw))
    return res
