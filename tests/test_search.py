"""Search strategies and coverage (issue 81, items 1-2), as a script attaches them and through the CLI."""

import json
import os
import subprocess
import sys
from collections import Counter

import angr
import pytest

import angr_ram
from angr_ram.run.cli import main
from angr_ram.run.runner import coverage_of, explore, prepare
from angr_ram.run.search import DEPTH_KEY, WAITING_STASH, RandomPath

from .conftest import BUILD


def _script_run(binary, nbytes, search, steps_seen=None):
    """A user's script: own entry state, RelocatableMemory, a search, ``simgr.run()``."""
    proj = angr.Project(binary, auto_load_libs=False)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", size=nbytes, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    simgr.use_technique(angr_ram.RelocatableMemory())
    if search is not None:
        simgr.use_technique(search)
    stepped, work_to_first = 0, None      # states stepped, in all, until the first path finished
    while simgr.active:
        if steps_seen is not None:
            steps_seen.append(len(simgr.active))
        stepped += len(simgr.active)
        simgr.step()
        if simgr.deadended and work_to_first is None:
            work_to_first = stepped
    return simgr, work_to_first


@pytest.mark.parametrize("search", [angr_ram.DepthFirst(), angr_ram.BreadthFirst(width=3), angr_ram.RandomPath(),
                                    angr_ram.CoverageNew(), angr_ram.Interleaved(), angr_ram.CoverageDives(dive=4)],
                         ids=["dfs", "bfs3", "random-path", "covnew", "interleaved", "dives"])
def test_every_search_finds_the_same_paths_stepping_at_most_its_width(search):
    """wordsplit over 4 bytes: 16 paths whichever the order; at most ``width`` states are stepped at
    a time (1, or 3 for the breadth-first one); the depth-first one finishes its first path after
    the fewest states stepped (angr's own order steps every state of the frontier)."""
    b = os.fspath(BUILD / "wordsplit_O0")
    seen: list[int] = []
    simgr, first = _script_run(b, 4, search, seen)
    base, base_first = _script_run(b, 4, None)
    assert len(simgr.deadended) == len(base.deadended) == 16
    assert sorted(s.posix.dumps(1) for s in simgr.deadended) == sorted(s.posix.dumps(1) for s in base.deadended)
    assert max(seen) <= search.width and not simgr.stashes[WAITING_STASH]
    if isinstance(search, angr_ram.DepthFirst):
        assert first < base_first / 2, (first, base_first)


class _Fake:
    def __init__(self, depth):
        self.globals = {DEPTH_KEY: depth}


def test_random_path_weighs_a_state_by_the_chance_of_a_walk_from_the_root():
    """A state three forks deep is chosen an eighth as often as one at the root's level."""
    rp = RandomPath(seed=7)
    shallow, deep = _Fake(1.0), _Fake(4.0)
    got = Counter(id(rp.choose([shallow, deep], 1)[0]) for _ in range(9000))
    assert 7.0 < got[id(shallow)] / got[id(deep)] < 9.2


def test_fork_depth_counts_live_successors():
    """Each fork of the word splitter's loop (a space or not) adds one to the depth of both sides."""
    simgr, tech = prepare(os.fspath(BUILD / "wordsplit_O0"), 3)
    simgr.use_technique(RandomPath())
    simgr.run()
    depths = {s.globals.get(DEPTH_KEY) for s in simgr.deadended}
    assert depths == {3.0}, depths


def _native_trace(proj, stdin: bytes, measured: set) -> set:
    """The instructions a concrete run executes, by stock angr with an instruction breakpoint."""
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=stdin, has_end=True))
    seen: set[int] = set()
    state.inspect.b("instruction", when=angr.BP_BEFORE, action=lambda s: seen.add(s.inspect.instruction))
    simgr = proj.factory.simulation_manager(state)
    simgr.run(n=20000)
    assert not simgr.active and simgr.deadended
    return seen & measured


@pytest.mark.parametrize("name", ["wordsplit_O0", "wordsplit_O2", "branches_O0"])
def test_coverage_is_the_set_of_instructions_the_tests_execute(name):
    """The covered instructions of main and its callees equal the union of the instructions a
    concrete run of each test input executes (traced by stock angr, instruction by instruction)."""
    b = os.fspath(BUILD / name)
    res = explore(b, 3, coverage=True, tests=True)
    simgr, _ = prepare(b, 3, coverage=True)
    cov = coverage_of(simgr)
    simgr.run()
    measured = cov.measured()
    proj = angr.Project(b, auto_load_libs=False)
    traced = set()
    for t in res.tests:
        traced |= _native_trace(proj, t.stdin, measured)
    assert cov.covered & measured == traced
    r = res.coverage
    assert r["instructions_covered"] == len(traced) and r["instructions"] == len(measured)
    assert 0 < r["blocks_covered"] <= r["blocks"] and r["percent"] == round(100 * len(traced) / len(measured), 1)


def test_cli_search_and_coverage_in_summary_json_and_stats(tmp_path, capsys):
    """--search dfs finds the same outcomes; the summary and --json carry coverage; coverage.csv is
    written while the run goes; `angr-ram stats DIR` tabulates runs."""
    b = os.fspath(BUILD / "wordsplit_O2")
    outs = {}
    for search in ("dfs", "random-path+covnew"):
        d = tmp_path / search
        assert main(["run", b, "--stdin-bytes", "4", "--search", search, "--emit-tests", os.fspath(d), "--json"]) == 0
        r = json.loads(capsys.readouterr().out)
        outs[search] = r["outcomes"]
        assert r["coverage"]["percent"] > 80 and r["coverage"]["series"]
        rows = (d / "coverage.csv").read_text().splitlines()
        assert rows[0] == "seconds,instructions,paths" and int(rows[-1].split(",")[2]) == 16
    assert outs["dfs"] == outs["random-path+covnew"]
    assert main(["run", b, "--stdin-bytes", "2"]) == 0
    assert "coverage: " in capsys.readouterr().out
    assert main(["stats", os.fspath(tmp_path / "dfs"), os.fspath(tmp_path / "random-path+covnew")]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["directory", "paths", "tests"] and all(row.split()[1] == "16" for row in table[1:])


def test_angr_dfs_beside_relocatable_memory_keeps_its_deferred_stash():
    """angr's DFS parks states in "deferred": angr-ram no longer takes them for its own set-aside
    states (it resumed them all at once and counted them as undecided)."""
    b = os.fspath(BUILD / "wordsplit_O0")
    proj = angr.Project(b, auto_load_libs=False)
    simgr = proj.factory.simulation_manager(proj.factory.entry_state(
        stdin=angr.SimFileStream(name="stdin", size=3, has_end=True)))
    simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.use_technique(angr.exploration_techniques.DFS())
    most = 0
    while simgr.active:
        simgr.step()
        most = max(most, len(simgr.active))
    assert most == 1 and len(simgr.deadended) == 8


def test_search_names_are_checked():
    with pytest.raises(SystemExit):
        main(["run", os.fspath(BUILD / "wordsplit_O2"), "--search", "best"])
    r = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", "run", os.fspath(BUILD / "wordsplit_O2"),
                        "--search", "best"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


class _Hist:
    def __init__(self, parent=None):
        self.parent = parent


class _Chain:
    """A state whose successor is ``next()``: the same path stepped once more."""

    def __init__(self, arrival, hist=None):
        self.globals = {"angr_ram_arrival": arrival}
        self.history = hist or _Hist()

    def next(self):
        return _Chain(self.globals["angr_ram_arrival"], _Hist(self.history))


def test_depth_first_puts_a_path_that_never_forks_behind_the_others():
    """An endless loop chosen first (the newest state) is stepped ``quantum`` times, then the other
    waiting path gets its turn (before: the loop held the run until its time limit)."""
    dfs = angr_ram.DepthFirst(quantum=50)
    loop, other = _Chain(2), _Chain(1)
    picks = []
    for _ in range(120):
        chosen = dfs.choose([loop, other], 1)[0]
        picks.append(chosen is other)
        if chosen is loop:
            loop = loop.next()
        else:
            break
    assert picks[-1] and 45 <= len(picks) <= 55 and dfs.demoted == 1


def test_each_test_says_how_many_instructions_its_path_executed_first(tmp_path):
    """KLEE's covering-new, per test: instructions first executed on the test's path (its prefix,
    shared with the paths forked from it, included, as KLEE's flag is inherited); the paths differ
    by the code they alone reached first."""
    b = os.fspath(BUILD / "wordsplit_O0")
    r = explore(b, 3, coverage=True, tests=True)
    news = [t.new_instructions for t in r.tests]
    assert min(news) > 0 and len(set(news)) > 1 and max(news) <= r.coverage["executed"]
    from angr_ram.run.testcases import read_tests, write_tests
    write_tests(r.tests, tmp_path, b)
    assert [t.new_instructions for t in read_tests(tmp_path, b)] == news


def test_a_dive_goes_on_depth_first_from_the_state_picked():
    """CoverageDives(dive=5) on wordsplit over 5 bytes: a new dive starts at most once per 5 steps, and
    between them every chosen state is a successor of the one chosen before (or that one's path
    ended): depth-first from the picked state. Random-path and coverage-new pick in turn."""
    simgr, _ = prepare(os.fspath(BUILD / "wordsplit_O0"), 5)
    dives = simgr.use_technique(angr_ram.CoverageDives(dive=5))
    jumps, steps, prev = 0, 0, None
    while simgr.active:
        cur = simgr.active[0]
        if prev is not None and cur.history.parent is not prev.history and any(
                s.history.parent is prev.history for s in simgr.active + simgr.stashes[WAITING_STASH]):
            jumps += 1          # left a path that could go on
        prev = cur
        simgr.step()
        steps += 1
    assert len(simgr.deadended) == 32
    assert 1 <= dives.dives <= -(-steps // 5) + 1     # a choice per step with more than one state alive
    assert 0 < jumps <= dives.dives          # the picks do leave paths (depth-first alone would not)


def _z3_solvers(state) -> int:
    """How many of ``state``'s independent constraint sets hold a z3 solver object."""
    inner = getattr(state.solver._solver, "inner", None)
    return sum(getattr(k._tls, "solver", None) is not None for k in getattr(inner, "_solver_list", ()))


def test_waiting_states_hold_no_z3_solver_and_find_the_same_paths():
    """A state the search leaves waiting gives up its z3 solver objects (on Debian's join they were
    580 MB of 1.6 GB after 180 s); the active state keeps its own, and the paths are those of
    angr's own order."""
    proj = angr.Project(os.fspath(BUILD / "wordsplit_O0"), auto_load_libs=False)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", size=4, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.use_technique(angr_ram.DepthFirst())
    waited = held = 0
    while simgr.active:
        simgr.step()
        waiting = simgr.stashes.get(WAITING_STASH, [])
        waited += len(waiting)
        held += sum(_z3_solvers(s) for s in simgr.active)
        assert all(_z3_solvers(s) == 0 for s in waiting)
    assert waited > 0 and held > 0
    base, _ = _script_run(os.fspath(BUILD / "wordsplit_O0"), 4, None)
    assert sorted(s.posix.dumps(1) for s in simgr.deadended) == sorted(s.posix.dumps(1) for s in base.deadended)
