"""What a finished path produced: its exit code and its stdout, as concrete values."""

from __future__ import annotations

import time

import claripy
from angr.errors import SimUnsatError

from angr_ram.posix.child_processes import RESUMED_EVENT
from angr_ram.solver.z3_check import gave_up


def exit_code_expr(state):
    """The exit code of a terminated path as an 8-bit expression, or None if it did not exit."""
    for ev in reversed(list(state.history.events)):
        if ev.type == RESUMED_EVENT:        # a parent that went on after its child's exit
            return None
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
    merged path stands for many paths, and the exit code alone has up to 256 values), however
    long that takes: what a comparison with the native program's outcomes needs."""
    return listed_outcomes(state, limit, seconds=float("inf"))[0]


# outcomes a run's summary lists per path: every exit code of a merged path fits. Past the first
# LISTED_QUICKLY, more are asked for in batches while listing the path has used less than
# LISTED_SECONDS of this process's CPU time (not wall-clock time: the same run lists the same outcomes
# on a loaded machine, where other processes take the cores): a path whose stdout echoes its input (base64 of 4 symbolic bytes: 2^32 outputs; cksum's CRC in
# digits, a divider circuit per digit) is listed in part, with one stdout per exit code
LISTED_PER_PATH = 256
LISTED_QUICKLY = 16
LISTED_SECONDS = 2.0


def listed_outcomes(state, limit: int = LISTED_PER_PATH, seconds: float = LISTED_SECONDS, first: int | None = None
                    ) -> tuple[set[tuple[int | None, bytes]], bool]:
    """(exit code, stdout) pairs this path can produce, and whether that is all of them: up to
    ``limit``, those after the first :data:`LISTED_QUICKLY` only within ``seconds`` of this
    process's CPU time (z3 runs in it). A path with
    more lists one outcome per exit code it can have (up to 256). ``first``: a value of the
    outcome already known (:mod:`angr_ram.run.path_models`); with it, z3 giving up on the others
    lists that one alone instead of raising."""
    o = Outcome(state)
    if o.expr is None:
        return {(None, b"")}, True
    if not o.expr.symbolic:
        return {o.decode(o.expr.concrete_value)}, True
    t0 = time.process_time()
    batch = min(limit, LISTED_QUICKLY) + 1
    vals = [] if first is None else [first]
    try:
        new = state.solver.eval_upto(o.expr, batch, extra_constraints=[o.expr != v for v in vals])
    except (SimUnsatError, claripy.errors.UnsatError):      # the known value is the only one
        new = []
    except Exception as e:  # noqa: BLE001 - z3 gave up on the others: the known one is listed
        if first is None or gave_up(e) is None:
            raise
        return {o.decode(first)}, False
    vals += new
    more = len(new) == batch          # the last batch was full: there may be more
    while more and len(vals) <= limit and time.process_time() - t0 < seconds:
        try:
            new = state.solver.eval_upto(o.expr, batch, extra_constraints=[o.expr != v for v in vals])
        except (SimUnsatError, claripy.errors.UnsatError):      # every value was found
            new = []
        vals += new
        more = len(new) == batch
    listed = {o.decode(v) for v in vals[:limit]}
    complete = not more and len(vals) <= limit
    if not complete and o.exited:       # every exit code, with one stdout each
        code = o.expr[o.expr.length - 1:o.expr.length - 8]
        have = {c for c, _ in listed}
        try:
            for c in state.solver.eval_upto(code, 256):
                if c not in have:
                    listed.add(o.decode(state.solver.eval(o.expr, extra_constraints=[code == c])))
        except Exception as e:  # noqa: BLE001 - z3 gave up: the outcomes found so far are listed
            if first is None or gave_up(e) is None:
                raise
    return listed, complete


ENDING_CODES = 4       # an input-dependent exit code is named by up to this many of its values


def ending(state, codes=None, complete: bool = True) -> str:
    """How a finished path ended: ``exit N`` when the exit code is one value; ``exit 1|2`` (its
    values) or ``exit 1|2|3|4|...`` (more than :data:`ENDING_CODES` of them) when it depends on the
    input; for a path that did not call exit, ``no exit (<jump kind> at <address>)``. ``codes``: the
    exit codes the path's listed outcomes have (:func:`listed_outcomes`; ``complete``: all of
    them), so the codes are not asked of the solver again; without them, a few are asked."""
    code = exit_code_expr(state)
    if code is None:
        jk = state.history.jumpkind or "end"
        addr = state.history.addr if state.history.addr is not None else state.addr
        return f"no exit ({jk} at {addr:#x})"
    if not code.symbolic:
        return f"exit {code.concrete_value}"
    if not codes:
        try:
            codes = sorted(state.solver.eval_upto(code, ENDING_CODES + 1))
        except Exception:  # noqa: BLE001 - claripy's many solver errors: the codes are unknown, not the path
            return "exit (input-dependent code)"
    codes = sorted(codes)
    more = "|..." if len(codes) > ENDING_CODES or not complete else ""
    return "exit " + "|".join(str(c) for c in codes[:ENDING_CODES]) + more
