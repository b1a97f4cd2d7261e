"""KLEE's input options: --sym-args, --sym-files, --sym-stdin (issue 81, item 3), from the CLI and
from explore(); every test they give replays natively."""

import json
import os
import shutil

import pytest

from angr_ram.core.errors import AngrRamError
from angr_ram.run.cli import main
from angr_ram.run.inputs import SymArgs, arg_lists, make_state, sym_files
from angr_ram.run.runner import explore, load_project

from .conftest import BUILD


def _run(capsys, argv) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_sym_args_explores_every_count_and_its_tests_replay(tmp_path, capsys):
    """argnum with 0 to 2 symbolic arguments of 2 bytes: argc < 2 (exit 9) and every class of
    argv[1] (before: one count per --arg, no range)."""
    b = os.fspath(BUILD / "argnum_O0")
    d = tmp_path / "t"
    r = _run(capsys, ["run", b, "--sym-args", "0", "2", "2", "--emit-tests", os.fspath(d)])
    assert {o["exit"] for o in r["outcomes"]} == {0, 1, 2, 3, 4, 5, 9}
    capsys.readouterr()
    assert main(["replay", os.fspath(d), b]) == 0
    assert f"{r['tests']} tests: ok {r['tests']}" in capsys.readouterr().out
    assert {o for o in explore(b, args=[SymArgs(0, 2, 2)]).outcomes} == {(o["exit"], o["stdout"].encode())
                                                                        for o in r["outcomes"]}


def test_arg_lists_expand_ranges_in_order():
    assert arg_lists(["-x", SymArgs(0, 1, 3), 2]) == [["-x", 2], ["-x", 3, 2]]
    assert len(arg_lists([SymArgs(0, 1, 10), SymArgs(0, 2, 2)])) == 6
    assert sym_files(2, 8) == [("A", 8), ("B", 8)]
    for bad in ((2, 1, 3), (0, 1, 0), (-1, 1, 2)):
        with pytest.raises(AngrRamError):
            SymArgs(*bad)
    with pytest.raises(AngrRamError, match="several entry states"):
        make_state(load_project(os.fspath(BUILD / "argnum_O0")), args=[SymArgs(0, 1, 2)])


@pytest.mark.parametrize("argv", [["--sym-args", "2", "1", "3"], ["--sym-args", "0", "x", "3"],
                                  ["--sym-files", "0", "4"], ["--sym-stdin", "0"],
                                  ["--sym-stdin", "2", "--stdin-bytes", "2"]])
def test_bad_klee_options_are_one_line(argv, capsys):
    try:
        rc = main(["run", os.fspath(BUILD / "argnum_O0"), *argv])
    except SystemExit as e:
        rc = e.code
    assert rc == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.skipif(shutil.which("wc") is None, reason="needs the system's wc")
def test_sym_files_and_sym_stdin_on_debian_wc(tmp_path, capsys):
    """`wc -l A` over a symbolic file A of 3 bytes: 0 to 3 lines, each test replays with its file;
    --sym-stdin 2 is --stdin-bytes 2."""
    wc = shutil.which("wc")
    d = tmp_path / "t"
    r = _run(capsys, ["run", wc, "--arg-str", "-l", "--arg-str", "A", "--sym-files", "1", "3",
                      "--emit-tests", os.fspath(d), "--timeout", "120"])
    assert {o["stdout"] for o in r["outcomes"]} == {f"{n} A\n" for n in range(4)}
    capsys.readouterr()
    assert main(["replay", os.fspath(d), wc]) == 0
    a = _run(capsys, ["run", os.fspath(BUILD / "wordsplit_O2"), "--sym-stdin", "2"])
    b = _run(capsys, ["run", os.fspath(BUILD / "wordsplit_O2"), "--stdin-bytes", "2"])
    assert a["outcomes"] == b["outcomes"] and a["stats"]["paths"] == 4
