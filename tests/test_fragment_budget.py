"""A fragment run that grows beyond its bound is given up (issue 81, item 5): merging stays out of
the way of a loop it cannot help, and no path or outcome is lost by giving up."""

import os

import angr
import claripy
import pytest

import angr_ram
from angr_ram.core.errors import AngrRamError
from angr_ram.run.runner import summarize

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set_over


def _script(binary, n, bound, search=None):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("stdin", 8 * n)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=n, has_end=True))
    st.solver.add(claripy.ULE(data.get_byte(0), 4))         # words of at most 4 bytes
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    qm = simgr.use_technique(angr_ram.QuantifiedMerging(mode="pat", merge_points="auto", max_fragment_states=bound))
    if search is not None:
        simgr.use_technique(search)
    simgr.run()
    return summarize(simgr, tech, tests=True), qm


@pytest.mark.parametrize("search", [None, "dfs"])
def test_a_given_up_fragment_loses_no_outcome(search):
    """wcprint (a length byte up to 4, then a word counter printing its count), pattern merging with at most 4
    states per fragment run: the loop's fragment is given up (its leaves run on unmerged) and the
    outcomes are still the native program's, with tests that replay; under the default bound the
    same loop merges and nothing is given up."""
    b = os.fspath(BUILD / "wcprint_O0")
    native = outcome_set_over(b, [range(0, 5)] + [b"\0 x"] * 4 + [b"x"] * 2)
    r, qm = _script(b, 7, 4, angr_ram.DepthFirst() if search else None)
    assert qm.stats.given_up >= 1 and qm.stats.given_up_states > 4
    assert r.errors == [] and r.unknown == 0 and r.outcomes == native
    assert_tests_replay(b, r)
    full, qm_full = _script(b, 7, None if search else 1024)
    assert qm_full.stats.given_up == 0 and qm_full.stats.merged_states > 0 and full.outcomes == native


def test_the_bound_is_checked():
    with pytest.raises(AngrRamError, match="at least 2"):
        angr_ram.QuantifiedMerging(max_fragment_states=1)
