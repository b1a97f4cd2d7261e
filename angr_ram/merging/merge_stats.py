"""The merging technique's counters (:attr:`~.technique.QuantifiedMerging.stats`)."""

from __future__ import annotations

from angr_ram.merging.clauses import SolveStats


class MergeStats:
    """Counters of the merging technique."""

    def __init__(self):
        self.fragments = 0
        self.nested_fragments = 0          # fragments opened inside a running fragment (callee or inner loop)
        self.leaves = 0
        self.merges_ite = 0
        self.merges_pat = 0
        self.merged_states = 0
        self.patterns = 0
        self.no_pattern = 0
        self.merge_refused = 0             # groups angr's merge refused (kept unmerged)
        self.given_up = 0                  # fragment runs given up for holding too many states
        self.given_up_states = 0           # the states they held then
        self.incremental = 0               # incremental merges (section 4) inside fragments
        self.incremental_compared = 0      # live-store comparisons they took
        self.incremental_capped = 0        # merges skipped by the per-site guard against merge cycles
        self.incremental_refused: dict[str, int] = {}   # first difference per refused comparison
        self.no_pattern_why: dict[str, int] = {}        # why a group of leaves got no pattern
        self.constraint_nodes = 0          # AST nodes of the merged path constraints (sum)
        self.max_constraint_nodes = 0
        self.solve = SolveStats()

    def declined(self, why: str) -> None:
        """Count a group of leaves merged without a pattern, and why."""
        self.no_pattern += 1
        self.no_pattern_why[why] = self.no_pattern_why.get(why, 0) + 1

    def as_dict(self) -> dict:
        """The counters (and the quantified solver's) as a plain dict."""
        d = {k: v for k, v in vars(self).items() if k not in ("solve", "incremental_refused", "no_pattern_why")}
        d.update({f"no_pattern_{k}": v for k, v in sorted(self.no_pattern_why.items())})
        d.update({f"incremental_refused_{k}": v for k, v in sorted(self.incremental_refused.items())})
        d["incremental_compared_per_merge"] = round(self.incremental_compared / max(self.incremental, 1), 2)
        d.update({f"solve_{k}": v for k, v in vars(self.solve).items()})
        return d

    def constraint(self, nodes: int) -> None:
        """Record the size of one merged path constraint."""
        self.constraint_nodes += nodes
        self.max_constraint_nodes = max(self.max_constraint_nodes, nodes)
