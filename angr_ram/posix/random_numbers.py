"""glibc's pseudo-random generator: ``rand``, ``random``, ``srand`` and ``srandom``.

angr's ``rand`` returns a fresh symbol on every call and its ``srand`` does nothing; ``random`` and
``srandom`` are stubs. A program that draws from an unseeded generator, or from a seed it computes,
then took paths on values no native run draws, and their tests did not replay (a die rolled 7).
glibc's generator is a pure function of its seed (``random_r.c``'s additive feedback generator:
31 words seeded by a linear congruence, 310 outputs discarded; ``rand`` is ``random``), so here
each call returns what glibc returns: the ``k``-th output for the path's seed (1 until a call of
``srand``). A symbolic seed with at most ``MAX_SEEDS`` values on the path draws an if-then-else
over them (no fork: the path forks only where the program tells the draws apart); a seed with
more values (``srand(time(NULL))`` in the symbolic environment) draws fresh symbols, as angr did,
and the path records ``rand`` among its stubs, so its tests say why they may not replay. The
generator's seed and position are a state plugin that merges as if-then-else expressions."""

from __future__ import annotations

import collections
import functools
import itertools

import angr
import claripy

from angr_ram.procedures.stubs import record

PLUGIN = "ram_random"
MAX_SEEDS = 256        # the most (seed, position) pairs a draw is an if-then-else over
MODULUS = 2147483647
DEGREE, SEPARATION, DISCARDED = 31, 3, 310


@functools.lru_cache(maxsize=1024)
def _start(seed: int) -> tuple:
    """The generator's 31 words after ``srandom(seed)`` and its 310 discarded outputs."""
    s = seed & 0xFFFFFFFF or 1
    w = s - (1 << 32) if s >= 1 << 31 else s              # glibc keeps the seed in an int32_t
    r = [w]
    for _ in range(1, DEGREE):
        hi = abs(w) // 127773 * (1 if w >= 0 else -1)      # C's truncating division
        w = 16807 * (w - hi * 127773) - 2836 * hi
        if w < 0:
            w += MODULUS
        r.append(w)
    r = [x & 0xFFFFFFFF for x in r]
    r += r[:SEPARATION]
    while len(r) < DEGREE + SEPARATION + DISCARDED:
        r.append((r[-DEGREE] + r[-SEPARATION]) & 0xFFFFFFFF)
    return tuple(r[-DEGREE:])


_STREAMS: collections.OrderedDict = collections.OrderedDict()      # seed -> [window, outputs]
MAX_STREAMS = 64


def draw(seed: int, k: int) -> int:
    """glibc's ``k``-th ``random()`` (from 0) after ``srandom(seed)``."""
    stream = _STREAMS.get(seed)
    if stream is None:
        stream = _STREAMS[seed] = [list(_start(seed)), []]
        while len(_STREAMS) > MAX_STREAMS:
            _STREAMS.popitem(last=False)
    else:
        _STREAMS.move_to_end(seed)
    r, out = stream
    while len(out) <= k:
        r.append((r[-DEGREE] + r[-SEPARATION]) & 0xFFFFFFFF)
        del r[0]
        out.append(r[-1] >> 1)
    return out[k]


class RandomState(angr.SimStatePlugin):
    """The path's generator: its seed (a 32-bit expression), the seed's values on the path when
    known (a tuple; None: not enumerated yet) and the number of draws since the seed was set."""

    def __init__(self, seed=None, values=(1,), k=None):
        super().__init__()
        self.seed = claripy.BVV(1, 32) if seed is None else seed
        self.values = values
        self.k = claripy.BVV(0, 32) if k is None else k

    @angr.SimStatePlugin.memo
    def copy(self, memo):  # pylint: disable=unused-argument
        return RandomState(self.seed, self.values, self.k)

    def merge(self, others, merge_conditions, common_ancestor=None):  # pylint: disable=unused-argument
        everyone = [self, *others]
        if all(o.seed is self.seed and o.k is self.k for o in others):
            return False
        seed, k = self.seed, self.k
        for o, cond in zip(others, merge_conditions[1:], strict=True):
            seed, k = claripy.If(cond, o.seed, seed), claripy.If(cond, o.k, k)
        known = all(o.values is not None for o in everyone)
        self.seed, self.k = seed, k
        self.values = tuple(sorted(set().union(*(o.values for o in everyone)))) if known else None
        return True

    def widen(self, others):  # pylint: disable=unused-argument
        return False


def generator(state) -> RandomState:
    g = state.plugins.get(PLUGIN)
    if g is None:
        g = RandomState()
        state.register_plugin(PLUGIN, g)
    return g


def _values(state, v, limit: int):
    """``v``'s values on ``state``'s path, or None if more than ``limit``."""
    if not v.symbolic:
        return (v.concrete_value,)
    vals = state.solver.eval_upto(v, limit + 1)
    return None if len(vals) > limit else tuple(sorted(vals))


def next_draw(state):
    """The path's next ``random()`` as a 32-bit expression; the generator moves on."""
    g = generator(state)
    if g.values is None:
        g.values = _values(state, g.seed, MAX_SEEDS) or ()
    positions = _values(state, g.k, MAX_SEEDS) if g.values else None
    if not g.values or positions is None or len(g.values) * len(positions) > MAX_SEEDS:
        record(state, "rand")          # fresh symbols: the draws of this path may not replay
        out = state.solver.BVS("rand", 31, key=("api", "rand")).zero_extend(1)
    else:
        pairs = list(itertools.product(g.values, positions))
        out = claripy.BVV(draw(*pairs[-1]), 32)
        for seed, k in reversed(pairs[:-1]):
            hit = [g.seed == seed] if len(g.values) > 1 else []
            hit += [g.k == k] if len(positions) > 1 else []
            out = claripy.If(claripy.And(*hit), claripy.BVV(draw(seed, k), 32), out)
    g.k = g.k + 1
    return out


def seed_generator(state, seed) -> None:
    g = generator(state)
    g.seed = seed[31:0] if seed.size() > 32 else seed
    g.values = None if g.seed.symbolic else (g.seed.concrete_value,)
    g.k = claripy.BVV(0, 32)


class Rand(angr.SimProcedure):
    """``rand()``: glibc's next ``random()``."""

    def run(self):  # pylint: disable=arguments-differ
        return next_draw(self.state)


class Random(angr.SimProcedure):
    """``random()``: the next output of glibc's generator, a ``long``."""

    def run(self):  # pylint: disable=arguments-differ
        return next_draw(self.state).zero_extend(32)


class Srand(angr.SimProcedure):
    """``srand(seed)``/``srandom(seed)``: the generator starts again from ``seed``."""

    def run(self, seed):  # pylint: disable=arguments-differ
        seed_generator(self.state, seed)


RANDOM_PROCEDURES = {"rand": Rand, "random": Random, "srand": Srand, "srandom": Srand}
