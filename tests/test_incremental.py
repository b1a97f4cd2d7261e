"""Incremental state merging (section 4), its liveness analysis, and loop merge points.

The native domains use one byte per class the programs distinguish: livetrap compares buffer
bytes with 'a', 'b' and 'c'; memspn "ab" with 'a' and 'b' (every other byte behaves like 'd').
"""

import os

import pytest

from angr_ram.core.errors import AngrRamError
from angr_ram.merging import liveness
from angr_ram.merging.fragments import find_loops
from angr_ram.run.runner import explore, load_project

from .conftest import BUILD
from .groundtruth import outcome_set_over

TRAP_DOMAIN = [range(0, 6)] + [b"abcd"] * 4


@pytest.mark.parametrize("name", ["livetrap_O0", "livetrap_O2"])
@pytest.mark.slow
def test_incremental_merging_keeps_live_differences(name):
    """'a' and 'c' paths differ only in a dead variable and are merged; 'b' paths differ in a
    variable read after the loop and in one read through a pointer, and are kept apart."""
    b = os.fspath(BUILD / name)
    native = outcome_set_over(b, TRAP_DOMAIN)
    for mode in ("pat", "ite"):
        r = explore(b, 5, merge=mode, merge_points=["scan"], merge_incremental=True)
        assert r.errors == [] and r.outcomes == native, mode
        assert r.stats["merge_incremental"] >= 4
        assert r.stats["merge_leaves"] < 162 // 4       # 162 paths without merging


def test_merging_without_liveness_would_lose_outcomes(monkeypatch):
    """The trap is sensitive: if every register and frame byte were dead, the 'b' paths would be
    merged into the 'a' paths and outcomes would be lost."""
    b = os.fspath(BUILD / "livetrap_O0")
    monkeypatch.setattr(liveness.Liveness, "at", lambda self, state: liveness.Live(0, liveness.NONE))
    r = explore(b, 5, merge="ite", merge_points=["scan"], merge_incremental=True)
    assert r.outcomes < outcome_set_over(b, TRAP_DOMAIN)


@pytest.mark.slow
def test_incremental_merging_makes_memspn_ab_linear():
    """memspn over "ab" forks 2^m paths; incremental merging joins the 'a' and 'b' branches of each
    iteration, so the leaves grow linearly (2m + 2) and the outcomes stay exact."""
    leaves = {}
    for m in (4, 6):
        b = os.fspath(BUILD / f"memspnab{m}_O0")
        r = explore(b, m + 1, merge="pat", merge_points=["memspn"])
        assert r.outcomes == outcome_set_over(b, [range(0, m + 2)] + [b"abd"] * m)
        leaves[m] = r.stats["merge_leaves"]
        assert r.stats["merge_incremental"] >= m
    assert leaves[6] - leaves[4] <= 4 and leaves[6] <= 2 * 6 + 2
    plain = explore(os.fspath(BUILD / "memspnab6_O0"), 7, merge="ite", merge_points=["memspn"])
    assert plain.stats["merge_leaves"] >= 2 ** 6


@pytest.mark.parametrize("name,n,alphabets", [
    ("memspn2x4_O0", 5, [range(0, 6)] + [b"abd"] * 4),
    ("strloops_O2", 4, [b"abcd\0"] * 4),
])
def test_auto_merge_points_are_the_program_loops(name, n, alphabets):
    b = os.fspath(BUILD / name)
    loops = find_loops(load_project(b))
    assert loops and all(p.kind == "loop" and p.body for p in loops.values())
    native = outcome_set_over(b, alphabets)
    for mode in ("ite", "pat"):
        r = explore(b, n, merge=mode, merge_points="auto")
        assert r.outcomes == native, mode
        assert r.stats["merge_merges_ite"] + r.stats["merge_merges_pat"] >= 1


def test_loop_header_address_is_a_merge_point():
    b = os.fspath(BUILD / "memspn4_O0")
    proj = load_project(b)
    (head,) = find_loops(proj)
    r = explore(b, 5, merge="pat", merge_points=[head], merge_patterns="always")
    assert r.outcomes == outcome_set_over(b, [range(0, 6)] + [b"abd"] * 4)
    assert r.stats["merge_fragments"] == 1 and r.stats["merge_merges_pat"] >= 1
    with pytest.raises(AngrRamError, match="neither a function entry nor a loop header"):
        explore(b, 5, merge="pat", merge_points=[head + 1])


def test_frame_liveness_lattice():
    only, allbut = liveness.Mem(True, frozenset({-8})), liveness.Mem(False, frozenset({-16}))
    assert only.live(-8) and not only.live(-16)
    assert allbut.live(-8) and not allbut.live(-16)
    assert not only.kill(frozenset({-8})).live(-8) and only.gen(frozenset({-4})).live(-4)
    assert allbut.gen(frozenset({-16})).live(-16) and not allbut.kill(frozenset({-8})).live(-8)
    j = only.join(allbut)
    assert j.live(-8) and not j.live(-16) and j.live(-100)
    assert liveness.TOP.join(liveness.NONE) == liveness.TOP


def test_frame_liveness_floor_matches_a_set_model():
    """``Mem`` with a floor (nothing below it live: the callee's side of the stack after a call)
    against plain sets of live offsets, over random gen / kill / join sequences on [-40, 0)."""
    import random

    rng = random.Random(7)
    span = range(-40, 0)

    def rand_offs():
        lo = rng.randrange(-40, 0)
        return frozenset(range(lo, min(lo + rng.randrange(1, 9), 0)))

    def rand_mem():
        return rng.choice([liveness.NONE, liveness.TOP, liveness.Mem.from_(rng.randrange(-40, 0)),
                           liveness.Mem(True, rand_offs()), liveness.Mem(False, rand_offs())])

    for _ in range(300):
        m = rand_mem()
        model = {o for o in span if m.live(o)}
        for _ in range(6):
            op = rng.choice(["gen", "kill", "join"])
            if op == "join":
                o = rand_mem()
                m, model = m.join(o), model | {x for x in span if o.live(x)}
            else:
                offs = rand_offs()
                m = getattr(m, op)(offs)
                model = model | offs if op == "gen" else model - offs
            assert {o for o in span if m.live(o)} == model, op


def test_library_calls_read_only_their_declared_arguments():
    """A call to a library function angr runs as a SimProcedure with a known, non-variadic prototype
    reads only its arguments' registers (``__ctype_b_loc()``: none; ``tolower(c)``: ``rdi``); a
    variadic one (``printf``) and the program's own functions keep the System V set."""
    proj = load_project(os.fspath(BUILD / "c_ctype4_O0"))
    lv = liveness.Liveness(proj)
    plt = proj.loader.main_object.plt
    reg = proj.arch.registers

    def reads(target, name):
        return bool(lv.call_uses_of(target) & lv.mask(*reg[name]))

    assert not any(reads(plt["__ctype_b_loc"], r) for r in ("rdi", "rsi", "rax"))
    assert reads(plt["tolower"], "rdi") and not reads(plt["tolower"], "rsi") and not reads(plt["tolower"], "rax")
    assert all(reads(plt["read"], r) for r in ("rdi", "rsi", "rdx")) and not reads(plt["read"], "rcx")
    main = proj.loader.find_symbol("main").rebased_addr
    assert lv.call_uses_of(main) == lv.call_uses
    printer = load_project(os.fspath(BUILD / "checksum_O0"))
    plv = liveness.Liveness(printer)
    assert plv.call_uses_of(printer.loader.main_object.plt["printf"]) == plv.call_uses


def test_returning_into_a_simprocedure_keeps_the_abi_return_registers():
    """A frame whose caller is a SimProcedure (main under angr's ``__libc_start_main``, a
    comparator under ``qsort``) returns into library code: what is live there is the ABI's return
    and callee-saved registers, as for the outermost frame, not everything."""
    from types import SimpleNamespace as NS

    proj = load_project(os.fspath(BUILD / "c_ctype4_O0"))
    lv = liveness.Liveness(proj)
    main = proj.loader.find_symbol("main").rebased_addr
    starter = proj.loader.find_symbol("__libc_start_main").rebased_addr
    assert lv.procedure(starter) is not None
    lv.live_in(main, main, lv.ret_default)
    ret = next(a for a, b in lv._func(main).blocks.items()
               if b is not None and b is not liveness.HOOK and b.jumpkind == "Ijk_Ret")
    state = NS(addr=ret, callstack=[NS(func_addr=main, ret_addr=starter + 8), NS(func_addr=starter, ret_addr=0)])
    rdi = lv.mask(*proj.arch.registers["rdi"])
    assert lv.at(state) == lv.live_in(main, ret, lv.ret_default)
    assert not lv.at(state).regs & rdi


def test_dead_flag_thunk_and_callee_frame():
    """Liveness facts at real code: after a call, the slot of its return address (below the stack
    pointer) is dead at -O0; at -O2 an ``sbb`` after a ``cmp`` passes the old ``cc_ndep`` to VEX's
    flag helper for a subtraction, which ignores it, so ``cc_ndep`` is dead there."""
    proj = load_project(os.fspath(BUILD / "c_ctype4_O0"))
    lv = liveness.Liveness(proj)
    main = proj.loader.find_symbol("main").rebased_addr
    lv.live_in(main, main, lv.ret_default)
    f = lv._func(main)
    sites = [b.addr + b.size for b in f.blocks.values()
             if b is not None and b is not liveness.HOOK and b.jumpkind == "Ijk_Call"]
    assert len(sites) >= 4
    for site in sites:
        rsp = f.sp_in[site][0]
        assert rsp is not None and not any(lv.live_in(main, site, lv.ret_default).mem.live(o)
                                           for o in range(rsp - 8, rsp))
    proj = load_project(os.fspath(BUILD / "c_ctype4_O2"))
    lv = liveness.Liveness(proj)
    main = proj.loader.find_symbol("main").rebased_addr
    lv.live_in(main, main, lv.ret_default)
    folded = [a for a, b in lv._func(main).blocks.items() if b is not None and b is not liveness.HOOK and b.unused_gets]
    assert folded
    ndep = lv.mask(*proj.arch.registers["cc_ndep"])
    assert not any(lv.live_in(main, a, lv.ret_default).regs & ndep for a in folded)


def test_forks_by_reexecution_are_not_merged_back():
    """angr-ram's forking model re-executes an access in one copy per object; those copies have
    equal stores, and merging them would only undo the fork and repeat it (hashtables looped)."""
    from .groundtruth import outcome_set

    b = os.fspath(BUILD / "hashtables_O0")
    r = explore(b, 1, merge="pat", merge_points="auto", timeout=120)
    assert not r.timed_out and r.stats["forks"] >= 1
    assert r.outcomes == frozenset(outcome_set(b, 1))
    assert r.stats["merge_incremental_capped"] == 0
