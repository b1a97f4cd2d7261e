"""Run-wide counters shared by every state of one exploration."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class RunStats:
    """Counters updated by the memory layer, the solver layer and the technique."""

    forks: int = 0
    fork_states: int = 0
    objects: int = 0
    relocations: int = 0
    solver_queries: int = 0
    solver_seconds: float = 0.0
    resolutions: int = 0
    resolution_queries: int = 0
    multiple_resolutions: int = 0
    resolutions_reused: int = 0    # answered by an ancestor path's enumeration of the same address
    structural_resolutions: int = 0  # z3 gave up: targets from the address's expression (strategies.value_sets)
    segments: int = 0
    segments_reused: int = 0
    context_hits: int = 0          # resolutions answered from the location's recorded contexts
    context_misses: int = 0        # ... whose completeness check failed (full scan instead)
    max_segment_size: int = 0
    splits: int = 0
    max_split_object_size: int = 0
    cache_queries: int = 0
    cache_hits_syntactic: int = 0
    cache_hits_aa: int = 0
    cache_hits_disk: int = 0
    cache_tagged: int = 0
    cache_models_rejected: int = 0
    cache_unconfirmed: int = 0
    cache_size: int = 0
    z3_checks: int = 0
    z3_seconds: float = 0.0        # time in z3's check (the seeding's cost is weighed against it)
    cache_disk_size: int = 0
    cache_disk_garbled: int = 0    # records of the on-disk store that were not answers (skipped as misses)
    multi_writes: int = 0          # stores of symbolic length kept as one guarded record
    let_bindings: int = 0          # large symbolic-offset reads bound to a fresh symbol
    enumerated_queries: int = 0    # queries over let-bound lookups decided by small-domain enumeration
    seeded_answers: int = 0        # queries answered by a seeded candidate model before z3 (plugins/seeding.py)
    seeded_misses: int = 0         # ... where no candidate satisfied the query (z3 asked)
    seeded_siblings: int = 0       # ... answers from a sibling model, only the query's own constraints evaluated
    relaxed_unsat: int = 0         # ... of which unsatisfiable without the let definitions (z3 on a small part)
    seeded_seconds: float = 0.0    # time spent trying candidates
    seeded_skipped_cost: int = 0   # queries sent to z3 without seeding, which cost more than it saved in this run
    seeded_tiers_skipped: int = 0  # queries whose later candidate tiers were skipped at a site where they rarely answer
    fact_probes: int = 0           # terms asked whether the path fixes their value (solver/path_facts.py)
    fact_probe_hits: int = 0       # ... which it did (a fact learnt)
    fact_probe_seconds: float = 0.0
    fact_probes_skipped: int = 0   # ... not asked: probing cost more than it found in this run
    satisfiable_known: int = 0     # satisfiable() with no constraint added since it was last true: not asked again
    infeasible_errors: int = 0     # faults found on paths that turned out infeasible (not reported)
    unknown_states: int = 0        # states set aside because z3 gave up on a query (unknown stash)
    second_pass_skipped: int = 0   # of those, not tried: z3 gave up on the earlier ones deferred at their site
    deferred_states: int = 0       # ... within the first-pass budget (deferred stash, resumed at the end)
    deferred_resumed: int = 0      # deferred states resumed with the full budget
    steps_abandoned: int = 0       # steps stopped for their time or memory budget (angr_ram.core.guard), state set aside
    memory_retries: int = 0        # ... over the memory budget, to be retried with a larger one (RelocatableMemory)
    undecided_successors: int = 0  # branch successors set aside alone, their siblings going on
    fast_path_failures: int = 0    # blocks on ints ended by an unexpected exception, handed to angr (run.concrete_blocks)
    string_exact: int = 0          # string/memory comparisons answered from the bytes (plugins/strings.py)
    string_fallback: int = 0       # ... handed to angr's procedure (end not in reach, symbolic length)
    options_not_honoured: dict = field(default_factory=dict)  # a state's option or setting -> why (run/user_options.py)

    def as_dict(self) -> dict:
        """The counters as a plain dict."""
        return asdict(self)
