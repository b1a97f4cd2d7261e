"""Test cases: one concrete input per path (and per outcome of a merged path), with its prediction.

``collect_tests(simgr)`` reads, for every finished path, every error path, every path angr could
not step (``errored``) and every path that reached a ``find`` target, the stdin, argv and file
bytes that drive the program down that path, chosen readable (zero or printable bytes wherever the
path allows), and what the program should do with them: its exit code and stdout, or the memory
error it should hit. A path that can end with several outcomes (a merged state, a symbolic exit
code) gives one test per outcome. ``emit_tests`` writes them as raw input files plus a JSON
manifest (``tests.jsonl``, :mod:`angr_ram.run.test_files`), the input of :mod:`angr_ram.run.replay` and of fuzzers' seed corpora.
"""

from __future__ import annotations

import math

import claripy

from angr_ram.core.errors import AngrRamError
from angr_ram.memory.uninitialized import UNWRITTEN_PREFIXES, zero_filled
from angr_ram.procedures.stubs import stubs_of
from angr_ram.run.coverage import NEW_CODE_KEY
from angr_ram.run.input_budget import InputBudget, NoAnswer, NoModel, add_groups, errored_reason
from angr_ram.run.inputs import program_inputs
from angr_ram.run.outcomes import Outcome, ending
from angr_ram.run.path_models import LISTING_GAVE_UP, LISTING_SECONDS, model_value, path_model
from angr_ram.run.spilling import Spilling
from angr_ram.run.technique import ERROR_STASH
from angr_ram.run.test_files import (  # noqa: F401 - the files' half, re-exported
    MANIFEST,
    RUN_FILES,
    TestCase,
    binary_sha256,
    prepare_test_dir,
    read_tests,
    write_tests,
)
from angr_ram.solver.model_eval import eval_under

MAX_OUTCOMES_PER_PATH = 16


def _readable(b):
    """Preference for one input byte: zero or printable ASCII."""
    return claripy.Or(b == 0, claripy.And(claripy.UGE(b, 0x20), claripy.ULE(b, 0x7E)))


def _bytes_of(exprs) -> list:
    """The bytes of the inputs ``exprs`` in order, each a small expression: a concatenation is split
    into its parts first (``get_byte`` on a concatenation of n bytes walks its n parts, so asking
    it for every byte is quadratic: 10000 stdin bytes took minutes)."""
    out = []
    for e in exprs:
        parts = e.args if e.op == "Concat" else (e,)
        for p in parts:
            if p.length % 8:
                return [claripy.Concat(*exprs).get_byte(k) for k in range(sum(x.length for x in exprs) // 8)]
            out.extend([p] if p.length == 8 else [p.get_byte(k) for k in range(p.length // 8)])
    return out


UNWRITTEN_NOTE = (" [the path needs memory no one wrote to hold other than zero: it replays only where "
                  "that memory happens to hold such content]")


def _unwritten_leaves(state, extra) -> list:
    """The variables for unwritten memory and registers that ``state``'s path constraints (and
    ``extra``) name; none when both of angr's zero-fill options are on."""
    if zero_filled(state):
        return []
    cons = [*state.solver.constraints, *extra]
    names = set()
    for c in cons:
        names |= {n for n in c.variables if n.startswith(UNWRITTEN_PREFIXES)}
    if not names:
        return []
    out, seen = [], set()
    for c in cons:
        for leaf in c.leaf_asts():
            if leaf.op == "BVS" and leaf.args[0] in names and leaf.args[0] not in seen:
                seen.add(leaf.args[0])
                out.append(leaf)
    return out


def _from_model(state, whole, cons, budget: InputBudget) -> bytes | None:
    """``whole``'s bytes in the model taken when the path finished (:mod:`.path_models`) or, for
    a path without one, in a model of its constraints made of the solver's cached
    models (``SubstitutingFrontend.cached_model``: no z3; within ``budget``'s window for them,
    :meth:`InputBudget.cached`), if it also satisfies ``cons``; else None."""
    values = path_model(state)
    if values is not None:
        for c in cons:
            if model_value(state, c) is not True:
                return None
        v = model_value(state, whole)
        return None if v is None else v.to_bytes(whole.length // 8, "big")
    fe = state.solver._solver
    if not hasattr(fe, "cached_model"):
        return None

    def from_cache():
        values = fe.cached_model()
        if values is None:
            return None
        try:
            if not all(eval_under(fe.subst(c), values) for c in cons):
                return None
            v = eval_under(whole, values)
        except (KeyError, ZeroDivisionError):
            return None
        return v.to_bytes(whole.length // 8, "big")
    return budget.cached(from_cache)


def choose_inputs(state, extra=(), budget: InputBudget | None = None, notes: list | None = None):
    """(stdin, argv[1:], files, how) for ``state``'s path (and ``extra`` constraints): ``how`` is
    ``readable`` (every byte that can be is zero or printable), ``plain`` (a model, some bytes left
    as the solver chose them: out of time), ``unsolved`` (zero bytes: no model within the budget;
    they may not drive the path) or None when the path has no model (an undecided branch that
    turned out infeasible). Bounded by ``budget`` and never raises (see :class:`InputBudget`).

    With unwritten memory symbolic (``uninitialized="symbolic"``), the input is chosen with that
    memory zero where the path allows it (a fresh process's heap pages and registers), so the test
    replays natively; where it does not, :data:`UNWRITTEN_NOTE` is appended to ``notes``."""
    budget = budget if budget is not None else InputBudget()
    inputs = list(program_inputs(state))
    exprs = [i.expr for i in inputs if i.expr is not None]
    cons = list(extra)
    values: list[bytes] = []
    how = "readable"
    if exprs:
        whole = claripy.Concat(*exprs) if len(exprs) > 1 else exprs[0]
        nbytes = whole.length // 8
        byte = _bytes_of(exprs)
        solver = state.solver

        def model(more=()):
            return solver.eval(whole, cast_to=bytes, extra_constraints=[*cons, *more])

        def sat(more):
            return solver.satisfiable(extra_constraints=[*cons, *more])

        unwritten = _unwritten_leaves(state, cons)
        if unwritten:
            zero = [v == 0 for v in unwritten]
            try:
                zeroable = budget.ask(lambda: sat(zero))
            except (NoAnswer, NoModel):
                zeroable = False
            if zeroable:
                cons.extend(zero)
            elif notes is not None:
                notes.append(UNWRITTEN_NOTE)

        raw = fallback = None
        if budget.hurry() and path_model(state) is None:     # out of time: the solver's cached models first
            fallback = _from_model(state, whole, cons, budget)
        if fallback is None:
            try:    # with the model taken when the path finished, the solver's input is an improvement: bounded
                raw = budget.ask(model, last=budget.hurry(), whole=path_model(state) is None)
            except NoModel:
                return None
            except NoAnswer:
                fallback = _from_model(state, whole, cons, budget)
        if raw is None and fallback is not None:
            raw, how = fallback, "plain"
            budget.plain += 1
        elif raw is None:
            budget.unsolved += 1
            raw, how = bytes(nbytes), "unsolved"
        else:
            free = [k for k in range(nbytes) if byte[k].symbolic]
            bad = [k for k in free if not (raw[k] == 0 or 0x20 <= raw[k] < 0x7F)]
            if bad:
                badset = set(bad)
                ok = [_readable(byte[k]) for k in free if k not in badset]  # readable in the model
                start = len(ok)
                complete = add_groups(sat, ok, [_readable(byte[k]) for k in bad], budget)
                if len(ok) > start:
                    try:
                        raw = budget.ask(lambda: model(ok))
                    except (NoAnswer, NoModel):
                        complete = False
                if not complete:
                    how = "plain"
                    budget.plain += 1
        pos = 0
        for e in exprs:
            n = e.length // 8
            values.append(raw[pos:pos + n])
            pos += n
    it = iter(values)
    stdin, args, files = b"", [], {}
    for i in inputs:
        v = next(it) if i.expr is not None else b""
        if i.kind == "stdin":
            stdin = v
        elif i.kind == "arg":
            args.append(v.split(b"\0", 1)[0])
        else:
            files[i.name] = v
    return stdin, args, files, how


def readable_inputs(state, extra=()) -> tuple[bytes, list[bytes], dict[str, bytes]]:
    """(stdin, argv[1:], files) of a model of ``state``'s path (and ``extra`` constraints) whose
    bytes are zero or printable wherever the path allows (:func:`choose_inputs` with its default
    budget); raises :class:`~angr_ram.core.errors.AngrRamError` if the path has no model."""
    chosen = choose_inputs(state, extra)
    if chosen is None:
        raise AngrRamError("the path has no model: its constraints are unsatisfiable")
    return chosen[:3]


UNSOLVED_NOTE = " [input not solved in time: zero bytes, may not drive this path]"


def _case(state, kind: str, extra=(), budget: InputBudget | None = None, **fields) -> TestCase | None:
    """The test of ``state`` (numbered by :func:`collect_tests`), or None when no input drives it."""
    notes: list[str] = []
    chosen = choose_inputs(state, extra, budget, notes)
    if chosen is None:
        return None
    stdin, args, files, how = chosen
    if how == "unsolved":
        notes.append(UNSOLVED_NOTE)
        fields["solved"] = False
    if notes:
        fields["message"] = fields.get("message", "") + "".join(notes)
    try:
        addr = state.addr if state.regs.ip.concrete else None
    except Exception:  # noqa: BLE001 - a state without a concrete ip has no block to name
        addr = None
    return TestCase("", kind, stdin, args, files, blocks=state.history.block_count,
                    addr=addr, stubs=sorted(stubs_of(state)),
                    new_instructions=state.globals.get(NEW_CODE_KEY, 0), **fields)


# stashes whose states are not paths of their own kind: every other stash holds paths that did not
# finish (active when the run stopped, set aside, waiting to merge), written as ``unfinished`` tests
BEYOND_MAX_PATHS_STASH = "beyond_max_paths"   # finished paths past a run's max_paths (runner.keep_first_paths)
TERMINAL_STASHES = frozenset({"deadended", "found", "avoid", "unsat", "pruned", "unconstrained",
                              BEYOND_MAX_PATHS_STASH})


def unfinished_states(simgr) -> list:
    """The states of ``simgr`` that did not finish: every stash but the terminal ones, the error
    paths and the found paths (``active`` first)."""

    out = []
    for name in ["active", *sorted(k for k in simgr.stashes if k != "active")]:
        if name in TERMINAL_STASHES or name == ERROR_STASH:
            continue
        out.extend(simgr.stashes.get(name, []))
    return out


def _unfinished_reason(state) -> str:
    ram = state.plugins.get("ram")
    why = getattr(ram, "unknown", None)
    try:
        at = f"{state.addr:#x}" if state.regs.ip.concrete else "a symbolic address"
    except Exception:  # noqa: BLE001
        at = "an unknown address"
    where = f"at {at} after {state.history.block_count} blocks"
    return f"set aside ({why}), {where}" if why else f"still running when the run stopped, {where}"


def spilled_case(state) -> TestCase | None:
    """The ``unfinished`` test of ``state`` as it is spilled to disk (``Spilling``'s ``describe``),
    made at once, with no z3 call: its input from the models its solver cached (or zero bytes)."""
    return _case(state, "unfinished", (), InputBudget(deadline=0.0, last_total=0.0, cached_total=math.inf),
                 message="spilled: " + _unfinished_reason(state))


def _one_per_code(state, o: Outcome, values) -> list[int]:
    """Values of ``o.expr``, one per exit code the path can have (or one, for a path that did not
    exit), preferring those of ``values``."""
    if not o.exited:
        return sorted(values)[:1]
    e = o.expr
    code = e[e.length - 1:e.length - 8]
    by_code = {}
    for v in sorted(values):
        by_code.setdefault(v >> (e.length - 8), v)
    for c in state.solver.eval_upto(code, 256):
        if c not in by_code:
            by_code[c] = state.solver.eval(e, extra_constraints=[code == c])
    return sorted(by_code.values())


def collect_tests(simgr, per_path: int = MAX_OUTCOMES_PER_PATH, budget: InputBudget | None = None) -> list[TestCase]:
    """One test per outcome of every finished path (at most ``per_path`` each; a path with more,
    whose output echoes its input, one per exit code), per error path,
    per errored path, per path in the ``found`` stash and per path that did not finish (kind
    ``unfinished``: still active when the run stopped, set aside because z3 gave up, waiting to be
    merged; ``message`` names the block it is at), numbered in that order. Bounded by ``budget``
    (:class:`InputBudget`) and never raises: a path whose outcome z3 cannot enumerate in time gets
    one ``undecided`` test, an input that cannot be solved is all zeros (said in the message)."""

    budget = budget if budget is not None else InputBudget()
    tests: list[TestCase] = []

    def add(state, kind, extra=(), **fields):
        t = _case(state, kind, extra, budget, **fields)
        if t is None:
            budget.infeasible += 1
            budget.infeasible_unfinished += kind == "unfinished"
        else:
            tests.append(t)

    # the error, errored and found paths' inputs are chosen first: when the run's time is out, the
    # many finished paths before them took it all and a found error's test was zero bytes (expr at
    # 600 s: 32 errors, 1,916 paths); numbered after the finished paths all the same
    for s in simgr.stashes.get(ERROR_STASH, []):
        err = s.ram.error
        add(s, "error", error=err.kind, message=err.message)
    for rec in simgr.errored:
        add(rec.state, "errored", message=errored_reason(rec.error))
    for s in simgr.stashes.get("found", []):
        add(s, "found", message=f"reached {s.addr:#x}")
    findings, tests = tests, []
    _finished_tests(simgr, per_path, budget, add)
    tests += findings
    for s in unfinished_states(simgr):
        add(s, "unfinished", message=_unfinished_reason(s))
    for t in simgr._techniques:
        if isinstance(t, Spilling):       # those still in spill files, one in memory at a time
            for s in t.left_states(stop=budget.spent):
                add(s, "unfinished", message="spilled: " + _unfinished_reason(s))
            for case in t.left_described():       # not loaded in time: the test made when it was spilled
                if not isinstance(case, TestCase):
                    budget.unwritten += 1
                    continue
                tests.append(case)
                if case.solved:
                    budget.plain += 1
                else:
                    budget.unsolved += 1
    for i, t in enumerate(tests):
        t.id = f"test{i + 1:06d}"
    return tests


def _finished_tests(simgr, per_path: int, budget: InputBudget, add) -> None:
    """``add`` one test per outcome of every finished path (:func:`collect_tests`)."""
    for s in simgr.stashes.get("deadended", []):
        try:
            o = Outcome(s)
            e = o.expr
            if e is None:
                cases = [((None, b""), ())]
            elif not e.symbolic:
                cases = [(o.decode(e.concrete_value), ())]
            else:   # one test per outcome, each input constrained to produce it
                first = model_value(s, e)       # the outcome of the path's model (path_models)
                try:
                    if first is not None and s.globals.get(LISTING_GAVE_UP):    # the summary's listing did
                        raise NoAnswer("listing the outcomes gave up")
                    values = budget.ask(lambda s=s, e=e: s.solver.eval_upto(e, per_path + 1), last=budget.hurry(),
                                        whole=first is None, seconds=LISTING_SECONDS)
                except NoAnswer:
                    if first is None:
                        raise
                    values = [first]
                if len(values) > per_path:      # output that echoes the input: one test per exit code
                    values = budget.ask(lambda s=s, o=o, values=values: _one_per_code(s, o, values),
                                        last=budget.hurry(), whole=True)
                cases = [(o.decode(v), (e == v,)) for v in sorted(values)]
        except (NoAnswer, NoModel) as exc:
            add(s, "undecided", message=f"outcome undecided ({exc})")
            continue
        for (code, out), extra in cases:
            if o.exited:
                add(s, "exit", extra, exit=code, stdout=out)
            else:
                add(s, "no-exit", extra, stdout=out, message=ending(s))


def emit_tests(simgr, directory) -> list[TestCase]:
    """Collect the tests of ``simgr`` (see :func:`collect_tests`) and write them to ``directory``."""
    tests = collect_tests(simgr)
    write_tests(tests, directory, getattr(simgr._project, "filename", None))  # pylint: disable=protected-access
    return tests
