"""Test cases: one concrete input per path (and per outcome of a merged path), with its prediction.

``collect_tests(simgr)`` reads, for every finished path, every error path, every path angr could
not step (``errored``) and every path that reached a ``find`` target, the stdin, argv and file
bytes that drive the program down that path, chosen readable (zero or printable bytes wherever the
path allows), and what the program should do with them: its exit code and stdout, or the memory
error it should hit. A path that can end with several outcomes (a merged state, a symbolic exit
code) gives one test per outcome. ``emit_tests`` writes them as raw input files plus a JSON
manifest (``tests.jsonl``), the input of :mod:`angr_ram.replay` and of fuzzers' seed corpora.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import claripy

from .errors import AngrRamError
from .inputs import program_inputs
from .outcomes import Outcome, ending

MANIFEST = "tests.jsonl"
MAX_OUTCOMES_PER_PATH = 16


@dataclass
class TestCase:
    """One test: its inputs and what the program is predicted to do with them.

    ``kind`` is ``exit`` (predicted ``exit`` code and ``stdout``), ``no-exit`` (the path ended
    without calling exit: ``message`` says how), ``error`` (a memory error of kind ``error``),
    ``errored`` (angr could not step the path: ``message`` is the reason) or ``found`` (the path
    reached a ``find`` target at ``addr``) or ``unknown`` (z3 gave up on a query of the path's next
    step: ``message`` says why; the input leads up to that step).
    """

    __test__ = False   # not a pytest test class

    id: str
    kind: str
    stdin: bytes = b""
    args: list[bytes] = field(default_factory=list)      # argv[1:] as the program sees them
    files: dict[str, bytes] = field(default_factory=dict)
    exit: int | None = None
    stdout: bytes | None = None
    error: str | None = None
    message: str = ""
    blocks: int = 0
    addr: int | None = None

    def manifest(self) -> dict:
        """The manifest line of this test (input files named relative to the test directory)."""
        return {
            "id": self.id, "kind": self.kind, "exit": self.exit,
            "stdout": None if self.stdout is None else self.stdout.decode("latin-1"),
            "error": self.error, "message": self.message,
            "stdin": f"{self.id}.stdin",
            "args": [f"{self.id}.arg{k}" for k in range(1, len(self.args) + 1)],
            "files": {name: f"{self.id}.file.{_safe(name)}" for name in self.files},
            "blocks": self.blocks, "addr": self.addr,
        }

    def __repr__(self) -> str:
        what = {"exit": lambda: f"exit {self.exit} stdout={self.stdout!r}",
                "error": lambda: f"{self.error}"}.get(self.kind, lambda: self.message or self.kind)()
        extra = "".join([f" args={self.args!r}" if self.args else "",
                         f" files={self.files!r}" if self.files else ""])
        return f"<TestCase {self.id} {self.kind}: {what}; stdin={self.stdin!r}{extra}>"


def _safe(name: str) -> str:
    return name.replace("/", "_")


def _readable(b):
    """Preference for one input byte: zero or printable ASCII."""
    return claripy.Or(b == 0, claripy.And(claripy.UGE(b, 0x20), claripy.ULE(b, 0x7E)))


def readable_inputs(state, extra=()) -> tuple[bytes, list[bytes], dict[str, bytes]]:
    """(stdin, argv[1:], files) of a model of ``state``'s path (and ``extra`` constraints) whose
    bytes are zero or printable wherever the path allows. One query if every byte can be; else
    the bytes a plain model already has readable are asked together and the others one by one.
    Argument strings are cut at their first NUL, as the program sees them."""
    inputs = list(program_inputs(state))
    exprs = [i.expr for i in inputs if i.expr is not None]
    cons = list(extra)
    values: list[bytes] = []
    if exprs:
        whole = claripy.Concat(*exprs) if len(exprs) > 1 else exprs[0]
        free = [k for k in range(whole.length // 8) if whole.get_byte(k).symbolic]
        prefs = [_readable(whole.get_byte(k)) for k in free]
        solver = state.solver
        if prefs and not solver.satisfiable(extra_constraints=cons + prefs):
            plain = solver.eval(whole, cast_to=bytes, extra_constraints=cons)
            now = [plain[k] == 0 or 0x20 <= plain[k] < 0x7F for k in free]
            ok = [p for p, r in zip(prefs, now, strict=True) if r]
            rest = [p for p, r in zip(prefs, now, strict=True) if not r]
            if not solver.satisfiable(extra_constraints=cons + ok):
                ok, rest = [], prefs
            for p in rest:          # one by one: the bytes the plain model did not have readable
                if solver.satisfiable(extra_constraints=[*cons, *ok, p]):
                    ok.append(p)
            prefs = ok
        cons += prefs
        raw = solver.eval(whole, cast_to=bytes, extra_constraints=cons)
        pos = 0
        for e in exprs:
            n = e.length // 8
            values.append(raw[pos:pos + n])
            pos += n
    it = iter(values)
    stdin, args, files = b"", [], {}
    for i in inputs:
        v = next(it) if i.expr is not None else b""
        if i.kind == "stdin":
            stdin = v
        elif i.kind == "arg":
            args.append(v.split(b"\0", 1)[0])
        else:
            files[i.name] = v
    return stdin, args, files


def _case(state, n: int, kind: str, extra=(), **fields) -> TestCase:
    stdin, args, files = readable_inputs(state, extra)
    return TestCase(f"test{n:06d}", kind, stdin, args, files, blocks=state.history.block_count,
                    addr=state.addr if state.regs.ip.concrete else None, **fields)


def collect_tests(simgr, per_path: int = MAX_OUTCOMES_PER_PATH) -> list[TestCase]:
    """One test per outcome of every finished path (at most ``per_path`` each), per error path,
    per errored path and per path in the ``found`` stash, numbered in that order."""
    from .technique import DEFERRED_STASH, ERROR_STASH, UNKNOWN_STASH

    tests: list[TestCase] = []
    for s in simgr.stashes.get("deadended", []):
        o = Outcome(s)
        e = o.expr
        if e is None:
            cases = [((None, b""), ())]
        elif not e.symbolic:
            cases = [(o.decode(e.concrete_value), ())]
        else:   # one test per outcome, each input constrained to produce it
            cases = [(o.decode(v), (e == v,)) for v in sorted(s.solver.eval_upto(e, per_path))]
        for (code, out), extra in cases:
            if o.exited:
                tests.append(_case(s, len(tests) + 1, "exit", extra, exit=code, stdout=out))
            else:
                tests.append(_case(s, len(tests) + 1, "no-exit", extra, stdout=out, message=ending(s)))
    for s in simgr.stashes.get(ERROR_STASH, []):
        err = s.ram.error
        tests.append(_case(s, len(tests) + 1, "error", error=err.kind, message=err.message))
    for rec in simgr.errored:
        tests.append(_case(rec.state, len(tests) + 1, "errored", message=errored_reason(rec.error)))
    for s in simgr.stashes.get("found", []):
        tests.append(_case(s, len(tests) + 1, "found", message=f"reached {s.addr:#x}"))
    for s in simgr.stashes.get(UNKNOWN_STASH, []) + simgr.stashes.get(DEFERRED_STASH, []):
        tests.append(_case(s, len(tests) + 1, "unknown", message=s.ram.unknown or "solver gave up"))
    return tests


def errored_reason(exc: BaseException) -> str:
    """A one-line reason for an exception that stopped a path."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


_OUR_FILE = re.compile(r"test\d{6}\.(stdin|arg\d+|file\..+)")


def prepare_test_dir(directory) -> Path:
    """Make ``directory`` ready for tests before anything is explored: created if needed, checked
    writable (a clear one-line :class:`~angr_ram.errors.AngrRamError` otherwise), and emptied of
    the files an earlier run wrote there (the manifest and ``testNNNNNN.*`` inputs), so no stale
    input is left next to the new ones (a fuzzer seeded from the directory would take them).
    Other files are left alone."""
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / ".angr-ram-write-check"
        probe.write_bytes(b"")
        probe.unlink()
        for f in d.iterdir():
            if f.name == MANIFEST or _OUR_FILE.fullmatch(f.name):
                f.unlink()
    except OSError as e:
        raise AngrRamError(f"{directory}: cannot write tests there ({e.strerror or e})") from None
    return d


def write_tests(tests: list[TestCase], directory) -> Path:
    """Write each test's inputs (``<id>.stdin``, ``<id>.arg<k>``, ``<id>.file.<name>``) and the
    manifest ``tests.jsonl`` into ``directory`` (see :func:`prepare_test_dir`: created if needed,
    an earlier run's tests removed); returns the manifest path."""
    d = prepare_test_dir(directory)
    lines = []
    for t in tests:
        m = t.manifest()
        (d / m["stdin"]).write_bytes(t.stdin)
        for name, value in zip(m["args"], t.args, strict=True):
            (d / name).write_bytes(value)
        for name, fname in m["files"].items():
            (d / fname).write_bytes(t.files[name])
        lines.append(json.dumps(m))
    manifest = d / MANIFEST
    manifest.write_text("".join(line + "\n" for line in lines))
    return manifest


def emit_tests(simgr, directory) -> list[TestCase]:
    """Collect the tests of ``simgr`` (see :func:`collect_tests`) and write them to ``directory``."""
    tests = collect_tests(simgr)
    write_tests(tests, directory)
    return tests


def read_tests(directory) -> list[TestCase]:
    """The tests written by :func:`write_tests` to ``directory``."""
    d = Path(directory)
    manifest = d / MANIFEST
    if not manifest.is_file():
        raise AngrRamError(f"{os.fspath(manifest)}: no test manifest (write one with --emit-tests)")
    tests = []
    for line in manifest.read_text().splitlines():
        if not line.strip():
            continue
        m = json.loads(line)
        tests.append(TestCase(
            m["id"], m["kind"], (d / m["stdin"]).read_bytes(), [(d / a).read_bytes() for a in m["args"]],
            {name: (d / f).read_bytes() for name, f in m["files"].items()}, m["exit"],
            None if m["stdout"] is None else m["stdout"].encode("latin-1"), m["error"], m["message"],
            m["blocks"], m["addr"]))
    return tests
