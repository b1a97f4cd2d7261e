"""Address-aware hits on allocation histories the cache was not written for (allochist.c: three
input bits that each allocate a scratch object, then a 4x4 matrix of calloc'd rows read at
symbolic [i][j]), and the byte-level independence slicing that makes them possible when stdin is
one wide symbol, as in angr's own examples."""

import os

import angr
import claripy
import pytest

import angr_ram
from angr_ram.run.runner import prepare, summarize
from angr_ram.solver.independence import Footprints, components, slice_constraints

from .conftest import BUILD
from .groundtruth import outcome_set_over


def test_constraints_on_different_bytes_of_one_symbol_are_independent():
    s = claripy.BVS("stdin", 16, explicit_name=True)
    base = claripy.BVS("ram_base_x", 64, explicit_name=True)
    hist = (s[15:8] & 1) == 0                         # byte 1: which history
    idx = s[3:0] <= 3                                 # byte 0: the index
    col = s[7:4] <= 3                                 # byte 0 too
    whole = s != 0x1234                               # every byte
    ptr = (base + s[3:0].zero_extend(60)) != 0        # a base does not connect
    names = {"ram_base_x"}
    assert slice_constraints([hist, idx, col], (s[7:0] == 2,), names) == [idx, col]
    assert slice_constraints([hist, idx, ptr], (s[3:0] == 1,), names) == [idx, ptr]
    assert slice_constraints([hist, idx, whole], (s[3:0] == 1,), names) == [idx, whole, hist]
    assert sorted(len(g) for g in components([hist, idx, col, ptr], names)) == [1, 3]
    fp = Footprints()
    assert fp.of(hist) == {("stdin", 1)} and fp.of(whole) == {("stdin", 0), ("stdin", 1)}


def native(binary: str) -> frozenset:
    """Native outcomes over the whole input domain: the program reads only bits 0-2 of its first
    byte (8 values, plus 0xf8 for the unread bits) and every bit of the second (256 values)."""
    return frozenset(outcome_set_over(binary, [bytes([*range(8), 0xF8]), bytes(range(256))]))


def _explore(binary: str, stdin: str, **opts):
    """Explore with the run's own per-byte stdin, or with one 16-bit stdin symbol as an angr user
    writes it; return the exploration's statistics (before the outcome queries) and the result."""
    if stdin == "bytes":
        simgr, tech = prepare(binary, 2, **opts)
    else:
        proj = angr.Project(binary, auto_load_libs=False)
        sym = claripy.BVS("stdin", 16)
        st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=sym, size=2, has_end=True))
        simgr = proj.factory.simulation_manager(st)
        tech = simgr.use_technique(angr_ram.RelocatableMemory(**opts))
    simgr.run()
    explored = angr_ram.stats(simgr)
    return explored, summarize(simgr, tech)


@pytest.mark.parametrize(("name", "stdin"), [
    ("allochist0_O0", "one-symbol"),
    pytest.param("allochist0_O0", "bytes", marks=pytest.mark.slow),       # make test-slow: 13 s
    pytest.param("allochist2_O2", "one-symbol", marks=pytest.mark.slow),  # 10 s
])
@pytest.mark.slow
def test_aa_sends_3x_fewer_queries_to_z3_than_syntactic_over_eight_histories(name, stdin):
    """Scratch objects of different sizes (variant 0) and freed ones (variant 2): every history
    places the matrix elsewhere, so the syntactic cache only hits within a history; aa answers the
    other seven histories' lookups. The outcome queries after exploration are not counted."""
    b = os.fspath(BUILD / name)
    syn, r_syn = _explore(b, stdin, cache="syntactic")
    aa, r_aa = _explore(b, stdin, cache="aa")
    assert r_syn.outcomes == r_aa.outcomes == native(b)
    assert syn["paths"] == aa["paths"] and not r_aa.errors
    assert aa["cache_hits_aa"] > 0 and aa["cache_models_rejected"] == 0 and aa["cache_tagged"] == 0
    assert 3 * aa["z3_checks"] <= syn["z3_checks"], (aa["z3_checks"], syn["z3_checks"])


@pytest.mark.slow   # make test-slow: 20 s
def test_histories_that_differ_after_the_matrix_need_no_aa_hits_and_validation_confirms_hits():
    """Variant 3 allocates after the matrix: its addresses are the same in every history, the
    syntactic cache already hits and aa adds nothing. Variant 1 (equal scratch sizes) under
    validation: every aa hit is re-checked by z3 (a mismatch raises)."""
    b3 = os.fspath(BUILD / "allochist3_O0")
    syn, _ = _explore(b3, "bytes", cache="syntactic")
    aa, r = _explore(b3, "bytes", cache="aa")
    assert aa["cache_hits_aa"] == 0 and aa["z3_checks"] == syn["z3_checks"]
    assert r.outcomes == native(b3)
    b1 = os.fspath(BUILD / "allochist1_O0")
    val, r1 = _explore(b1, "one-symbol", cache="aa", validate=True)
    assert val["cache_hits_aa"] > 0 and val["cache_unconfirmed"] == 0
    assert r1.outcomes == native(b1)
