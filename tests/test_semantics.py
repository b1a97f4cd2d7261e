"""Memory semantics that public symbolic-execution test suites check, on programs written for
angr-ram from those suites' descriptions (``samples/semantics``): free and realloc of a pointer
that may designate several objects, out-of-bounds reads of stack arrays, calls and jumps through
tables at a symbolic index, switch jump tables, writes through a pointer to one of several objects,
symbolic allocation sizes, big tables and input-dependent trip counts.

Each program runs at -O0 and -O2 under two drives: ``explore()`` (the CLI's set-up: one variable
per input byte, zero-filled memory) and a user's script (its own ``entry_state`` with one wide
``claripy.BVS`` for stdin and angr's default options, where unwritten memory is symbolic). The
oracle is native: the outcome set equals the native program's over the inputs on which the
AddressSanitizer build reports nothing, every error path's input makes the ASan build report an
error, and a program with such inputs has an error path. No path may end in ``errored`` or
``unconstrained``.
"""

from __future__ import annotations

import os
from functools import cache

import angr
import claripy
import pytest

import angr_ram
from angr_ram.run.replay import replay
from angr_ram.run.runner import RunResult, collect_paths
from angr_ram.run.testcases import collect_tests
from bench.semantics import SEMANTICS, asan_reports, inputs

from .conftest import BUILD, shared_run
from .groundtruth import _cached, run_inputs

# the big-table programs are tested at -O2 below and in the benchmark: angr steps the fill loops
# of 4000 and 8192 iterations for minutes at -O0
BIG_TABLES = ("table4000", "bigstack", "table64k")
LOOKUPS = ("constidx", "rotable", "stackbomb", "foldhops")      # tests/test_table_lookups.py
PROGRAMS = {k: v for k, v in SEMANTICS.items() if k not in BIG_TABLES + LOOKUPS}


@cache
def asan_faults(name: str) -> frozenset[bytes]:
    """The inputs of the program's domain on which its ASan build reports an error (cached on
    disk next to the binaries, like the native outcome sets)."""
    if not PROGRAMS[name][2]:
        return frozenset()
    b = os.fspath(BUILD / f"{name}_asan")
    pairs = _cached(b, "asan:" + ",".join(i.hex() for i in inputs(name)),
                    lambda: {(int(asan_reports(b, i)), i) for i in inputs(name)})
    return frozenset(i for bad, i in pairs if bad)


@cache
def native_runs(name: str, opt: str) -> dict[bytes, tuple[int, bytes]]:
    b = os.fspath(BUILD / f"{name}_{opt}")
    ins = inputs(name)
    return dict(zip(ins, run_inputs(b, ins), strict=True))


def faulting_inputs(name: str, opt: str) -> frozenset[bytes]:
    """Inputs with a memory error: ASan reports one, or the native program is killed by a signal
    (glibc aborts a ``realloc`` of a stack address, which ASan lets through)."""
    return asan_faults(name) | {i for i, (code, _) in native_runs(name, opt).items() if code >= 128}


def clean_outcomes(name: str, opt: str) -> frozenset:
    """(exit status, stdout) of the native program over the domain's inputs without a memory error."""
    bad = faulting_inputs(name, opt)
    return frozenset(o for i, o in native_runs(name, opt).items() if i not in bad)


def run_script(binary: str, n: int, model: str, **tech) -> tuple[RunResult, angr.SimulationManager]:
    """The IPython drive of README and docs/guide/scripts.md: angr's default options, one wide symbolic stdin variable
    (RelocatableMemory with ``tech``)."""
    proj = angr.Project(binary, auto_load_libs=False)
    stdin = angr.SimFileStream(name="stdin", content=claripy.BVS("stdin", 8 * n), size=n, has_end=True)
    simgr = proj.factory.simulation_manager(proj.factory.entry_state(stdin=stdin))
    simgr.use_technique(angr_ram.RelocatableMemory(model=model, **tech))
    for _ in range(5000):
        if not simgr.active:
            break
        simgr.step()
    assert not simgr.active, "the run did not finish in 5000 steps"
    res = collect_paths(simgr, RunResult())
    res.tests = collect_tests(simgr)
    return res, simgr


def check(name: str, opt: str, drive: str, model: str):
    n = PROGRAMS[name][0]
    binary = os.fspath(BUILD / f"{name}_{opt}")
    if drive == "explore":
        r = shared_run(binary, n, model=model)
        stuck = r.endings.get("unconstrained", 0)
    else:
        r, simgr = run_script(binary, n, model)
        stuck = len(simgr.unconstrained)
    assert [e for e in r.errors if e[0] == "angr-error"] == []
    assert stuck == 0
    assert r.outcomes == clean_outcomes(name, opt)
    bad = faulting_inputs(name, opt)
    errors = [t for t in r.tests if t.kind == "error"]
    assert bool(errors) == bool(bad), (errors, sorted(bad)[:4])
    runs = replay(r.tests, binary, asan=os.fspath(BUILD / f"{name}_asan"), jobs=2)
    wrong = [(x.test, x.status, x.exit, x.stdout) for x in runs
             if x.status not in ("ok", "confirmed", "unchecked")]
    assert not wrong, wrong[:3]
    for x in runs:                    # analysis limits too: their inputs are memory errors natively
        if x.status == "unchecked":
            assert x.test.kind == "error", x.test
            assert x.exit >= 128 or asan_reports(os.fspath(BUILD / f"{name}_asan"), x.test.stdin), x.test
    return r


@pytest.mark.parametrize("drive", ("explore", "script"))
@pytest.mark.parametrize("opt", ("O0", pytest.param("O2", marks=pytest.mark.slow)))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_semantics_program_under_fork(name, opt, drive):
    check(name, opt, drive, "fork")


@pytest.mark.slow    # make test-slow: the same programs under the segment and ite models
@pytest.mark.parametrize("drive", ("explore", "script"))
@pytest.mark.parametrize("model", ("dsmm", "ite"))
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_semantics_program_under_other_models(name, model, drive):
    check(name, "O2", drive, model)


def test_free_of_a_selected_pointer_forks_per_object_and_reports_each_use_after_free():
    """``free(buf[s])`` over three heap objects and NULL: the NULL path finishes, and each freed
    object's later read is its own use-after-free error path (KLEE reports one per object)."""
    r, _ = run_script(os.fspath(BUILD / "multifree_O0"), 1, "fork")
    uaf = [t for t in r.tests if t.kind == "error"]
    assert sorted(t.error for t in uaf) == ["use-after-free"] * 3
    assert sorted(t.stdin[0] % 4 for t in uaf) == [0, 1, 2]
    assert {c for c, _ in r.outcomes} == {3}


def test_freeing_every_bucket_of_a_hash_table_frees_the_entry_where_it_is_without_forking():
    """``free(table[i])`` for every bucket, one of which holds the entry the input hashed to: each
    free frees the entry on the inputs where it is in that bucket instead of forking (16 paths
    before, one per bucket), and the later read of the entry, freed on every input, is one
    use-after-free path whose inputs ASan confirms."""
    r, simgr = run_script(os.fspath(BUILD / "freeall_O0"), 1, "fork")
    assert len(simgr.deadended) == 1
    assert r.outcomes == clean_outcomes("freeall", "O0") == {(0, b"1\n"), (1, b"1\n")}
    uaf = [t for t in r.tests if t.kind == "error"]
    assert [t.error for t in uaf] == ["use-after-free"] and uaf[0].stdin[0] >= 60


def test_realloc_follows_glibc_for_null_and_zero_size():
    """``realloc(p, 0)`` frees ``p`` and returns NULL; ``realloc(NULL, n)`` is ``malloc(n)`` (also
    for 0); ``realloc`` of a stack address is an error path (glibc aborts, ASan reports it)."""
    r, _ = run_script(os.fspath(BUILD / "multirealloc_O0"), 2, "fork")
    assert (10, b"null 0\n") in r.outcomes and (10, b"null 1\n") in r.outcomes
    assert (0, b"fresh\n") in r.outcomes
    assert [t.error for t in r.tests if t.kind == "error"] == ["invalid-free"]


def test_out_of_bounds_stack_index_is_forked_once():
    """``b[a[x]]`` with ``x`` from -4 to 4: the uninitialized word below ``a`` keeps one name when
    the forked block is re-executed, so the run ends (before: 112 error paths, no path)."""
    r, simgr = run_script(os.fspath(BUILD / "stackoob_O0"), 1, "fork", uninitialized="symbolic")
    assert r.outcomes == {(0, b"other\n"), (1, b"nine\n")}
    assert len(simgr.stashes["memory_errors"]) <= 4


def test_declared_arrays_come_from_dwarf_with_their_sizes_and_frame_offsets():
    from angr_ram.memory.declared import read_declared

    frames, globs = read_declared(os.fspath(BUILD / "stackoob_O0"), 0)
    (entry, local), = frames.items()
    assert {(d.name, d.size, d.function) for d in local} == {("a", 20, "main"), ("b", 20, "main")}
    assert all(d.offset < 0 for d in local)          # below the CFA
    _, table = read_declared(os.fspath(BUILD / "table4000_O2"), 0)
    assert [(d.name, d.size) for _, d in table] == [("t", 4000)]
    frames, globs = read_declared(os.fspath(BUILD / "stackoob_O0"), 0x400000)
    assert next(iter(frames)) == entry + 0x400000


def test_value_arms_pull_arithmetic_into_the_selection():
    from angr_ram.memory.strategies.arms import value_arms

    x, u = claripy.BVS("x", 8), claripy.BVS("u", 32)
    sel = claripy.If(x == 1, claripy.BVV(3, 32), claripy.If(x == 2, claripy.BVV(7, 32), u))
    e = (claripy.SignExt(32, sel) << 2) + 0x1000
    arms = value_arms(e)
    assert [v.concrete_value for _, v in arms[:2]] == [0x100c, 0x101c]
    assert arms[2][1].symbolic and arms[2][1].variables == u.variables
    s = claripy.Solver()
    for i, (g, v) in enumerate(arms):           # each guard selects its arm, and only its arm
        for j, (h, _) in enumerate(arms):
            if i != j:
                assert not s.satisfiable(extra_constraints=[g, h])
        assert s.satisfiable(extra_constraints=[g, e == v])
        assert not s.satisfiable(extra_constraints=[g, e != v])
    assert value_arms(e, limit=2) is None
    (g, v), = value_arms(claripy.BVV(5, 64))
    assert g is None and v.concrete_value == 5


@pytest.mark.slow    # make test-slow: 20-30 s each, most of it angr stepping the fill loop
@pytest.mark.parametrize("name", BIG_TABLES)
def test_big_stack_and_global_tables_are_read_completely(name):
    """An 8 KiB stack table, a 4000-byte and a 64 KiB global table read at symbolic indices that
    span them: every native outcome, no symbolic-range-too-large (the limit of 4096 candidates
    applies to ranges that leave one table; stock angr concretizes and misses outcomes)."""
    binary = os.fspath(BUILD / f"{name}_O2")
    r = shared_run(binary, 2, model="fork")
    assert r.errors == []
    assert r.outcomes == frozenset(run_inputs(binary, inputs(name)))

