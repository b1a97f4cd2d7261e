"""Units of pattern-based merging: words and regular partitions, template synthesis, and the
quantified solving procedure against z3's ForAll."""

import time

import claripy

from angr_ram.merging import quantified as Q
from angr_ram.merging import value_enumeration as QE
from angr_ram.merging.clauses import SolveSettings
from angr_ram.merging.patterns import ShapeHasher, decompose, regular_partition, regular_partitions
from angr_ram.merging.synthesis import family_of, linear_fit, synthesize


def memspn_tails(m):
    """The tree path conditions of memspn over "a" (paper, Fig. 2), with stdin-like variables."""
    n = claripy.BVS("stdin_0", 8).zero_extend(56)
    s = [claripy.BVS(f"stdin_{i + 1}", 8) for i in range(m)]
    tails = []
    for k in range(m + 1):
        prefix = []
        for i in range(k):
            prefix += [claripy.UGT(n, i), s[i] == 97]
        tails.append((prefix + [claripy.ULE(n, k)], k, "R"))
        if k < m:
            tails.append((prefix + [claripy.UGT(n, k), s[k] != 97], k, "Y"))
    return n, s, tails


def test_words_partition_into_the_two_patterns_of_table_1():
    _, _, tails = memspn_tails(3)
    sh = ShapeHasher()
    w1, w2, groups = regular_partition([sh.word(t) for t, _, _ in tails])
    assert len(w1) == 0 and len(w2) == 2 and len(groups) == 2
    for g in groups.values():
        assert len({tails[i][2] for i, _ in g}) == 1                 # one leaf kind per group
        assert all(k == tails[i][1] for i, k in g)
    assert decompose((1, 2, 1, 2, 3), (), (1, 2)) == (2, (3,))


def test_synthesis_finds_linear_holes_and_rejects_others():
    n, s, _ = memspn_tails(4)
    blocks = [claripy.And(claripy.UGT(n, i - 1), s[i - 1] == 97) for i in (1, 2, 3)]
    tpl = synthesize(blocks, [1, 2, 3])
    assert tpl is not None and {(h.kind, h.a) for h in tpl.holes} == {("const", 1), ("var", 1)}
    assert tpl.instantiate(2, {(f[0], f[1], 8): v for v in s if (f := family_of(v.args[0]))}).hash() == blocks[1].hash()
    assert synthesize([s[0] == 1, s[1] == 4, s[2] == 5], [1, 2, 3]) is None      # 1, 4, 5 not linear
    assert linear_fit([0, 1, 2], [7, 5, 3], 8) == (-2, 7)


def clause_for(m):
    n, s, tails = memspn_tails(m)
    sh = ShapeHasher()
    w1, w2, groups = regular_partition([sh.word(t) for t, _, _ in tails])
    group = next(g for g in groups.values() if tails[g[0][0]][2] == "Y")
    kmax = max(k for _, k in group)
    phi2 = synthesize([claripy.And(claripy.UGT(n, i - 1), s[i - 1] == 97) for i in range(1, kmax + 1)],
                      list(range(1, kmax + 1)))
    phi3 = synthesize([claripy.And(*tails[i][0][2 * k:]) for i, k in group], [k for _, k in group])
    members = {(f[0], f[1], 8): v for v in [*s, claripy.BVS("unused", 8)] if (f := family_of(v.args[0]))}
    k = claripy.BVS("qm_k", 64)
    table = Q.ClauseTable(validate=True)
    return n, s, k, table.register(k=k, ks=tuple(kk for _, kk in group), phi1=claripy.true(),
                                   phi2=phi2, phi3=phi3, members=members), table


def test_solving_procedure_agrees_with_z3_forall_and_models_satisfy_every_instance():
    n, s, k, cl, table = clause_for(5)
    queries = [[], [k == 3], [k == 3, s[1] != 97], [s[0] == 97, s[1] == 97, s[2] == 97, s[3] == 97],
               [claripy.UGT(k, 2), s[1] != 97], [n == 0], [n == 2, k == 2], [k == 9]]
    answers = []
    for extra in queries:
        m = Q.solve(table, [cl.placeholder], extra)      # validating: every answer compared with z3's ForAll
        answers.append(m is not None)
        if m is not None:
            assert cl.holds(m) == []                      # every instance i <= k holds
            kv = m[k.args[0]]
            assert all(m[s[i].args[0]] == 97 for i in range(kv)) and m[s[kv].args[0]] != 97
    assert table.stats.queries == len(queries)
    assert answers == [True, True, False, True, False, False, False, False]


def test_a_placeholder_inside_a_formula_is_refused_not_dropped():
    """The solving procedure expands top-level placeholders only; one under a disjunction (a pattern
    merge inside a fragment whose leaves are then merged with if-then-else) would be dropped with
    its whole constraint, so it is an error."""
    import pytest

    from angr_ram.core.errors import AngrRamError

    n, s, k, cl, table = clause_for(4)
    with pytest.raises(AngrRamError, match="inside a formula"):
        Q.solve(table, [claripy.Or(cl.placeholder, s[0] == 1)])


def test_regular_partitions_rank_every_candidate():
    """Words made of one repeated shape tie for several units; all are returned, best first, so the
    caller can take the first with a formula pattern."""
    words = [("B",) * (3 * k) + ("A",) for k in range(4)] + [("B",) * 12]
    ranked = regular_partitions(words)
    units = [w2 for _, w2, _ in ranked]
    assert units[0] == ("B",) and ("B", "B", "B") in units
    assert regular_partition(words)[1] == units[0]


def test_repeated_and_sibling_queries_reuse_the_scoped_solver_and_the_memo():
    """A query asked again is answered from the table's memo; siblings (same constraints but the
    last) keep the z3 form of their shared prefix (the clause is not converted again), and no
    query leaves anything asserted in the table's z3 solver."""
    n, s, k, cl, table = clause_for(5)
    table.validate = False
    base = [cl.placeholder, claripy.UGT(k, 1)]
    assert Q.solve(table, base, [s[1] == 97]) is not None
    scoped = table.scoped
    assert scoped.levels == [c.hash() for c in base]
    clause_z3 = scoped.converted[0]
    checks = table.stats.queries
    assert Q.solve(table, base, [s[1] == 97]) is not None
    assert table.stats.memo == 1 and table.stats.queries == checks          # not asked again
    left, right = [*base, s[2] == 97], [*base, s[2] != 97]
    assert Q.solve(table, left) is not None and Q.solve(table, right) is not None
    assert scoped.levels == [c.hash() for c in right] and table.scoped is scoped
    assert scoped.converted[0] is clause_z3 and len(scoped.solver.assertions()) == 0


def test_constraints_seated_again_past_the_common_prefix_are_not_converted_again(monkeypatch):
    """Sibling states asked in turn seat each other's last constraints again and again: their z3
    form and variables are kept by hash, so nothing is converted or walked twice."""
    n, s, k, cl, table = clause_for(5)
    table.validate = False
    base = [cl.placeholder, claripy.UGT(k, 1)]
    left, right = [*base, s[2] == 97, s[3] == 97], [*base, s[2] != 97]
    assert Q.solve(table, left) is not None and Q.solve(table, right) is not None
    converted, walked = [], []
    orig_convert, orig_vars = Q.bz3.convert, Q._variables
    monkeypatch.setattr(Q.bz3, "convert", lambda e: converted.append(e) or orig_convert(e))
    monkeypatch.setattr(Q, "_variables", lambda exprs, clauses: walked.append(exprs) or orig_vars(exprs, clauses))
    for query in (left, right, left):
        table.answers.clear()
        assert Q.solve(table, query, [claripy.ULE(k, 5)]) is not None
        assert table.scoped.levels == [c.hash() for c in query]
    assert not {c.hash() for c in converted} & {c.hash() for c in (*left, *right)}   # only the queries' own
    assert not any(exprs for exprs in walked)      # k's variables are the constraint set's: no walk


def test_every_check_sees_the_constraint_set_and_the_query_in_one_z3_scope(monkeypatch):
    """z3 preprocesses only within a scope, so each check of the solving procedure (branch
    checks, enumerations by blocking and by intervals, extrema) has the seated constraints and the
    query's own formulas in one scope, above nothing asserted, and nothing stays asserted after."""
    import z3

    scopes: list[int] = []
    orig_check = z3.Solver.check

    def check(self, *a):
        scopes.append(self.num_scopes())
        return orig_check(self, *a)

    monkeypatch.setattr(z3.Solver, "check", check)
    n, s, k, cl, table = clause_for(5)
    table.validate = False
    table.settings = SolveSettings(reuse_models=False, slow_blocking_check=0.0)   # the enumeration goes on by intervals
    cons = [cl.placeholder, claripy.UGT(k, 1)]
    assert Q.solve(table, cons, [s[1] == 97]) is not None
    assert len(QE.solve_many(table, [*cons, s[2] != 97], [], [k], 64)) >= 1
    assert Q.extremum(table, cons, [], k, True) == max(kk for kk in cl.ks if kk > 1)
    assert len(scopes) >= 5 and set(scopes) == {1}
    assert table.scoped.solver.num_scopes() == 0 and len(table.scoped.solver.assertions()) == 0


def test_extremum_gallops_from_the_first_model_instead_of_bisecting_from_zero():
    """An address-like key (a stack address plus the merged count k) has its minimum and maximum
    found in about 2 log2(range) checks, not one per bit of the distance from 0."""

    from angr_ram.solver.patches import counting

    n, s, k, cl, table = clause_for(5)
    table.validate = False
    addr = claripy.BVV(0x7FFFFFFEFF00, 64) + k * 8
    with counting() as zc:
        lo = Q.extremum(table, [cl.placeholder], [], addr, want_max=False)
        hi = Q.extremum(table, [cl.placeholder], [], addr, want_max=True)
    assert (lo, hi) == (0x7FFFFFFEFF00, 0x7FFFFFFEFF00 + 8 * max(cl.ks))
    assert zc.count <= 2 * (2 * 7 + 4)


def test_value_enumeration_is_exact_and_blocks_inside_one_scope():
    """``solve_many`` finds every value of an expression under the clause (here k's), each from a
    checked model, the same set as blocking one query at a time with validation."""
    n, s, k, cl, table = clause_for(5)
    want = {(kk,) for kk in cl.ks}
    table.validate = False
    got = QE.solve_many(table, [cl.placeholder], [], [k], 64)
    assert set(got) == want and len(got) == len(want)
    table.validate = True
    assert set(QE.solve_many(table, [cl.placeholder], [], [k], 64)) == want


def test_value_enumeration_evaluates_shared_subexpressions_once(monkeypatch):
    """The values of a DAG-shaped expression (``e = e + e`` 50 times) are read from each model by
    angr-ram's evaluator (each shared node once), outside a run scope too, as path outcomes are
    after a run; claripy's ``replace_dict`` rebuilds the expression per model (37 s of a merged rle
    state's 94 outcomes at M = 10)."""
    def no_replace(*args, **kwargs):
        raise AssertionError("claripy.replace_dict used to read a model")

    monkeypatch.setattr(claripy, "replace_dict", no_replace)
    n, s, k, cl, table = clause_for(5)
    e = k
    for _ in range(50):
        e = e + e
    table.validate = False
    got = QE.solve_many(table, [cl.placeholder], [], [k, e], 64)
    assert {row[0] for row in got} == set(cl.ks)
    assert all(row[1] == (row[0] << 50) % (1 << 64) for row in got)


def test_a_long_enumeration_splits_the_range_instead_of_carrying_every_value_found(monkeypatch):
    """Once a blocking check of one expression took longer than ``SolveSettings.slow_blocking_check``, each
    check carries two bounds, not one blocking constraint per value found (z3's time per check
    grew with them: 0.1 s for rle's first exit code at M = 10, up to 300 s for its last); the
    values are the same set, and a limit ``n`` is kept."""
    import z3

    n, s, k, cl, table = clause_for(5)
    table.validate = False
    e = k * 3 + 1
    want = {(kk * 3 + 1,) for kk in cl.ks}
    sizes = []
    orig = z3.Solver.check

    def check(solver, *a):
        sizes.append(len(solver.assertions()))
        return orig(solver, *a)

    monkeypatch.setattr(z3.Solver, "check", check)
    table.settings = SolveSettings(reuse_models=False, slow_blocking_check=0.0)   # every enumeration starts with z3
    got = QE.solve_many(table, [cl.placeholder], [], [e], 64)
    assert set(got) == want and len(got) == len(want)
    assert max(sizes) - min(sizes) <= 2      # two bounds at most, never the values found so far
    assert len(QE.solve_many(table, [cl.placeholder], [], [e], 3)) == 3
    table.settings = SolveSettings(reuse_models=False, slow_blocking_check=1e9)
    sizes.clear()
    assert set(QE.solve_many(table, [cl.placeholder], [], [e], 64)) == want
    assert max(sizes) - min(sizes) == len(want)            # blocking: one more constraint per value


def test_a_union_check_gets_the_time_its_single_checks_are_measured_to_take(monkeypatch):
    """A check of m intervals at once stands for m single checks, so its time limit is m times
    the mean time of the enumeration's checks so far, not a constant: here every check takes at
    least 0.2 s (as on a loaded machine), and every union check may take m x 0.2 s (the old limit,
    0.125 s per interval, would stop it). The values stay the same set."""
    import z3

    n, s, k, cl, table = clause_for(5)
    table.validate = False
    e = k * 3 + 1
    limits: dict = {}
    unions: list[tuple[int, int]] = []
    orig_check, orig_set = z3.Solver.check, z3.Solver.set

    def set_(solver, *a, **kw):
        if a and a[0] == "timeout":
            limits[id(solver)] = a[1]
        return orig_set(solver, *a, **kw)

    def check(solver, *a):
        last = solver.assertions()[-1]
        if z3.is_or(last) and all(z3.is_and(c) for c in last.children()):    # a union of intervals
            unions.append((last.num_args(), limits.get(id(solver))))
        time.sleep(0.2)
        return orig_check(solver, *a)

    monkeypatch.setattr(z3.Solver, "set", set_)
    monkeypatch.setattr(z3.Solver, "check", check)
    table.settings = SolveSettings(reuse_models=False, slow_blocking_check=0.0)   # straight to the intervals
    got = QE.solve_many(table, [cl.placeholder], [], [e], 64)
    assert set(got) == {(kk * 3 + 1,) for kk in cl.ks}
    assert unions and all(limit >= 200 * m for m, limit in unions)


def test_repair_instances_stay_for_later_queries_of_the_constraint_set(monkeypatch):
    """A repair round adds the clause instances a stripped model violated; they follow from the
    clause, so they are kept with it and the next queries of a set holding it (here the
    enumeration of k's values) assert them from the start instead of failing a round each to find
    them again (rle at M = 10: 154 checks for its 94 exit codes before, 115 after)."""
    monkeypatch.setattr(Q, "_duplicate", lambda *a: None)      # no shortcut: every bad model repairs
    n, s, k, cl, table = clause_for(5)
    table.validate = False
    assert Q.solve(table, [cl.placeholder], [claripy.UGE(k, 4)]) is not None
    assert table.stats.repair == 1
    learned = table.scoped.facts[cl.placeholder.args[0]]
    assert len(learned) >= 1 and len(table.scoped.solver.assertions()) == 0   # kept, not left asserted
    assert all(f in table.scoped.parts() for f in learned)
    got = QE.solve_many(table, [cl.placeholder], [], [k], 64)
    assert set(got) == {(kk,) for kk in cl.ks}
    assert table.stats.repair == 1                                # no round failed again


def test_values_next_to_a_model_are_found_without_a_check_each(monkeypatch):
    """The length byte of memspn's "Y" clause takes every value above k: the neighbours of the
    first model (every value of that byte, every k) show them all at once, and z3 is asked only
    whether any value is left; without neighbours each value costs a check. Same set either way."""
    n, s, k, cl, table = clause_for(5)
    table.validate = False
    e = n[7:0]
    got = QE.solve_many(table, [cl.placeholder], [], [e], 300)
    with_neighbours = table.stats.queries
    assert set(got) == {(v,) for v in range(1, 256)} and len(got) == 255
    assert table.stats.neighbours >= 250 and with_neighbours <= 6
    table.settings = SolveSettings(neighbours=False)
    assert set(QE.solve_many(table, [cl.placeholder], [], [e], 300)) == set(got)
    assert table.stats.queries - with_neighbours >= 255


def test_a_neighbour_that_breaks_a_quantified_instance_is_not_a_value():
    """With k = 3 the clause forces s[1] = 'a' (instance 2): changing s[1] alone keeps every
    quantifier-free constraint true, so only the check of the instances keeps its 255 other values
    out. Each model returned satisfies the whole clause."""
    from claripy.frontend.mixin.model_cache_mixin import ModelCache

    from angr_ram.solver.model_eval import fast_eval_ast
    from angr_ram.solver.neighbours import neighbour_values

    n, s, k, cl, table = clause_for(5)
    table.validate = False
    assert QE.solve_many(table, [cl.placeholder], [k == 3], [s[1]], 300) == [(97,)]
    m = Q.solve(table, [cl.placeholder], [k == 2])
    variables = Q._variables([k == 2, n[7:0]], [cl])
    near = neighbour_values(m, n[7:0], [k == 2], [cl], variables, {fast_eval_ast(ModelCache(m), n[7:0], True)})
    assert set(near) | {fast_eval_ast(ModelCache(m), n[7:0], True)} == set(range(3, 256))       # n > k = 2
    for v, model in near.items():
        assert cl.holds(model) == [] and model[k.args[0]] == 2
        assert fast_eval_ast(ModelCache(model), n[7:0], True) == v


def test_the_models_a_neighbour_search_waits_on_are_searched_around_in_one_evaluation(monkeypatch):
    """Values two changes away are found level by level: every model of a level is searched
    around at once (the evaluator's cost is per node, not per row), so a 4 x 4 grid of values
    takes one evaluation per level, not one per model, and finds the same values."""
    from angr_ram.solver import enumeration, neighbours

    a, b = claripy.BVS("a", 8, explicit_name=True), claripy.BVS("b", 8, explicit_name=True)
    e = a.zero_extend(8) * 4 + b.zero_extend(8)
    qf = [claripy.ULT(a, 4), claripy.ULT(b, 4)]
    made = []
    orig = enumeration.Evaluator.over

    def over(*args, **kw):
        made.append(args[1])
        return orig(*args, **kw)

    monkeypatch.setattr(enumeration.Evaluator, "over", staticmethod(over))
    near = neighbours.neighbour_values({"a": 0, "b": 0}, e, qf, [], {"a": a, "b": b}, {0})
    assert set(near) == set(range(1, 16))
    assert all(m["a"] * 4 + m["b"] == v and m["a"] < 4 and m["b"] < 4 for v, m in near.items())
    assert len(made) <= 2 * 3           # levels 1, 2, 3 (and the rows with new values of each)


def test_a_union_of_intervals_that_z3_cannot_answer_in_time_is_asked_in_halves(monkeypatch):
    """After the neighbours (here: all but the multiples of 16), the check that blocks every value
    found and then every union of the intervals left are time-limited; each time z3 gives up (here:
    always), the range is split at the values found and half as many intervals are asked at once,
    down to one by one. The values are the same, and z3's real ForAll query is never needed."""
    n, s, k, cl, table = clause_for(5)
    table.validate = False
    e = n[7:0] * 3
    want = set(QE.solve_many(table, [cl.placeholder], [], [e], 300))
    rounds, unions, blocked = Q._rounds, [], []

    def give_up(solver, stats, clauses, qf, *a, **kw):
        if qf and qf[-1].op == "Or":
            unions.append(qf[-1])
            return Q._UNDECIDED
        if len(qf) >= 2 and qf[-1].op == qf[-2].op == "__ne__":       # two values blocked or more
            blocked.append(qf)
            return Q._UNDECIDED
        return rounds(solver, stats, clauses, qf, *a, **kw)

    def no_fallback(*a, **kw):
        raise AssertionError("a time-limited check went to the ForAll query")

    near = QE.neighbour_values
    for module in (Q, QE):          # the solving procedure and the enumeration over it
        monkeypatch.setattr(module, "_rounds", give_up)
        monkeypatch.setattr(module, "_fallback", no_fallback)
    monkeypatch.setattr(QE, "neighbour_values", lambda *a: {v: m for v, m in near(*a).items() if v % 16})
    got = QE.solve_many(table, [cl.placeholder], [], [e], 300)
    assert set(got) == want and len(got) == len(want) and len(blocked) == 1
    widths = [len(u.args) for u in unions]             # halved after each time z3 gave up, down to one
    assert len(widths) >= 3 and all(b <= a // 2 + 1 for a, b in zip(widths, widths[1:], strict=False))


def _z3_checks(monkeypatch) -> list:
    """A list that grows by one at every z3 check from now on."""
    import z3
    calls, orig = [], z3.Solver.check

    def check(solver, *a):
        calls.append(1)
        return orig(solver, *a)

    monkeypatch.setattr(z3.Solver, "check", check)
    return calls


def test_a_query_that_extends_an_answered_one_is_answered_by_its_model_without_z3(monkeypatch):
    """A successor's query is its parent's plus a branch condition. The parent's model answers it
    when it satisfies the condition; when it does not, the model with the one byte the condition
    reads changed does. Neither asks z3, and both models satisfy every instance of the clause."""
    from angr_ram.merging.model_reuse import ModelStore

    n, s, k, cl, table = clause_for(5)
    table.validate = False
    monkeypatch.setattr(ModelStore, "worth_changing", lambda self: True)
    m = Q.solve(table, [cl.placeholder], [k == 2])
    v3 = m[s[3].args[0]]
    calls = _z3_checks(monkeypatch)
    same = Q.solve(table, [cl.placeholder], [k == 2, s[3] == v3])
    assert calls == [] and table.stats.models_reused == 1 and same[s[3].args[0]] == v3
    other = Q.solve(table, [cl.placeholder], [k == 2, s[3] != v3, s[3] != 0])
    assert calls == [] and table.stats.models_changed == 1
    assert other[s[3].args[0]] not in (v3, 0) and other[k.args[0]] == 2 and cl.holds(other) == []
    assert all(other[s[i].args[0]] == 97 for i in range(2)) and other[s[2].args[0]] != 97


def test_a_changed_model_that_breaks_an_instance_is_refused_and_unsat_answers_are_reused(monkeypatch):
    """With k = 3 the clause forces s[1] = 'a': the stored model with s[1] changed satisfies
    ``s[1] != 'a'`` and every quantifier-free formula, but not instance 2, so z3 decides (unsat,
    validated against the ForAll query). A later query containing that one is unsatisfiable
    without a check. A stored model is never used for a clause it was not checked against."""
    from angr_ram.merging.model_reuse import ModelStore

    n, s, k, cl, table = clause_for(5)
    monkeypatch.setattr(ModelStore, "worth_changing", lambda self: True)
    assert Q.solve(table, [cl.placeholder], [k == 3]) is not None
    assert Q.solve(table, [cl.placeholder], [k == 3, s[1] != 97]) is None
    assert table.stats.models_changed == 0 and table.stats.unsat == 1
    table.validate = False
    calls = _z3_checks(monkeypatch)
    assert Q.solve(table, [cl.placeholder], [k == 3, s[1] != 97, s[4] == 1]) is None
    assert calls == [] and table.stats.unsat_reused == 1
    again = table.register(k=k, ks=cl.ks, phi1=cl.phi1, phi2=cl.phi2, phi3=cl.phi3, members=cl.members)
    reused = table.stats.models_reused
    assert Q.solve(table, [again.placeholder], [k == 3]) is not None
    assert calls and table.stats.models_reused == reused


def test_no_model_is_changed_while_z3_checks_cost_less_than_the_search(monkeypatch):
    """On small formulas z3 answers in about a millisecond: a search for a changed model that
    costs more than a check times its success rate is not tried."""
    from angr_ram.merging import model_reuse

    n, s, k, cl, table = clause_for(5)
    table.validate = False
    m = Q.solve(table, [cl.placeholder], [k == 2])
    store = table.models
    store.check_cost, store.change_cost, store.change_rate = 0.001, 0.004, 1.0
    monkeypatch.setattr(model_reuse, "neighbour_model", lambda *a: (_ for _ in ()).throw(AssertionError("searched")))
    calls = _z3_checks(monkeypatch)
    got = Q.solve(table, [cl.placeholder], [k == 2, s[3] != m[s[3].args[0]]])
    assert got is not None and calls and table.stats.models_changed == 0
    assert not store.worth_changing()
    store.check_cost = 0.05                        # z3 got slow: now the search is worth it
    assert store.worth_changing()
