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
