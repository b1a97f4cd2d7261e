"""A frontier that fits the machine: states beyond a bound wait in files and come back; every path
is still found (issue 81, item 4)."""

import os

import pytest

from angr_ram.core.errors import AngrRamError
from angr_ram.run.runner import explore
from angr_ram.run.spilling import Spilling

from .conftest import BUILD


@pytest.mark.parametrize("search", [None, "dfs"])
def test_spilling_keeps_every_path(search):
    """wordsplit over 5 bytes: 32 paths and 5 outcomes, the same with at most 4 live states (the
    others spilled and restored: none left on disk), and the tests the same."""
    b = os.fspath(BUILD / "wordsplit_O0")
    plain = explore(b, 5, search=search, tests=True)
    spilled = explore(b, 5, search=search, spill_states=4, tests=True)
    assert sum(plain.endings.values()) == 32
    assert spilled.outcomes == plain.outcomes and spilled.endings == plain.endings
    assert spilled.spilled > 0 and spilled.spilled_left == 0 and spilled.unfinished == 0
    assert sorted((t.exit, t.stdout) for t in spilled.tests) == sorted((t.exit, t.stdout) for t in plain.tests)


def test_spilling_from_a_script(tmp_path):
    """As a script uses it: simgr.use_technique(Spilling(...)) after the others; live states stay
    within the bound after every step and the files are gone once closed."""
    from angr_ram.run.runner import prepare

    simgr, _ = prepare(os.fspath(BUILD / "wordsplit_O2"), 5, search="bfs")
    sp = simgr.use_technique(Spilling(max_states=6, directory=os.fspath(tmp_path / "spill")))
    peak = 0
    while simgr.active:
        simgr.step()
        peak = max(peak, len(simgr.active) + len(simgr.stashes["waiting"]))
    assert peak <= 6 and len(simgr.deadended) == 32
    assert sp.spilled == sp.restored > 0 and sp.on_disk == 0
    sp.close()
    assert os.listdir(tmp_path / "spill") == []


def test_bad_bounds_are_refused():
    with pytest.raises(AngrRamError, match="at least 4"):
        Spilling(max_states=2)
    with pytest.raises(AngrRamError, match="needs max_states or max_rss_mb"):
        Spilling(max_states=None)


@pytest.mark.parametrize("search", ["bfs", "dfs"])
def test_the_spilled_states_are_those_the_search_takes_last(search):
    """At the first spill, breadth-first sets aside the newest states and depth-first the oldest
    (angr-ram's search arrival numbers), and they come back in the search's own order."""
    from angr_ram.run.runner import prepare
    from angr_ram.run.search import ARRIVAL_KEY

    simgr, _ = prepare(os.fspath(BUILD / "wordsplit_O0"), 6, search=search)
    sp = simgr.use_technique(Spilling(max_states=4))
    while simgr.active and sp.spilled == 0:
        simgr.step()
    assert sp.spilled > 0
    live = [s.globals[ARRIVAL_KEY] for s in simgr.active + simgr.stashes["waiting"]]
    disk = [s.globals[ARRIVAL_KEY] for s in sp.left_states()]
    if search == "bfs":
        assert min(disk) > max(live)
    else:
        assert max(disk) < max(live) and min(disk) == min(live + disk)
    first_back = sorted(disk, reverse=search == "dfs")    # the next for the search come back first
    while simgr.active and sp.restored == 0:
        simgr.step()
    seen = {s.globals[ARRIVAL_KEY] for s in simgr.active + simgr.stashes["waiting"] + simgr.deadended}
    back = [a for a in first_back if a in seen]
    assert back and back == first_back[:len(back)]
    while simgr.active:
        simgr.step()
    assert len(simgr.deadended) == 64 and sp.on_disk == 0
    sp.close()


def test_a_stopped_run_writes_tests_for_its_spilled_states():
    """A run stopped with states still in spill files writes an ``unfinished`` test for each of
    them too, as for its live ones: every unfinished path has a test."""
    b = os.fspath(BUILD / "wordsplit_O0")
    r = explore(b, 6, search="bfs", spill_states=4, max_paths=3, tests=True)
    assert r.stopped == "max-paths" and r.spilled_left > 0
    unfinished = [t for t in r.tests if t.kind == "unfinished"]
    assert len(unfinished) == r.unfinished
    assert sum(t.message.startswith("spilled: ") for t in unfinished) == r.spilled_left
    assert len({t.stdin for t in unfinished}) == len(unfinished)     # each its own path's input


def test_spilled_states_are_not_loaded_once_the_tests_time_is_spent():
    """Past the test budget's deadline (or at a second Ctrl-C) the states still in spill files are
    not unpickled one by one for zero-input tests: they are counted as without a test."""
    import time

    from angr_ram.run.input_budget import InputBudget
    from angr_ram.run.runner import prepare
    from angr_ram.run.testcases import collect_tests

    simgr, _ = prepare(os.fspath(BUILD / "wordsplit_O0"), 6, search="bfs")
    sp = simgr.use_technique(Spilling(max_states=4))
    while simgr.active and sp.on_disk < 3:
        simgr.step()
    on_disk = sp.on_disk
    assert on_disk >= 3
    calls = []
    assert len(list(sp.left_states(stop=lambda: len(calls.append(1) or calls) > 2))) == 2
    assert sp.unloaded == on_disk - 2
    spent = InputBudget(deadline=time.perf_counter() - 10)
    tests = collect_tests(simgr, budget=spent)
    assert not any(t.message.startswith("spilled: ") for t in tests)
    assert spent.unwritten == on_disk and sp.unloaded == on_disk
    sp.close()


def test_states_still_on_disk_when_the_time_is_out_keep_the_tests_made_when_they_were_spilled():
    """``explore()``'s spilling keeps each spilled state's test in memory, made as it is spilled
    from the models its solver cached (no z3): a run whose test time is out writes every spilled
    path's test all the same (before: none of them, counted as without a test), and each input
    drives its path (it satisfies the spilled state's constraints)."""
    import time

    from angr_ram.run.input_budget import InputBudget
    from angr_ram.run.inputs import program_inputs
    from angr_ram.run.runner import prepare
    from angr_ram.run.testcases import collect_tests

    simgr, tech = prepare(os.fspath(BUILD / "wordsplit_O0"), 6, search="bfs", spill_states=4)
    sp = next(t for t in simgr._techniques if isinstance(t, Spilling))
    while simgr.active and sp.on_disk < 3:
        simgr.step()
    on_disk = sp.on_disk
    assert on_disk >= 3
    checks = tech.stats.z3_checks
    spent = InputBudget(deadline=time.perf_counter() - 10)
    tests = [t for t in collect_tests(simgr, budget=spent) if t.message.startswith("spilled: ")]
    assert tech.stats.z3_checks == checks
    assert len(tests) == on_disk and spent.unwritten == 0 and sp.unloaded == on_disk
    assert all(t.solved and t.kind == "unfinished" for t in tests)
    for s, t in zip(sp.left_states(), tests, strict=True):     # the same order: the search's
        stdin = next(i.expr for i in program_inputs(s) if i.kind == "stdin")
        assert s.solver.satisfiable(extra_constraints=[stdin == t.stdin])
    sp.close()


def test_every_model_class_pickles_by_its_name():
    """A spilled state holds instances of angr-ram's procedure classes (its call stack); those a
    factory made (``memcpy``, ``__memcpy_chk``, system-call wrappers, maths, ``iswalpha``...) were
    not module attributes, and pickling expr's states failed at 520 s: "Can't pickle RamMemcpy"."""
    import pickle

    from angr_ram.posix.library import posix_sets
    from angr_ram.procedures.installation import core_sets

    classes = {cls for sets in (posix_sets("symbolic"), posix_sets("fixed"), core_sets())
               for ms in sets for cls in ms.procedures.values()}
    assert len(classes) > 300
    bad = [c.__name__ for c in classes if pickle.loads(pickle.dumps(c)) is not c]
    assert bad == []


def test_states_a_script_made_unpicklable_stay_live_and_every_path_is_found(tmp_path):
    """A script's state may hold what pickle cannot write (a callback in ``state.globals``): such
    states are not spilled, the run goes on with them in memory (counted in ``kept``), and every
    path is found, as without spilling. Before, the pickling error ended the run. Every successor
    inherits the callback: after 8 failures in a row spilling stops (trying each new state took
    this test 6 minutes under CI)."""
    from angr_ram.run.runner import prepare

    simgr, _ = prepare(os.fspath(BUILD / "wordsplit_O2"), 5, search="bfs")
    simgr.active[0].globals["on_found"] = lambda s: None
    sp = simgr.use_technique(Spilling(max_states=6, directory=os.fspath(tmp_path / "spill")))
    while simgr.active:
        simgr.step()
    assert len(simgr.deadended) == 32 and not simgr.errored
    assert sp.spilled == 0 and sp.kept == 8 and sp.given_up and "not picklable" in sp.kept_why
    sp.close()


def test_a_spill_round_longer_than_its_time_goes_on_at_the_next_steps(tmp_path):
    """Spilling is bounded per step (``round_seconds``): a round of thousands of states held expr
    13 s past its deadline. With no time at all, each step spills one state and the round goes on
    at the next steps, until the bound holds again; every path is still found."""
    from angr_ram.run.runner import prepare

    simgr, _ = prepare(os.fspath(BUILD / "wordsplit_O2"), 5, search="bfs")
    sp = simgr.use_technique(Spilling(max_states=6, directory=os.fspath(tmp_path / "spill")))
    sp.round_seconds = 0.0
    per_step, pending_seen = [], False
    while simgr.active:
        before = sp.spilled
        simgr.step()
        per_step.append(sp.spilled - before)
        pending_seen |= sp._pending > 0
    assert len(simgr.deadended) == 32 and not simgr.errored
    assert max(per_step) == 1 and sum(per_step) == sp.spilled > 1 and pending_seen
    assert sp.on_disk == 0
    sp.close()
