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
    chunks = [c[0] if isinstance(c, tuple) else c for c in state.posix.stdout.content]
    parts = ([code] if code is not None else []) + chunks
    if not parts:
        return {(None, b"")}
    whole = claripy.Concat(*parts) if len(parts) > 1 else parts[0]
    vals = [whole.concrete_value] if not whole.symbolic else state.solver.eval_upto(whole, limit)
    res = set()
    for v in vals:
        raw = v.to_bytes(whole.length // 8, "big")
        res.add((raw[0], raw[1:]) if code is not None else (None, raw))
    return res
