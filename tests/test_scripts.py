"""angr-ram as a drop-in for existing angr scripts (issue: drop-in).

The corpus ``samples/scripts/s*.py`` holds scripts in the styles angr's documentation teaches
(``full_init_state``, ``call_state``, ``blank_state`` with ``state.memory.store``, hand-built
frames, user hooks and SimProcedures, symbolic files, exploit finding, DFS, stepping by hand);
each must get its answer with and without ``RelocatableMemory()`` added, checked natively. The
other tests pin what a script can observe: where ``run(n=)`` and ``step()`` land, the names of
hooked procedures, a model that needs libc's set-up on a state without it, the uninitialized
default on hand-made states, and states whose memory angr-ram cannot manage."""

import os
import sys

import angr
import claripy
import pytest

import angr_ram
from angr_ram.core.errors import AngrRamError
from angr_ram.memory.uninitialized import ZERO_FILL

from .conftest import BUILD, ROOT

sys.path.insert(0, os.fspath(ROOT / "samples" / "scripts"))
import harness  # noqa: E402 - the corpus's own module, beside its scripts

# stock angr needs half a minute or more on these (table lookup chains, DFS over a maze, a parser
# over a line, glibc's own allocator); angr-ram on the maze
SLOW_STOCK = {"s12_sbox_chain", "s15_maze_dfs", "s22_fgets_parser", "s25_sbox_o2", "s29_glibc_heap_overflow"}
# stock angr does not answer these within 300 s (bench --scripts: killed), angr-ram in about a second:
# the static binary, where angr runs glibc's own start-up and stdio
STOCK_UNANSWERED = {"s17_static_hash"}
SLOW_RAM = {"s15_maze_dfs"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_RAM else n
                                  for n in harness.names()])
def test_script_gets_its_answer_with_angr_ram(name):
    """The script with ``simgr.use_technique(angr_ram.RelocatableMemory())`` added finds an input
    on which the native program prints what the script looks for."""
    answer = harness.run(name, True)
    assert harness.native_ok(name, answer), answer


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_STOCK else n
                                  for n in harness.names() if n not in STOCK_UNANSWERED])
def test_script_gets_its_answer_on_stock_angr(name):
    """The same script as written (stock angr) answers too: the corpus is of scripts that work."""
    answer = harness.run(name, False)
    assert harness.native_ok(name, answer), answer


def _view(proj, simgr):
    """What a script sees of ``simgr``: per stash the states' addresses (a hooked address by its
    procedure's name: angr-ram binds a program's weak imports, which moves angr's extern
    allocations) and the active states' block histories."""
    def where(a):
        hook = proj.hooked_by(a)
        return hook.display_name + (f".{hook.run_func}" if hook.is_continuation else "") if hook else a
    stashes = {k: sorted(map(str, (where(s.addr) for s in v))) for k, v in simgr.stashes.items() if v}
    return stashes, sorted(tuple(where(a) for a in s.history.bbl_addrs) for s in simgr.active)


def _simgr(binary, ram: bool):
    proj = angr.Project(binary, auto_load_libs=False)
    st = proj.factory.entry_state(stdin=claripy.BVS("in", 16))
    simgr = proj.factory.simulation_manager(st)
    if ram:
        simgr.use_technique(angr_ram.RelocatableMemory())
    return proj, simgr


@pytest.mark.parametrize("n", [1, 4, 9, 23, 80])
def test_run_n_lands_where_stock_angr_lands(n):
    """``run(n=k)`` steps k times as angr does: the same stashes, addresses and histories (a step
    is one block when the script counts steps, though angr-ram may run several per step under a
    plain ``run()``)."""
    b = os.fspath(BUILD / "branches_O0")
    views = []
    for ram in (False, True):
        proj, simgr = _simgr(b, ram)
        simgr.run(n=n)
        views.append(_view(proj, simgr))
    assert views[0] == views[1]


def test_step_by_step_and_step_size_land_where_stock_angr_lands():
    """A script's own ``step()`` loop, ``step(size=)`` and ``run(until=)``: after every step the
    same view as stock angr's."""
    b = os.fspath(BUILD / "branches_O0")
    (pa, a), (pr, r) = _simgr(b, False), _simgr(b, True)
    for k in range(30):
        a.step()
        r.step()
        assert _view(pa, a) == _view(pr, r), k
    (pa, a), (pr, r) = _simgr(b, False), _simgr(b, True)
    for _ in range(6):
        a.step(size=8)
        r.step(size=8)
    assert _view(pa, a) == _view(pr, r)
    (pa, a), (pr, r) = _simgr(b, False), _simgr(b, True)
    a.run(until=lambda sm: len(sm.active) > 3)
    r.run(until=lambda sm: len(sm.active) > 3)
    assert _view(pa, a) == _view(pr, r)


def test_hooked_procedures_carry_the_symbols_names():
    """Every procedure angr-ram hooks on a symbol is named after it, as angr names its own
    (``project.hooked_by(addr).display_name``), and a path's history names libc's functions."""
    b = os.fspath(BUILD / "branches_O0")
    proj, simgr = _simgr(b, True)
    syms = {n: proj.loader.find_symbol(n) for n in proj.loader.main_object.imports}
    hooked = {n: proj.hooked_by(s.rebased_addr) for n, s in syms.items()
              if s is not None and proj.is_hooked(s.rebased_addr)}
    ours = {n: h for n, h in hooked.items() if type(h).__module__.startswith("angr_ram")}
    assert ours, "angr-ram hooks some of the program's imports"
    assert {n: h.display_name for n, h in ours.items()} == {n: n for n in ours}
    simgr.run()
    described = " ".join(simgr.deadended[0].history.descriptions)
    assert "SimProcedure __libc_start_main" in described and "Ram" not in described


class _UsersStrlen(angr.SimProcedure):
    """A script's own model: angr's strlen, counted."""
    calls = 0

    def run(self, s):
        type(self).calls += 1
        return self.inline_call(angr.SIM_PROCEDURES["libc"]["strlen"], s).ret_expr


class _UsersFree(angr.SimProcedure):
    freed = 0

    def run(self, p):  # noqa: ARG002
        type(self).freed += 1


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_users_own_hooks_win_before_or_after_attaching(when):
    """A script's own procedures on functions angr-ram models (``strlen``, ``free``, and angr's own
    ``malloc`` made by the script) stay theirs whether hooked before the technique is attached or
    after, and the run uses them; so does a Python function hooked at such an address."""
    b = os.fspath(BUILD / "heapformat_O0")
    stdin = b"12 ab"

    def stock_output():
        p = angr.Project(b, auto_load_libs=False)
        p.hook_symbol("strlen", _UsersStrlen(), replace=True)
        p.hook_symbol("free", _UsersFree(), replace=True)
        sm = p.factory.simulation_manager(p.factory.entry_state(
            stdin=angr.SimFileStream("stdin", content=stdin, has_end=True)))
        sm.run()
        return [s.posix.dumps(1) for s in sm.deadended]
    proj = angr.Project(b, auto_load_libs=False)

    def hook_all():
        proj.hook_symbol("strlen", _UsersStrlen(display_name="users-strlen"), replace=True)
        proj.hook_symbol("malloc", angr.SIM_PROCEDURES["libc"]["malloc"](display_name="users-malloc"), replace=True)
        proj.hook_symbol("free", _UsersFree(display_name="users-free"), replace=True)
    if when == "before":
        hook_all()
    st = proj.factory.entry_state(stdin=angr.SimFileStream("stdin", content=stdin, has_end=True))
    simgr = proj.factory.simulation_manager(st)
    simgr.use_technique(angr_ram.RelocatableMemory())
    if when == "after":
        hook_all()
    _UsersStrlen.calls = _UsersFree.freed = 0
    simgr.run()
    by = {n: proj.hooked_by(proj.loader.find_symbol(n).rebased_addr) for n in ("strlen", "malloc", "free")}
    assert type(by["strlen"]) is _UsersStrlen and type(by["free"]) is _UsersFree
    assert by["malloc"].display_name == "users-malloc"
    assert _UsersStrlen.calls > 0 and _UsersFree.freed > 0
    assert [s.posix.dumps(1) for s in simgr.deadended] == stock_output() == [b"dec 12\n"]
    # a Python function the script hooked where angr-ram would put a model
    proj = angr.Project(b, auto_load_libs=False)
    free = proj.loader.find_symbol("free").rebased_addr
    proj.hook(free, lambda state: None, length=0, replace=True)
    proj.factory.simulation_manager(proj.factory.entry_state()).use_technique(angr_ram.RelocatableMemory())
    assert type(proj.hooked_by(free)).__name__ == "UserHook"


def test_library_models_work_on_a_blank_state_without_errno():
    """A model that sets errno (``unsetenv("")``: EINVAL) on a ``blank_state`` at ``main``, which has
    no errno location: the path goes on as under stock angr (angr's ``ret_errno`` raised
    ``ValueError`` out of the procedure)."""
    b = os.fspath(BUILD / "sc_errnoblank_O0")
    proj = angr.Project(b, auto_load_libs=False)
    st = proj.factory.blank_state(addr=proj.loader.find_symbol("main").rebased_addr)
    assert st.libc.errno_location is None
    simgr = proj.factory.simulation_manager(st)
    simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    assert not simgr.errored, [str(e.error) for e in simgr.errored]
    # main returns to the unknown return address of a blank state: unconstrained, as in angr
    assert [s.posix.dumps(1) for s in simgr.deadended + simgr.unconstrained] == [b"unset -1\n"]


def test_uninitialized_default_keeps_a_hand_made_states_options():
    """The default (``"auto"``) zero-fills a state at the program's entry point (a process's start)
    and leaves the options of a state a script built elsewhere as the script gave them: a
    ``blank_state`` in the middle of a function reads an unset register as angr would, not as
    NULL."""
    b = os.fspath(BUILD / "sc_hookcheck_O0")
    proj = angr.Project(b, auto_load_libs=False)
    entry = proj.factory.entry_state()
    mid = proj.factory.blank_state(addr=proj.loader.find_symbol("check_equals").rebased_addr)
    mid.regs.rsi = 12
    simgr = proj.factory.simulation_manager([entry, mid])
    simgr.use_technique(angr_ram.RelocatableMemory())
    assert all(opt in entry.options for opt in ZERO_FILL)
    assert not any(opt in mid.options for opt in ZERO_FILL)
    explicit = proj.factory.blank_state(addr=proj.loader.find_symbol("check_equals").rebased_addr)
    proj.factory.simulation_manager(explicit).use_technique(angr_ram.RelocatableMemory(uninitialized="zero"))
    assert all(opt in explicit.options for opt in ZERO_FILL)


def test_states_of_another_memory_are_refused_in_one_line():
    """angr's static-mode states (``AbstractMemory``, as angr's analyses make them) are refused
    with a clear error when the technique is attached, not changed into a class that fails later."""
    proj = angr.Project(os.fspath(BUILD / "branches_O0"), auto_load_libs=False)
    simgr = proj.factory.simulation_manager(proj.factory.blank_state(mode="static"))
    with pytest.raises(AngrRamError, match="default memory"):
        simgr.use_technique(angr_ram.RelocatableMemory())


def test_fgets_over_symbolic_bytes_keeps_one_state():
    """``fgets`` of 99 bytes of angr's default stdin (a packet stream) and of a 40-byte BVS stdin
    keeps one state whose line length is symbolic, as angr's own model does (the model used to
    fork once per possible line length: 16,385 states); the program's own branches fork it."""
    b = os.fspath(BUILD / "sc_linecheck_O0")
    for stdin in (None, claripy.BVS("line", 8 * 40)):
        proj = angr.Project(b, auto_load_libs=False)
        st = proj.factory.full_init_state(**({} if stdin is None else {"stdin": stdin}))
        simgr = proj.factory.simulation_manager(st)
        simgr.use_technique(angr_ram.RelocatableMemory())
        main = proj.loader.find_symbol("main")
        plt = proj.loader.main_object.plt["fgets"]
        call = next(i for i in proj.factory.block(main.rebased_addr, size=main.size).capstone.insns
                    if i.mnemonic == "call" and i.op_str == hex(plt))
        simgr.explore(find=call.address + call.size)
        assert len(simgr.found) == 1 and not simgr.active
        line = simgr.found[0]
        assert angr_ram.stats(simgr)["forks"] == 0
        assert line.solver.min(line.regs.rax) != 0 and line.solver.symbolic(line.memory.load(line.regs.rax + 5, 1))



def test_the_docs_walk_through_sees_what_stock_angr_shows():
    """angr's "Simulation Managers" walk-through (s26): the number of ``step()`` calls while one
    state is active, and the states that print the welcome, are the same with angr-ram added."""
    name = "s26_docs_step_until_branch"
    stock, ram = harness.run(name, False), harness.run(name, True)
    assert ram["observed"] == stock["observed"]
    assert harness.native_ok(name, ram) and harness.native_ok(name, stock)


def test_an_option_angr_ram_does_not_honour_is_said_once_in_one_line(caplog):
    """A state with ``AVOID_MULTIVALUED_READS`` (and another with the script's own read strategies)
    gets one warning line per option for the whole run, recorded in the stats; options angr-ram
    honours (``LAZY_SOLVES``, ``unicorn``) and angr's defaults say nothing."""
    import logging
    proj = angr.Project(os.fspath(BUILD / "sc_argkey_O0"), auto_load_libs=False)
    opts = angr.options.unicorn | {angr.options.LAZY_SOLVES, angr.options.AVOID_MULTIVALUED_READS}
    states = [proj.factory.entry_state(add_options=opts) for _ in range(2)]
    states[1].memory.read_strategies = [angr.concretization_strategies.SimConcretizationStrategyRange(4096)]
    simgr = proj.factory.simulation_manager(states)
    tech = angr_ram.RelocatableMemory()
    with caplog.at_level(logging.WARNING, logger="angr_ram"):
        simgr.use_technique(tech)
    said = [r.getMessage() for r in caplog.records if "does not honour" in r.getMessage()]
    assert len(said) == 2 and all("\n" not in m for m in said), said
    assert set(tech.stats.options_not_honoured) == {"AVOID_MULTIVALUED_READS", "state.memory.read_strategies"}
    plain = angr_ram.RelocatableMemory()
    proj.factory.simulation_manager(proj.factory.entry_state(add_options=angr.options.unicorn)).use_technique(plain)
    assert plain.stats.options_not_honoured == {}


def test_a_function_the_script_excluded_from_angrs_procedures_runs_the_librarys_code():
    """``exclude_sim_procedures_list=["calloc"]`` with glibc loaded: angr-ram hooks neither
    ``calloc`` (glibc's allocator runs, so an overflow reaches the next chunk as natively: s29)
    nor leaves the other heap functions unmodelled; without the exclusion it models ``calloc``."""
    b = os.fspath(BUILD / "sc_chunks_O0")
    for excluded in (["calloc"], []):
        proj = angr.Project(b, auto_load_libs=True, exclude_sim_procedures_list=excluded)
        proj.factory.simulation_manager(proj.factory.entry_state()).use_technique(angr_ram.RelocatableMemory())
        calloc = proj.hooked_by(proj.loader.find_symbol("calloc").rebased_addr)
        malloc = proj.hooked_by(proj.loader.find_symbol("malloc").rebased_addr)
        assert type(malloc).__module__.startswith("angr_ram")
        if excluded:
            assert calloc is None
        else:
            assert type(calloc).__module__.startswith("angr_ram")


def test_angr_concretizes_what_cannot_reach_the_heap_where_the_script_asks_for_it():
    """With ``AVOID_MULTIVALUED_READS`` a read of the program's table at a symbolic index (a
    zero-extended byte: its interval misses the heap) is angr's fresh symbol, as the script asked;
    a read of a heap object at a symbolic offset is still every value it can take. Without the
    option both are exact."""
    for asked in (True, False):
        proj = angr.Project(os.fspath(BUILD / "sc_sbox_O0"), auto_load_libs=False)
        opts = {angr.options.AVOID_MULTIVALUED_READS} if asked else set()
        simgr = proj.factory.simulation_manager(proj.factory.entry_state(add_options=opts))
        simgr.use_technique(angr_ram.RelocatableMemory())
        s = simgr.active[0]
        assert s.ram.angr_concretizes is asked
        i = claripy.ZeroExt(56, claripy.BVS("i", 8))
        table = proj.loader.main_object.sections_map[".rodata"].vaddr
        v = s.memory.load(table + (i & 15), 1)
        assert (v.variables == frozenset({next(iter(i.variables))})) is not asked, v
        h = s.heap._malloc(claripy.BVV(16, 64))
        s.memory.store(h, claripy.BVV(0x41424344, 32))
        w = s.memory.load(h + (i & 3), 1)
        assert sorted(s.solver.eval_upto(w, 8)) == [0x41, 0x42, 0x43, 0x44]
        # a raw 64-bit index that only the path constraints bound: the same, one query decides
        j = claripy.BVS("j", 64)
        s.add_constraints(claripy.ULT(j, 16))
        v = s.memory.load(table + j, 1)
        assert (v.variables == frozenset({next(iter(j.variables))})) is not asked, v
        w = s.memory.load(h + (j & 3), 1)
        assert sorted(s.solver.eval_upto(w, 8)) == [0x41, 0x42, 0x43, 0x44]


def test_the_memory_errors_stash_is_there_before_any_error():
    """``simgr.memory_errors`` is an empty list on a run without errors (it raised AttributeError)."""
    proj = angr.Project(os.fspath(BUILD / "sc_argkey_O0"), auto_load_libs=False)
    simgr = proj.factory.simulation_manager(proj.factory.entry_state())
    simgr.use_technique(angr_ram.RelocatableMemory())
    assert simgr.memory_errors == []
