"""The command line: outcomes as JSON, and clear messages for bad input."""

import json
import os
import subprocess
import sys

import pytest

import angr_ram
from angr_ram.run.cli import main

from .conftest import BUILD


def test_run_json_reports_outcomes_errors_and_stats(capsys):
    assert main(["run", os.fspath(BUILD / "oob_O0"), "--stdin-bytes", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {(o["exit"], o["stdout"]) for o in out["outcomes"]} == {(0, ""), (1, "")}
    assert [e["kind"] for e in out["errors"]] == ["out-of-bounds"]
    assert 10 <= int(out["errors"][0]["stdin"], 16) < 16
    for key in ("paths", "errors", "forks", "objects", "solver_queries", "solver_seconds"):
        assert key in out["stats"]


@pytest.mark.parametrize("mode", [None, "zero", "symbolic"])
def test_run_uninitialized_option(mode, capsys):
    """``--uninitialized``: zero (the default) gives heapuninit's native exit codes 0..4, symbolic
    also the ones an unwritten heap byte other than 0 and 7 gives (50..53)."""
    extra = [] if mode is None else ["--uninitialized", mode]
    assert main(["run", os.fspath(BUILD / "heapuninit_O0"), "--stdin-bytes", "4", "--json", *extra]) == 0
    codes = {o["exit"] for o in json.loads(capsys.readouterr().out)["outcomes"]}
    assert codes == set(range(5)) | (set(range(50, 54)) if mode == "symbolic" else set())


def test_the_summary_names_the_symbolic_environment_a_path_depends_on(capsys):
    """envcalls' outcome depends on getrandom's bytes: the summary says so (and how to fix them),
    the JSON counts the paths; in the fixed environment nothing is reported."""
    b = os.fspath(BUILD / "envcalls_O0")
    assert main(["run", b, "--stdin-bytes", "2"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "symbolic environment" in ln)
    assert "random bytes (6 paths)" in line and "--environment fixed" in line
    assert main(["run", b, "--stdin-bytes", "2", "--json", "--environment", "fixed"]) == 0
    assert json.loads(capsys.readouterr().out)["environment"] == {}


@pytest.mark.parametrize(("args", "message"), [
    (["run", "/no/such/binary", "--stdin-bytes", "1"], "no such file"),
    (["run", __file__, "--stdin-bytes", "1"], "not an ELF file"),
])
def test_bad_binaries_get_a_clear_message(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_non_x86_64_binary_is_refused(tmp_path, capsys):
    elf = tmp_path / "arm.elf"
    data = bytearray((BUILD / "branches_O0").read_bytes())
    data[18:20] = (40).to_bytes(2, "little")  # e_machine = ARM
    elf.write_bytes(bytes(data))
    assert main(["run", os.fspath(elf), "--stdin-bytes", "1"]) == 2
    assert "angr-ram" in capsys.readouterr().err


def test_unknown_option_values_are_rejected():
    with pytest.raises(angr_ram.AngrRamError, match="unknown model"):
        angr_ram.RelocatableMemory(model="magic")
    with pytest.raises(angr_ram.AngrRamError, match="context_k"):
        angr_ram.RelocatableMemory(context_k=-1)
    r = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", "run", "x", "--stdin-bytes", "1", "--model", "nope"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", "run", "x", "--stdin-bytes", "1", "--uninitialized",
                        "random"], capture_output=True, text=True)
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_bench_prints_every_configuration_and_the_ratio(capsys):
    from bench.speed import main as bench_main

    assert bench_main(["uaf"], timeout=60) == 0
    out = capsys.readouterr().out
    for label in ("stock", "ram-concrete", "ram-symbolic", "sym/concrete"):
        assert label in out
    assert bench_main(["nope"]) == 2


def test_every_loop_bench_run_gets_the_same_hash_seed(monkeypatch):
    """A loop-bench run's subprocess gets PYTHONHASHSEED (set order changes a run's time), the same
    for every run whatever the bench's own environment says."""
    import subprocess

    from bench import merging

    seen = []

    def fake(cmd, timeout, env=None, check=False):
        seen.append(env.get("PYTHONHASHSEED"))
        return subprocess.CompletedProcess(cmd, 0, stdout='{"outcomes": [], "timed_out": false, "errors": 0}\n')

    monkeypatch.setattr(merging, "run_child", fake)
    monkeypatch.setenv("PYTHONHASHSEED", "random")
    merging._loop_run("/x/b", 7, {"merge": "pat"}, 1.0)
    merging._loop_run("/x/b", 7, {"engine": "stock"}, 1.0)
    assert seen == [merging.LOOP_HASH_SEED] * 2 and merging.LOOP_HASH_SEED.isdigit()


def test_loop_bench_reports_the_speed_up_on_exponential_programs_apart(monkeypatch, capsys):
    """``bench --merging --loops`` quotes the geometric-mean speed-up of ``pat`` on the programs
    whose stock path count more than doubles per step of M (or times out at once) separately
    from the overall one; here synthetic runs: ``grows`` (10 -> 40 paths) and ``flat`` (10 -> 12).
    A run with paths set aside undecided (``late``: ite at M = 8) shows them, is marked ``u`` and
    is left out of the speed-ups."""
    from bench import merging

    secs = {("grows", "stock"): 8.0, ("grows", "ite"): 4.0, ("grows", "pat"): 1.0,
            ("flat", "stock"): 1.0, ("flat", "ite"): 1.0, ("flat", "pat"): 1.0,
            ("late", "stock"): 1.0, ("late", "ite"): 0.5, ("late", "pat"): 1.0}

    def fake_run(binary, n, kw, timeout):
        name = os.path.basename(binary).split("_")[0].rstrip("0123456789")
        label = "stock" if kw.get("engine") == "stock" else kw["merge"]
        paths = (10 if n == 7 else 40 if name == "grows" else 12) if label == "stock" else 3
        unknown = 2 if (name, label, n) == ("late", "ite", 9) else 0
        timed_out = (name, label, n) == ("flat", "ite", 9)    # its left-over states are no "u"
        return {"timed_out": timed_out, "outcomes": {(n, b"")}, "errors": 0, "paths": paths,
                "seconds": secs[(name, label)], "unknown": unknown + 5 * timed_out}

    monkeypatch.setattr(merging, "_loop_run", fake_run)
    monkeypatch.setattr(merging, "sample_path", lambda name, d=None: f"/x/{name}")
    merging.loop_table(["grows", "flat", "late"], ms=(6, 8), timeout=1.0)
    out = capsys.readouterr().out
    late = [ln.split() for ln in out.splitlines() if ln.startswith("late")]
    assert [(r[1], r[2], r[-3], r[-1]) for r in late if r[2] == "ite"] == [("6", "ite", "=", "0"), ("8", "ite", "u", "2")]
    flat8 = next(ln.split() for ln in out.splitlines() if ln.startswith("flat") and " 8 ite" in ln)
    assert flat8[3] == "1.0+" and flat8[-3:] == ["?", "0", "-"]
    assert "grow exponentially: grows\n" in out
    assert "pat speed-up over stock on them (geometric mean of 2 runs, a lower bound): 8.00x" in out
    assert "pat speed-up over ite on them (geometric mean of 2 runs, a lower bound): 4.00x" in out
    assert "pat speed-up over stock (geometric mean of 6 runs" in out      # every program
    assert "pat speed-up over ite (geometric mean of 5 runs" in out        # not late's M = 8 (flat's timeout counts)
    assert merging._exponential([(5, False), (20, False)]) and merging._exponential([(0, True)])
    assert not merging._exponential([(20, False), (26, False), (32, False)])


def test_unwritable_test_directory_is_refused_before_exploring(tmp_path, capsys, monkeypatch):
    """A directory for --emit-tests that cannot be written is a one-line error before any
    exploration (the run would otherwise find it only when writing, and lose everything)."""
    import angr_ram.run.runner

    explored = []
    monkeypatch.setattr(angr_ram.run.runner, "explore", lambda *a, **k: explored.append(1))
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", os.fspath(BUILD / "oob_O0"), "--stdin-bytes", "1",
                 "--emit-tests", os.fspath(blocker / "sub")]) == 2
    err = capsys.readouterr().err
    assert "cannot write tests there" in err and len(err.strip().splitlines()) == 1
    assert explored == []


def test_a_reused_test_directory_keeps_no_stale_tests(tmp_path):
    """Tests of an earlier run are removed before the new ones are written; other files stay."""
    d = tmp_path / "t"
    args = ["run", os.fspath(BUILD / "oob_O0"), "--stdin-bytes", "1", "--emit-tests", os.fspath(d)]
    assert main(args) == 0
    (d / "test000099.stdin").write_bytes(b"stale")
    (d / "notes.txt").write_text("mine")
    assert main(args) == 0
    manifest = [json.loads(line) for line in (d / "tests.jsonl").read_text().splitlines()]
    ours = {p.name for p in d.iterdir()} - {"tests.jsonl", "notes.txt", "run.json", "coverage.csv"}
    assert ours == {m["stdin"] for m in manifest}
    assert (d / "notes.txt").read_text() == "mine"


def test_history_bench_compares_a_run_after_another_with_the_run_alone():
    from bench.history import format_history
    def res(wall, peak):
        return {"wall": wall, "z3": 1.0, "paths": 442, "left": 0, "peak_mb": peak, "start_mb": 150}
    rows = [{"follower": "m", "leader": "alone", "result": res(40, 450), "error": None},
            {"follower": "m", "leader": "after-a", "result": res(44, 500), "error": None},
            {"follower": "m", "leader": "after-b", "result": res(90, 4500), "error": None},
            {"follower": "m", "leader": "after-c", "result": None, "error": "killed after 900 s"}]
    lines = format_history(rows).splitlines()
    assert lines[3].endswith("1.1x t 1.1x mem ok")
    assert lines[4].endswith("2.2x t 10.0x mem OVER")
    assert lines[5].endswith("killed after 900 s")


def test_a_concrete_argument_may_start_with_a_dash(capsys):
    """``--arg-str -a`` passes ``-a`` to the program (argparse alone refused a value that looks like
    an option: "expected one argument"); ``--arg-str=-a`` means the same, and ``--`` ends it."""
    b = os.fspath(BUILD / "getopts_O0")
    outs = []
    for argv in (["--arg-str", "-a", "--arg-str", "-n", "--arg-str", "3"], ["--arg-str=-a", "--arg-str=-n", "--arg-str=3"]):
        assert main(["run", b, "--stdin-bytes", "1", "--json", *argv]) == 0
        r = json.loads(capsys.readouterr().out)
        outs.append(sorted(o["stdout"] for o in r["outcomes"]))
    assert outs[0] == outs[1] and {o[:10] for o in outs[0]} == {"a=1 b=0 n="} and len(outs[0]) == 4
    assert {o.split()[2] for o in outs[0]} == {"n=3", "n=4", "n=5", "n=6"}


@pytest.mark.slow
def test_processes_bench_sets_stock_angr_beside_angr_ram(capsys):
    from bench.processes import processes_table
    assert processes_table(["nope"]) == 2
    assert processes_table(["children"], timeout=60) == 0
    rows = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln.startswith("children")]
    assert [r[1] for r in rows] == ["stock", "ram"]
    assert rows[1][4] == "7/7" and rows[1][5] == "0" and rows[1][7].startswith("0/")
    assert rows[0][4] != "7/7"          # angr's fork: the child's work never reaches its parent


def test_the_command_line_says_a_bad_usage_in_one_line_and_exits_2(tmp_path):
    """Meaningless numbers and missing arguments: one line on stderr naming the option, exit 2,
    no usage dump, no run (``--timeout -5`` and ``0`` ran and reported "none" with exit 0);
    ``--version`` names angr-ram's and angr's versions."""
    import subprocess
    import sys
    binary = os.fspath(BUILD / "branches_O0")
    for argv in (["run", binary, "--timeout", "-5"], ["run", binary, "--timeout", "0"],
                 ["run", binary, "--timeout", "soon"], ["replay", os.fspath(tmp_path), binary, "--timeout", "-1"],
                 ["run"], ["run", binary, "--no-such-option"]):
        r = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", *argv], capture_output=True, text=True,
                           timeout=120, check=False)
        assert r.returncode == 2 and r.stdout == "", (argv, r)
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, (argv, r.stderr)
    r = subprocess.run([sys.executable, "-m", "angr_ram.run.cli", "--version"], capture_output=True, text=True,
                       timeout=120, check=False)
    assert r.returncode == 0 and r.stdout.startswith("angr-ram ") and "angr 9.2.213" in r.stdout


def test_outcomes_are_listed_by_exit_code_then_output():
    """``sum=10`` before ``sum=100``, exit 2 before exit 10, no exit last (they were in string order)."""
    from angr_ram.run.summary import by_exit_code
    got = by_exit_code({(10, b"a\n"), (2, b"sum=100\n"), (2, b"sum=10\n"), (None, b""), (0, b"z")})
    assert got == [(0, b"z"), (2, b"sum=10\n"), (2, b"sum=100\n"), (10, b"a\n"), (None, b"")]


def test_replay_refuses_what_is_not_a_test_directory_of_its_binary_in_one_line(tmp_path, capsys):
    """A garbage manifest, a line missing keys, binary bytes, a list, a deleted input, a source
    file or a directory as the binary, tests made for another binary: each one line, exit 2 (they
    raised JSONDecodeError, KeyError, UnicodeDecodeError, TypeError, FileNotFoundError,
    PermissionError, or replayed as mismatches with no hint); the tests replay on their own binary."""
    import shutil
    binary = os.fspath(BUILD / "branches_O0")
    d = tmp_path / "t"
    assert main(["run", binary, "--stdin-bytes", "1", "--emit-tests", os.fspath(d)]) == 0
    manifest = (d / "tests.jsonl").read_text()
    assert '"binary_sha256"' in manifest
    capsys.readouterr()
    assert main(["replay", os.fspath(d), binary]) == 0

    def refused(argv, why):
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and why in err, (argv, err)

    refused(["replay", os.fspath(d), os.fspath(BUILD / "branches_O2")], "another binary")
    src = tmp_path / "prog.c"
    src.write_text("int main(void) { return 0; }\n")
    refused(["replay", os.fspath(d), os.fspath(src)], "not an executable")
    refused(["replay", os.fspath(d), os.fspath(tmp_path)], "a directory")
    for text, why in (("{not json\n", "not a test"), ('{"id": "x"}\n', "not a test"), ("[1, 2]\n", "not a test")):
        (d / "tests.jsonl").write_text(text)
        refused(["replay", os.fspath(d), binary], why)
    (d / "tests.jsonl").write_bytes(b"\xff\xfe\x00binary")
    refused(["replay", os.fspath(d), binary], "not a test manifest")
    (d / "tests.jsonl").write_text(manifest)
    first = manifest.splitlines()[0]
    (d / json.loads(first)["stdin"]).unlink()
    refused(["replay", os.fspath(d), binary], "missing")
    shutil.rmtree(d)
    refused(["replay", os.fspath(d), binary], "not a directory of tests")


def test_the_cli_spills_under_its_memory_cap_by_default(capsys):
    """``angr-ram run`` spills waiting states above 85% of ``--max-rss-mb`` unless told otherwise
    (``--spill-rss-mb 0``): under a cap every process is above (128 MB), wordsplit over 5 bytes
    spills and still finds its 32 paths and 5 outcomes; with spilling off, the same, none spilled;
    with ``--merge`` (which spilling cannot carry) none is added and the run goes on."""
    b = os.fspath(BUILD / "wordsplit_O0")
    runs = {}
    for name, extra in (("default", []), ("off", ["--spill-rss-mb", "0"]),
                        ("merge", ["--merge", "pat", "--merge-points", "auto"])):
        assert main(["run", b, "--stdin-bytes", "5", "--json", "--max-rss-mb", "128", *extra]) == 0
        runs[name] = json.loads(capsys.readouterr().out)
    outcomes = {k: {(o["exit"], o["stdout"]) for o in r["outcomes"]} for k, r in runs.items()}
    assert len(outcomes["off"]) == 5 and outcomes["default"] == outcomes["off"] == outcomes["merge"]
    assert runs["default"]["stats"]["paths"] == runs["off"]["stats"]["paths"] == 32
    assert runs["default"]["spilled"] > 0 and runs["default"]["spilled_left"] == 0
    assert runs["off"]["spilled"] == 0 and runs["merge"]["spilled"] == 0
