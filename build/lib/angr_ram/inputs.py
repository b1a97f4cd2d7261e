"""A program's inputs: symbolic stdin, argv strings and files, and the entry state that holds them.

The entry state records what it was given in ``state.globals["angr_ram_inputs"]`` (a tuple of
:class:`ProgramInput`), so that a test case can be read off any later state: the concrete stdin,
argument and file bytes that drive the program down that state's path.
"""

from __future__ import annotations

from dataclasses import dataclass

import angr
import claripy

from .errors import AngrRamError

INPUTS_KEY = "angr_ram_inputs"

STATE_OPTIONS = {
    angr.options.ZERO_FILL_UNCONSTRAINED_REGISTERS,
    angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY,
}


@dataclass(frozen=True)
class ProgramInput:
    """One input of the program: ``kind`` is ``stdin``, ``arg`` (argv[``index``]) or ``file``
    (``name`` in the working directory); ``expr`` is its content (symbolic or concrete), one byte
    per 8 bits."""

    kind: str
    name: str
    expr: claripy.ast.BV | None
    index: int = 0


def _symbolic_bytes(prefix: str, n: int) -> claripy.ast.BV:
    """``n`` symbolic bytes, one variable each (constraints on different bytes stay independent
    for slicing and caching)."""
    parts = [claripy.BVS(f"{prefix}_{k}", 8) for k in range(n)]
    return parts[0] if n == 1 else claripy.Concat(*parts)


def parse_arg(spec: str | int | bytes) -> str | int | bytes:
    """Check an argv item: an int is a symbolic string of that many bytes, str or bytes a concrete
    argument."""
    if isinstance(spec, bool):
        raise AngrRamError(f"argument {spec!r} is neither a length nor a string")
    if isinstance(spec, int) and spec <= 0:
        raise AngrRamError(f"a symbolic argument needs a positive length, not {spec}")
    return spec


def make_state(proj: angr.Project, stdin_bytes: int = 0, args=(), files=(), **kwargs):
    """An entry state with ``stdin_bytes`` symbolic stdin bytes (0: empty stdin), argv
    ``[binary, *args]`` where an int in ``args`` is a symbolic string of that many bytes (like
    KLEE's ``--sym-arg``) and a str/bytes a concrete argument, and symbolic files ``files``:
    (name, size) pairs the program can open."""
    if stdin_bytes < 0:
        raise AngrRamError(f"stdin_bytes must not be negative, not {stdin_bytes}")
    inputs: list[ProgramInput] = []
    data = _symbolic_bytes("stdin", stdin_bytes) if stdin_bytes else None
    stdin = angr.SimFileStream(name="stdin", content=data if data is not None else b"", size=stdin_bytes,
                               has_end=True)
    inputs.append(ProgramInput("stdin", "stdin", data))
    argv: list = [proj.filename]
    for k, spec in enumerate(args, start=1):
        spec = parse_arg(spec)
        if isinstance(spec, int):
            expr = _symbolic_bytes(f"arg{k}", spec)
        else:
            raw = spec.encode() if isinstance(spec, str) else bytes(spec)
            if b"\0" in raw:
                raise AngrRamError(f"argument {k} contains a NUL byte")
            expr = claripy.BVV(raw, 8 * len(raw)) if raw else None
        argv.append(expr if expr is not None else "")
        inputs.append(ProgramInput("arg", f"arg{k}", expr, index=k))
    state = proj.factory.entry_state(stdin=stdin, args=argv, add_options=set(STATE_OPTIONS), **kwargs)
    for name, size in files:
        if not name or "\0" in name:
            raise AngrRamError(f"bad file name {name!r}")
        if size <= 0:
            raise AngrRamError(f"symbolic file {name!r} needs a positive size, not {size}")
        expr = _symbolic_bytes(f"file_{name}", size)
        state.fs.insert(name, angr.SimFile(name, content=expr, size=size, has_end=True))
        inputs.append(ProgramInput("file", name, expr))
    state.globals[INPUTS_KEY] = tuple(inputs)
    return state


def program_inputs(state) -> tuple[ProgramInput, ...]:
    """The inputs ``state``'s entry state was given; for a state not made by :func:`make_state`,
    its stdin file (a fixed-size stream) or nothing."""
    recorded = state.globals.get(INPUTS_KEY) if hasattr(state, "globals") else None
    if recorded is not None:
        return recorded
    f = state.posix.stdin
    size = f.size
    if size is None:
        return ()
    if not isinstance(size, int):
        size = state.solver.max(size) if size.symbolic else size.concrete_value
    return (ProgramInput("stdin", "stdin", f.load(0, size) if size else None),)
