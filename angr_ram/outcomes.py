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


def outcome_expr(state):
    """``(expr, exited)``: the exit code (if the path exited) followed by the stdout bytes, as one
    expression (None if both are empty)."""
    code = exit_code_expr(state)
    chunks = [c[0] if isinstance(c, tuple) else c for c in state.posix.stdout.content]
    parts = ([code] if code is not None else []) + chunks
    if not parts:
        return None, False
    return (claripy.Concat(*parts) if len(parts) > 1 else parts[0]), code is not None


def decode_outcome(expr, value: int, exited: bool) -> tuple[int | None, bytes]:
    """The (exit code, stdout) pair that ``value`` of ``outcome_expr``'s expression stands for."""
    raw = value.to_bytes(expr.length // 8, "big")
    return (raw[0], raw[1:]) if exited else (None, raw)


def path_outcomes(state, limit: int = 64) -> set[tuple[int | None, bytes]]:
    """Every (exit code, stdout) pair this path can produce (all solutions, up to ``limit``)."""
    whole, exited = outcome_expr(state)
    if whole is None:
        return {(None, b"")}
    vals = [whole.concrete_value] if not whole.symbolic else state.solver.eval_upto(whole, limit)
    return {decode_outcome(whole, v, exited) for v in vals}


def ending(state) -> str:
    """How a finished path ended: ``exit N`` when the exit code is one value, else ``exit`` or, for
    a path that did not call exit, ``no exit (<jump kind> at <address>)``."""
    code = exit_code_expr(state)
    if code is None:
        jk = state.history.jumpkind or "end"
        addr = state.history.addr if state.history.addr is not None else state.addr
        return f"no exit ({jk} at {addr:#x})"
    return f"exit {code.concrete_value}" if not code.symbolic else "exit"
