"""Exits with a constant guard taken without copying the state (angr_ram.run.concrete_exits): the
same successors as angr's, one state copy fewer per such exit, angr's own behaviour for a symbolic
guard and outside angr-ram's steps."""

import angr
import claripy
import pytest

from angr_ram.core.engines import EngineCache
from angr_ram.memory.strategies.fork import forking
from angr_ram.run.concrete_exits import ConstantExitsMixin

ENGINES = EngineCache((), (ConstantExitsMixin,))

# cmp rax, 5; je +5; mov ebx, 1; ret: a block whose conditional exit goes to 0xb, else 0x6
CODE = bytes.fromhex("4883f805" "7405" "bb01000000" "c3")


@pytest.fixture
def block_state():
    proj = angr.load_shellcode(CODE, arch="amd64")
    return proj, proj.factory.blank_state(addr=0)


def _step(proj, state, held: bool, monkeypatch):
    copies = []
    original = angr.SimState.copy

    def counting(self):
        copies.append(1)
        return original(self)
    monkeypatch.setattr(angr.SimState, "copy", counting)
    if held:
        with forking():
            succ = proj.factory.successors(state, engine=ENGINES(proj))
    else:
        succ = proj.factory.successors(state)
    monkeypatch.setattr(angr.SimState, "copy", original)
    return succ, len(copies)


@pytest.mark.parametrize(("rax", "target"), ((3, 0x6), (5, 0xB)))
def test_a_constant_guard_gives_angrs_successor_without_the_copy(block_state, monkeypatch, rax, target):
    proj, state = block_state
    state.regs.rax = rax
    stock, stock_copies = _step(proj, state, False, monkeypatch)
    ours, our_copies = _step(proj, state, True, monkeypatch)
    assert [s.addr for s in stock.flat_successors] == [s.addr for s in ours.flat_successors] == [target]
    assert len(stock.unsat_successors) == 1 and ours.unsat_successors == []   # angr's copy, then dropped
    assert our_copies == stock_copies - 1
    assert ours.flat_successors[0].regs.rax.concrete_value == rax
    assert ours.flat_successors[0].solver.constraints == []


def test_a_symbolic_guard_and_outside_angr_ram_steps_keep_angrs_behaviour(block_state, monkeypatch):
    proj, state = block_state
    x = claripy.BVS("x", 64)
    state.regs.rax = x
    stock, stock_copies = _step(proj, state, False, monkeypatch)
    ours, our_copies = _step(proj, state, True, monkeypatch)
    assert sorted(s.addr for s in ours.flat_successors) == sorted(s.addr for s in stock.flat_successors) == [0x6, 0xB]
    assert our_copies == stock_copies
    for s in ours.flat_successors:
        assert s.solver.satisfiable(extra_constraints=[x == 5]) == (s.addr == 0xB)
    state.regs.rax = 3
    succ = proj.factory.successors(state, engine=ENGINES(proj))   # not inside an angr-ram step: angr's copy
    assert len(succ.unsat_successors) == 1
