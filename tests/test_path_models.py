"""Digests of a symbolic input: zero-padded hex and decimal printed with one text length per path
(no fork per length, no query about the digest), and a model of every finished path taken when it
finishes, so its outcome and its test survive z3 giving up or the run's time running out."""

import os

import claripy
import pytest

from angr_ram.run.path_models import MODEL_KEY, model_value, take_model
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore, load_project, make_state
from angr_ram.solver.model_eval import eval_under

from .conftest import BUILD, assert_tests_replay


@pytest.mark.parametrize("opt", ["O2", pytest.param("O0", marks=pytest.mark.slow)])
def test_padded_digest_one_path_per_branch(opt):
    """hexdigest prints a 32-bit mix of 4 bytes with ``%02x`` per byte and ``%08x`` (b[0] == 'x')
    or ``%.10u``: every value fits the padding, so there are exactly two paths (not one per text
    length), none undecided; z3 cannot list the digest's values in time, so each path lists the
    outcome of its model, and every test replays natively."""
    b = os.fspath(BUILD / f"hexdigest_{opt}")
    r = explore(b, 4, tests=True, timeout=120)
    assert r.stopped is None and r.unknown == 0
    assert r.endings == {"exit 0": 1, "exit 1": 1}
    assert {c for c, _ in r.outcomes} == {0, 1}
    for code, out in r.outcomes:
        text = out.decode()
        if code == 0:
            assert len(text) == 18 and text[8] == " " and text[:8] == "".join(
                text[9:17][k:k + 2] for k in (6, 4, 2, 0))
        else:
            assert len(text) == 11 and text[:10].isdigit()
    assert_tests_replay(b, r)


def test_model_value_evaluates_without_a_solver():
    x, y = claripy.BVS("x", 32, explicit_name=True), claripy.BVS("y", 8, explicit_name=True)
    e = (x * 16777619) ^ y.zero_extend(24)
    assert eval_under(e, {"x": 3, "y": 5}) == ((3 * 16777619) & 0xFFFFFFFF) ^ 5
    assert eval_under(claripy.ULT(y, 4), {"y": 5}) is False


def test_take_model_satisfies_the_path():
    """The recorded model gives every input byte and outcome variable a value that satisfies the
    path's constraints (checked by evaluating them under it)."""
    proj = load_project(os.fspath(BUILD / "hexdigest_O0"))
    s = make_state(proj, 4)
    data = s.posix.stdin.load(0, 4)
    s.add_constraints(data[31:24] == ord("x"), claripy.ULT(data[7:0], 9))
    m = take_model(s)
    assert all(eval_under(c, m) is True for c in s.solver.constraints)
    s.globals[MODEL_KEY] = m
    assert model_value(s, data) >> 24 == ord("x")
    s.add_constraints(data[7:0] == 200)
    assert take_model(s) is None      # no model: the path is infeasible


def test_test_survives_an_outcome_z3_cannot_list(monkeypatch):
    """With the outcome listing failing as a z3 give-up would, a finished path still lists the
    outcome of its model and writes a test that replays."""
    import angr_ram.run.runner as runner
    from angr_ram.run.input_budget import NoAnswer

    real = runner.listed_outcomes

    def gives_up(state, **kw):
        o = runner.Outcome(state)
        if o.expr is not None and o.expr.symbolic:
            raise NoAnswer("z3 gave up: timeout")
        return real(state, **kw)

    monkeypatch.setattr(runner, "listed_outcomes", gives_up)
    b = os.fspath(BUILD / "hexdigest_O2")
    r = explore(b, 4, tests=True, timeout=120)
    assert r.unknown == 0 and r.outcomes_from_model == 2 and r.outcomes_partial == 2
    assert len(r.outcomes) == 2
    runs = replay(r.tests, b)
    assert sum(x.status == "ok" for x in runs) >= 2
