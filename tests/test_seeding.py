"""Seeded models: queries answered by candidate assignments before z3, exactly (a seeded model is
checked on every constraint), and unsatisfiable let-only parts decided over the tables' values."""

import os

import claripy
import pytest

from angr_ram.core.scope import RunScope
from angr_ram.core.stats import RunStats
from angr_ram.memory.object_store import select
from angr_ram.run.config import RunConfig
from angr_ram.run.runner import explore
from angr_ram.solver import seeding
from angr_ram.solver.frontends import SeededSolver
from angr_ram.solver.substituting import composite

from .conftest import BUILD
from .groundtruth import outcome_set


def mix(k):
    """A Jenkins-style one-at-a-time hash of a 32-bit key (z3 cannot invert it cheaply)."""
    h = claripy.BVV(0x9E3779B9, 32)
    for i in range(4):
        h = h + claripy.Extract(8 * i + 7, 8 * i, k).zero_extend(24)
        h = h + (h << 10)
        h = h ^ claripy.LShR(h, 6)
    h = h + (h << 3)
    h = h ^ claripy.LShR(h, 11)
    return h + (h << 15)


def concrete_mix(k: int) -> int:
    h = 0x9E3779B9
    for i in range(4):
        h = (h + ((k >> (8 * i)) & 0xFF)) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


def run_scope():
    stats = RunStats()
    return RunScope(stats, config=RunConfig()), stats


def _key(bits):
    """A little-endian int read from input bytes 0..3: of four byte variables (``bits`` 0) or of
    one ``claripy.BVS`` of ``bits`` bits (a user's script: 4, 12 or 128 bytes of stdin)."""
    if not bits:
        return claripy.Concat(*reversed([claripy.BVS(f"stdin_{i}", 8) for i in range(4)]))
    stdin = claripy.BVS("stdin", bits, explicit_name=True)
    return claripy.Concat(*(stdin.get_byte(i) for i in (3, 2, 1, 0)))


@pytest.mark.parametrize("bits", [0, 32, 96, 1024])
def test_a_stored_key_satisfies_a_hash_comparison_without_z3(bits):
    k = _key(bits)
    stored = 0x5EED1234
    scope, stats = run_scope()
    with scope.active(), seeding.source(lambda: frozenset({(stored, 4), (77, 4)})):
        s = SeededSolver()
        s.add(k != 0)
        assert s.satisfiable(extra_constraints=[mix(k) == concrete_mix(stored)])
        assert stats.seeded_answers >= 1 and stats.z3_checks == 0
        s.add(mix(k) == concrete_mix(stored))
        assert s.eval(k, 1) == (stored,)             # the seeded model, from claripy's model cache
    assert stats.z3_checks == 0


def test_seeded_answers_are_checked_and_misses_go_to_z3():
    x = claripy.BVS("stdin_0", 8)
    scope, stats = run_scope()
    with scope.active(), seeding.source(lambda: frozenset({(0x41, 1)})):
        s = SeededSolver()
        s.add(x * 3 == 0x41 * 3)
        assert s.satisfiable()                       # the stored constant 0x41 is a model
        assert stats.seeded_answers == 1 and stats.z3_checks == 0
        assert not s.satisfiable(extra_constraints=[x * x == 2])     # no candidate; z3 proves unsat
        assert stats.seeded_misses >= 1 and stats.z3_checks >= 1


def test_a_site_where_the_stored_constants_never_answer_skips_them_and_one_where_they_do_keeps_them():
    """The later candidate tiers (memory constants...) are skipped at a querying site where they have
    not answered in SITE_TRIAL tries, except every SITE_RETRY-th query; a bucket-lookup site that
    they answer keeps them, and every answer stays exact (z3 answers the skipped queries)."""
    k = claripy.Concat(*reversed([claripy.BVS(f"stdin_{i}", 8) for i in range(4)]))
    stored = 0x5EED1234
    scope, stats = run_scope()
    queries = 12
    with scope.active(), seeding.source(lambda: frozenset({(stored, 4)})):
        for q in range(queries):      # k * 7 == c: no stored or placed constant satisfies it
            with seeding.site(("resolve", 0x401000)):
                s = SeededSolver()
                s.add(k != 0)
                c = (0x1234567 + q) * 7 & 0xFFFFFFFF
                assert s.eval(k, 1, extra_constraints=[k * 7 == c])[0] * 7 & 0xFFFFFFFF == c
        skipped = sum(1 for q in range(seeding.SITE_TRIAL + 1, queries + 1) if q % seeding.SITE_RETRY)
        assert skipped > 0 and stats.seeded_tiers_skipped == skipped
        answers, checks = stats.seeded_answers, stats.z3_checks
        for _ in range(queries):      # a hash comparison the stored key satisfies, at another site
            with seeding.site(("resolve", 0x402000)):
                s = SeededSolver()
                s.add(k != 0)
                assert s.eval(k, 1, extra_constraints=[mix(k) == concrete_mix(stored)]) == (stored,)
        assert stats.seeded_tiers_skipped == skipped
        assert stats.seeded_answers == answers + queries and stats.z3_checks == checks


def test_let_only_parts_are_decided_over_the_values_a_table_selects():
    x = claripy.BVS("stdin_0", 32)
    ptrs = [0x1000 + 0x40 * i for i in range(24)]
    let = claripy.BVS("ram_let_t", 64)
    definition = let == select(mix(x) & 31, list(range(24)), lambda i: claripy.BVV(ptrs[i], 64), claripy.BVV(0, 64))
    inside = claripy.And(claripy.UGE(let + 0x34, 0x1000 + 0x40 * 5), claripy.ULE(let + 0x34, 0x1000 + 0x40 * 5 + 0x3C))
    scope, stats = run_scope()
    with scope.active():
        s = SeededSolver()
        s.add([definition, let != 0, inside])
        # the field at +0x30 of the element at +0x34's object: in the same object for every table value
        assert not s.satisfiable(extra_constraints=[claripy.Not(claripy.And(
            claripy.UGE(let + 0x30, 0x1000 + 0x40 * 5), claripy.ULE(let + 0x30, 0x1000 + 0x40 * 5 + 0x3C)))])
        assert stats.relaxed_unsat == 1 and stats.z3_checks == 0
        # not decided by the table's values alone (0x1140 + 0x34 is in range): seeds or z3, still exact
        want = any((concrete_mix(v) & 31) == 5 for v in range(1 << 12))
        assert s.satisfiable(extra_constraints=[claripy.ULT(x, 1 << 12)]) == want


def test_outcomes_are_unchanged_and_z3_is_asked_less_on_a_string_library():
    """Differential: strspn/strtok from the C standard with and without seeding, against native."""
    b = os.fspath(BUILD / "strspn_generic_O0")
    with_seeds = explore(b, 2)
    without = explore(b, 2, seeded_models=False)
    assert with_seeds.outcomes == without.outcomes == frozenset(outcome_set(b, 2))
    assert with_seeds.errors == without.errors == []
    assert with_seeds.stats["seeded_answers"] > 0 and without.stats["seeded_answers"] == 0
    assert with_seeds.stats["z3_checks"] * 2 < without.stats["z3_checks"]


def test_comparisons_of_booleans_are_evaluated():
    """An equality between two conditions (as merged states produce) is seeded like any other."""
    x = claripy.BVS("stdin_0", 8)
    scope, stats = run_scope()
    with scope.active():
        s = SeededSolver()
        s.add((x == 3) == claripy.ULT(x, 5))       # x is 3, or at least 5: zero does not satisfy it
        s.add(x != 0)
        assert s.satisfiable(extra_constraints=[claripy.ULT(x, 4)])
        assert s.eval(x, 1, extra_constraints=[claripy.ULT(x, 4)]) == (3,)
        assert not s.satisfiable(extra_constraints=[claripy.ULT(x, 3)])


def digit_sum(digits):
    """The sum of four digit bytes, the constraints that make them digits, and its 37 values."""
    total = digits[0].zero_extend(8) + digits[1].zero_extend(8) + digits[2].zero_extend(8) + digits[3].zero_extend(8)
    cons = [claripy.And(claripy.UGE(d, ord("0")), claripy.ULE(d, ord("9"))) for d in digits]
    return total, cons, {4 * ord("0") + s for s in range(37)}


def solver_of(cons):
    s = SeededSolver()
    for c in cons:
        s.add(c)
    return s


def test_the_values_of_an_expression_are_enumerated_with_the_neighbours_of_each_model():
    """A sum of four digits takes 37 values under the constraints; one z3 model, the values one
    input byte away from it (each row checked on every constraint), the next model with those
    excluded, until z3 finds no more: every value, exactly, with far fewer z3 checks than values."""
    total, cons, want = digit_sum([claripy.BVS(f"stdin_{i}", 8) for i in range(4)])
    scope, stats = run_scope()
    with scope.active():
        s = solver_of(cons)
        assert set(s.eval(total, 100)) == want
    assert stats.z3_checks < len(want) // 2
    plain = claripy.Solver()                      # outside a run: claripy's own enumeration
    for c in cons:
        plain.add(c)
    assert set(plain.eval(total, 100)) == want
    with scope.active():                          # no value at all: unsatisfiable, as in claripy
        s = SeededSolver()
        for c in cons:
            s.add(c)
        try:
            s.eval(total, 100, extra_constraints=[total == 0])
        except claripy.errors.UnsatError:
            pass
        else:
            raise AssertionError("an unsatisfiable enumeration returned")


@pytest.mark.parametrize("bits", [32, 96, 1024])
def test_the_bytes_of_one_wide_input_variable_are_searched_like_separate_byte_variables(bits):
    """A user's script gives stdin as one ``claripy.BVS`` (here 4, 12 and 128 bytes, the last two
    wider than 64 bits): the digit sum's 37 values are still found around each model byte by byte,
    with as few z3 checks as with one variable per byte (seeding: see the stored-key test)."""
    stdin = claripy.BVS("stdin", bits, explicit_name=True)
    total, cons, want = digit_sum([stdin.get_byte(k) for k in range(4)])
    scope, stats = run_scope()
    with scope.active():
        s = solver_of(cons)
        assert set(s.eval(total, 100)) == want
        assert stats.z3_checks < len(want) // 2
        (m,) = s.eval(stdin, 1, extra_constraints=[total == 4 * ord("0") + 36])
        assert all((m >> (bits - 8 * (k + 1))) & 0xFF == ord("9") for k in range(4))


def test_a_sibling_model_answers_a_satisfiability_check_from_the_query_s_own_constraints():
    """claripy's model cache holds only models of the solver's constraints, and its
    ``check_satisfiability`` does not consult them: seeding answers from a sibling model by
    evaluating the query's own constraints alone. The state's constraint here cannot be evaluated
    by seeding (a rotation), so an answer proves it was not evaluated; a query that no sibling
    satisfies goes on to z3 and is still exact."""
    x, y = claripy.BVS("stdin_0", 8), claripy.BVS("stdin_1", 8)
    scope, stats = run_scope()
    with scope.active():
        s = composite()
        s.add(claripy.RotateLeft(x + y, 3) == 0x28)      # x + y == 5
        (vx, vy), = s.batch_eval([x, y], 1)              # z3: one model, kept by claripy
        assert (vx + vy) & 0xFF == 5
        checks = stats.z3_checks
        assert s.check_satisfiability(extra_constraints=[x == vx]) == "SAT"
        assert stats.seeded_siblings == 1 and stats.z3_checks == checks
        assert s.check_satisfiability(extra_constraints=[x == (vx + 1) & 0xFF, y == vy]) == "UNSAT"
        assert stats.seeded_siblings == 1 and stats.z3_checks > checks
        checks = stats.z3_checks                         # a composite's satisfiable() checks too
        assert s.satisfiable(extra_constraints=[y == vy])
        assert stats.seeded_siblings == 2 and stats.z3_checks == checks


def test_seeding_steps_aside_where_it_costs_more_than_the_z3_time_it_saves():
    """After a few tries, seeding is skipped while a try costs more (and at least
    ``COST_FLOOR``) than its answer rate times an average z3 check, retried every ``RETRY``-th
    query; cheap tries are always made."""
    from angr_ram.core.stats import RunStats
    from angr_ram.solver.seeding_cost import COST_TRIAL, RETRY, worth_trying

    st = RunStats(seeded_answers=2, seeded_misses=COST_TRIAL, seeded_seconds=0.04 * (COST_TRIAL + 2),
                  z3_checks=50, z3_seconds=50 * 0.01)
    tried = 0
    for _ in range(3 * RETRY):
        if worth_trying(st):        # a try that misses, as costly as the others
            tried += 1
            st.seeded_misses += 1
            st.seeded_seconds += 0.04
        else:
            st.seeded_skipped_cost += 1
    assert tried == 3 and st.seeded_skipped_cost == 3 * RETRY - 3      # the retries only
    assert worth_trying(RunStats(seeded_answers=2, seeded_misses=COST_TRIAL, seeded_seconds=0.04 * (COST_TRIAL + 2),
                                 z3_checks=10, z3_seconds=10 * 2.0))       # z3 slow: seeding pays
    assert worth_trying(RunStats(seeded_misses=4 * COST_TRIAL, seeded_seconds=0.0001, z3_checks=5, z3_seconds=0.01))


def test_a_composite_childs_check_after_a_branch_is_answered_by_a_cached_model_that_satisfies_it():
    """A composite solver asks its children's ``check_satisfiability`` after each constraint; a
    cached model that satisfies the new constraint answers it (claripy drops the models a new
    constraint falsifies), over 100 variables (beyond seeding's); a side no model satisfies goes
    to z3, and an unsatisfiable one is still found."""
    xs = [claripy.BVS(f"stdin_{i}", 8) for i in range(100)]
    scope, stats = run_scope()
    with scope.active():
        s = composite(None)
        s.add(claripy.Or(*(x != 10 for x in xs)))
        assert s.satisfiable()
        checks = stats.z3_checks
        b = s.branch()
        b.add([xs[0] != 0x57])                     # the model's stdin_0 (0x00) satisfies it
        assert b.satisfiable() and stats.z3_checks == checks
        b = s.branch()
        b.add([xs[0] == 0x57])                     # none does: z3
        assert b.satisfiable() and stats.z3_checks == checks + 1
        b.add([xs[0] == 0x58])
        assert not b.satisfiable()


def test_fact_probes_step_aside_where_they_cost_and_learn_nothing():
    """After a few probes costing at least ``COST_FLOOR`` each, a run that learnt (almost) no fact
    from them stops probing, but for every ``RETRY``-th; one where they learn goes on."""
    from angr_ram.solver.seeding_cost import PROBE_TRIAL, RETRY, worth_probing

    st = RunStats(fact_probes=PROBE_TRIAL, fact_probe_seconds=0.05 * PROBE_TRIAL)
    probed = 0
    for _ in range(2 * RETRY):
        if worth_probing(st):
            probed += 1
            st.fact_probes += 1
            st.fact_probe_seconds += 0.05
        else:
            st.fact_probes_skipped += 1
    assert probed == 2 and st.fact_probes_skipped == 2 * RETRY - 2
    assert worth_probing(RunStats(fact_probes=10, fact_probe_hits=8, fact_probe_seconds=1.0))
    assert worth_probing(RunStats(fact_probes=10, fact_probe_seconds=0.001))     # cheap: always
