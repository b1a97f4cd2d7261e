"""Path facts (:mod:`angr_ram.solver.path_facts`): terms a path's constraints fix to one value,
rewritten into what the path writes, adds and asks. The facts alone on claripy expressions, in the
solver frontend, and a user's script over a hash table walked after a four-byte name was hashed
into it, with the facts and without."""

import os

import claripy
import pytest

from angr_ram.solver import path_facts
from angr_ram.solver.path_facts import Facts, compared_offsets, stated_equality, takes_nonzero_side
from angr_ram.solver.substituting import SubstitutingFrontend

from .conftest import BUILD, assert_tests_replay
from .test_drives import script


def _bucket(off, k: int, entry):
    """Byte k of a table after ``table[off .. off+7] = entry`` (a symbolic-offset 8-byte write)."""
    cond = claripy.And(claripy.ULE(off, k), claripy.ULT(claripy.BVV(k, 64), off + 8))
    shift = (claripy.BVV(7, 64) - (claripy.BVV(k, 64) - off)) * 8
    return claripy.If(cond, claripy.LShR(claripy.Reverse(entry), shift)[7:0], claripy.BVV(0, 8))


def _slot(off, j: int, entry):
    return claripy.Concat(*[_bucket(off, 8 * j + k, entry) for k in reversed(range(8))])


def test_a_known_offset_folds_every_read_of_the_table_to_constants():
    h = claripy.BVS("h", 32)
    off = claripy.ZeroExt(32, h & 7) << 3
    entry = claripy.BVV(0x10_0040, 64)
    facts = Facts().with_fact(off, claripy.BVV(16, 64))
    assert facts.rewrite(_slot(off, 2, entry)).concrete_value == 0x10_0040
    assert facts.rewrite(_slot(off, 3, entry)).concrete_value == 0
    assert facts.rewrite(_slot(off, 5, entry) != 0).is_false()
    # what does not contain the term is returned as it is
    other = (h & 1) + 3
    assert facts.rewrite(other) is other


def test_facts_come_from_stated_equalities_and_from_conditions_on_offsets():
    x = claripy.BVS("x", 32)
    term, value = stated_equality((x + 1) == 7)
    assert term is (x + 1) and value.concrete_value == 7
    assert stated_equality(x + 1 != 7) is None
    assert stated_equality(claripy.BVS("ram_base_3_64", 64, explicit_name=True) + 8 == 0) is None
    assert stated_equality(_slot(x.zero_extend(32), 0, claripy.BVS("p", 64)) == 0) is None
    off = claripy.ZeroExt(32, x & 7) << 3
    guard = _slot(off, 1, claripy.BVS("p", 64)) != 0
    assert takes_nonzero_side(guard) and not takes_nonzero_side(claripy.Not(guard))
    assert compared_offsets(guard)[0] is off


def test_the_frontend_learns_a_fixed_offset_on_the_nonzero_side_and_answers_later_buckets_without_z3():
    h = claripy.BVS("h", 32)
    off = claripy.ZeroExt(32, h & 7) << 3
    entry = claripy.BVV(0x10_0040, 64)
    fe = SubstitutingFrontend()
    fe.add([_slot(off, 0, entry) == 0, _slot(off, 1, entry) != 0])
    # the offset is learnt (bucket 0 read as NULL is too deep a term to be kept as a stated equality)
    assert fe.facts.knows(off) and len(fe.facts) == 1
    assert not fe.satisfiable(extra_constraints=(_slot(off, 2, entry) != 0,))
    # a constraint added later is rewritten first: the later bucket is known empty, nothing is stored
    assert fe.add([_slot(off, 3, entry) == 0]) == [] and len(fe.constraints) == 2
    assert fe.eval(h & 7, 8) == (1,)
    # the other side keeps the offset open: nothing is learnt
    empty = SubstitutingFrontend()
    empty.add([_slot(off, 0, entry) == 0, _slot(off, 1, entry) == 0])
    assert not empty.facts.knows(off)
    assert len(empty.eval(h & 7, 8)) == 6
    # a copy holds the facts, a blank copy does not
    assert fe.branch().facts is fe.facts and len(fe.blank_copy().facts) == 0


def _walk(binary: str, monkeypatch, probe: bool):
    monkeypatch.setattr(path_facts, "PROBED_TERMS", 1 if probe else 0)
    return script(binary, 4)


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_a_hashed_name_found_in_its_bucket_fixes_the_bucket_for_the_rest_of_the_walk(opt, monkeypatch):
    """samples/drives/hashwalk: a four-byte name (one 32-bit BVS, angr's defaults) hashed into one
    of 8 buckets, every bucket walked. The path that finds the entry in bucket i learns that the
    offset of the write is 8*i, so the later buckets read as constants (NULL): fewer z3 checks, the
    same paths and outcomes, every test replays natively."""
    binary = os.fspath(BUILD / f"hashwalk_{opt}")
    with_facts = _walk(binary, monkeypatch, True)
    without = _walk(binary, monkeypatch, False)
    assert with_facts.outcomes == without.outcomes == {(0, b"1 5\n"), (1, b"1 5\n")}
    assert with_facts.stats["paths"] == without.stats["paths"] == 8
    assert with_facts.stats["fact_probe_hits"] >= 4           # the bucket learnt on most paths
    if opt == "O2":
        assert with_facts.stats["z3_checks"] < without.stats["z3_checks"], (with_facts.stats, without.stats)
    else:       # -O0 compares slices of the offset, learnt one at a time: about as many checks (92 vs 95-98)
        assert with_facts.stats["z3_checks"] <= without.stats["z3_checks"] + 3, (with_facts.stats, without.stats)
    assert_tests_replay(binary, with_facts)


@pytest.mark.slow
def test_a_32_bucket_walk_costs_linear_not_quadratic_z3_checks(monkeypatch):
    """hashwalk with 32 buckets at -O2: without the facts every path asks z3 whether each later
    bucket holds the entry (about 32*32/2 checks); with them each path asks once. (At -O0 the
    conditions compare narrower slices of the offset, learnt one slice at a time: the checks stay
    about as many, the outcomes the same; the 8-bucket test above covers -O0.)"""
    binary = os.fspath(BUILD / "hashwalk32_O2")
    with_facts = _walk(binary, monkeypatch, True)
    without = _walk(binary, monkeypatch, False)
    assert with_facts.outcomes == without.outcomes == {(0, b"1 5\n"), (1, b"1 5\n")}
    assert with_facts.stats["paths"] == without.stats["paths"] == 32
    assert with_facts.stats["z3_checks"] * 2 < without.stats["z3_checks"], (with_facts.stats, without.stats)
    assert_tests_replay(binary, with_facts)


def test_python_booleans_among_extra_constraints_are_constants():
    """angr passes Python booleans as extra constraints too (posix's descriptor lookup asks
    ``satisfiable(extra_constraints=(concrete_fd == opened_fd,))`` with two ints, as Debian's tac
    does through fdopen): they are true and false, not an AttributeError that stops the path."""
    h = claripy.BVS("h", 32)
    off = claripy.ZeroExt(32, h & 7) << 3
    entry = claripy.BVV(0x10_0040, 64)
    fe = SubstitutingFrontend()
    fe.add([_slot(off, 0, entry) == 0, _slot(off, 1, entry) != 0])     # facts known: every layer runs
    assert fe.satisfiable(extra_constraints=(True,))
    assert not fe.satisfiable(extra_constraints=(False,))
    assert fe.eval(h & 7, 8, extra_constraints=(True, h != 9)) == (1,)


def test_an_input_byte_compared_with_characters_is_not_probed_as_an_offset():
    """A string search's result over a line's bytes compares each byte with '\\n' and NUL inside
    if-then-else conditions: those bytes are characters, not offsets, and are not probed; a slice
    of an offset (arithmetic over the input) still is."""
    line = claripy.BVS("stdin", 32)
    b0, b1 = line[31:24], line[23:16]
    pos = claripy.If(claripy.Or(b0 == 10, b0 == 0), claripy.BVV(0, 64),
                     claripy.If(claripy.Or(b1 == 10, b1 == 0), claripy.BVV(1, 64), claripy.BVV(2, 64)))
    assert compared_offsets(pos != 1) == []
    off = (claripy.ZeroExt(32, line) * 0x9E3779B1)[10:3]
    slot = claripy.If(off == 5, claripy.BVS("data", 8), claripy.BVS("old", 8))
    assert [t.hash() for t in compared_offsets(slot != 0)] == [off.hash()]
