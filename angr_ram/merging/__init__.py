"""State merging at function exits: standard (if-then-else) merging, the baseline of quantified
merging (state-merging-with-quantifiers paper)."""

from angr_ram.merging.clauses import SolveSettings
from angr_ram.merging.technique import QuantifiedMerging

__all__ = ["QuantifiedMerging", "SolveSettings"]
