"""Bad control flow ends as the hardware ends it (angr_ram.run.native_faults; issue 83, item 1):
samples/badjump jumps into the middle of instructions through a table of offsets and loads 16
bytes from a misaligned address. Every input's native result, run as a user's script under the
default model and dsmm: the exits found, each fault an error path of the signal's kind whose test
replays as confirmed (before: two ``SimIRSBNoDecodeError`` records and ``AngrExitError``s)."""

import os
import signal
import subprocess

import angr
import claripy
import pytest

import angr_ram
from angr_ram.run.native_faults import FAULT_SIGNALS
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay
from angr_ram.run.runner import summarize

from .conftest import BUILD

KIND_OF_SIGNAL = {s: k for k, s in FAULT_SIGNALS.items()}


def _native(binary: str) -> tuple[set, dict]:
    """(exit outcomes, signal -> inputs) over the 128 values the program keeps of its byte."""
    exits, signals = set(), {}
    for v in range(128):
        p = subprocess.run([binary], input=bytes([v]), capture_output=True, check=False)
        if p.returncode < 0:
            signals.setdefault(-p.returncode, set()).add(v)
        else:
            exits.add((p.returncode, p.stdout))
    return exits, signals


@pytest.mark.parametrize(("opt", "model"), [("O0", "fork"), ("O2", "fork"), ("O0", "dsmm")])
def test_jumps_into_instructions_end_as_the_native_signals(opt, model):
    b = os.fspath(BUILD / f"badjump_{opt}")
    exits, signals = _native(b)
    assert set(signals) == {signal.SIGILL, signal.SIGSEGV, signal.SIGTRAP}
    proj = angr.Project(b, auto_load_libs=False)
    data = claripy.BVS("stdin", 8)
    st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=data, size=1, has_end=True))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory(model=model))
    simgr.run()
    r = summarize(simgr, tech, tests=True)
    assert not simgr.errored
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == exits
    kinds = {k for k, _, _ in r.errors}
    assert kinds == {KIND_OF_SIGNAL[s] for s in signals}
    results = replay(r.tests, b, jobs=2)
    assert {x.status for x in results} == {"ok", "confirmed"}
    confirmed = [x for x in results if x.status == "confirmed"]
    # every native fault, each by its own kind: the input of each error test is one natively killed so
    assert all(x.test.stdin[0] & 0x7f in signals[FAULT_SIGNALS[x.test.error]] for x in confirmed)


def _script_run(binary: str, n: int, model: str = "fork"):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("stdin", 8 * n)
    st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=data, size=n, has_end=True))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory(model=model))
    simgr.run()
    return simgr, summarize(simgr, tech, tests=True)


@pytest.mark.parametrize(("opt", "model"), [("O0", "fork"), ("O2", "fork"), ("O2", "dsmm")])
def test_stores_into_read_only_pages_are_segfaults(opt, model):
    """samples/rowrite: a store through a pointer to a writable buffer or a const table, and one
    into a string literal. Natively the inputs that write the table or the literal die with
    SIGSEGV (before: paths went on with the table changed, outcomes no input has). Each is an
    error path of kind ``segfault`` confirmed by replay; the other inputs' outcomes are all found."""
    b = os.fspath(BUILD / f"rowrite_{opt}")
    native = {}
    for v0 in (0, 1, ord("L"), 127, 128, 255):
        for v1 in range(16):
            p = subprocess.run([b], input=bytes([v0, v1]), capture_output=True, check=False)
            native[bytes([v0, v1])] = (p.returncode, p.stdout)
    exits = {o for o in native.values() if o[0] >= 0}
    assert {o for o in native.values() if o[0] < 0} == {(-signal.SIGSEGV, b"")}
    simgr, r = _script_run(b, 2, model)
    assert not simgr.errored
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == exits
    assert [k for k, _, _ in r.errors] == ["segfault", "segfault"]
    assert any(".rodata" in m for _, m, _ in r.errors)
    results = replay(r.tests, b, jobs=2)
    assert {x.status for x in results} == {"ok", "confirmed"}
    assert sorted(x.test.error for x in results if x.status == "confirmed") == ["segfault", "segfault"]


def test_a_script_may_still_write_read_only_pages_itself():
    """Only the program's own stores fault: a script patching ``.rodata`` with ``state.memory.store``
    before the run, and a hook writing there during it, are let through as in stock angr."""
    b = os.fspath(BUILD / "rowrite_O0")
    proj = angr.Project(b, auto_load_libs=False)
    msg = proj.loader.main_object.get_symbol("msg").rebased_addr
    seen = []

    def hook(state):
        state.memory.store(msg + 1, b"A")
        seen.append(state.solver.eval(state.memory.load(msg, 2), cast_to=bytes))
    proj.hook_symbol("puts", angr.SIM_PROCEDURES["libc"]["puts"]())
    proj.hook(proj.loader.main_object.get_symbol("main").rebased_addr, hook, length=0)
    st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=b"\x05\x03", size=2, has_end=True))
    st.memory.store(msg, b"J")
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    r = summarize(simgr, tech, tests=False)
    assert r.errors == [] and seen == [b"JA"]
    assert [s.posix.dumps(1) for s in simgr.deadended] == [b"mutxble\n"]


@pytest.mark.parametrize(("opt", "model"), [("O0", "fork"), ("O2", "fork"), ("O0", "dsmm")])
def test_privileged_instructions_are_segfaults(opt, model):
    """samples/privops: ``in``, ``out`` and ``cli`` in user mode die natively with SIGSEGV; angr
    returned an unconstrained port value (256 outcomes no native input has), ignored ``out`` and
    followed ``cli``'s ``Ijk_Privileged`` exit. Each is now a ``segfault`` error path whose test
    replay confirms; the other inputs' outcomes are all found."""
    b = os.fspath(BUILD / f"privops_{opt}")
    exits, signals = _native(b)
    assert set(signals) == {signal.SIGSEGV} and signals[signal.SIGSEGV] == {ord("i"), ord("o"), ord("c")}
    simgr, r = _script_run(b, 1, model)
    assert not simgr.errored
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == exits
    assert sorted(m.split()[0] for _, m, _ in r.errors) == ["in", "out", "privileged"]
    results = replay(r.tests, b, jobs=2)
    assert {x.status for x in results} == {"ok", "confirmed"}
    assert sorted(x.test.stdin[0] for x in results if x.status == "confirmed") == sorted(b"ioc")
