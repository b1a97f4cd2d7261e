"""The patch registry: named sets with their own gates, in place only while held; one wrapper of
``z3.Solver.check``; after a run every patched function is the original again."""

import gc
import os

import angr
import claripy
import pytest
import z3

import angr_ram
from angr_ram.core import patches
from angr_ram.core.errors import AngrRamError
from angr_ram.core.scope import RunScope, in_run
from angr_ram.solver.patches import CHECK, counting

from .conftest import BUILD


class Owner:
    def f(self, x):
        return x + 1

    def g(self, x):
        return x * 2


@pytest.fixture
def toy_sets():
    made = []

    def make(name, gate, lifetime="held"):
        s = patches.PatchSet(name, gate, lifetime)
        made.append(s)
        return s

    yield make
    for s in made:
        s.holders = 1
        s.lifetime = "held"
        s.release()
        del patches.SETS[s.name]


def test_a_set_is_in_place_only_while_held_and_acts_only_while_its_gate_holds(toy_sets):
    original_f, original_g = Owner.f, Owner.g
    gate = [True]
    s = toy_sets("toy", lambda: gate[0])
    s.patch(Owner, "f")(lambda orig, self, x: orig(self, x) + 100)
    s.patch(Owner, "g")(lambda orig, self, x: -orig(self, x))
    assert (Owner.f, Owner.g) == (original_f, original_g)       # declared, not installed
    with s.hold():
        with s.hold():                                          # nested holders: one installation
            assert Owner().f(1) == 102 and Owner().g(3) == -6
        assert s.installed and s.holders == 1
        gate[0] = False
        assert Owner().f(1) == 2 and Owner().g(3) == 6          # gate closed: the originals
    assert (Owner.f, Owner.g) == (original_f, original_g) and not s.installed and s.holders == 0


def test_a_function_put_over_a_patch_is_left_in_place(toy_sets):
    """Someone's own wrapper over ours: our release leaves it (and ours under it) in place."""
    s = toy_sets("toy-over", lambda: True)
    s.patch(Owner, "f")(lambda orig, self, x: orig(self, x) + 100)
    original_f = Owner.f
    with s.hold():
        ours = Owner.f
        Owner.f = lambda self, x: ours(self, x) * 10
    try:
        assert Owner().f(1) == 1020 and s.patches[0].installed
        with s.hold():                                          # installing again changes nothing
            assert Owner().f(1) == 1020
    finally:
        Owner.f = original_f
        s.patches[0].installed = False


def test_process_sets_stay_and_bad_sets_are_clear_errors(toy_sets):
    original_g = Owner.g
    s = toy_sets("toy-process", lambda: True, lifetime="process")
    s.patch(Owner, "g")(lambda orig, self, x: 7)
    with s.hold():
        pass
    assert Owner().g(3) == 7 and s.installed
    with pytest.raises(AngrRamError, match="declared twice"):
        patches.PatchSet("toy-process", lambda: True)
    with pytest.raises(AngrRamError, match="lifetime"):
        patches.PatchSet("toy-bad", lambda: True, lifetime="forever")
    with pytest.raises(AngrRamError, match="no patch set 'nonesuch'"):
        RunScope(patch_sets=["nonesuch"]).active().__enter__()
    s.lifetime = "held"
    s.release()
    assert Owner.g is original_g


def settle() -> bool:
    """Let go of the runs earlier tests in this process dropped half-way (a running scope holds its
    sets until it is collected); True when no set is held any more."""
    gc.collect()
    return not any(s.holders for s in patches.SETS.values() if s.lifetime == "held")


def test_z3_checks_have_one_wrapper_that_counts_in_and_outside_runs():
    assert settle()
    original = z3.Solver.check
    x = claripy.BVS("x", 8)
    with counting() as outer:
        assert z3.Solver.check is not original and CHECK.installed
        s = z3.Solver()
        s.add(z3.BitVec("y", 8) == 3)
        assert s.check() == z3.sat                              # outside a run: counted too
        with counting() as inner, RunScope().active():
            assert in_run()
            assert claripy.Solver().satisfiable(extra_constraints=[x == 4])
        assert inner.count >= 1
    assert outer.count == inner.count + 1
    assert z3.Solver.check is original and not CHECK.installed


def test_after_a_users_run_every_patched_function_is_the_original_again():
    """A user's script (own entry state, one 32-bit BVS): z3's checks during the run go through the
    wrapper (counted into the run's stats), and after it every held set is gone, while stock angr
    on the same program finds the same paths as before the run."""
    binary = os.fspath(BUILD / "nullslot_O2")

    def stock_paths():
        p = angr.Project(binary, auto_load_libs=False)
        sm = p.factory.simulation_manager(p.factory.entry_state(
            stdin=angr.SimFileStream(name="stdin", content=claripy.BVS("k", 8), has_end=True)))
        sm.run()
        return sorted((s.posix.dumps(1), len(s.history.bbl_addrs.hardcopy)) for s in sm.deadended), len(sm.errored)

    assert settle()
    before = stock_paths()
    originals = {(id(p.owner), p.name): getattr(p.owner, p.name) for p in patches.all_patches()
                 if p.set.lifetime == "held"}
    proj = angr.Project(binary, auto_load_libs=False)
    x = claripy.BVS("x", 32)
    sm = proj.factory.simulation_manager(proj.factory.entry_state(
        stdin=angr.SimFileStream(name="stdin", content=x, has_end=True)))
    tech = angr_ram.RelocatableMemory()
    sm.use_technique(tech)
    sm.run()
    assert len(sm.deadended) == 42 and tech.stats.z3_checks > 0
    held = [p for p in patches.all_patches() if p.set.lifetime == "held"]
    assert len(held) >= 20 and not any(p.installed for p in held)
    assert all(getattr(p.owner, p.name) is originals[(id(p.owner), p.name)] for p in held)
    assert all(not s.holders for s in patches.SETS.values() if s.lifetime == "held")
    assert stock_paths() == before


def test_a_running_scope_keeps_its_sets_between_steps_and_lets_go_when_the_run_ends():
    """Sets are put in place once per run, not around every step (each installation resets
    Python's method caches of the patched classes): held from the first step until the stash is
    empty; a run dropped half-way (with its project, whose engine keeps the last state stepped)
    lets go of them when it is garbage-collected."""
    assert settle()
    binary = os.fspath(BUILD / "nullslot_O2")

    def manager():
        proj = angr.Project(binary, auto_load_libs=False)
        sm = proj.factory.simulation_manager(proj.factory.entry_state(
            stdin=angr.SimFileStream(name="stdin", content=claripy.BVS("x", 32), has_end=True)))
        tech = angr_ram.RelocatableMemory()
        sm.use_technique(tech)
        return sm, tech

    installs = []
    original_acquire = patches.PatchSet.acquire

    def counted(self):
        if self.holders == 0:
            installs.append(self.name)
        original_acquire(self)

    patches.PatchSet.acquire = counted
    try:
        sm, tech = manager()
        sm.step()
        assert tech.scope.running and CHECK.installed and not in_run()    # in place, gates closed
        sm.run()
        assert not tech.scope.running and not CHECK.installed and len(sm.deadended) == 42
        assert installs.count("z3-check") == 1 and "profile" not in installs   # profile: only when profiled
        sm, tech = manager()
        sm.step()
        assert CHECK.installed
        del sm, tech
        gc.collect()
        assert not CHECK.installed
    finally:
        patches.PatchSet.acquire = original_acquire
