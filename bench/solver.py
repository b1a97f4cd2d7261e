"""Solver table: claripy's own z3 solvers against angr-ram's (:mod:`angr_ram.solver.z3_setup`) on
query shapes that symbolic execution asks: a hash preimage as a path constraint and as a branch
condition (an extra constraint), many cheap branch checks along a growing path, enumeration, and the
extrema of an address."""

from __future__ import annotations

import time

import claripy

from angr_ram.core.scope import RunScope

QUERY_TIMEOUT_MS = 30_000


def _jenkins(bs: list) -> claripy.ast.BV:
    """Jenkins' one-at-a-time hash (uthash's ``HASH_JEN`` family) of symbolic bytes."""
    h = claripy.BVV(0, 32)
    for b in bs:
        h = h + b.zero_extend(24)
        h = h + (h << 10)
        h = h ^ h.LShR(6)
    h = h + (h << 3)
    h = h ^ h.LShR(11)
    return h + (h << 15)


def _jenkins_int(data: bytes) -> int:
    m = 0xFFFFFFFF
    h = 0
    for b in data:
        h = (h + b) & m
        h = (h + (h << 10)) & m
        h ^= h >> 6
    h = (h + (h << 3)) & m
    h ^= h >> 11
    return (h + (h << 15)) & m


def _preimage_path() -> bool:
    bs = [claripy.BVS(f"key{i}", 8) for i in range(4)]
    s = claripy.Solver(timeout=QUERY_TIMEOUT_MS)
    s.add(_jenkins(bs) == _jenkins_int(b"k3y!"))
    return s.satisfiable()


def _preimage_branch() -> bool:
    bs = [claripy.BVS(f"key{i}", 8) for i in range(4)]
    s = claripy.Solver(timeout=QUERY_TIMEOUT_MS)
    s.add(bs[0] != 0)
    s.satisfiable()
    return s.satisfiable(extra_constraints=[_jenkins(bs) == _jenkins_int(b"k3y!")])


def _branches() -> int:
    bs = [claripy.BVS(f"in{i}", 8) for i in range(8)]
    s = claripy.Solver(timeout=QUERY_TIMEOUT_MS)
    s.add(bs[0] > 3)
    sat = 0
    for i in range(300):
        s = s.branch()
        s.add(bs[i % 8] != (i * 7) % 256)
        sat += s.satisfiable(extra_constraints=[bs[(i + 3) % 8] == i % 251])
    return sat


def _enumerate() -> int:
    x = claripy.BVS("x", 16)
    s = claripy.Solver(timeout=QUERY_TIMEOUT_MS)
    s.add(x * x == 49)
    return len(s.eval(x, 100))


def _address_extrema() -> tuple[int, int]:
    """A heap address ``base + 16 * i`` with ``i`` an input byte below 200, resolved inside a
    4 KiB window: the query angr-ram's memory asks for each symbolic access."""
    i = claripy.BVS("i", 8)
    s = claripy.Solver(timeout=QUERY_TIMEOUT_MS)
    s.add(claripy.ULE(i, 200))
    base = 0x7FFF_0000_1000
    p = base + i.zero_extend(56) * 16
    window = [claripy.And(claripy.UGE(p, base), claripy.ULE(p, base + 4095))]
    return s.min(p, extra_constraints=window), s.max(p, extra_constraints=window)


QUERIES = (("hash preimage, path constraint", _preimage_path),
           ("hash preimage, branch condition", _preimage_branch),
           ("300 branches along one path", _branches),
           ("enumerate x*x == 49 (16 bit)", _enumerate),
           ("min/max of an address, 4 KiB window", _address_extrema))


def _timed(fn) -> tuple[float, object]:
    t = time.perf_counter()
    try:
        r = fn()
    except claripy.errors.ClaripyError as e:
        r = f"{type(e).__name__}"
    return time.perf_counter() - t, r


def solver_table() -> int:
    """Per query shape: seconds with claripy's solvers and with angr-ram's, and the answers (which
    must agree)."""
    hdr = f"{'query':34} {'claripy s':>10} {'angr-ram s':>10} {'ratio':>7}  answers"
    print(hdr)
    print("-" * len(hdr))
    bad = 0
    for name, fn in QUERIES:
        stock_t, stock_r = _timed(fn)
        with RunScope().active():
            ram_t, ram_r = _timed(fn)
        same = stock_r == ram_r
        bad += not same
        print(f"{name:34} {stock_t:10.3f} {ram_t:10.3f} {stock_t / ram_t:6.1f}x  {stock_r} / {ram_r}"
              + ("" if same else "  DIFFERENT"), flush=True)
    return 1 if bad else 0
