"""State merging at function exits: standard (if-then-else) merging, the baseline of quantified
merging (state-merging-with-quantifiers paper)."""

from .clauses import SolveSettings
from .technique import QuantifiedMerging

__all__ = ["QuantifiedMerging", "SolveSettings"]
