"""angr-ram's engine (angr_ram.core.engines, angr_ram.run.concrete_steps): angr's own engine class
line with angr-ram's mixins, used for the states the techniques step; nothing under
``angr.engines`` replaced; the angr internals it reads pinned here, so an angr upgrade fails a
test instead of a benchmark; an unexpected failure of the fast path counted, and raised in debug
mode."""

import inspect
import os

import angr
import claripy
import pytest
from angr.engines.successors import SimSuccessors, SuccessorsEngine
from angr.engines.vex.heavy.heavy import HeavyVEXMixin, VEXEarlyExit
from angr.state_plugins.callstack import CallStack

import angr_ram
from angr_ram.core.engines import DEBUG_ENV, EngineCache, engine_class
from angr_ram.core.errors import AngrRamError
from angr_ram.core.patches import SETS
from angr_ram.run import concrete_blocks
from angr_ram.run.concrete_callstack import IntCallStack
from angr_ram.run.concrete_steps import TOP_MIXINS, VEX_MIXINS
from angr_ram.run.outcomes import path_outcomes

from .conftest import BUILD
from .test_imports import MODULES
from .test_scanning import users_run

# replacements of third-party functions (angr_ram.core.patches), after every module is imported;
# 40 before the engine's mixins, 35 before z3's destructors were left to sys.unraisablehook;
# issue 80 asks for at most 25: this bound only goes down
MAX_REPLACED = 21


def _params(f) -> list[str]:
    return list(inspect.signature(f).parameters)


def test_the_angr_internals_the_engine_reads_are_what_it_was_written_against():
    """What the mixins override or call: if angr changes one of these, this fails (not the speed)."""
    assert _params(HeavyVEXMixin.process_successors)[:3] == ["self", "successors", "irsb"]
    assert {"size", "num_inst", "extra_stop_points", "opt_level", "strict_block_end", "thumb"} <= set(
        _params(HeavyVEXMixin.process_successors))
    assert _params(HeavyVEXMixin._perform_vex_stmt_Exit) == ["self", "guard", "target", "jumpkind"]
    assert _params(HeavyVEXMixin._perform_vex_stmt_Dirty_call) == ["self", "func_name", "ty", "args", "func"]
    assert _params(HeavyVEXMixin.lift_vex)[:2] == ["self", "addr"]
    assert issubclass(VEXEarlyExit, Exception)
    assert _params(SimSuccessors._categorize_successor) == ["self", "state"]
    assert _params(SimSuccessors.add_successor)[:5] == ["self", "state", "target", "guard", "jumpkind"]
    assert {"add_guard", "exit_stmt_idx", "exit_ins_addr"} <= set(_params(SimSuccessors.add_successor))
    assert _params(SuccessorsEngine.process_successors)[:2] == ["self", "successors"]
    assert "SimSuccessors(addr, old_state)" in inspect.getsource(SuccessorsEngine.process)
    assert _params(CallStack._manage) == ["self"]
    assert "state.callstack._manage()" in inspect.getsource(SimSuccessors._preprocess_successor)
    assert {"call_site_addr", "func_addr", "stack_ptr", "ret_addr", "jumpkind"} <= set(_params(CallStack.__init__))
    assert "engine" in _params(angr.factory.AngrObjectFactory.successors)
    assert "successor_func" in _params(angr.SimulationManager.successors)
    proj = angr.load_shellcode(b"\xc3", arch="amd64")
    assert proj.factory.default_engine_factory is angr.engines.UberEngine


def test_the_engine_is_angrs_class_line_with_the_mixins_in_place():
    proj = angr.Project(os.fspath(BUILD / "exithandlers_O0"), auto_load_libs=False)
    engine = EngineCache(TOP_MIXINS, VEX_MIXINS)(proj)
    mro = type(engine).__mro__
    assert isinstance(engine, angr.engines.UberEngine)
    assert mro[1:1 + len(TOP_MIXINS)] == TOP_MIXINS
    at = mro.index(HeavyVEXMixin)
    assert mro[at - len(VEX_MIXINS):at] == VEX_MIXINS
    assert EngineCache(TOP_MIXINS, VEX_MIXINS)(proj) is not engine                  # one per owner
    assert type(EngineCache(TOP_MIXINS, VEX_MIXINS)(proj)) is type(engine)          # one class
    assert engine_class(angr.engines.UberEnginePcode, TOP_MIXINS, VEX_MIXINS).__mro__[1:3] == TOP_MIXINS
    with pytest.raises(AngrRamError, match="HeavyVEXMixin"):
        engine_class(angr.engines.UberEngine, (), (IntCallStack,))
    # the project's own engine is angr's, before and after a run
    assert type(proj.factory.default_engine) is angr.engines.UberEngine


def _engine_functions() -> dict:
    """Every function of every class under angr.engines, as found now."""
    found = {}
    for name, mod in list(__import__("sys").modules.items()):
        if not name.startswith("angr.engines") or mod is None:
            continue
        for cname, cls in vars(mod).items():
            if inspect.isclass(cls) and cls.__module__ == name:
                for fname, f in vars(cls).items():
                    found[(name, cname, fname)] = f
    return found


def test_a_run_replaces_nothing_under_angr_engines_and_at_most_the_bound_elsewhere():
    """Every module imported, a program run (and looked at inside a step): no function of angr's
    engines is replaced; the third-party functions angr-ram replaces are listed and bounded."""
    for m in MODULES:
        __import__(m)
    before = _engine_functions()
    seen = {}
    proj = angr.Project(os.fspath(BUILD / "exithandlers_O0"), auto_load_libs=False)

    def look(state):
        seen.update(_engine_functions())
    st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=b"ab", has_end=True))
    st.inspect.b("instruction", when=angr.BP_BEFORE, action=look)
    simgr = proj.factory.simulation_manager(st)
    simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run(n=40)
    assert seen, "the breakpoint never fired"
    changed = sorted(k for k, f in seen.items() if before.get(k) is not f)
    assert changed == []
    replaced = sorted(f"{getattr(p.owner, '__module__', '?')}.{getattr(p.owner, '__qualname__', p.owner)}.{p.name}"
                      for s in SETS.values() if not s.name.startswith("bench-") for p in s.patches
                      if not getattr(p.owner, "__module__", "").startswith("angr_ram")
                      and not getattr(p.owner, "__name__", "").startswith("angr_ram"))
    assert not [r for r in replaced if r.startswith("angr.engines")]
    assert len(replaced) <= MAX_REPLACED


def test_a_stock_step_after_a_run_uses_angrs_engine_and_call_stack():
    b = os.fspath(BUILD / "exithandlers_O0")
    users_run(b, b"ab", 2)
    proj = angr.Project(b, auto_load_libs=False)
    st = proj.factory.entry_state()
    succ = proj.factory.successors(st)
    assert type(succ) is SimSuccessors
    assert type(succ.flat_successors[0].callstack) is CallStack


def test_an_unexpected_failure_of_the_fast_path_is_counted_and_raised_in_debug_mode(monkeypatch):
    """A fault of the blocks on ints that is not a hand-back (here a TypeError) sends the block to
    angr's engine with the same outcomes, counted in the run's stats; with $ANGR_RAM_DEBUG it is
    an error of the run, not a silent slowdown."""
    b = os.fspath(BUILD / "exithandlers_O0")
    simgr, r = users_run(b, b"abq", 2)
    want = set().union(*(path_outcomes(s) for s in simgr.deadended))
    assert r.stats["fast_path_failures"] == 0
    original = concrete_blocks.ConcreteBlock.run
    calls = []

    def broken(self):
        calls.append(1)
        if len(calls) % 3 == 0:
            raise TypeError("a bug in the fast path")
        return original(self)
    monkeypatch.setattr(concrete_blocks.ConcreteBlock, "run", broken)
    monkeypatch.delenv(DEBUG_ENV, raising=False)
    simgr, r = users_run(b, b"abq", 2)
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == want
    assert r.stats["fast_path_failures"] > 0
    assert not simgr.errored
    monkeypatch.setenv(DEBUG_ENV, "1")
    proj = angr.Project(b, auto_load_libs=False)
    data = claripy.BVS("stdin", 16)
    st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=data, size=2, has_end=True))
    simgr = proj.factory.simulation_manager(st)
    simgr.use_technique(angr_ram.RelocatableMemory())
    with pytest.raises(TypeError, match="a bug in the fast path"):
        simgr.run()
