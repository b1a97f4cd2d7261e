"""``angr-ram run`` as a user types it: undeclared files, --max-paths, find targets, the command's
time, small solver budgets, the short summary and progress (issue 84)."""

import json
import os
import re
import subprocess
import sys

from elftools.elf.elffile import ELFFile

from angr_ram.run.cli import main
from angr_ram.run.summary import outcome_lines

from .conftest import BUILD


def _json(capsys, argv) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _refused(capsys, argv, *words) -> str:
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as e:         # argparse's own checks exit
        rc = e.code
    assert rc == 2, argv
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and all(w in err for w in words), err
    return err


def test_a_file_the_run_did_not_declare_does_not_exist(tmp_path, capsys):
    """fileread opens input.dat: with no --sym-file, or another file declared, fopen fails as it does
    natively (before: the file existed with any content, 8 paths whose tests all mismatched)."""
    b = os.fspath(BUILD / "fileread_O0")
    for extra in ([], ["--sym-file", "other.dat:3"]):
        d = tmp_path / f"t{len(extra)}"
        r = _json(capsys, ["run", b, *extra, "--emit-tests", os.fspath(d)])
        assert {(o["exit"], o["stdout"]) for o in r["outcomes"]} == {(9, "cannot open\n")}
        assert main(["replay", os.fspath(d), b]) == 0
    r = _json(capsys, ["run", b, "--sym-file", "input.dat:3"])
    assert {o["exit"] for o in r["outcomes"]} == {0, 1, 2, 3, 4}


def test_max_paths_reports_that_many_paths_and_tests(tmp_path, capsys):
    """wordsplit's 32 paths over 5 bytes finish in one step: --max-paths 10 reports 10 paths and
    writes 10 tests (before: 32 and 32), the others counted as beyond the limit; all replay."""
    b = os.fspath(BUILD / "wordsplit_O2")
    d = tmp_path / "t"
    r = _json(capsys, ["run", b, "--stdin-bytes", "5", "--max-paths", "10", "--search", "all", "--emit-tests", os.fspath(d)])
    assert r["stopped"] == "max-paths" and r["stats"]["paths"] == 10 and sum(r["endings"].values()) == 10
    assert r["tests"] == 10 + r["unfinished"] and r["beyond_max_paths"] > 0
    assert r["stats"]["paths"] + r["beyond_max_paths"] + r["unfinished"] == 32
    assert main(["replay", os.fspath(d), b]) == 0


def _offsets(binary) -> tuple[int, int]:
    """(main's offset, .rodata's offset) as nm and objdump print them."""
    with open(binary, "rb") as f:
        elf = ELFFile(f)
        main_at = next(s["st_value"] for s in elf.get_section_by_name(".symtab").iter_symbols() if s.name == "main")
        return main_at, elf.get_section_by_name(".rodata")["sh_addr"]


def test_find_targets_that_no_state_can_have_are_refused(capsys):
    """A PIE binary's nm offset (says where angr maps it), an unmapped address, data, the middle of
    an instruction: one line each, exit 2 (before: found 0, no word)."""
    b = os.fspath(BUILD / "fileread_O0")
    off, rodata = _offsets(b)
    err = _refused(capsys, ["run", b, "--find", hex(off)], "position-independent")
    assert f"{0x400000 + off:#x}" in err
    _refused(capsys, ["run", b, "--avoid", "0x7777777"], "not an address")
    _refused(capsys, ["run", b, "--find", hex(0x400000 + rodata)], "data, not in its code")
    _refused(capsys, ["run", b, "--find", hex(0x400000 + off + 2)], "inside an instruction of main")


def test_an_unreached_find_target_is_said_and_a_found_input_is_shown(capsys):
    """fclose is never called when the file does not exist: the run says no path reached it. A
    reached target's input is in the summary and the JSON (before: only in the test files)."""
    assert main(["run", os.fspath(BUILD / "fileread_O0"), "--find", "fclose"]) == 0
    assert "no path reached the find target fclose" in capsys.readouterr().err
    b = os.fspath(BUILD / "wordsplit_O0")
    r = _json(capsys, ["run", b, "--stdin-bytes", "5", "--find", "long_word"])
    assert r["found"] >= 1 and r["found_inputs"]
    stdin = bytes.fromhex(r["found_inputs"][0]["stdin"])
    assert re.search(rb"[^ \t\n\v\f\r]{4}", stdin), stdin       # a word of four bytes
    assert main(["run", b, "--stdin-bytes", "5", "--find", "long_word"]) == 0
    shown = re.search(r"\n  input: stdin=(b'.*')\n", capsys.readouterr().out)     # a model: not always the same
    assert shown and re.search(rb"[^ \t\n\v\f\r]{4}", eval(shown.group(1)))


def test_the_printed_time_is_the_commands_time():
    """The summary's time includes loading angr and the binary (before: `2 paths in 0.13s` for a
    command of 1.9 s); exploring is shown beside it. Also: a closed pipe ends quietly."""
    cmd = [sys.executable, "-m", "angr_ram.run.cli", "run", os.fspath(BUILD / "branches_O0"), "--stdin-bytes", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
    m = re.match(r".*: \d+ paths in ([\d.]+)s \(exploring ([\d.]+)s\)", r.stdout)
    assert m, r.stdout
    total, exploring = float(m.group(1)), float(m.group(2))
    assert total > exploring and total >= 0.5        # importing angr alone takes longer than that
    r = subprocess.run(f"{' '.join(cmd)} | head -1", shell=True, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in r.stderr and "paths in" in r.stdout


def test_solver_budgets_too_small_to_decide_anything_are_refused(capsys):
    """--solver-timeout-ms 5 lost the paths of trivial programs to the unknown stash: refused in
    one line; 100 ms decides them all."""
    b = os.fspath(BUILD / "branches_O0")
    _refused(capsys, ["run", b, "--stdin-bytes", "5", "--solver-timeout-ms", "5"], "too short")
    _refused(capsys, ["run", b, "--stdin-bytes", "5", "--defer-ms", "-3"], "too short")
    _refused(capsys, ["run", b, "--stdin-bytes", "5", "--resume-ms", "2"], "too short")
    full = _json(capsys, ["run", b, "--stdin-bytes", "5"])
    small = _json(capsys, ["run", b, "--stdin-bytes", "5", "--solver-timeout-ms", "100"])
    assert small["unknown"] == 0 and small["outcomes"] == full["outcomes"]
    whole = _json(capsys, ["run", b, "--stdin-bytes", "5", "--resume-ms", "0"])
    assert whole["unknown"] == 0 and whole["outcomes"] == full["outcomes"]
    _refused(capsys, ["run", os.fspath(BUILD)], "is a directory")


def test_the_summary_is_short_and_the_counters_are_behind_stats(capsys):
    """No 1,500-character stats line by default; --stats lists the counters one per line; an
    input-dependent exit code is named by its values; error paths say read or write and the object."""
    b = os.fspath(BUILD / "oob_O0")
    assert main(["run", b, "--stdin-bytes", "1"]) == 0
    out = capsys.readouterr().out
    assert "stats" not in out and max(len(ln) for ln in out.splitlines()) < 400
    assert re.search(r"out-of-bounds: write of 1 byte .*heap object #1 \(size 10", out), out
    assert main(["run", b, "--stdin-bytes", "1", "--stats"]) == 0
    out = capsys.readouterr().out
    assert "\n  z3_checks = " in out and "\n  paths = 2" in out
    r = _json(capsys, ["run", os.fspath(BUILD / "exitcode_O0"), "--stdin-bytes", "1"])
    assert len(r["endings"]) == 2 and r["endings"]["exit 0|1|2|3"] == 1, r["endings"]   # was {"exit": 2}
    assert any(re.fullmatch(r"exit \d+\|\d+\|\d+\|\d+\|\.\.\.", k) for k in r["endings"]), r["endings"]
    assert main(["run", os.fspath(BUILD / "exitcode_O2"), "--stdin-bytes", "1"]) == 0
    assert "\n  exit 0-97: b''\n" in capsys.readouterr().out


def test_outcome_lines_join_consecutive_codes_with_one_output():
    got = outcome_lines({(c, b"") for c in range(0, 98)} | {(2, b"x\n"), (200, b""), (None, b"o")})
    assert got == ["  exit 0-97: b''", "  exit 2: b'x\\n'", "  exit 200: b''", "  no exit: b'o'"]


def test_progress_lines_every_few_seconds_when_piped():
    """--progress S writes a line with elapsed time, paths and rate to stderr (before: nothing when
    the output is not a terminal), and a last one at the end."""
    cmd = [sys.executable, "-m", "angr_ram.run.cli", "run", os.fspath(BUILD / "wordsplit_O2"),
           "--stdin-bytes", "4", "--progress", "0.5"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
    lines = [ln for ln in r.stderr.splitlines() if "paths" in ln]
    assert lines and re.match(r"\s*[\d.]+s  paths +16 \([\d.]+/s\)  active +0  errors +0$", lines[-1]), r.stderr


def test_help_is_plain_text_and_a_plot_without_matplotlib_is_refused_at_once(monkeypatch, capsys):
    """--help had reStructuredText markup; bench --models --plot ran its tables for minutes and then
    failed with a traceback when matplotlib was missing."""
    import time

    from angr_ram.run.cli import build_parser
    for text in (build_parser().format_help(), *(a.format_help() for a in build_parser()._subparsers
                                                 ._group_actions[0].choices.values())):
        assert "``" not in text and ":class:" not in text
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib raises ImportError
    t0 = time.perf_counter()
    err = _refused(capsys, ["bench", "--models", "--plot", "x.png"], "needs matplotlib", "angr-ram[bench]")
    assert time.perf_counter() - t0 < 5, err


def test_stats_plots_coverage_and_paths_over_time(tmp_path, capsys):
    """``angr-ram stats DIR... --plot PNG`` (issue 81, item 2): a PNG with a line per run; a
    directory without a run's series is refused in one line."""
    b = os.fspath(BUILD / "wordsplit_O2")
    runs = []
    for n in (3, 4):
        d = tmp_path / f"t{n}"
        assert main(["run", b, "--stdin-bytes", str(n), "--emit-tests", os.fspath(d)]) == 0
        runs.append(os.fspath(d))
    png = tmp_path / "cov.png"
    assert main(["stats", *runs, "--plot", os.fspath(png)]) == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert f"plot written to {png}" in capsys.readouterr().out
    (tmp_path / "empty").mkdir()
    assert main(["stats", os.fspath(tmp_path / "empty"), "--plot", os.fspath(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert "no coverage series" in err and "\n" not in err
