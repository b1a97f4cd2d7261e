"""Path facts (:mod:`angr_ram.solver.path_facts`): terms a path's constraints fix to one value,
rewritten into what the path writes, adds and asks. The facts alone on claripy expressions, in the
solver frontend, and a user's script over a hash table walked after a four-byte name was hashed
into it, with the facts and without."""

import os

import claripy
import pytest

from angr_ram.run.inputs import Template
from angr_ram.run.runner import explore
from angr_ram.solver import path_facts
from angr_ram.solver.path_facts import Facts, compared_offsets, stated_equality, takes_nonzero_side
from angr_ram.solver.substituting import SubstitutingFrontend

from .conftest import BUILD, assert_tests_replay
from .test_drives import script
from .test_subjects import check


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


def test_an_equality_over_one_input_byte_names_the_byte_it_may_pin():
    """``strcmp`` of a one-byte key with a string gives ``If(x == 98, 0, 98 - x) == 0``: the byte it
    reads is the slice to probe; a byte of a script's wide ``BVS`` is an ``Extract``; base addresses
    (a pointer that selects the string) do not count; ``x == 98`` itself, a disequality, two input
    variables, or a slice wider than PINNED_BITS are not probed."""
    x = claripy.BVS("key", 8)
    cmp = claripy.If(x == 98, claripy.BVV(0, 32), claripy.BVV(98, 32) - x.zero_extend(24))
    assert path_facts.equated_slice(cmp == 0) is x
    wide = claripy.BVS("input", 32)
    byte = wide[15:8]
    got = path_facts.equated_slice(claripy.If(byte == 7, claripy.BVV(0, 32), byte.zero_extend(24) + 1) == 0)
    assert got is not None and got.op == "Extract" and got.args[:2] == (15, 8)
    base = claripy.BVS("ram_base_3_4_64", 64, explicit_name=True)
    via_pointer = claripy.If(base == 0x1000, cmp, claripy.BVV(1, 32)) == 0
    assert path_facts.equated_slice(via_pointer) is x
    assert path_facts.equated_slice(x == 98) is None
    assert path_facts.equated_slice(cmp != 0) is None
    y = claripy.BVS("other", 8)
    assert path_facts.equated_slice((x + y).zero_extend(24) == 3) is None
    assert path_facts.equated_slice((wide * 3) == 9) is None


def test_a_key_pinned_by_an_equality_folds_its_hash_to_a_constant():
    """After ``strcmp(key, "b") == 0`` the frontend knows the key byte, so a later value computed
    from its hash (the bucket a lookup selected) is a constant; on the side where the strcmp
    differs nothing is learnt."""
    x = claripy.BVS("key", 8)
    cmp = claripy.If(x == 98, claripy.BVV(0, 32), claripy.BVV(98, 32) - x.zero_extend(24))
    h = (x.zero_extend(24) * 0x9E3779B1) ^ claripy.LShR(x.zero_extend(24) * 0x85EBCA6B, 13)
    fe = SubstitutingFrontend()
    fe.add([cmp == 0])
    assert fe.facts.knows(x)
    bucket = fe.facts.rewrite(h & 15)
    assert not bucket.symbolic and bucket.concrete_value == ((98 * 0x9E3779B1) ^ (((98 * 0x85EBCA6B) & 0xFFFFFFFF) >> 13)) & 15
    other = SubstitutingFrontend()
    other.add([cmp != 0])
    assert not other.facts.knows(x) and len(other.facts) == 0


def test_json_c_lookups_that_find_their_key_pin_it_and_need_fewer_z3_checks(monkeypatch):
    """The seeds' json-c driver with its first two lookups' keys symbolic (a..e): a lookup that
    finds its key learns the key byte from ``strcmp``, so the selected entry's pointer, its value
    and the later hash computations are constants. Same paths and outcomes (the native ones) as
    without the probe, fewer z3 checks (55 against 95 when written), every test replays."""
    with_pins = check("jsonc_seeds", "O0", Template(b"??cd", ord("a"), ord("e")), 6, environment="fixed")
    monkeypatch.setattr(path_facts, "PINNED_BITS", 0)
    without = explore(os.fspath(BUILD / "jsonc_seeds_O0"), Template(b"??cd", ord("a"), ord("e")), environment="fixed")
    assert with_pins.outcomes == without.outcomes
    assert with_pins.stats["paths"] == without.stats["paths"] == 9
    assert with_pins.stats["fact_probe_hits"] > without.stats["fact_probe_hits"]
    assert with_pins.stats["z3_checks"] * 1.3 < without.stats["z3_checks"], (with_pins.stats, without.stats)
