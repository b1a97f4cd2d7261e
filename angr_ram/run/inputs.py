"""A program's inputs: symbolic stdin, argv strings and files, and the entry state that holds them.

The entry state records what it was given in ``state.globals["angr_ram_inputs"]`` (a tuple of
:class:`ProgramInput`), so that a test case can be read off any later state: the concrete stdin,
argument and file bytes that drive the program down that state's path.
"""

from __future__ import annotations

from dataclasses import dataclass

import angr
import claripy

from angr_ram.core.errors import AngrRamError
from angr_ram.procedures.byte_scan import until_nul

INPUTS_KEY = "angr_ram_inputs"

STATE_OPTIONS = {
    angr.options.ZERO_FILL_UNCONSTRAINED_REGISTERS,
    angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY,
}
# a file the run does not declare is not there (open fails with ENOENT, as stat and access say):
# angr's default opens it as a file of any size and content, a path no native run takes
STATE_REMOVED_OPTIONS = {angr.options.ALL_FILES_EXIST, angr.options.ANY_FILE_MIGHT_EXIST}


@dataclass(frozen=True)
class ProgramInput:
    """One input of the program: ``kind`` is ``stdin``, ``arg`` (argv[``index``]) or ``file``
    (``name`` in the working directory); ``expr`` is its content (symbolic or concrete), one byte
    per 8 bits."""

    kind: str
    name: str
    expr: claripy.ast.BV | None
    index: int = 0


TEMPLATE_RANGE = (ord("A"), ord("z"))     # KLEE's range for a template's ``?`` bytes (the seeds' runs)


@dataclass(frozen=True)
class Template:
    """A KLEE-style input template: the bytes of ``data`` as given, except that every ``?`` is a
    symbolic byte constrained to ``lo..hi`` (inclusive; KLEE's default ``'A'..'z'``). KLEE takes a
    ``-sym-stdin`` that is not a number as such a file, and ``KLEE_TEMPLATE`` for a symbolic file;
    the seeds' m4, make, gas and bash runs use templates. Give one where a size is expected:
    ``stdin_bytes=Template(b"define(a,1)?")`` or ``files=[("A", Template(...))]``."""

    data: bytes
    lo: int = TEMPLATE_RANGE[0]
    hi: int = TEMPLATE_RANGE[1]

    def __post_init__(self):
        if not isinstance(self.data, bytes | bytearray):
            raise AngrRamError(f"a template is bytes, not {type(self.data).__name__}")
        object.__setattr__(self, "data", bytes(self.data))
        if not (0 <= self.lo <= self.hi <= 255):
            raise AngrRamError(f"template range {self.lo}..{self.hi} is not within 0..255 (low first)")
        if not self.data:
            raise AngrRamError("an empty template")

    @classmethod
    def read(cls, path, lo: int = TEMPLATE_RANGE[0], hi: int = TEMPLATE_RANGE[1]) -> Template:
        """The template in file ``path`` (a clear error if it cannot be read)."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise AngrRamError(f"cannot read template {path}: {e.strerror}") from None
        if not data:
            raise AngrRamError(f"template {path} is empty")
        return cls(data, lo, hi)

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def holes(self) -> list[int]:
        """The offsets of the symbolic (``?``) bytes."""
        return [k for k, b in enumerate(self.data) if b == 0x3F]

    def content(self, prefix: str) -> tuple[claripy.ast.BV, list]:
        """The template as one bit-vector (a ``{prefix}_{offset}`` variable per ``?``) and the range
        constraints on its symbolic bytes."""
        parts, cons, run = [], [], bytearray()
        for k, b in enumerate(self.data):
            if b != 0x3F:
                run.append(b)
                continue
            if run:
                parts.append(claripy.BVV(bytes(run), 8 * len(run)))
                run = bytearray()
            v = claripy.BVS(f"{prefix}_{k}", 8)
            parts.append(v)
            cons.append(claripy.And(claripy.UGE(v, self.lo), claripy.ULE(v, self.hi)))
        if run:
            parts.append(claripy.BVV(bytes(run), 8 * len(run)))
        return (parts[0] if len(parts) == 1 else claripy.Concat(*parts)), cons


def parse_range(text: str) -> tuple[int, int]:
    """``"A-z"``, ``"f-g"`` or ``"65-122"``: a template's byte range (inclusive)."""
    if len(text) == 3 and text[1] == "-":
        lo, hi = ord(text[0]), ord(text[2])
    else:
        a, sep, b = text.partition("-")
        try:
            lo, hi = int(a, 0), int(b, 0)
        except ValueError:
            lo = hi = -1
        if not sep:
            lo = hi = -1
    if not (0 <= lo <= hi <= 255):
        raise AngrRamError(f"expected a byte range such as A-z or 65-122 (low first), not {text!r}")
    return lo, hi


def _content(prefix: str, spec) -> tuple[claripy.ast.BV | None, int, list]:
    """(content, size, constraints) of an input given as a number of symbolic bytes or a Template."""
    if isinstance(spec, Template):
        expr, cons = spec.content(prefix)
        return expr, spec.size, cons
    if isinstance(spec, bool) or not isinstance(spec, int):
        raise AngrRamError(f"an input size is a number of bytes or a Template, not {spec!r}")
    return (_symbolic_bytes(prefix, spec) if spec else None), spec, []


def _symbolic_bytes(prefix: str, n: int) -> claripy.ast.BV:
    """``n`` symbolic bytes, one variable each (constraints on different bytes stay independent
    for slicing and caching)."""
    parts = [claripy.BVS(f"{prefix}_{k}", 8) for k in range(n)]
    return parts[0] if n == 1 else claripy.Concat(*parts)


@dataclass(frozen=True)
class SymArgs:
    """KLEE's ``--sym-args MIN MAX N``: between ``low`` and ``high`` symbolic arguments of up to
    ``size`` bytes each (a NUL byte ends one early). Each count is its own entry state
    (:func:`arg_lists`); its arguments are symbolic strings of ``size`` bytes."""

    low: int
    high: int
    size: int

    def __post_init__(self):
        if not (0 <= self.low <= self.high) or self.size <= 0:
            raise AngrRamError(f"--sym-args takes MIN <= MAX (both 0 or more) and a positive size N, not "
                               f"{self.low} {self.high} {self.size}")
        if self.high > MAX_SYM_ARGS:
            raise AngrRamError(f"--sym-args allows at most {MAX_SYM_ARGS} arguments, not {self.high}")


MAX_SYM_ARGS = 64
MAX_ARG_LISTS = 1024       # entry states a product of SymArgs ranges may make


def arg_lists(args) -> list[list]:
    """The argument lists ``args`` stands for: every :class:`SymArgs` replaced by each of its counts
    of symbolic ``size``-byte arguments (several SymArgs: every combination, in order)."""
    out: list[list] = [[]]
    for spec in args:
        if isinstance(spec, SymArgs):
            out = [a + [spec.size] * k for a in out for k in range(spec.low, spec.high + 1)]
            if len(out) > MAX_ARG_LISTS:
                raise AngrRamError(f"the --sym-args ranges make more than {MAX_ARG_LISTS} argument lists")
        else:
            out = [a + [spec] for a in out]
    return out


def sym_files(count: int, size: int) -> list[tuple[str, int]]:
    """KLEE's ``--sym-files K N``: ``K`` symbolic files of ``N`` bytes named A, B, C, ..."""
    if not (1 <= count <= 26) or size <= 0:
        raise AngrRamError(f"--sym-files takes 1 to 26 files of a positive size, not {count} {size}")
    return [(chr(ord("A") + i), size) for i in range(count)]


def parse_arg(spec: str | int | bytes) -> str | int | bytes:
    """Check an argv item: an int is a symbolic string of that many bytes, str or bytes a concrete
    argument."""
    if isinstance(spec, SymArgs):
        raise AngrRamError("a SymArgs range makes several entry states: give the lists of arg_lists() one by one")
    if isinstance(spec, bool):
        raise AngrRamError(f"argument {spec!r} is neither a length nor a string")
    if isinstance(spec, int) and spec <= 0:
        raise AngrRamError(f"a symbolic argument needs a positive length, not {spec}")
    return spec


def make_state(proj: angr.Project, stdin_bytes: int = 0, args=(), files=(), **kwargs):
    """An entry state with ``stdin_bytes`` symbolic stdin bytes (0: empty stdin; a
    :class:`Template`: its bytes, each ``?`` symbolic within its range), argv ``[binary, *args]``
    where an int in ``args`` is a symbolic string of that many bytes (like KLEE's ``--sym-arg``)
    and a str/bytes a concrete argument, and symbolic files ``files``: (name, size or Template)
    pairs the program can open. No other file exists (opening one fails with ``ENOENT``) unless
    ``add_options`` asks for angr's ``ALL_FILES_EXIST``."""
    if isinstance(stdin_bytes, int) and not isinstance(stdin_bytes, bool) and stdin_bytes < 0:
        raise AngrRamError(f"stdin_bytes must not be negative, not {stdin_bytes}")
    inputs: list[ProgramInput] = []
    data, size, ranges = _content("stdin", stdin_bytes)
    stdin = angr.SimFileStream(name="stdin", content=data if data is not None else b"", size=size,
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
    add = set(STATE_OPTIONS) | set(kwargs.pop("add_options", ()))
    remove = (set(STATE_REMOVED_OPTIONS) - add) | set(kwargs.pop("remove_options", ()))
    state = proj.factory.entry_state(stdin=stdin, args=argv, add_options=add, remove_options=remove, **kwargs)
    for name, spec in files:
        if not name or "\0" in name:
            raise AngrRamError(f"bad file name {name!r}")
        if isinstance(spec, int) and not isinstance(spec, bool) and spec <= 0:
            raise AngrRamError(f"symbolic file {name!r} needs a positive size, not {spec}")
        expr, size, cons = _content(f"file_{name}", spec)
        ranges += cons
        state.fs.insert(name, angr.SimFile(name, content=expr, size=size, has_end=True))
        inputs.append(ProgramInput("file", name, expr))
    if ranges:
        state.solver.add(*ranges)
    state.globals[INPUTS_KEY] = tuple(inputs)
    return state


MAX_ARG_BYTES = 1 << 16     # an argument read back from a user's entry state ends by here


def record_inputs(state) -> None:
    """Note the inputs of a user's own entry state (``proj.factory.entry_state(args=[...],
    stdin=..., fs={...})``): its stdin, its ``argv[1:]`` as they are in memory before the program
    runs, and the files of its file system, so that its tests carry them and replay with them (a
    path read back from argv later would see what the program wrote there, such as getopt's
    permutation). A state made by :func:`make_state` has its inputs already; a symbolic ``argc``
    leaves the arguments out."""
    if INPUTS_KEY in state.globals:
        return
    args = []
    argv, argc = getattr(state.posix, "argv", None), getattr(state.posix, "argc", None)
    if argv is not None and argc is not None and not argc.symbolic and not argv.symbolic:
        table = argv.concrete_value
        for k in range(1, argc.concrete_value):
            ptr = state.memory.load(table + 8 * k, 8, endness=state.arch.memory_endness)
            if ptr.symbolic:
                break
            args.append(ProgramInput("arg", f"arg{k}", _string_at(state, ptr.concrete_value), index=k))
    state.globals[INPUTS_KEY] = (*program_inputs(state), *args, *_user_files(state))


def _user_files(state) -> list[ProgramInput]:
    """The files of a user's entry state (``fs={name: SimFile}``) under its working directory, named
    relative to it (a replay writes them into its own working directory), with their contents
    (a file of unbounded size, such as angr's default symbolic file, or one that is not a
    ``SimFile`` is left out: no test can hold it)."""
    fs = state.plugins.get("fs")
    if fs is None:
        return []
    cwd = fs.cwd.rstrip(b"/") + b"/"
    out = []
    for path, f in sorted(fs._files.items()):      # pylint: disable=protected-access (no public listing)
        size = _file_size(state, f) if isinstance(f, angr.SimFile) else None
        if not path.startswith(cwd) or size is None:
            continue
        out.append(ProgramInput("file", path[len(cwd):].decode(errors="surrogateescape"),
                                f.load(0, size) if size else None))
    return out


def _file_size(state, f) -> int | None:
    size = getattr(f, "size", None)
    if size is None or isinstance(size, int):
        return size
    return state.solver.max(size) if size.symbolic else size.concrete_value


def _string_at(state, addr: int):
    """The bytes at ``addr`` up to the first concrete NUL (None for an empty string)."""
    parts = until_nul(state, addr, MAX_ARG_BYTES)
    return claripy.Concat(*parts) if len(parts) > 1 else (parts[0] if parts else None)


def program_inputs(state) -> tuple[ProgramInput, ...]:
    """The inputs ``state``'s entry state was given; for a state not made by :func:`make_state`
    nor seen by :func:`record_inputs`, its stdin file (a fixed-size stream) or nothing."""
    recorded = state.globals.get(INPUTS_KEY) if hasattr(state, "globals") else None
    if recorded is not None:
        return recorded
    f = state.posix.stdin
    size = _file_size(state, f)
    if size is None:
        return ()
    return (ProgramInput("stdin", "stdin", f.load(0, size) if size else None),)
