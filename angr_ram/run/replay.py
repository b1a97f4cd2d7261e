"""Native replay: run the real binary on each emitted test and compare with the prediction.

A test of a finished path passes when the native exit code and stdout equal the predicted ones; a
memory-error test passes when the native run fails (killed by a signal) or, given an
AddressSanitizer build, ASan reports an error. Tests of analysis limits (``symbolic-*`` errors),
of paths angr could not step, of paths without an exit and of ``find`` targets carry no
prediction, nor does a test whose input was not solved in time (zero bytes that may not drive its
path): their native result is shown, not judged.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from angr_ram.core.errors import ABORTING_ERRORS, FATAL_SIGNAL, AngrRamError
from angr_ram.posix.child_processes import IN_CHILD
from angr_ram.run.bounded_capture import Captured, run_captured
from angr_ram.run.native_faults import FAULT_SIGNALS
from angr_ram.run.testcases import TestCase, read_tests

# error kinds a native run (or AddressSanitizer) can confirm; the others are limits of the analysis
MEMORY_ERRORS = frozenset({"out-of-bounds", "use-after-free", "double-free", "invalid-free",
                           "null-dereference", "allocation-too-large", "invalid-jump-target"})
ASAN_ENV = {"ASAN_OPTIONS": "detect_leaks=0:verify_asan_link_order=0"}
FAILING = frozenset({"mismatch", "false-error", "timeout"})


@dataclass
class Replay:
    """The native run of one test: ``status`` is ``ok``, ``mismatch``, ``confirmed`` (the
    predicted memory error happened), ``false-error`` (the ASan build ran cleanly), ``unconfirmed``
    (no ASan build given and the native run did not fail), ``unchecked`` (no prediction) or
    ``timeout``."""

    test: TestCase
    status: str
    exit: int | None = None
    stdout: bytes = b""
    detail: str = ""
    stdout_length: int = 0

    @property
    def stdout_clipped(self) -> bool:
        """True when the native run printed more than ``stdout`` keeps (bounded_capture.OUTPUT_CAP)."""
        return self.stdout_length > len(self.stdout)

    @property
    def failed(self) -> bool:
        """True when the native run contradicts the prediction."""
        return self.status in FAILING


# the environment a native run adds to the caller's: the C locale and UTC, the ones angr-ram's models
# implement (posix/startup.py: setlocale answers "C", MB_CUR_MAX is 1; posix/calendar.py:
# localtime is UTC), whatever LANG and TZ say
NATIVE_ENV = {"LC_ALL": "C", "TZ": "UTC0"}
# what GNU make passes to the commands it runs: a native make run under `make test` or `make bench`
# would be a sub-make (make[1]: Entering directory ...), which the analysis, with no environment, is not
MAKE_VARIABLES = frozenset({"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "MAKE_TERMOUT", "MAKE_TERMERR"})


def native_environment(env: dict | None = None) -> dict:
    """A native run's environment: the caller's without :data:`MAKE_VARIABLES`, then
    :data:`NATIVE_ENV`, then ``env``."""
    return {**{k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}, **NATIVE_ENV, **(env or {})}


def _ignored_signals() -> list:
    """The signals this process ignores (SIGKILL and SIGSTOP cannot be)."""
    return [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)
            and signal.getsignal(s) == signal.SIG_IGN]


def fresh_signals():
    """A ``preexec_fn`` that gives the child every signal at its default disposition and none
    blocked (the process angr-ram's models describe, posix/signals.py), or None when this
    process ignores and blocks none (then a child starts that way anyway). A shell runs a
    background job with SIGINT and SIGQUIT ignored and a child inherits that: under ``nohup ... &``
    a program that reports whether SIGINT is ignored (GNU make checks) answered otherwise than its
    test. Only the ignored signals are reset, in the child, between fork and exec."""
    ignored = _ignored_signals()
    blocked = bool(signal.pthread_sigmask(signal.SIG_BLOCK, []))
    if not ignored and not blocked:
        return None

    def reset():
        for s in ignored:
            signal.signal(s, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
    return reset


def _caught(signum, frame):      # noqa: ARG001 - a handler that does nothing: as good as ignoring
    return None


@contextlib.contextmanager
def exec_resets_ignored_signals():
    """While in this context, each signal this process ignores is caught by a handler that does
    nothing instead (the same for this process), so a child exec'd meanwhile starts with it at its
    default disposition (exec resets caught signals, keeps ignored ones) without a ``preexec_fn``
    (:func:`fresh_signals` then has nothing to reset). A ``preexec_fn`` makes Python fork instead of
    vfork: from a process that explored for minutes (3 GB) that cost 0.13 s a run, and replaying a
    thousand tests took longer than exploring. Only the main thread can set handlers; elsewhere
    this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ignored = _ignored_signals()
    for s in ignored:
        signal.signal(s, _caught)
    try:
        yield
    finally:
        for s in ignored:
            signal.signal(s, signal.SIG_IGN)


def run_native(binary: str, test: TestCase, timeout: float = 10.0, env: dict | None = None):
    """(exit status, stdout, stderr, signal) of ``binary`` on ``test``'s inputs, run in a fresh
    working directory holding its files, in the C locale (:data:`NATIVE_ENV`, then ``env``), with
    default signal dispositions (:func:`fresh_signals`); a run
    killed by a signal has status 128 + its number, a timeout status None. The streams are
    :class:`~angr_ram.run.bounded_capture.Captured`: kept up to a bound, compared whole."""
    with tempfile.TemporaryDirectory(prefix="angr-ram-replay-") as cwd:
        for name, data in test.files.items():
            path = os.path.normpath(os.path.join(cwd, name))
            if not path.startswith(cwd + os.sep):
                raise AngrRamError(f"{test.id}: file {name!r} is outside the replay's working directory")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
        argv = [os.path.abspath(binary), *(os.fsdecode(a) for a in test.args)]
        code, out, err = run_captured(argv, test.stdin, timeout, cwd=cwd, env=native_environment(env),
                                      preexec_fn=fresh_signals())
    if code is None:
        return None, out, err, None
    if code < 0:
        return 128 - code, out, err, -code
    return code, out, err, None


def replay_one(binary: str, test: TestCase, asan: str | None = None, timeout: float = 10.0) -> Replay:
    """Run ``test`` natively (and under ``asan`` for memory-error tests) and judge the prediction."""
    code, captured, _, sig = run_native(binary, test, timeout)
    result = _judge(test, code, captured, sig, binary, asan, timeout)
    result.stdout_length = captured.length
    return result


def _judge(test: TestCase, code, captured: Captured, sig, binary: str, asan: str | None, timeout: float) -> Replay:
    out = captured.head
    if not test.solved:
        return Replay(test, "unchecked", code, out, "input not solved in time (zero bytes): no prediction")
    if test.kind == "exit":
        if code is None:
            return Replay(test, "timeout", None, out, f"no exit within {timeout:g} s")
        ok = code == test.exit and test.stdout is not None and captured.equals(test.stdout)
        stubs = f"; the path called angr stubs: {', '.join(test.stubs)}" if test.stubs else ""
        return Replay(test, "ok" if ok else "mismatch", code, out,
                      "" if ok else f"predicted exit {test.exit} stdout={test.stdout!r}{stubs}")
    if test.kind == "error" and test.message.endswith(IN_CHILD):
        return Replay(test, "unchecked", code, out, "an error in a child process: the native process goes on")
    if test.kind == "error" and test.error in ABORTING_ERRORS:
        if sig == signal.SIGABRT:
            return Replay(test, "confirmed", code, out, "native run killed by SIGABRT")
        return Replay(test, "mismatch", code, out, f"predicted {test.error}; native run "
                                                   f"{'timed out' if code is None else f'exited {code}'}")
    if test.kind == "error" and test.error == FATAL_SIGNAL:
        if sig is not None and f"signal {sig} " in test.message:
            return Replay(test, "confirmed", code, out, f"native run killed by signal {sig}")
        return Replay(test, "mismatch", code, out, f"predicted {test.message}; native run "
                                                   f"{'timed out' if code is None else f'exited {code}' if sig is None else f'killed by signal {sig}'}")
    if test.kind == "error" and test.error in FAULT_SIGNALS:
        want = FAULT_SIGNALS[test.error]
        if sig == want:
            return Replay(test, "confirmed", code, out, f"native run killed by signal {sig}")
        return Replay(test, "mismatch", code, out, f"predicted signal {want} ({test.error}); native run "
                                                   f"{'timed out' if code is None else f'exited {code}' if sig is None else f'killed by signal {sig}'}")
    if test.kind == "error" and test.error in MEMORY_ERRORS:
        if sig is not None:
            return Replay(test, "confirmed", code, out, f"native run killed by signal {sig}")
        if asan is None:
            return Replay(test, "unconfirmed", code, out, "native run did not fail; give --asan to check")
        acode, _, aerr, _ = run_native(asan, test, timeout, ASAN_ENV)
        if b"ERROR: AddressSanitizer" in aerr or b"ERROR: LeakSanitizer" in aerr:
            first = next((ln for ln in (aerr.head + b"\n" + aerr.tail).decode("latin-1").splitlines()
                          if "ERROR:" in ln), "")
            return Replay(test, "confirmed", code, out, first.strip()[:160])
        return Replay(test, "false-error", code, out, f"AddressSanitizer build exited {acode} without a report")
    return Replay(test, "unchecked", code, out, test.message or (test.error or ""))


def replay(tests, binary: str, asan: str | None = None, jobs: int = 2, timeout: float = 10.0) -> list[Replay]:
    """Replay ``tests`` (a list of :class:`TestCase` or a directory written by ``emit_tests``)
    against ``binary`` with ``jobs`` native runs at a time; results in test order."""
    for exe in (binary, asan):
        if exe is None:
            continue
        if os.path.isdir(exe):
            raise AngrRamError(f"{exe}: a directory, not a binary")
        if not os.path.isfile(exe):
            raise AngrRamError(f"{exe}: no such file")
        if not os.access(exe, os.X_OK):
            raise AngrRamError(f"{exe}: not an executable file")
    if not isinstance(tests, list):
        if not os.path.isdir(tests):
            raise AngrRamError(f"{tests}: not a directory of tests (write one with run --emit-tests)")
        tests = read_tests(tests, binary)
    with exec_resets_ignored_signals(), ThreadPoolExecutor(max(1, jobs)) as ex:
        return list(ex.map(lambda t: replay_one(binary, t, asan, timeout), tests))


def format_table(results: list[Replay]) -> str:
    """A table of the replays (one row a test) and a summary line of the status counts."""
    rows = [("test", "kind", "predicted", "native", "status")]
    for r in results:
        t = r.test
        pred = {"exit": lambda t=t: f"exit {t.exit} {t.stdout!r}",
                "error": lambda t=t: t.error}.get(t.kind, lambda t=t: t.message[:40] or "-")()
        native = "timeout" if r.exit is None else f"exit {r.exit} {r.stdout[:40]!r}"
        rows.append((t.id, t.kind, _clip(pred), _clip(native), r.status + (f" ({r.detail})" if r.detail and
                                                                            r.status != "ok" else "")))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "  " + row[4] for row in rows]
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines.append(f"{len(results)} tests: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return "\n".join(lines)


def _clip(s: str, n: int = 48) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."
