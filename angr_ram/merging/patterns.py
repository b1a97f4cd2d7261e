"""Regular patterns over the words of an execution tree (section 3.1 of the quantified-merging paper).

Each constraint a leaf added since the fragment's root is hashed by its *shape*: the structure of
the expression with numeric constants abstracted (a condition and its negation keep different
shapes, since negation changes the operator). A leaf's word is the sequence of those hashes. A
regular pattern ``(w1, w2, w3)`` matches a leaf with number ``k`` when its word is
``w1 w2^k w3``; a regular partition groups leaves that match one pattern, and its formula patterns
(:func:`formula_patterns`, section 3.2) give the constraints of the blocks as formulas of ``k``.
"""

from __future__ import annotations

import hashlib

import claripy

from angr_ram.core.dag import fold
from angr_ram.merging.synthesis import synthesize

_LEAVES = ("BVS", "BoolS", "FPS", "StringS")


def _shape(node, value_of) -> bytes:
    h = hashlib.blake2b(digest_size=8)
    if node.op in ("BVV", "BoolV", "FPV"):
        h.update(f"const:{node.op}:{node.length}".encode())
    elif node.op in _LEAVES:
        h.update(f"var:{node.op}:{node.length}".encode())
    else:
        h.update(node.op.encode())
        h.update(str(node.length).encode())
        for a in node.args:
            h.update(value_of(a) if isinstance(a, claripy.ast.Base) else repr(a).encode())
    return h.digest()


class ShapeHasher:
    """Hashes of constraints with numeric constants abstracted, memoized by AST."""

    def __init__(self):
        self._memo: dict[int, bytes] = {}

    def __call__(self, e) -> bytes:
        """Shape hash of ``e``: operators, widths and variable kinds; constants stand for their width."""
        return fold(e, _shape, self._memo)

    def word(self, constraints) -> tuple[bytes, ...]:
        """The word of a tree path condition."""
        return tuple(self(c) for c in constraints)


def decompose(word: tuple, w1: tuple, w2: tuple) -> tuple[int, tuple] | None:
    """``(k, w3)`` such that ``word == w1 w2^k w3`` with ``k`` maximal, or None if ``w1`` is not a
    prefix of ``word``."""
    if word[:len(w1)] != w1:
        return None
    rest, k = word[len(w1):], 0
    while w2 and rest[:len(w2)] == w2:
        rest, k = rest[len(w2):], k + 1
    return k, rest


RESIDUAL = None       # key of the leaves that no pattern of the partition matches


def regular_partitions(words: list[tuple], max_prefix: int = 8, max_unit: int = 8,
                       max_patterns: int = 10) -> list[tuple[tuple, tuple, dict[tuple, list[tuple[int, int]]]]]:
    """The regular partitionings of ``words`` (one per leaf), best first.

    Candidates ``(w1, w2)`` are taken from the longest word. Words that decompose as
    ``w1 w2^k w3`` are grouped by their ``w3``; the others (e.g. a leaf that left before ``w1``
    was complete) go to the group :data:`RESIDUAL`, which standard merging handles. The candidate
    that puts most leaves in groups of two or more comes first, then the one with fewest groups,
    the largest group and the shorter ``w1``. A candidate needs at most ``max_patterns`` groups and
    a repeated ``w2``. Several candidates often tie on the words (a loop that tests one byte against
    each character of a set repeats ``w2 = "c"`` as well as ``w2 = "ccc"``); the caller keeps the
    first whose blocks have a formula pattern.
    """
    if not words:
        return []
    longest = max(words, key=len)
    ranked = []
    for a in range(0, min(max_prefix, len(longest)) + 1):
        for unit in range(1, min(max_unit, len(longest) - a) + 1):
            w1, w2 = longest[:a], longest[a:a + unit]
            groups: dict[tuple, list[tuple[int, int]]] = {}
            for idx, w in enumerate(words):
                d = decompose(w, w1, w2)
                groups.setdefault(RESIDUAL if d is None else d[1], []).append((idx, 0 if d is None else d[0]))
            real = [g for key, g in groups.items() if key is not RESIDUAL]
            if not real or len(real) > max_patterns or max(k for g in real for _, k in g) < 1:
                continue
            covered = sum(len(g) for g in real if len(g) > 1)
            score = (-covered, len(groups), -max(len(g) for g in real), a, unit)
            ranked.append((score, w1, w2, groups))
    ranked.sort(key=lambda c: c[0])
    return [(w1, w2, groups) for _, w1, w2, groups in ranked]


def regular_partition(words: list[tuple], max_prefix: int = 8, max_unit: int = 8,
                      max_patterns: int = 10) -> tuple[tuple, tuple, dict[tuple, list[tuple[int, int]]]] | None:
    """The best regular partitioning of ``words`` (:func:`regular_partitions`), or None."""
    ranked = regular_partitions(words, max_prefix, max_unit, max_patterns)
    return ranked[0] if ranked else None


def formula_patterns(tails: list, rp) -> tuple | str:
    """The formula patterns of regular partition ``rp`` (``(w1, w2, groups)``) over the leaves' path
    constraints since the fragment's root (``tails``): ``(phi1, phi2, [(group, phi3 or None)])``,
    phi2 synthesized over the blocks of ``w2`` (section 3.2), or the reason there is none (a string). The residual group (leaves no pattern matches) comes back with ``phi3 = None``."""
    w1, w2, all_groups = rp
    groups = {key: g for key, g in all_groups.items() if key is not RESIDUAL}
    a, u = len(w1), len(w2)
    firsts = {claripy.And(*tails[idx][:a]).hash() if a else 0 for g in groups.values() for idx, _ in g}
    if len(firsts) != 1:
        return "prefixes-differ"
    first = next(idx for g in groups.values() for idx, _ in g)
    phi1 = claripy.And(*tails[first][:a]) if a else claripy.true()
    kmax = max(k for g in groups.values() for _, k in g)
    blocks: dict[int, object] = {}
    for g in groups.values():
        for idx, k in g:
            for i in range(1, k + 1):
                b = claripy.And(*tails[idx][a + (i - 1) * u:a + i * u])
                if blocks.setdefault(i, b).hash() != b.hash():
                    return "blocks-differ"
    phi2 = synthesize([blocks[i] for i in range(1, kmax + 1)], list(range(1, kmax + 1))) if kmax else None
    if kmax and phi2 is None:
        return "no-formula-pattern"
    out = []
    for g in groups.values():
        thetas = [claripy.And(*tails[idx][a + k * u:]) if len(tails[idx]) > a + k * u else claripy.true()
                  for idx, k in g]
        out.append((g, synthesize(thetas, [k for _, k in g])))
    if RESIDUAL in all_groups:
        out.append((all_groups[RESIDUAL], None))
    return phi1, phi2, out
