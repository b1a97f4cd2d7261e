"""The merging technique's policies as values: how a fragment's leaves merge (:class:`MergeMode`)
and which pattern merges are kept (:class:`PatternPolicy`), looked up by the names the user gives."""

from __future__ import annotations

from dataclasses import dataclass

import claripy

from angr_ram.core.dag import count_nodes


def tpc(tail: list):
    """A leaf's tree path condition: the conjunction of its tail (true for an empty one)."""
    return claripy.And(*tail) if tail else claripy.true()


def _tree_constraint(tails: list):
    """The merged tree path constraint ``Or(tpc_j)`` of leaves with these tails (``tpc`` alone for
    one leaf)."""
    tpcs = [tpc(t) for t in tails]
    return tpcs[0] if len(tpcs) == 1 else claripy.Or(*tpcs)


def _sizes(tails: list, clauses: list, rest: list[int]) -> tuple[int, int]:
    """Path-constraint nodes in total after pattern merging (the ``clauses`` and the standard
    merge of the leaves ``rest`` no pattern matches), and after standard merging of every leaf."""
    size = sum(c.size() for c in clauses)
    if rest:
        size += count_nodes(_tree_constraint([tails[i] for i in rest]))
    return size, count_nodes(_tree_constraint(tails))


@dataclass(frozen=True)
class MergeMode:
    """How a fragment's leaves merge: ``ite`` (if-then-else over their path conditions) or ``pat``
    (quantified patterns where the leaves follow one; a nested fragment merges with ite)."""

    name: str
    patterns: bool          # look for formula patterns among the leaves of a top-level fragment
    incremental: bool       # incremental merging inside fragments, unless the user says otherwise


@dataclass(frozen=True)
class PatternPolicy:
    """Which pattern merges to keep: ``smaller`` (only one whose merged states have fewer
    path-constraint nodes in total than the ite merge of the same leaves) or ``always``."""

    name: str
    compare: bool           # compare the pattern merge's size with the ite merge's

    def ite_instead(self, tails: list, clauses: list, rest: list[int]) -> int | None:
        """The ite merge's node count when it should be used instead of the patterns, else None."""
        if not self.compare:
            return None
        pattern_nodes, ite_nodes = _sizes(tails, clauses, rest)
        return ite_nodes if pattern_nodes >= ite_nodes else None


MODES = {m.name: m for m in (MergeMode("ite", patterns=False, incremental=False),
                             MergeMode("pat", patterns=True, incremental=True))}
PATTERN_POLICIES = {p.name: p for p in (PatternPolicy("smaller", compare=True), PatternPolicy("always", compare=False))}
