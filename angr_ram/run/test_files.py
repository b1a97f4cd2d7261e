"""A run's tests on disk: :class:`TestCase` (one input and its prediction), written as raw input
files plus a JSON manifest (``tests.jsonl``) by :func:`write_tests`, read back by
:func:`read_tests` (the input of :mod:`angr_ram.run.replay` and of fuzzers' seed corpora)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from angr_ram.core.errors import AngrRamError

MANIFEST = "tests.jsonl"


@dataclass
class TestCase:
    """One test: its inputs and what the program is predicted to do with them.

    ``kind`` is ``exit`` (predicted ``exit`` code and ``stdout``), ``no-exit`` (the path ended
    without calling exit: ``message`` says how), ``error`` (a memory error of kind ``error``),
    ``errored`` (angr could not step the path: ``message`` is the reason) or ``found`` (the path
    reached a ``find`` target at ``addr``), ``unfinished`` (the path did not finish: still running
    when the run stopped, or set aside because z3 gave up; ``message`` says why and at which block,
    the input drives the program there: the input that makes a program loop is one of these) or
    ``undecided`` (the path finished but z3 could not enumerate its outcomes in time).
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
    stubs: list[str] = field(default_factory=list)   # angr stubs the path called (the prediction may be wrong)
    solved: bool = True     # False: no model in time, zero inputs that may not drive the path (no prediction)
    new_instructions: int = 0   # instructions first executed on this path, its prefix included (KLEE's covering-new)

    def manifest(self) -> dict:
        """The manifest line of this test (input files named relative to the test directory)."""
        return {
            "id": self.id, "kind": self.kind, "exit": self.exit,
            "stdout": None if self.stdout is None else self.stdout.decode("latin-1"),
            "error": self.error, "message": self.message,
            "stdin": f"{self.id}.stdin",
            "args": [f"{self.id}.arg{k}" for k in range(1, len(self.args) + 1)],
            "files": {name: f"{self.id}.file.{_safe(name)}" for name in self.files},
            "blocks": self.blocks, "addr": self.addr, "stubs": self.stubs, "solved": self.solved,
            "new_instructions": self.new_instructions,
        }

    def __repr__(self) -> str:
        what = {"exit": lambda: f"exit {self.exit} stdout={self.stdout!r}",
                "error": lambda: f"{self.error}"}.get(self.kind, lambda: self.message or self.kind)()
        extra = "".join([f" args={self.args!r}" if self.args else "",
                         f" files={self.files!r}" if self.files else ""])
        return f"<TestCase {self.id} {self.kind}: {what}; stdin={self.stdin!r}{extra}>"


def _safe(name: str) -> str:
    return name.replace("/", "_")


_OUR_FILE = re.compile(r"test\d{6}\.(stdin|arg\d+|file\..+)")


# what a run writes beside its inputs: the manifest, the run's numbers (summary.write_run_report) and
# its coverage over time (coverage.Coverage's series)
RUN_FILES = (MANIFEST, MANIFEST + ".tmp", "run.json", "coverage.csv")


def prepare_test_dir(directory, run_files: bool = True) -> Path:
    """Make ``directory`` ready for tests before anything is explored: created if needed, checked
    writable (a clear one-line :class:`~angr_ram.core.errors.AngrRamError` otherwise), and emptied of
    the files an earlier run wrote there (:data:`RUN_FILES` and ``testNNNNNN.*`` inputs), so no stale
    input is left next to the new ones (a fuzzer seeded from the directory would take them).
    Other files are left alone (and with ``run_files=False`` the run's own report and coverage series,
    which it writes while it runs)."""
    d = Path(directory)
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / ".angr-ram-write-check"
        probe.write_bytes(b"")
        probe.unlink()
        for f in d.iterdir():
            if f.name in (RUN_FILES if run_files else RUN_FILES[:2]) or _OUR_FILE.fullmatch(f.name):
                f.unlink()
    except OSError as e:
        raise AngrRamError(f"{directory}: cannot write tests there ({e.strerror or e})") from None
    return d


def binary_sha256(binary) -> str | None:
    """The SHA-256 of the file ``binary`` (None where it cannot be read)."""
    try:
        with open(binary, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def write_tests(tests: list[TestCase], directory, binary=None) -> Path:
    """Write each test's inputs (``<id>.stdin``, ``<id>.arg<k>``, ``<id>.file.<name>``) and the
    manifest ``tests.jsonl`` into ``directory`` (see :func:`prepare_test_dir`: created if needed,
    an earlier run's tests removed); each manifest line records ``binary``'s name and SHA-256, so
    that a replay of another binary is refused. Returns the manifest path."""
    d = prepare_test_dir(directory, run_files=False)
    digest = binary_sha256(binary) if binary is not None else None
    lines = []
    for t in tests:
        m = t.manifest()
        if digest is not None:
            m["binary"], m["binary_sha256"] = os.path.basename(os.fspath(binary)), digest
        (d / m["stdin"]).write_bytes(t.stdin)
        for name, value in zip(m["args"], t.args, strict=True):
            (d / name).write_bytes(value)
        for name, fname in m["files"].items():
            (d / fname).write_bytes(t.files[name])
        lines.append(json.dumps(m))
    manifest = d / MANIFEST
    tmp = d / (MANIFEST + ".tmp")       # the manifest appears whole, after every input it names
    tmp.write_text("".join(line + "\n" for line in lines))
    os.replace(tmp, manifest)
    return manifest


def read_tests(directory, binary=None) -> list[TestCase]:
    """The tests written by :func:`write_tests` to ``directory``; a manifest that is not one (not
    JSON, a line that is not a test, an input file missing), or tests recorded for another binary
    than ``binary``, is a one-line :class:`~angr_ram.core.errors.AngrRamError`."""
    d = Path(directory)
    manifest = d / MANIFEST
    if not manifest.is_file():
        raise AngrRamError(f"{os.fspath(manifest)}: no test manifest (write one with --emit-tests)")
    digest = binary_sha256(binary) if binary is not None else None
    tests = []
    try:
        text = manifest.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise AngrRamError(f"{os.fspath(manifest)}: not a test manifest ({e})") from None
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            tests.append(_test_of(json.loads(line), d))
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise AngrRamError(f"{os.fspath(manifest)}:{n}: not a test ({type(e).__name__}: {e})") from None
        except OSError as e:
            raise AngrRamError(f"{os.fspath(manifest)}:{n}: an input of the test is missing ({e})") from None
        made_for = json.loads(line).get("binary_sha256")
        if digest is not None and made_for is not None and made_for != digest:
            raise AngrRamError(f"{os.fspath(manifest)}: the tests were made for another binary "
                               f"({json.loads(line).get('binary')}, sha256 {made_for[:12]}...), not {binary}")
    return tests


def _test_of(m: dict, d: Path) -> TestCase:
    """The test a manifest line ``m`` describes, its inputs read from ``d`` (a name that leaves
    ``d`` is not a test's)."""
    def read(name) -> bytes:
        if not isinstance(name, str) or os.sep in name or name in ("", ".", ".."):
            raise ValueError(f"input file name {name!r}")
        return (d / name).read_bytes()
    if not isinstance(m, dict):
        raise TypeError(f"a {type(m).__name__}, not an object")
    return TestCase(
        m["id"], m["kind"], read(m["stdin"]), [read(a) for a in m["args"]],
        {name: read(f) for name, f in m["files"].items()}, m["exit"],
        None if m["stdout"] is None else m["stdout"].encode("latin-1"), m["error"], m["message"],
        m["blocks"], m["addr"], list(m.get("stubs", [])), bool(m.get("solved", True)),
        int(m.get("new_instructions", 0)))
