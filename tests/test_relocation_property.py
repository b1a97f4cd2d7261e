"""Property: relocating objects at random during a run never changes any query's answer or outcome."""

import os
import random

import angr
import claripy
import pytest

import angr_ram
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.runner import load_project, make_state

from .conftest import BUILD
from .groundtruth import outcome_set


def probes(state, live):
    """Queries whose answers must not depend on where objects live (``live``: objects to compare)."""
    s = state.solver
    out = [("sat", s.satisfiable())]
    for k, c in enumerate(s.constraints[-12:]):
        out.append((f"valid{k}", s.is_true(c)))
        out.append((f"neg{k}", s.satisfiable(extra_constraints=[claripy.Not(c)])))
    for o in live:
        out.append((f"null{o.id}", s.is_false(o.base == 0)))
    for a, b in zip(live, live[1:], strict=False):
        out.append((f"eq{a.id},{b.id}", s.satisfiable(extra_constraints=[a.base == b.base])))
    rax = state.regs.rax
    if not s.symbolic(rax) or not (rax.variables & frozenset(
            n for o in state.ram.objects.values() if o.name for n in [o.name])):
        vals = frozenset(s.eval_upto(rax, 9))
        out.append(("rax-values", vals if len(vals) <= 8 else len(vals) > 8))
    return out


class RandomRelocator(angr.ExplorationTechnique):
    """After every step, move random objects of every active state; the probes are re-checked on
    up to ``probe_states`` randomly chosen states per step (all states are still relocated, so the
    outcome check covers every one)."""

    probe_states = 1

    def __init__(self, seed, merge=False):
        super().__init__()
        self.merge = merge
        self.rng = random.Random(seed)
        self.relocations = 0
        self.checked = 0

    def step(self, simgr, stash="active", **kwargs):
        simgr = simgr.step(stash=stash, **kwargs)
        states = simgr.stashes[stash]
        probed = {id(s) for s in self.rng.sample(states, min(self.probe_states, len(states)))}
        for st in states:
            movable = [o for o in st.ram.objects.values() if o.placed and o.name]
            if not movable:
                continue
            live = [o for o in st.ram.objects.values() if o.placed and not o.freed][:6]
            before = probes(st, live) if id(st) in probed else None
            if self.merge:
                if len(movable) < 2:
                    continue
                group = self.rng.sample(movable, min(self.rng.randint(2, 4), len(movable)))
                st.ram.make_segment([o.id for o in group])
                self.relocations += len(group)
            else:
                for o in self.rng.sample(movable, min(3, len(movable))):
                    st.ram.relocate(o.id)
                    self.relocations += 1
            if before is not None:
                assert probes(st, live) == before
                self.checked += 1
        return simgr


@pytest.mark.parametrize(("name", "n", "seed", "merge"), [
    ("matrix10_O0", 2, 1, False), ("hashtables_O2", 1, 2, False), ("hashtables_O0", 1, 3, False),
    ("ptrarray_O0", 2, 4, False), ("matrix10_O0", 2, 5, True), ("ptrarray_O0", 2, 6, True),
    ("chainhash_O0", 1, 7, True)])
def test_random_relocation_keeps_queries_and_outcomes(name, n, seed, merge):
    """Random moves (or merges into segments) after every step change no answer and no outcome."""
    b = os.fspath(BUILD / name)
    proj = load_project(b)
    simgr = proj.factory.simulation_manager(make_state(proj, n))
    simgr.use_technique(angr_ram.RelocatableMemory())
    reloc = RandomRelocator(seed, merge)
    simgr.use_technique(reloc)
    simgr.run()
    assert reloc.relocations > 5 and reloc.checked > 3
    found = set()
    for s in simgr.deadended:
        found |= path_outcomes(s)
    assert found == outcome_set(b, n)
    assert not simgr.errored and not simgr.stashes.get(angr_ram.ERROR_STASH)
