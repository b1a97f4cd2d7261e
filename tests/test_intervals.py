"""The interval an expression's structure puts it in (strategies/intervals.py): sound for every
assignment, tight on the shapes addresses have, and the region extremes resolution takes from it."""

import os
import random

import claripy
import pytest

from angr_ram.memory.strategies.intervals import unsigned_range
from angr_ram.run.runner import explore

from .conftest import BUILD

b, c = claripy.BVS("iv_b", 8), claripy.BVS("iv_c", 8)
SHAPES = [
    claripy.SignExt(32, claripy.ZeroExt(24, claripy.If(b == 0, claripy.BVV(0, 8), c))) + 0x404040,
    (claripy.ZeroExt(56, b) << 3) + 0x601000,
    claripy.ZeroExt(56, b) * 24 + claripy.ZeroExt(56, c) + 0x7ffffffe0000,
    claripy.Concat(claripy.BVV(0x40, 8), b, c),
    claripy.ZeroExt(24, b) - claripy.ZeroExt(24, c & 0x0F),
    claripy.LShR(claripy.ZeroExt(24, b | c), 2) ^ claripy.ZeroExt(24, c),
    claripy.Extract(15, 4, claripy.ZeroExt(8, b) + claripy.ZeroExt(8, c)),
    claripy.SignExt(8, b) + 1,                         # may be negative: the whole range
    claripy.ZeroExt(8, b) * claripy.ZeroExt(8, c) * 4,  # may wrap: the whole range
]


@pytest.mark.parametrize("k", range(len(SHAPES)))
@pytest.mark.slow
def test_the_interval_holds_for_every_assignment_and_is_tight_where_it_can_be(k):
    e = SHAPES[k]
    lo, hi = unsigned_range(e)
    values = set()
    rng = random.Random(k)
    for vb, vc in [(0, 0), (255, 255), (0, 255), (255, 0)] + [(rng.randrange(256), rng.randrange(256)) for _ in range(300)]:
        v = claripy.Solver().eval(e, 1, extra_constraints=[b == vb, c == vc])[0]
        assert lo <= v <= hi
        values.add(v)
    # fresh solvers: stock claripy's min after a max on one solver can be wrong (its model cache)
    least, greatest = claripy.Solver().min(e), claripy.Solver().max(e)
    assert lo <= least and greatest <= hi
    if k < 4:      # a base plus an index: the interval is exact
        assert (lo, hi) == (least, greatest)


@pytest.mark.slow
def test_region_extremes_taken_from_the_interval_keep_every_outcome():
    """b64class's table lookup ``dec[*p]`` with ``*p != 0``: the least address is one past the
    interval's bound (probed next to it), the greatest its bound; outcomes are unchanged."""
    from .test_loop_corpus import native as loop_native

    res = explore(os.fspath(BUILD / "b64class4_O2"), 5, merge="pat", merge_points="auto")
    assert res.unknown == 0 and res.outcomes == loop_native("b64class", "O2")
