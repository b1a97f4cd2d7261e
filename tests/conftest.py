"""Shared fixtures: built samples, a bare angr-ram state."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "samples" / "build"


@pytest.fixture(scope="session", autouse=True)
def built_samples():
    """Build the samples once (``make test`` already did; this keeps plain ``pytest`` working)."""
    subprocess.run(["make", "-s", "-C", str(ROOT / "samples")], check=True, capture_output=True)
    return BUILD


@pytest.fixture
def ram_state():
    """An angr-ram state on a small sample, with the technique's plugins installed."""
    import angr_ram
    from angr_ram.runner import load_project, make_state

    proj = load_project(str(BUILD / "matrix3_O0"))
    st = make_state(proj, 2)
    simgr = proj.factory.simulation_manager(st)
    simgr.use_technique(angr_ram.RelocatableMemory())
    return simgr.active[0]


def assert_tests_replay(binary: str, result, asan: str | None = None):
    """Tests-as-oracle: ``result`` (an ``explore(..., tests=True)``) has one test per outcome it
    reports, and every test replays natively as predicted (exit tests: same exit code and stdout;
    error tests: the native or ASan run fails)."""
    from angr_ram.replay import replay

    tests = result.tests
    assert tests is not None, "explore(..., tests=True) collects the tests"
    assert {(t.exit, t.stdout) for t in tests if t.kind == "exit"} == set(result.outcomes)
    assert sum(t.kind == "error" for t in tests) == sum(k != "angr-error" for k, _, _ in result.errors)
    runs = replay(tests, binary, asan=asan, jobs=2)
    bad = [(r.test, r.status, r.exit, r.stdout, r.detail) for r in runs
           if r.status not in ("ok", "confirmed")]
    assert not bad, bad[:3]
    return runs
