"""Native ground truth for the tests: a sample binary's outcomes over its whole bounded input domain."""

from __future__ import annotations

import itertools

from angr_ram.bench.native import domain, outcome_set, run_inputs

__all__ = ["domain", "outcome_set", "outcome_set_over", "run_inputs"]


def outcome_set_over(binary: str, alphabets) -> set[tuple[int, bytes]]:
    """All (exit status, stdout) pairs over the inputs whose byte ``i`` is drawn from
    ``alphabets[i]`` (for programs that only compare bytes with a few constants, one
    representative per class covers the whole domain)."""
    return set(run_inputs(binary, [bytes(t) for t in itertools.product(*alphabets)]))
