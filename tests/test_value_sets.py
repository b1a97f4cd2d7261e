"""Value sets read from an expression's structure (angr_ram.memory.strategies.value_sets): what resolution
and the string procedures use when z3 gives up on a pointer, and to resolve a pointer selected from
a table whose expression allows one target only, with no query."""

import os
import subprocess

import angr
import claripy
import pytest
from angr.state_plugins.solver import SimSolver

import angr_ram
from angr_ram.core.scope import current
from angr_ram.memory.strategies import resolution
from angr_ram.memory.strategies.resolution import resolve, structural_hits
from angr_ram.memory.strategies.value_sets import MAX_VALUES, possible_values
from angr_ram.procedures.heap import allocate
from angr_ram.run import technique
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.runner import explore
from angr_ram.solver.patches import counting

from .conftest import BUILD


def _let(state, name: str, definition):
    """A let-bound symbol as the memory layer makes one: ``ram_let_* == definition``."""
    sym = claripy.BVS(name, definition.length, explicit_name=True)
    state.add_constraints(sym == definition)
    return sym


def test_the_arms_of_a_selection_with_an_offset(ram_state):
    k = claripy.BVS("k", 8)
    sel = claripy.If(k == 1, claripy.BVV(0x5000, 64), claripy.If(k == 7, claripy.BVV(0x5100, 64),
                                                                    claripy.BVV(0x5200, 64)))
    assert possible_values(ram_state, sel + 0x10) == [0x5010, 0x5110, 0x5210]
    byte = claripy.If(k == 2, claripy.BVV(0xAA, 8), claripy.BVV(0xBB, 8))
    assert possible_values(ram_state, claripy.Concat(byte, claripy.BVV(0x11, 8))) == [0xAA11, 0xBB11]
    assert possible_values(ram_state, (sel - 0x5000).zero_extend(8)[15:8]) == [0x0, 0x1, 0x2]
    # an input symbol outside the arms has no small value set
    assert possible_values(ram_state, sel + k.zero_extend(56)) is None
    # neither has a selection of more than MAX_VALUES values
    wide = claripy.BVV(0, 64)
    for i in range(MAX_VALUES + 1):
        wide = claripy.If(k.zero_extend(56) * 3 == i, claripy.BVV(0x9000 + 8 * i, 64), wide)
    assert possible_values(ram_state, wide) is None


def test_a_let_takes_the_values_of_its_definition_allowed_by_the_constraints_on_it(ram_state):
    st = ram_state
    k = claripy.BVS("k", 32)
    objs = [allocate(st, 64, True) for _ in range(3)]
    table = objs[2].start
    for i in (1, 0):
        table = claripy.If(k & 0xff == i, objs[i].start, table)
    let = _let(st, "ram_let_90_1000_64", table)
    sub = st.ram.substitute
    addrs = sorted(o.addr for o in objs)
    assert possible_values(st, sub(let + 8)) == [a + 8 for a in addrs]
    # a constraint on the let and an object's base (after substitution: on the let alone) narrows it
    st.add_constraints(claripy.Or(let == objs[0].start, let == objs[2].start))
    assert possible_values(st, sub(let + 8)) == sorted([objs[0].addr + 8, objs[2].addr + 8])
    hits = structural_hits(st, sub(let + 8), 4)
    assert sorted(h.obj.id for h in hits) == sorted([objs[0].id, objs[2].id])


def test_bytes_selected_by_one_let_agree(ram_state):
    """Each byte of a pointer read through a selected pointer is an if-then-else on the same let:
    the combinations are evaluated on the let's values, two values here, not the 2^8 of the bytes."""
    st = ram_state
    k = claripy.BVS("k", 32)
    let = _let(st, "ram_let_91_1000_64", claripy.If(k == 5, claripy.BVV(0x100, 64), claripy.BVV(0x200, 64)))
    a, b = 0x1122334455667788, 0x0102030405060708
    parts = [claripy.If(let == 0x100, claripy.BVV((a >> s) & 0xff, 8), claripy.BVV((b >> s) & 0xff, 8))
             for s in range(56, -8, -8)]
    assert possible_values(st, claripy.Concat(*parts)) == sorted([a, b])


def test_one_structural_target_is_resolved_without_a_query(ram_state):
    st = ram_state
    k = claripy.BVS("k", 32)
    obj = allocate(st, 64, True)
    # a selection whose arms all point into one object (a field of one of its elements)
    let = _let(st, "ram_let_92_1000_64", claripy.If(k == 3, obj.start + 16, obj.start + 32))
    addr = let + 8
    with counting() as zc:
        hits = resolve(st, st.ram.substitute(addr), 8, addr)
    assert zc.count == 0
    assert [(h.kind, h.obj.id) for h in hits] == [("object", obj.id)]
    assert st.ram.stats.structural_resolutions == 1
    # the read is exact: two values, from the two fields
    st.memory.store(obj.start + 24, claripy.BVV(0xAAAA, 64), endness="Iend_LE")
    st.memory.store(obj.start + 40, claripy.BVV(0xBBBB, 64), endness="Iend_LE")
    v = st.memory.load(addr, 8, endness="Iend_LE")
    assert sorted(st.solver.eval_upto(v, 4)) == [0xAAAA, 0xBBBB]


def test_a_value_that_would_fault_leaves_the_question_to_the_solver(ram_state):
    st = ram_state
    k = claripy.BVS("k", 32)
    obj = allocate(st, 64, True)
    let = _let(st, "ram_let_93_1000_64", claripy.If(k == 3, obj.start, claripy.BVV(0, 64)))
    assert structural_hits(st, st.ram.substitute(let + 8), 8) is None
    # resolution asks the solver, which finds both the object and the null dereference
    hits = resolve(st, st.ram.substitute(let + 8), 8, let + 8)
    assert sorted(h.kind for h in hits) == ["error", "object"]


DEFER = 777     # a first-pass budget no other solver in these runs has


def _z3_gives_up_on_table_pointers(monkeypatch) -> dict:
    """In the first pass (budget DEFER), the solver gives up (claripy's time-out error) on every
    query of a resolution of a let-based address and of a fork's feasibility checks; everything
    else, and every query resumed with the full budget, is answered. Returns the counts."""
    inside, counts = [0], {"refused": 0}

    def within(cls, name, relevant=lambda *a: True):
        f = getattr(cls, name)

        def g(*a, **k):
            if not relevant(*a):
                return f(*a, **k)
            inside[0] += 1
            try:
                return f(*a, **k)
            finally:
                inside[0] -= 1
        monkeypatch.setattr(cls, name, g)

    def refuse(name):
        f = getattr(SimSolver, name)

        def g(self, *a, **k):
            scope = current()
            if inside[0] and scope is not None and scope.budget_ms == DEFER:
                counts["refused"] += 1
                raise claripy.ClaripySolverInterruptError("timeout")
            return f(self, *a, **k)
        monkeypatch.setattr(SimSolver, name, g)

    within(resolution, "_resolve", lambda state, space, a, *rest: any(
        n.startswith("ram_let") for n in a.variables))
    within(technique.RelocatableMemory, "_fork")
    refuse("eval_upto")
    refuse("satisfiable")
    return counts


def _native_outcomes(binary: str, inputs) -> set:
    out = set()
    for data in inputs:
        r = subprocess.run([binary], input=data, capture_output=True, timeout=10)
        out.add("segfault" if r.returncode == -11 else r.returncode)
    return out


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_a_table_pointer_that_may_be_null_keeps_its_step_when_z3_gives_up(monkeypatch, opt):
    """A user's script (own entry state, one 32-bit symbol on stdin) on a program that reads a field
    through a pointer selected from a 64-entry table with empty slots. z3 gives up on the field's
    resolution and on the null dereference's feasibility in the first pass: the targets come from
    the pointer's expression (42 objects and null), the null dereference alone is set aside and
    reported when resumed, and the 42 object paths go on. Outcomes: those of the native program
    over every slot, and those of a run where z3 answers everything."""
    b = os.fspath(BUILD / f"nullslot_{opt}")

    def run():
        proj = angr.Project(b, auto_load_libs=False)
        stdin = angr.SimFileStream(name="stdin", content=claripy.BVS("k", 32), has_end=False)
        simgr = proj.factory.simulation_manager(proj.factory.entry_state(stdin=stdin))
        simgr.use_technique(angr_ram.RelocatableMemory(defer_ms=DEFER))
        simgr.run()
        found = set().union(*(path_outcomes(s) for s in simgr.deadended))
        errors = [(s.ram.error.kind, s.ram.error.ins_addr) for s in simgr.stashes["memory_errors"]]
        return angr_ram.stats(simgr), {code for code, _ in found}, errors, simgr

    plain, codes, errors, _ = run()
    counts = _z3_gives_up_on_table_pointers(monkeypatch)
    st, codes_gave_up, errors_gave_up, simgr = run()
    assert counts["refused"] == 2
    assert st["structural_resolutions"] > plain["structural_resolutions"]
    # the null dereference was the only state set aside, and not with its step
    assert st["deferred_states"] == st["undecided_successors"] == 1 and st["unknown"] == 0
    assert not simgr.errored and st["paths"] == plain["paths"] == 42
    assert codes_gave_up == codes and errors_gave_up == errors and [e[0] for e in errors] == ["null-dereference"]
    native = _native_outcomes(b, [k.to_bytes(4, "little") for k in range(64)])
    assert codes | {"segfault"} == native
    assert _native_outcomes(b, [simgr.stashes["memory_errors"][0].ram.error.stdin]) == {"segfault"}


@pytest.mark.slow
def test_a_table_pointer_z3_gives_up_on_keeps_its_step_going():
    """uthash's HASH_FIND_INT of a four-byte key with z3 budgets of 20 and 40 ms: the bucket and
    key pointers come from the table's structure, so steps are not set aside whole for them (only
    the branch successors z3 cannot decide, each alone), and every outcome is found. Before the
    loop's null check narrows the bucket's let, its values include the table's empty entries: that
    null dereference is forked off as its own path, set aside alone when z3 cannot decide it, and
    resumed; z3 may give up on it again with the full budget (one state in ``unknown`` that is
    not a branch successor)."""
    b = os.fspath(BUILD / "uthash_key4_O0")
    res = explore(b, 4, timeout=240, defer_ms=20, solver_timeout_ms=40)
    st = res.stats
    seen = {k: st[k] for k in ("undecided_successors", "unknown_states", "deferred_states", "steps_abandoned",
                               "structural_resolutions")}
    assert res.outcomes == {(2, b""), (3, b""), (4, b"")}, seen
    assert not res.errors and res.stopped is None
    assert st["structural_resolutions"] > 0 and st["steps_abandoned"] == 0, seen
    whole = st["deferred_states"] + st["unknown_states"] - st["undecided_successors"]
    assert st["undecided_successors"] > 0 and whole <= 1, seen
