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


class Outcome:
    """A finished path's outcome as one expression: its exit code (if it exited), then each stdout
    write, a write of symbolic length preceded by its length (puts of a string chosen by the input
    writes the longest candidate and a symbolic size). ``decode`` turns a value of ``expr`` back
    into the (exit code, stdout) pair."""

    def __init__(self, state):
        code = exit_code_expr(state)
        self.exited = code is not None
        parts: list = [code] if self.exited else []
        self.fields: list[tuple[str, int]] = [("code", 1)] if self.exited else []
        for chunk in state.posix.stdout.content:
            data, size = chunk if isinstance(chunk, tuple) else (chunk, None)
            n = data.length // 8
            if size is not None and not isinstance(size, int):
                if size.symbolic:
                    parts.append(size.zero_extend(64 - size.length) if size.length < 64 else size[63:0])
                    self.fields.append(("size", 8))
                else:
                    size = size.concrete_value
            if isinstance(size, int) and size < n:
                data = data[data.length - 1: data.length - 8 * size] if size else None
                n = size
            if data is not None and n:
                parts.append(data)
                self.fields.append(("data", n))
        self.expr = None if not parts else claripy.Concat(*parts) if len(parts) > 1 else parts[0]

    def decode(self, value: int) -> tuple[int | None, bytes]:
        """The (exit code, stdout) pair that ``value`` of :attr:`expr` stands for."""
        raw = value.to_bytes(self.expr.length // 8, "big") if self.expr is not None else b""
        code, out, pos, limit = None, [], 0, None
        for kind, n in self.fields:
            piece = raw[pos:pos + n]
            pos += n
            if kind == "code":
                code = piece[0]
            elif kind == "size":
                limit = int.from_bytes(piece, "big")
            else:
                out.append(piece if limit is None else piece[:limit])
                limit = None
        return code, b"".join(out)


def path_outcomes(state, limit: int = 4096) -> set[tuple[int | None, bytes]]:
    """Every (exit code, stdout) pair this path can produce (all solutions, up to ``limit``: a
    merged path stands for many paths, and the exit code alone has up to 256 values)."""
    o = Outcome(state)
    if o.expr is None:
        return {(None, b"")}
    vals = [o.expr.concrete_value] if not o.expr.symbolic else state.solver.eval_upto(o.expr, limit)
    return {o.decode(v) for v in vals}


def ending(state) -> str:
    """How a finished path ended: ``exit N`` when the exit code is one value, else ``exit`` or, for
    a path that did not call exit, ``no exit (<jump kind> at <address>)``."""
    code = exit_code_expr(state)
    if code is None:
        jk = state.history.jumpkind or "end"
        addr = state.history.addr if state.history.addr is not None else state.addr
        return f"no exit ({jk} at {addr:#x})"
    return f"exit {code.concrete_value}" if not code.symbolic else "exit"
