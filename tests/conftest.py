"""Shared fixtures: built samples, a bare angr-ram state."""

import functools
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from angr_ram.core.errors import CallHint

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "samples" / "build"


class ForgottenHint(CallHint):
    """A call hint whose forks find nothing: each works its way out again (what a hint saves)."""

    def take(self, state, ident):
        return None


@pytest.fixture(scope="session", autouse=True)
def built_samples():
    """Build the samples once (``make test`` already did; this keeps plain ``pytest`` working)."""
    subprocess.run(["make", "-s", "-C", str(ROOT / "samples")], check=True, capture_output=True)
    return BUILD


@pytest.fixture
def ram_state():
    """An angr-ram state on a small sample, with the technique's plugins installed."""
    import angr_ram
    from angr_ram.run.runner import load_project, make_state

    proj = load_project(str(BUILD / "matrix3_O0"))
    st = make_state(proj, 2)
    simgr = proj.factory.simulation_manager(st)
    simgr.use_technique(angr_ram.RelocatableMemory())
    return simgr.active[0]


def assert_tests_replay(binary: str, result, asan: str | None = None):
    """Tests-as-oracle: ``result`` (an ``explore(..., tests=True)``) has one test per outcome it
    reports, and every test replays natively as predicted (exit tests: same exit code and stdout;
    error tests: the native or ASan run fails)."""
    from angr_ram.run.replay import replay

    tests = result.tests
    assert tests is not None, "explore(..., tests=True) collects the tests"
    assert {(t.exit, t.stdout) for t in tests if t.kind == "exit"} == set(result.outcomes)
    assert sum(t.kind == "error" for t in tests) == sum(k != "angr-error" for k, _, _ in result.errors)
    runs = replay(tests, binary, asan=asan, jobs=2)
    bad = [(r.test, r.status, r.exit, r.stdout, r.detail) for r in runs   # unfinished paths predict nothing
           if r.status not in ("ok", "confirmed") and r.test.kind != "unfinished"]
    assert not bad, bad[:3]
    return runs


def _source_digest() -> str:
    """SHA-256 of angr-ram's source and of the angr, claripy and z3 versions."""
    import claripy
    import z3

    h = hashlib.sha256(f"{claripy.__version__}:{z3.get_version_string()}".encode())
    for p in sorted((ROOT / "angr_ram").rglob("*.py")):
        h.update(p.relative_to(ROOT).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def shared_run(binary: str, n: int, **opts):
    """``explore(binary, n, tests=True, **opts)``, computed once for every test that asks for the
    same run: the result is kept in ``samples/build/.runs`` under a key of the binary's and angr-ram's
    source digests and the arguments, so a change to either runs it again, and xdist workers wait
    for the one that computes it (a file lock) instead of repeating it."""
    import fcntl
    import pickle

    from angr_ram.run.runner import explore

    b = Path(binary).resolve()
    key = hashlib.sha256(f"{hashlib.sha256(b.read_bytes()).hexdigest()}:{_SOURCE()}:{n}:"
                         f"{sorted(opts.items())!r}".encode()).hexdigest()[:32]
    store = b.parent / ".runs"
    store.mkdir(exist_ok=True)
    f = store / f"{b.name}.{key}.pickle"
    with open(store / f"{b.name}.{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if f.is_file():
            return pickle.loads(f.read_bytes())
        r = explore(os.fspath(b), n, tests=True, **opts)
        tmp = f.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(r))
        os.replace(tmp, f)
        return r


_SOURCE = functools.cache(_source_digest)


def drive_as_a_script(binary: str, content, wide, lo: int, hi: int, tests: bool = True):
    """Run ``binary`` as a user's script drives angr: ``entry_state`` with ``content`` (a claripy
    expression) as stdin, each byte of the symbolic ``wide`` constrained to ``lo..hi``, angr's
    default options, ``RelocatableMemory()`` attached, ``simgr.run()``; the run's summary."""
    import angr
    import claripy

    import angr_ram
    from angr_ram.run.runner import summarize

    proj = angr.Project(binary, auto_load_libs=False)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=content, size=content.size() // 8,
                                                           has_end=True))
    for k in range(wide.size() // 8):
        byte = wide.get_byte(k)
        st.solver.add(claripy.UGE(byte, lo), claripy.ULE(byte, hi))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    return summarize(simgr, tech, tests=tests)
