"""Simplification that does not simplify again what it simplified before
(:mod:`angr_ram.solver.simplify_reuse`): the layer alone on claripy expressions, and a user's script
over a hash table walked after a four-byte name was hashed into it, with and without the reuse."""

import os

import claripy
import pytest

from angr_ram.core.scope import RunScope
from angr_ram.solver import simplify_reuse
from angr_ram.solver.evaluator import dag_nodes
from angr_ram.solver.simplify_reuse import simplify_reusing

from .conftest import BUILD, assert_tests_replay
from .test_drives import script


def _nodes(e) -> int:
    return sum(1 for _ in dag_nodes(e, lambda x: [a for a in x.args if isinstance(a, claripy.ast.Base)]))


def _hashes(e) -> set:
    return {n.hash() for n in dag_nodes(e, lambda x: [a for a in x.args if isinstance(a, claripy.ast.Base)])}


def _arx(x, rounds: int = 12):
    a, b, c = claripy.BVV(0x736F6D65, 32), claripy.BVV(0x646F7261, 32), x
    for k in range(rounds):
        a = a + x.get_byte(k % 4).zero_extend(24)
        b = claripy.RotateLeft(b ^ a, 13)
        c = c + b
        a = claripy.RotateLeft(a ^ c, 7)
    return a ^ b ^ c


def _simplifier():
    handed = []

    def original(_self, e):
        handed.append(e)
        return claripy.simplify(e)
    return original, handed


def test_a_simplified_hash_stands_in_as_a_variable_when_a_value_built_on_it_is_simplified():
    x = claripy.BVS("name", 32)
    original, handed = _simplifier()
    with RunScope().active():
        h = simplify_reusing(original, None, _arx(x))
        assert _nodes(h) >= simplify_reuse.PLACEHOLDER_NODES
        # a register write narrows the hash and adds an offset: only the new nodes go to z3
        narrowed = claripy.ZeroExt(32, h & 7)
        inner = narrowed.args[1]
        value = simplify_reusing(original, None, narrowed * 0x18 + 0x28)
        assert _nodes(handed[-1]) < 12
        assert h.hash() not in _hashes(handed[-1])
        assert h.hash() in _hashes(value)
        s = claripy.Solver()
        s.add(value != narrowed * 0x18 + 0x28)
        assert not s.satisfiable()
        # a subterm of a simplified value (the 32-bit 'h & 7' inside the ZeroExt) is remembered too
        handed.clear()
        simplify_reusing(original, None, claripy.ZeroExt(32, inner ^ 1))
        assert _nodes(handed[-1]) < 8
        # what cancels across the stand-in still cancels
        assert simplify_reusing(original, None, (h + 5) - h).concrete_value == 5
        # the same value again is not simplified again
        handed.clear()
        assert simplify_reusing(original, None, value) is value
        assert handed == []


def test_small_simplified_subterms_are_simplified_with_the_rest():
    x = claripy.BVS("x", 32)
    original, handed = _simplifier()
    with RunScope().active():
        y = simplify_reusing(original, None, (x + 1) * 3)
        simplify_reusing(original, None, y + 2)
        assert _nodes(handed[-1]) == _nodes(y + 2)


def _walk(binary: str, monkeypatch, reuse: bool):
    nodes = [0]
    keep = simplify_reuse.simplify_or_keep

    def counted(original, self, e=None):
        if isinstance(e, claripy.ast.Base):
            nodes[0] += _nodes(e)
        return keep(original, self, e)
    monkeypatch.setattr(simplify_reuse, "simplify_or_keep", counted)
    monkeypatch.setattr(simplify_reuse, "PLACEHOLDER_NODES", 256 if reuse else 1 << 60)
    return script(binary, 4), nodes[0]


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_a_table_walked_after_hashing_a_wide_name_simplifies_the_hash_once(opt, monkeypatch):
    """samples/drives/hashwalk: a four-byte name (one 32-bit BVS, angr's defaults) hashed into one
    of 8 buckets, then every bucket ("the entry or NULL") is walked, its fields read and written
    through the bucket pointer. Every register and memory write of a walking state is built on the
    hash; with the reuse, z3's simplifier sees the hash once, not at every write."""
    binary = os.fspath(BUILD / f"hashwalk_{opt}")
    with_reuse, n_reuse = _walk(binary, monkeypatch, True)
    without, n_plain = _walk(binary, monkeypatch, False)
    assert with_reuse.outcomes == without.outcomes == {(0, b"1 5\n"), (1, b"1 5\n")}
    assert with_reuse.stats["paths"] == without.stats["paths"] == 8
    assert n_reuse * 2 < n_plain, (n_reuse, n_plain)
    assert_tests_replay(binary, with_reuse)
