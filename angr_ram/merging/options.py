"""What each option of QuantifiedMerging takes and means.

The technique is :class:`~angr_ram.merging.technique.QuantifiedMerging`.
One entry per keyword of the technique, in the signature's order: the values it takes and its
meaning (Markdown, as the options reference prints it). The technique's docstring lists its
parameters from here, and ``docs/tools/options_reference.py`` writes the reference's table from
here; ``tests/test_docs.py`` checks that the keys are the signature's.
"""

from __future__ import annotations

from angr_ram.core.option_docs import Option

MERGE_OPTIONS: dict[str, Option] = {
    "mode": Option('`"ite"` `"pat"`',
           '`ite`: standard merging of the states that return from a merge point to the same '
           'place (path constraint `pc_root /\\ Or(tpc_j)`, values as if-then-else). `pat`: the '
           "paper's pattern-based merging: the leaves' branch-condition words are split into "
           'regular patterns `(w1, w2, w3)`, formula patterns are synthesised (holes `a*x + b` '
           'over constants and over variable families such as the stdin bytes), and each group '
           'becomes one state with `phi1 /\\ k in {k_j} /\\ forall i <= k. phi2(i) /\\ phi3(k)`; '
           'values linear in `k_j` become `a*k + b`. Groups without a pattern are merged with '
           '`ite`.'),
    "merge_points": Option('function names, function entry or loop header addresses, or `"auto"`',
           'where fragments start. A function fragment ends when its states return to the caller;'
           ' a loop fragment when they reach a block outside the loop body (or return). `"auto"`:'
           " every natural loop of the program's own functions (angr's `CFGFast` + `LoopFinder`; "
           'PLT stubs, SimProcedures and C start-up code excluded). A loop with a concrete trip '
           'count leaves through one path and costs only the bookkeeping. A merge point reached '
           "inside a running fragment opens a nested fragment: an inner loop of the fragment's "
           "own function entered from the outer loop's body (a run-length decoder's copy loop, a "
           "search over a delimiter set), or a merge point in a *callee* (strtok's loops called "
           'from a token loop). A nested fragment merges with `ite` and its merged states go on '
           'in the enclosing fragment, so an outer loop keeps one state per inner-loop exit '
           'instead of multiplying them iteration by iteration (pattern merges happen in '
           'outermost fragments only, so a quantified placeholder never ends up inside a '
           'disjunction; the solving procedure refuses one that does).'),
    "max_patterns": Option('int',
           'more regular partitions than this: standard merging.'),
    "validate": Option('bool',
           "checks Theorem 3.7 for every pattern merge (each leaf's path condition equals the "
           'pattern at `k = k_j`, registers agree) and compares every answer of the quantified '
           "solving procedure with z3's on the real `ForAll` query."),
    "incremental": Option('`None` `True` `False`',
           "incremental merging (section 4) while a fragment's tree grows: each new state is "
           'compared with the earlier states at the same address and call stack that are not its '
           'ancestors; the highest one (candidates are indexed by a digest of the live registers,'
           " the live frame bytes and the memory above the frame that differs from the fragment's"
           ' root, so a new state is compared only with states that can match) that agrees on '
           'every *live* register and stack-frame byte, on all other memory, the heap, the '
           'standard streams and the globals is merged with it under their lowest common ancestor'
           ' (`pc_lca /\\ (tpc_1 \\/ tpc_2)`), and the states below it are dropped (the merged '
           'state explores that part again, for both). Liveness comes from a backward analysis of'
           " the VEX IR (see below). `None`: on for `pat`, off for `ite` (the paper's "
           'configurations).'),
    "patterns": Option('`"smaller"` `"always"`',
           'with `pat`: which pattern merges to keep (`explore(..., merge_patterns=...)`, CLI '
           '`--merge-patterns`). `smaller` (default): only one whose merged states (one per '
           'pattern, plus the `ite` merge of the leaves no pattern matches) have fewer '
           'path-constraint nodes in total than the one `ite` merge of the same leaves; otherwise'
           ' the leaves merge with `ite` (counted in `merge_no_pattern_larger-than-ite`). Each '
           'merged state runs the rest of the program on its own and every query of a '
           'pattern-merged state goes through the quantified procedure, so a pattern that does '
           "not shrink the constraint only costs: strtok's delimiter scans have patterns of two "
           'leaves each with most leaves left over (at M = 8, 73 + 104 nodes of clauses plus 230 '
           'of the leftover `ite` against 237 for one `ite` merge of all nine leaves; `c_strtok` '
           "M = 10 in docs/bench/loops.txt: 61.7 s, as `ite`'s 62.2 s, where the patterns had "
           "made it 82.8 s against 62.9 s), while a span's or a digit loop's one pattern covers "
           'its leaves at constant size and wins as M grows (memspn: `ite` at M = 4, the pattern '
           'at M = 16). `always`: every pattern found, as the paper merges.'),
    "uninitialized": Option('`None` `"auto"` `"zero"` `"symbolic"`',
           'what unwritten memory and registers hold on the states it steps alone, as '
           '`RelocatableMemory(uninitialized=...)` describes (`None`: `"auto"`). With '
           "`RelocatableMemory` attached, that technique's option decides, and a different one "
           'given here is an error.'),
    "solving": Option('`angr_ram.merging.SolveSettings(neighbours=True, reuse_models=True, slow_blocking_check=1.0)`',
           'how the quantified solving procedure answers: an enumeration first collects the '
           'values next to each model (`neighbours`), a query that extends an earlier one tries '
           "that one's model first (`reuse_models`), and an enumeration whose blocking check took"
           ' longer than `slow_blocking_check` seconds goes on by splitting the range at the '
           'values found. The defaults are the measured best; the switches exist for comparisons '
           'and tests.'),
    "max_fragment_states": Option('int or `None`',
           'a fragment run (with the fragments nested in it) that holds more states than this, '
           'running or waiting as leaves, or has taken 8 times as many state steps, is given up: '
           'its states go on unmerged, its waiting leaves at once, and its merge point opens no '
           'more fragments (`stats.given_up`). A loop that forks on every input byte (`wc`, '
           '`fold`) would otherwise hold back every path until all of its exponentially many '
           'leaves exist. `None`: no bound.'),
}
