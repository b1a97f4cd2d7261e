"""KLEE-style input templates (the seeds' m4, make, gas and bash runs): the template's bytes as
given, each ``?`` a symbolic byte within a range. Runs reach the outcome set native runs give over
the template's domain, and their tests replay natively; from the API, a user's script and the CLI."""

import json
import os

import angr
import pytest

import angr_ram
from angr_ram.core.errors import AngrRamError
from angr_ram.run.cli import main
from angr_ram.run.inputs import Template, parse_range
from angr_ram.run.runner import explore, summarize
from angr_ram.run.testcases import read_tests

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set_over

TEXT = b"d(a,3)d(?,5)$?$?"      # a definition of a fixed name, one of a symbolic name, two references
LO, HI = ord("a"), ord("h")     # ?-bytes in a..h: 512 inputs to run natively


def _domain(t: Template):
    return [range(t.lo, t.hi + 1) if b == ord("?") else [b] for b in t.data]


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_a_stdin_template_reaches_every_outcome_of_its_domain(opt):
    b = os.fspath(BUILD / f"symtab_{opt}")
    t = Template(TEXT, LO, HI)
    r = explore(b, t, tests=True)
    want = outcome_set_over(b, _domain(t))
    assert len(want) >= 6 and r.outcomes == want
    assert not r.errors and r.stopped is None
    for test in r.tests:                 # the template's bytes as given, the ?-bytes in range
        assert len(test.stdin) == len(TEXT)
        assert all((LO <= c <= HI) if k in t.holes else c == TEXT[k] for k, c in enumerate(test.stdin)), test.stdin
    assert_tests_replay(b, r)


@pytest.mark.slow
def test_a_file_template_from_the_command_line_replays_natively(tmp_path, capsys):
    """``--sym-file-template NAME:FILE`` with ``--template-range``: the program opens the file named
    by its argument; the outcomes are those of the same template on stdin, and every emitted test
    (its file's content included) replays natively."""
    b = os.fspath(BUILD / "symtab_O0")
    (tmp_path / "t.in").write_bytes(TEXT)
    out = tmp_path / "tests"
    rc = main(["run", b, "--arg-str", "input.txt", "--sym-file-template", f"input.txt:{tmp_path / 't.in'}",
               "--template-range", "a-h", "--emit-tests", os.fspath(out), "--json"])
    assert rc == 0
    res = json.loads(capsys.readouterr().out)
    got = {(o["exit"], o["stdout"].encode("latin-1")) for o in res["outcomes"]}
    assert got == outcome_set_over(b, _domain(Template(TEXT, LO, HI)))
    tests = read_tests(out)
    assert {t.files["input.txt"][:6] for t in tests} == {b"d(a,3)"} and tests[0].args == [b"input.txt"]
    assert main(["replay", os.fspath(out), b]) == 0
    assert "mismatch" not in capsys.readouterr().out


def test_a_users_script_with_a_template_and_the_default_range():
    """``make_state(proj, Template(...))`` in a user's script with angr's defaults otherwise: the
    ``?`` is any of KLEE's 'A'..'z' (58 bytes, so 'a'..'h' and the others are reached)."""
    b = os.fspath(BUILD / "symtab_O2")
    proj = angr.Project(b, auto_load_libs=False)
    t = Template(b"d(c,4)$?")
    assert (t.lo, t.hi) == (ord("A"), ord("z")) and t.holes == [7]
    simgr = proj.factory.simulation_manager(angr_ram.make_state(proj, t))
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    r = summarize(simgr, tech, tests=True)
    assert r.outcomes == outcome_set_over(b, _domain(t)) == {(4, b"4\n"), (0, b"0\n")}
    assert all(ord("A") <= test.stdin[7] <= ord("z") for test in r.tests)
    assert_tests_replay(b, r)


@pytest.mark.parametrize(("argv", "message"), [
    (["--sym-stdin-template", "/no/such/template"], "cannot read template /no/such/template"),
    (["--stdin-bytes", "2", "--sym-stdin-template", "{t}"], "either --stdin-bytes or --sym-stdin-template"),
    (["--sym-stdin-template", "{t}", "--template-range", "z-a"], "byte range"),
    (["--sym-file-template", "{t}"], "NAME:FILE"),
    (["--sym-file-template", "a:{t}", "--sym-file", "a:3"], "given twice"),
])
def test_bad_template_arguments_get_one_line(tmp_path, capsys, argv, message):
    t = tmp_path / "t.in"
    t.write_bytes(b"$?")
    rc = main(["run", os.fspath(BUILD / "symtab_O0"), *[a.replace("{t}", os.fspath(t)) for a in argv]])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_template_values_are_checked():
    assert parse_range("A-z") == (65, 122) and parse_range("0x66-0x67") == (0x66, 0x67)
    for bad in ("z-a", "a", "1-300", "a-"):
        with pytest.raises(AngrRamError, match="byte range"):
            parse_range(bad)
    with pytest.raises(AngrRamError, match="empty"):
        Template(b"")
    with pytest.raises(AngrRamError, match="bytes"):
        Template("d(?,1)")
    with pytest.raises(AngrRamError, match="Template"):
        explore(os.fspath(BUILD / "symtab_O0"), "d(?,1)")
