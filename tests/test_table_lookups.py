"""Lookups through big tables (issue 83, item 3): a selection over a table's entries keeps runs of
entries that are affine in their offset as one arm each (:mod:`angr_ram.memory.affine_runs`), and
programs written from the issue's descriptions reach their native outcome sets when driven as a
user's script (``entry_state``, one wide ``claripy.BVS`` for stdin, angr's default options,
``RelocatableMemory()``, ``simgr.run()``), under the default model and under dsmm:

- ``constidx``: KLEE's constant-array test shape, 16 checked reads of an 8 KiB stack table ``i %
  256`` at input indices (32 input bytes); before, no path in 150 s (single steps of 50-67 s).
- ``rotable``: an 8 KiB ``.rodata`` table read at a folded index, then at the value read.
- ``stackbomb``: logic-bomb style reads of a 1024-int stack permutation (``a[x]``, ``a[a[x]]``,
  eight hops).
- ``foldhops``: three dependent lookups into a 4 KiB ``.rodata`` table of ints, the index folded
  from four input bytes.
"""

from __future__ import annotations

import os
import random

import angr
import claripy
import pytest

import angr_ram
from angr_ram.memory.affine_runs import RUN_MIN, affine_runs
from angr_ram.memory.object_store import select
from angr_ram.run.replay import replay
from angr_ram.run.runner import RunResult, collect_paths
from angr_ram.run.testcases import collect_tests
from bench.semantics import SEMANTICS

from .conftest import BUILD
from .groundtruth import outcome_set_over


def plain_selection(off, keys, values, default):
    """The selection as one equality per key (what select built before runs)."""
    acc = default if default is not None else values[-1]
    pairs = list(zip(keys, values, strict=True))
    for k, v in reversed(pairs if default is not None else pairs[:-1]):
        acc = claripy.If(off == k, v, acc)
    return acc


def same_selection(keys, ints, width, default=None):
    off = claripy.BVS("off", 64)
    values = [claripy.BVV(v, width) for v in ints]
    fast = select(off, keys, dict(zip(keys, values, strict=True)).__getitem__, default)
    slow = plain_selection(off, keys, values, default)
    s = claripy.Solver()
    if default is None:          # the keys are the only offsets the selection is asked at
        s.add(claripy.Or(*(off == k for k in keys)))
    return not s.satisfiable(extra_constraints=[fast != slow]), fast


def test_affine_runs_are_found_with_their_stride_and_slope_modulo_the_width():
    keys = list(range(0, 64, 4))
    runs = affine_runs(keys, [(7 + 3 * i) % 256 for i in range(16)], 8)
    assert [(r.i, r.j, r.d, r.v0, r.s) for r in runs] == [(0, 16, 4, 7, 3)]
    runs = affine_runs(list(range(600)), [i % 251 for i in range(600)], 8)
    assert [(r.i, r.j, r.s) for r in runs] == [(0, 251, 1), (251, 502, 1), (502, 600, 1)]
    assert affine_runs(list(range(RUN_MIN - 1)), list(range(RUN_MIN - 1)), 8) == []
    assert affine_runs(list(range(0, 48, 3)), list(range(16)), 8) == []     # 3 bytes apart: no shift


@pytest.mark.parametrize("shape", ("mod256", "mod251", "constant-fill", "words", "holes", "random", "mixed"))
def test_a_selection_with_runs_equals_one_equality_per_entry(shape):
    rng = random.Random(shape)
    width, keys = 8, list(range(300))
    ints = {"mod256": [i % 256 for i in range(300)], "mod251": [i % 251 for i in range(300)],
            "constant-fill": [0x41] * 300, "random": [rng.randrange(256) for _ in range(300)],
            "mixed": [i % 7 if i < 100 else rng.randrange(256) if i < 200 else 3 * i for i in range(300)]}.get(shape)
    if shape == "words":
        width, keys, ints = 32, list(range(0, 4 * 300, 4)), [(i * 389 + 7) % 1024 for i in range(300)]
    if shape == "holes":
        keys = [k for k in range(300) if k % 50 not in (10, 11)]
        ints = [k % 256 for k in keys]
    ints = [v % (1 << width) for v in ints]
    ok, fast = same_selection(keys, ints, width)
    assert ok
    ok, _ = same_selection(keys, ints, width, default=claripy.BVS("fill", width))
    assert ok
    if shape in ("mod256", "constant-fill"):
        assert fast.depth < 6        # one run: no chain of 300 equalities


def run_script(binary: str, n: int, model: str | None = None):
    """A user's script: angr's defaults, one wide BVS for stdin, RelocatableMemory(), simgr.run()."""
    proj = angr.Project(binary, auto_load_libs=False)
    stdin = angr.SimFileStream(name="stdin", content=claripy.BVS("stdin", 8 * n), size=n, has_end=True)
    simgr = proj.factory.simulation_manager(proj.factory.entry_state(stdin=stdin))
    tech = angr_ram.RelocatableMemory(model=model) if model else angr_ram.RelocatableMemory()
    simgr.use_technique(tech)
    simgr.run()
    r = collect_paths(simgr, RunResult())
    r.tests = collect_tests(simgr)
    return r, simgr


def native_outcomes(name: str, opt: str):
    n, alphabet, _, _ = SEMANTICS[name]
    return outcome_set_over(os.fspath(BUILD / f"{name}_{opt}"), alphabet if isinstance(alphabet, list) else [alphabet] * n)


def check(name: str, opt: str, model: str | None):
    binary = os.fspath(BUILD / f"{name}_{opt}")
    r, simgr = run_script(binary, SEMANTICS[name][0], model)
    assert not simgr.errored and not simgr.unconstrained and r.errors == []
    assert r.outcomes == native_outcomes(name, opt)
    runs = replay(r.tests, binary, jobs=2)
    assert [x.status for x in runs if x.status not in ("ok", "confirmed")] == []
    return r


CASES = [("constidx", "O2"), ("rotable", "O2"), ("stackbomb", "O0"), ("foldhops", "O2"),
         pytest.param("constidx", "O0", marks=pytest.mark.slow), pytest.param("rotable", "O0", marks=pytest.mark.slow),
         pytest.param("stackbomb", "O2", marks=pytest.mark.slow), pytest.param("foldhops", "O0", marks=pytest.mark.slow)]


@pytest.mark.parametrize(("name", "opt"), CASES)
def test_a_users_script_reaches_the_native_outcomes_of_big_table_lookups(name, opt):
    check(name, opt, None)


@pytest.mark.parametrize(("name", "opt"), [("constidx", "O2"), pytest.param("stackbomb", "O0", marks=pytest.mark.slow),
                                           pytest.param("rotable", "O2", marks=pytest.mark.slow),
                                           pytest.param("foldhops", "O2", marks=pytest.mark.slow)])
def test_the_same_under_dsmm(name, opt):
    check(name, opt, "dsmm")


def test_checked_reads_of_a_table_filled_with_i_mod_256_never_fork_a_broken_path():
    """Every one of the 16 checks ``a[k % N] == k % 256`` holds on every input: no path prints
    "broken", and the outcome read decides ``low``/``high`` on one path each."""
    r = check("constidx", "O2", None)
    assert {o for _, o in r.outcomes} == {b"low\n", b"high\n"}
    assert len(r.tests) == 2
