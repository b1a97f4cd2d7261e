"""Property: relocating objects at random during a run never changes any query's answer or outcome."""

import os
import random

import angr
import claripy
import pytest

import angr_ram
from angr_ram.groundtruth import outcome_set
from angr_ram.outcomes import path_outcomes
from angr_ram.runner import load_project, make_state

from .conftest import BUILD


def probes(state):
    """Queries whose answers must not depend on where objects live."""
    s = state.solver
    out = [("sat", s.satisfiable())]
    for k, c in enumerate(s.constraints[-12:]):
        out.append((f"valid{k}", s.is_true(c)))
        out.append((f"neg{k}", s.satisfiable(extra_constraints=[claripy.Not(c)])))
    live = [o for o in state.ram.objects.values() if o.placed and not o.freed][:6]
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
    """After every step, move random objects of every active state and re-check the probes."""

    def __init__(self, seed):
        super().__init__()
        self.rng = random.Random(seed)
        self.relocations = 0
        self.checked = 0

    def step(self, simgr, stash="active", **kwargs):
        simgr = simgr.step(stash=stash, **kwargs)
        for st in simgr.stashes[stash]:
            movable = [o for o in st.ram.objects.values() if o.placed and o.name]
            if not movable:
                continue
            before = probes(st)
            for o in self.rng.sample(movable, min(3, len(movable))):
                st.ram.relocate(o.id)
                self.relocations += 1
            assert probes(st) == before
            self.checked += 1
        return simgr


@pytest.mark.parametrize(("name", "n", "seed"), [("matrix10_O0", 2, 1), ("twolookup_O2", 2, 2),
                                                  ("hashtables_O0", 1, 3), ("ptrarray_O0", 2, 4)])
def test_random_relocation_keeps_queries_and_outcomes(name, n, seed):
    b = os.fspath(BUILD / name)
    proj = load_project(b)
    simgr = proj.factory.simulation_manager(make_state(proj, n))
    simgr.use_technique(angr_ram.RelocatableMemory())
    reloc = RandomRelocator(seed)
    simgr.use_technique(reloc)
    simgr.run()
    assert reloc.relocations > 10 and reloc.checked > 5
    found = set()
    for s in simgr.deadended:
        found |= path_outcomes(s)
    assert found == outcome_set(b, n)
    assert not simgr.errored and not simgr.stashes.get(angr_ram.ERROR_STASH)
