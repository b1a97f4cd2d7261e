"""Test cases a user takes home: one input per path and outcome, replayed natively; symbolic argv
and files; find/avoid targets and limits; paths that raise; readable reprs."""

import itertools
import json
import os
from functools import cache

import angr
import claripy
import pytest

import angr_ram
import angr_ram.run.runner
from angr_ram.run.cli import main
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore, load_project, make_state
from angr_ram.run.testcases import read_tests

from .conftest import BUILD, assert_tests_replay
from .groundtruth import domain, run_inputs

FILE_CLASSES = [b"R?", b"ab?", bytes([0, 1, 100, 101, 255])]   # magic, kind, length classes


def binary(name: str) -> str:
    return os.fspath(BUILD / name)


@cache
def argv_truth(name: str) -> frozenset:
    """Native outcomes over every 2-byte argv[1] (cut at its first NUL like a C string)."""
    return frozenset(run_inputs(binary(name), domain(2), target="argv1"))


@pytest.mark.parametrize("opt", ("O0", "O2"))
@pytest.mark.slow
def test_symbolic_argv_parsed_by_strtol(opt):
    b = binary(f"argnum_{opt}")
    r = explore(b, args=[2], tests=True)
    assert r.errors == []
    assert r.outcomes == argv_truth(f"argnum_{opt}")
    runs = assert_tests_replay(b, r)
    assert all(len(x.test.args) == 1 and len(x.test.args[0]) <= 2 for x in runs)


def test_concrete_arguments_mix_with_symbolic_ones():
    """argv = [binary, "7", <2 symbolic bytes>]: argnum only parses argv[1], the concrete "7"."""
    b = binary("argnum_O0")
    r = explore(b, args=["7", 2], tests=True)
    assert r.outcomes == {(5, b"multiple of 7\n")}
    assert [t.args[0] for t in r.tests] == [b"7"]
    assert_tests_replay(b, r)


@pytest.mark.parametrize(("opt", "model"), [("O0", "fork"), ("O2", "dsmm")])
def test_symbolic_file_read_with_fopen_and_fread(opt, model):
    b = binary(f"fileread_{opt}")
    r = explore(b, files=[("input.dat", 3)], model=model, tests=True)
    assert r.errors == []
    truth = set(run_inputs(b, [bytes(t) for t in itertools.product(*FILE_CLASSES)], target="file:input.dat"))
    assert r.outcomes == truth
    runs = assert_tests_replay(b, r)
    assert all(set(x.test.files) == {"input.dat"} and len(x.test.files["input.dat"]) == 3 for x in runs)


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_a_users_entry_state_with_a_file_gives_tests_that_carry_it(opt):
    """A user's script: ``entry_state(fs={"input.dat": SimFile})`` with one 24-bit BVS as the file,
    angr's default options, RelocatableMemory attached. The tests carry the file under its name
    (they had carried none: every replay ran without it, 'cannot open', all mismatched)."""
    b = binary(f"fileread_{opt}")
    proj = angr.Project(b, auto_load_libs=False)
    data = claripy.BVS("record", 24)
    st = proj.factory.entry_state(fs={"input.dat": angr.SimFile("input.dat", content=data, size=3, has_end=True)})
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    r = angr_ram.run.runner.summarize(simgr, tech, tests=True)
    truth = set(run_inputs(b, [bytes(t) for t in itertools.product(*FILE_CLASSES)], target="file:input.dat"))
    assert r.errors == [] and r.outcomes == truth
    runs = assert_tests_replay(b, r)
    assert all(set(x.test.files) == {"input.dat"} and len(x.test.files["input.dat"]) == 3 for x in runs)


def test_error_status_exits_and_zero_status_returns():
    """glibc's error(): angr's own model raises a TypeError; ours prints to stderr and exits."""
    b = binary("usage_O0")
    truth = set(run_inputs(b, domain(1)))
    r = explore(b, 1, tests=True)
    assert r.errors == [] and r.outcomes == truth
    assert_tests_replay(b, r)
    proj = load_project(b)
    simgr = proj.factory.simulation_manager(make_state(proj, 1))
    simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    bad = [s for s in simgr.deadended if s.posix.dumps(0) == b"x"]
    assert len(bad) == 1 and bad[0].posix.dumps(2) == b"unknown option 'x'\n"


def test_inputs_are_readable_where_the_path_allows():
    """Every byte a path leaves free is zero or printable (argnum's paths allow that everywhere)."""
    r = explore(binary("argnum_O2"), args=[2], tests=True)
    for t in r.tests:
        assert all(c == 0 or 0x20 <= c < 0x7F for c in t.args[0] + t.stdin), t


def test_emit_and_replay_from_the_command_line_and_a_wrong_prediction_fails(tmp_path, capsys):
    d = tmp_path / "tests"
    b = binary("matrix3_O0")
    assert main(["run", b, "--stdin-bytes", "2", "--emit-tests", os.fspath(d)]) == 0
    out = capsys.readouterr().out
    assert "paths by ending: " in out and f"written to {d}" in out
    tests = read_tests(d)
    assert tests and all(t.kind == "exit" for t in tests)
    assert main(["replay", os.fspath(d), b]) == 0
    assert f"{len(tests)} tests: ok {len(tests)}" in capsys.readouterr().out
    manifest = d / "tests.jsonl"
    lines = [json.loads(x) for x in manifest.read_text().splitlines()]
    lines[0]["exit"] = (lines[0]["exit"] + 1) % 256
    manifest.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert main(["replay", os.fspath(d), b]) == 1
    assert "mismatch" in capsys.readouterr().out
    # a test whose input was not solved in time (zero bytes: the run's deadline came first) makes
    # no prediction: its wrong exit is shown, not judged, and "solved" survives the manifest
    lines[0]["solved"] = False
    manifest.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert not read_tests(d)[0].solved and read_tests(d)[1].solved
    assert main(["replay", os.fspath(d), b]) == 0
    assert "unchecked 1" in capsys.readouterr().out


def test_error_tests_are_judged_by_the_asan_build(tmp_path):
    """uaf's use-after-free does not crash natively: an ASan build confirms it, and a build without
    ASan given as the oracle makes that test a false error (replay can fail on error tests)."""
    r = explore(binary("uaf_O0"), 1, tests=True)
    kinds = {x.test.error: x.status for x in replay(r.tests, binary("uaf_O0"), asan=binary("uaf_asan"))
             if x.test.kind == "error"}
    assert kinds == {"use-after-free": "confirmed", "double-free": "confirmed", "invalid-free": "confirmed"}
    wrong = {x.test.error: x.status for x in replay(r.tests, binary("uaf_O0"), asan=binary("uaf_O0"))
             if x.test.kind == "error"}
    assert wrong["use-after-free"] == "false-error"
    assert {x.status for x in replay(r.tests, binary("uaf_O0")) if x.test.error == "use-after-free"} == {
        "unconfirmed"}


def test_error_paths_get_their_inputs_first(monkeypatch):
    """Past the run's deadline each test gets one quick model while the time lasts, then zero
    bytes. The error paths' inputs are chosen first, so they are not left zero behind the finished
    paths (Debian's expr at 600 s: 32 errors after 1,916 paths, all zero); they are still numbered
    after the finished paths, and each is confirmed natively."""
    from angr_ram.run import testcases
    from angr_ram.run.runner import prepare
    from angr_ram.run.technique import ERROR_STASH

    simgr, _ = prepare(binary("uaf_O0"), 1)
    simgr.run()
    assert len(simgr.stashes[ERROR_STASH]) >= 3 and len(simgr.deadended) >= 1
    chosen = []
    case = testcases._case

    def recording(state, kind, *a, **kw):
        chosen.append(kind)
        return case(state, kind, *a, **kw)
    monkeypatch.setattr(testcases, "_case", recording)
    tests = testcases.collect_tests(simgr)
    n = len(simgr.stashes[ERROR_STASH])
    assert chosen[:n] == ["error"] * n and "error" not in chosen[n:]
    kinds = [t.kind for t in tests]
    assert kinds == sorted(kinds, key=lambda k: k == "error") and kinds.count("error") == n
    assert [t.id for t in tests] == [f"test{i:06d}" for i in range(1, len(tests) + 1)]
    confirmed = {x.test.error: x.status for x in replay(tests, binary("uaf_O0"), asan=binary("uaf_asan"))
                 if x.test.kind == "error"}
    assert set(confirmed.values()) == {"confirmed"}


def test_a_path_that_raises_goes_to_errored_with_its_input_and_the_run_goes_on(monkeypatch):
    """A model that raises on one path (here puts of the "no digits" message) ends only that path."""
    puts = angr.SIM_PROCEDURES["libc"]["puts"]

    class Flaky(puts):
        def run(self, string):  # pylint: disable=arguments-differ
            if self.state.solver.eval(self.state.memory.load(string, 3), cast_to=bytes) == b"no ":
                raise TypeError("flaky model\nsecond line")
            return super().run(string)

    def load(path):
        proj = load_project(path)
        proj.hook_symbol("puts", Flaky(), replace=True)
        return proj

    monkeypatch.setattr(angr_ram.run.runner, "load_project", load)
    b = binary("argnum_O0")
    # angr-ram's engine: stock angr's strtol skips no white space, so its "no digits" path may hold
    # " 7", which the native program reads as 7 (test_strtol_family_* covers the model)
    r = explore(b, args=[2], tests=True)
    assert r.outcomes == argv_truth("argnum_O0") - {(1, b"no digits\n")}
    assert [(k, m) for k, m, _ in r.errors] == [("angr-error", "TypeError: flaky model")]
    errored = [t for t in r.tests if t.kind == "errored"]
    assert len(errored) == 1 and errored[0].message == "TypeError: flaky model"
    assert run_inputs(b, [errored[0].args[0].ljust(2, b"\0")], target="argv1") == [(1, b"no digits\n")]


def test_find_and_avoid_targets_by_symbol_and_address():
    b = binary("fileread_O0")
    proj = load_project(b)
    fclose = proj.loader.find_symbol("fclose").rebased_addr
    by_name = explore(b, files=[("input.dat", 3)], find=["fclose"], tests=True)
    by_addr = explore(b, files=[("input.dat", 3)], find=[hex(fclose)])
    assert by_name.stopped == by_addr.stopped == "found" and by_name.found == by_addr.found == 1
    assert [t.kind for t in by_name.tests] == ["found"] and by_name.tests[0].addr == fclose
    avoided = explore(b, files=[("input.dat", 3)], avoid=["fclose"])
    assert avoided.outcomes == set() and avoided.stats["paths"] == 0
    with pytest.raises(angr_ram.AngrRamError, match="neither an address nor a symbol"):
        explore(b, files=[("input.dat", 3)], find=["no_such_function"])


@pytest.mark.slow
def test_limits_and_ctrl_c_keep_what_was_found():
    b = binary("memspnab4_O0")           # more than 40 paths, finished a few per step
    r = explore(b, 5, max_paths=3, tests=True)
    assert r.stopped == "max-paths" and 3 <= r.stats["paths"] < 10 and len(r.tests) >= 3
    assert_tests_replay(b, r)
    b = binary("matrix10_O0")
    steps = []

    def interrupt(simgr):
        steps.append(1)
        if len(steps) == 20:                # of 36 steps
            raise KeyboardInterrupt

    r = explore(b, 2, progress=interrupt, tests=True)
    assert r.stopped == "interrupted" and r.timed_out and len(steps) == 20
    assert_tests_replay(b, r)


def test_readable_reprs_and_describe(ram_state):
    from angr_ram.procedures.heap import allocate

    a = allocate(ram_state, 24, zero=True)
    c = allocate(ram_state, 12, zero=True)
    assert repr(a).startswith(f"<MemoryObject #{a.id} 24 B hidden at 0x") and "site" in repr(a)
    assert "2 heap objects" in repr(ram_state.ram) and "model fork" in repr(ram_state.ram)
    assert ram_state.ram.describe(a.base + 4) == [f"{a!r} +0x4"]
    i = claripy.BVS("i", 64)
    ram_state.add_constraints(claripy.ULT(i, 3))
    assert ram_state.ram.describe(a.base + i * 4) == [f"{a!r} +0x0..+0x8"]
    two = ram_state.ram.describe(claripy.If(i == 0, a.base, c.base + 8))
    assert sorted(two) == sorted([f"{a!r} +0x0", f"{c!r} +0x8"])
    assert ram_state.ram.describe(a.base + 30)[0].startswith("out-of-bounds: ")
    seg = ram_state.ram.make_segment([a.id, c.id])
    assert repr(seg).startswith(f"<Segment #{seg.id} 48 B") and f"members #{a.id},#{c.id}" in repr(seg)
    assert f"in #{seg.id} at +0" in repr(ram_state.ram.objects[a.id])
    tech = angr_ram.RelocatableMemory(model="dsmm")
    assert repr(tech).startswith("<RelocatableMemory model=dsmm symbolic_bases=True: 0 objects")
    assert repr(angr_ram.QuantifiedMerging("pat", ["memspn"])).startswith("<QuantifiedMerging mode=pat")
    err = angr_ram.MemoryErrorInfo("out-of-bounds", "write of 8 bytes", 0x401000, b"ab")
    assert repr(err) == "<MemoryErrorInfo out-of-bounds at 0x401000: write of 8 bytes; stdin=b'ab'>"


def test_stdin_bytes_zero_is_empty_stdin_and_negative_is_refused(capsys):
    assert main(["run", binary("argnum_O0"), "--arg-str", "12", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(o["exit"], o["stdout"]) for o in out["outcomes"]] == [(0, "small\n")]
    assert main(["run", binary("argnum_O0"), "--stdin-bytes", "-1"]) == 2
    with pytest.raises(SystemExit):
        main(["run", binary("fileread_O0"), "--sym-file", "input.dat"])


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_tests_replay_in_the_c_locale_the_models_assume(opt, monkeypatch):
    """angr-ram models the C locale (setlocale answers "C", MB_CUR_MAX is 1); a shell whose LANG is
    C.UTF-8 made the native program print "locale=C.UTF-8 mb_cur_max=6", so every test of
    localeinfo mismatched. Replays and the native ground truth run with LC_ALL=C."""
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    b = os.fspath(BUILD / f"localeinfo_{opt}")
    r = explore(b, 1, tests=True)
    text = b"locale=C mb_cur_max=1\n"
    assert r.outcomes == {(0, text), (1, text)}
    assert r.outcomes == set(run_inputs(b, [bytes([k]) for k in range(256)]))
    results = replay(r.tests, b)
    assert len(results) == 2 and all(x.status == "ok" for x in results), [(x.status, x.detail) for x in results]


@pytest.mark.parametrize("name,stdin_bytes", [("checksum_O0", 2), ("wordsplit_O0", 6)])
def test_unfinished_paths_out_of_time_get_the_solvers_cached_models(name, stdin_bytes):
    """Past the run's deadline a path that did not finish has no model of its own; its test used to
    be zero bytes (Debian's expr at 600 s: 2,581 of 4,828 tests). The models its solver cached when
    its branches were checked (and, for the parts small-domain evaluation answered, as wordsplit's
    ``isspace`` lookups are, one found by that evaluation) drive it there, asking z3 nothing: each
    such input satisfies the path's constraints, and none is zero-filled."""
    import time

    from angr_ram.run.input_budget import InputBudget
    from angr_ram.run.inputs import program_inputs
    from angr_ram.run.runner import prepare
    from angr_ram.run.testcases import collect_tests

    simgr, tech = prepare(binary(name), stdin_bytes, search="bfs")
    while simgr.active and len(simgr.active) + len(simgr.stashes.get("waiting", [])) < 12:
        simgr.step()
    live = [*simgr.active, *simgr.stashes.get("waiting", [])]
    assert len(live) >= 12
    checks = tech.stats.z3_checks
    spent = InputBudget(deadline=time.perf_counter() - 0.01, last_total=0.0)     # inside the cached models' window
    tests = [t for t in collect_tests(simgr, budget=spent) if t.kind == "unfinished"]
    assert tech.stats.z3_checks == checks
    assert len(tests) == len(live) and spent.unsolved == 0
    assert all(t.solved for t in tests)
    inputs = {t.stdin for t in tests}
    assert len(inputs) > 1
    for s, t in zip(live, tests, strict=True):       # unfinished tests follow the stash order
        stdin = next(i.expr for i in program_inputs(s) if i.kind == "stdin")
        assert s.solver.satisfiable(extra_constraints=[stdin == t.stdin])


def test_cached_model_inputs_stop_when_their_window_past_the_deadline_is_over(monkeypatch):
    """Making every unfinished path's input from its solver's cached models held join's tests 15 s
    past a 600 s limit (thousands of paths, a few ms each). They are made for ``cached_total``
    seconds past the deadline, each bounded by what is left of that window (a slow one is
    interrupted); the rest are zero bytes, counted as unsolved, and no z3 check is made."""
    import time

    from angr_ram.run.input_budget import InputBudget
    from angr_ram.run.runner import prepare
    from angr_ram.run.testcases import collect_tests
    from angr_ram.solver.substituting import SubstitutingFrontend

    simgr, tech = prepare(binary("checksum_O0"), 2, search="bfs")
    while simgr.active and len(simgr.active) + len(simgr.stashes.get("waiting", [])) < 12:
        simgr.step()
    live = [*simgr.active, *simgr.stashes.get("waiting", [])]
    assert len(live) >= 12
    checks = tech.stats.z3_checks
    calls = []
    original = SubstitutingFrontend.cached_model

    def slow(self):
        calls.append(time.perf_counter())
        end = time.perf_counter() + (5.0 if len(calls) == 4 else 0.05)     # the fourth never ends in time
        while time.perf_counter() < end:
            pass
        return original(self)

    monkeypatch.setattr(SubstitutingFrontend, "cached_model", slow)
    over = InputBudget(deadline=time.perf_counter() - 10)
    tests = [t for t in collect_tests(simgr, budget=over) if t.kind == "unfinished"]
    assert calls == [] and len(tests) == len(live) and over.unsolved == len(live)
    assert not any(t.solved for t in tests) and all(t.stdin == bytes(2) for t in tests)

    start = time.perf_counter()
    window = InputBudget(deadline=start, last_total=0.0, cached_total=0.6)
    tests = [t for t in collect_tests(simgr, budget=window) if t.kind == "unfinished"]
    took = time.perf_counter() - start
    assert tech.stats.z3_checks == checks
    assert len(tests) == len(live) and len(calls) == 4, calls
    assert [t.solved for t in tests] == [True] * 3 + [False] * (len(live) - 3)
    assert window.unsolved == len(live) - 3 and window.plain == 3
    assert took < 3.0, took         # the slow one was interrupted at the window's end, not after 5 s


@pytest.mark.parametrize("target", ["script:wordsplit_O2", "debian:/usr/bin/basename"])
def test_cached_model_inputs_for_a_scripts_wide_input_and_a_debian_binary(target):
    """The cached-model inputs of unfinished paths, driven as users drive angr-ram: a script's own
    entry state with one wide ``claripy.BVS`` stdin and angr's default options, stepped by
    ``simgr.step()`` (gcc -O2), and Debian's ``basename`` under KLEE's ``--sym-args``. Out of time
    (inside the window for cached models, no z3 model left), each unfinished path's test is solved
    without a z3 check and satisfies its state's constraints."""
    import time

    import angr

    import angr_ram
    from angr_ram.run.input_budget import InputBudget
    from angr_ram.run.inputs import SymArgs, program_inputs
    from angr_ram.run.runner import prepare

    kind, name = target.split(":")
    if kind == "script":
        proj = angr.Project(binary(name), auto_load_libs=False)
        content = claripy.BVS("stdin", 8 * 6)
        st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=content, size=6, has_end=True))
        simgr = proj.factory.simulation_manager(st)
        tech = simgr.use_technique(angr_ram.RelocatableMemory())
    else:
        simgr, tech = prepare(name, 0, args=[SymArgs(1, 1, 4)], search="bfs")
    for _ in range(400):
        live = [*simgr.active, *simgr.stashes.get("waiting", [])]
        if len(live) >= 10 or not simgr.active:
            break
        simgr.step()
    assert len(live) >= 10
    checks = tech.stats.z3_checks
    spent = InputBudget(deadline=time.perf_counter() - 0.01, last_total=0.0)
    tests = [t for t in angr_ram.collect_tests(simgr, budget=spent) if t.kind == "unfinished"]
    assert tech.stats.z3_checks == checks
    assert len(tests) == len(live) and spent.unsolved == 0 and all(t.solved for t in tests)
    for s, t in zip(live, tests, strict=True):
        pins = []
        args = iter(t.args)
        for i in program_inputs(s):
            if i.expr is None:
                continue
            if i.kind == "stdin":
                pins.append(i.expr == t.stdin)
            elif i.kind == "arg":       # a test's argument is its bytes up to the first NUL
                a, n = next(args), i.expr.length // 8
                if a:
                    pins.append(i.expr.get_bytes(0, len(a)) == a)
                if len(a) < n:
                    pins.append(i.expr.get_byte(len(a)) == 0)
        assert pins and s.solver.satisfiable(extra_constraints=pins), (t.stdin, t.args)
