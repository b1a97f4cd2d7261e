"""glibc's ``rand``/``random`` (angr_ram.posix.random_numbers): each draw is glibc's, from the
path's seed. angr's ``rand`` was a fresh symbol per call (a die rolled 7) and ``random`` a stub."""

import ctypes
import os

import angr
import claripy
import pytest

from angr_ram.posix.random_numbers import MAX_SEEDS, draw, generator, next_draw, seed_generator
from angr_ram.procedures.stubs import stubs_of
from angr_ram.run.outcomes import path_outcomes
from angr_ram.run.replay import replay

from .conftest import BUILD
from .groundtruth import outcome_set_over
from .test_scanning import users_run


def test_the_draws_are_glibcs_for_any_seed():
    libc = ctypes.CDLL("libc.so.6")
    libc.random.restype = ctypes.c_long
    for seed in (None, 0, 1, 2, 42, 127773, 2**31 - 1, 2**31, 2**31 + 5, 2**32 - 1):
        libc.srandom(ctypes.c_uint(1 if seed is None else seed))
        native = [libc.random() for _ in range(400)]
        assert [draw(1 if seed is None else seed, k) for k in range(400)] == native, seed


def _state():
    proj = angr.Project(os.fspath(BUILD / "dice_O2"), auto_load_libs=False)
    return proj.factory.blank_state()


def test_a_seed_of_few_values_draws_an_if_then_else_over_them_and_of_many_a_recorded_symbol():
    st = _state()
    byte = claripy.BVS("b", 8)
    st.solver.add(claripy.ULE(byte, 9))
    seed_generator(st, byte.zero_extend(24))
    first, second = next_draw(st), next_draw(st)
    for v in range(10):
        assert st.solver.eval_upto(first, 2, extra_constraints=[byte == v]) == [draw(v, 0)]
        assert st.solver.eval_upto(second, 2, extra_constraints=[byte == v]) == [draw(v, 1)]
    assert not stubs_of(st)
    wide = claripy.BVS("t", 32)
    seed_generator(st, wide)
    assert next_draw(st).symbolic and "rand" in stubs_of(st)
    assert MAX_SEEDS < 2**32


def test_merged_generators_draw_each_paths_value():
    a, b = _state(), _state()
    seed_generator(a, claripy.BVV(7, 32))
    next_draw(a)                                   # a drew once from seed 7, b never (seed 1)
    flag = claripy.BVS("flag", 1)
    assert generator(a).merge([generator(b)], [flag == 1, flag == 0])

    v = next_draw(a)
    assert a.solver.eval_upto(v, 2, extra_constraints=[flag == 1]) == [draw(7, 1)]
    assert a.solver.eval_upto(v, 2, extra_constraints=[flag == 0]) == [draw(1, 0)]
    assert generator(a).values == (1, 7)


@pytest.mark.parametrize("opt", ("O2", pytest.param("O0", marks=pytest.mark.slow)))
def test_dice_rolls_what_glibc_rolls(opt):
    """samples/dice (one wide BVS stdin, angr's defaults): seeded from an input byte or not,
    reseeded from a draw and a byte; every native outcome, none other, each test replays.
    Under angr's symbolic ``rand`` and stub ``random`` the run had no result in 600 s."""
    b = os.fspath(BUILD / f"dice_{opt}")
    alphabet = b"-3Ar0x"
    simgr, r = users_run(b, alphabet, 3)
    native = outcome_set_over(b, [alphabet] * 3)
    assert (7, b"jackpot\n") in native
    assert r.errors == [] and r.stubs == {}
    assert set().union(*(path_outcomes(s) for s in simgr.deadended)) == native
    assert [x.status for x in replay(r.tests, b, jobs=2) if x.status != "ok"] == []
