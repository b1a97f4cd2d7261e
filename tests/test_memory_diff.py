"""``memory_diff``: where two memories differ, inside a run (the patched ``changed_bytes``)
compared with angr's own answer outside one."""

import angr
import claripy
import pytest

from angr_ram.core.scope import RunScope
from angr_ram.merging import patches as memory_diff
from angr_ram.merging.technique import _Guard

from .conftest import BUILD


@pytest.fixture(scope="module")
def blank():
    proj = angr.Project(str(BUILD / "livetrap_O0"), auto_load_libs=False)
    return proj.factory.blank_state()


def _pair(blank):
    """A parent with stores of every kind and two children that change different things."""
    base = 0x7ffffff000
    x, y = claripy.BVS("x", 64), claripy.BVS("y", 32)
    root = blank.copy()
    root.memory.store(base, x)                       # one 8-byte symbolic object
    root.memory.store(base + 16, claripy.BVV(0x1122334455667788, 64))
    root.memory.store(base + 32, y, endness="Iend_LE")
    a, b = root.copy(), root.copy()
    a.memory.store(base, x)                          # the same expression stored again: a new object
    a.memory.store(base + 20, claripy.BVV(0xAB, 8))  # a concrete byte changed
    a.memory.store(base + 33, y[15:8])               # the same byte of y, stored alone
    b.memory.store(base + 4, claripy.BVS("z", 8))   # one symbolic byte changed
    b.memory.store(base + 32, y, endness="Iend_BE")  # y with the other endness
    b.memory.store(base + 0x2000, claripy.BVV(1, 8))  # a page only b has
    return root, a, b


def test_changed_pages_answers_as_angr_does(blank, monkeypatch):
    root, a, b = _pair(blank)
    pairs = [(a, root), (b, root), (a, b), (b, a), (root, root)]
    angrs = [s.memory.changed_pages(t.memory) for s, t in pairs]       # outside a run: angr's code
    fell_back = []
    orig = memory_diff.changed_bytes.original
    monkeypatch.setattr(memory_diff.changed_bytes, "original", lambda *a, **k: fell_back.append(1) or orig(*a, **k))
    with RunScope().active():
        ours = [s.memory.changed_pages(t.memory) for s, t in pairs]
    assert ours == angrs and not fell_back                               # the patch answered, alike
    with RunScope().active():
        diff = a.memory.changed_pages(b.memory)
    page = a.memory.page_size
    offs = {p * page + o for p, os_ in diff.items() if os_ for o in os_}
    base = 0x7ffffff000
    assert base + 4 in offs and base + 20 in offs and base + 32 in offs
    assert base + 1 not in offs and base + 16 not in offs   # same bytes in both


def test_byte_key_is_equal_exactly_for_equal_bytes(blank):
    root, a, b = _pair(blank)
    base = 0x7ffffff000
    key = memory_diff.byte_key
    assert key(a.memory, base + 33) == key(root.memory, base + 33)   # the same byte of y, stored apart
    assert key(a.memory, base + 2) == key(root.memory, base + 2)     # x stored again
    assert key(a.memory, base + 20) == 0xAB and key(root.memory, base + 20) == 0x55   # big-endian store
    assert key(b.memory, base + 4) != key(root.memory, base + 4)
    assert key(b.memory, base + 32) != key(root.memory, base + 32)   # y's other endness
    for s in (root, a, b):
        for o in (0, 5, 17, 33, 35):
            v = s.memory.load(base + o, 1)
            assert key(s.memory, base + o) == (v.concrete_value if not v.symbolic else v.hash())


def test_a_value_a_merge_replaced_counts_as_changed_in_later_comparisons(blank):
    """angr's merge replaces a memory object without recording the write in the page's history, so
    angr's history-based comparison finds no difference between the merged state and the state it
    was copied from there; a later merge of the two then keeps one side's value under every
    condition. Inside a run the replacement is recorded."""
    base = 0x7ffffff000
    root = blank.copy()
    root.memory.store(base, claripy.BVS("x", 32))
    a, b = root.copy(), root.copy()
    a.memory.store(base, claripy.BVS("a", 32))
    b.memory.store(base, claripy.BVS("b", 32))
    c = claripy.BVS("c", 1) == 1
    page = a.memory.page_size

    def changed(merged, other):
        diff = merged.memory.changed_pages(other.memory)
        return {p * page + o for p, os_ in diff.items() if os_ for o in os_}

    merged, _, _ = a.merge(b, merge_conditions=[[_Guard(c)], [_Guard(claripy.Not(c))]], common_ancestor=root)
    assert base not in changed(merged, a)                    # angr's own code misses the replaced value
    with RunScope().active():
        merged, _, _ = a.merge(b, merge_conditions=[[_Guard(c)], [_Guard(claripy.Not(c))]], common_ancestor=root)
        assert {base, base + 3} <= changed(merged, a)
        assert merged.memory.load(base, 4).op == "If"
