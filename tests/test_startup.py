"""A GNU program's start-up and messages are modelled, not stubbed: locale and catalogue set-up, exit
handlers, getopt_long without options, gettext, the fortified printf family. Debian's own ``tr``
runs its real path, and what is still a stub is named."""

import os
import shutil
import subprocess

import pytest

from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_a_gnu_style_program_reaches_its_native_outcomes_without_stubs(opt):
    """gnustart: setlocale, bindtextdomain, textdomain, atexit, getopt_long, strrchr(argv[0]),
    gettext/ngettext/dcgettext, printf and fprintf (``__printf_chk``/``__fprintf_chk`` at -O2)."""
    b = os.fspath(BUILD / f"gnustart_{opt}")
    r = explore(b, 1, tests=True)
    assert r.outcomes == outcome_set(b, 1)
    assert r.stubs == {} and not r.errors
    assert_tests_replay(b, r)


@pytest.mark.slow
def test_options_are_parsed_and_a_symbolic_one_parses_by_cases():
    """``-v`` and ``--verbose`` are parsed as glibc parses them (angr_ram/posix/getopt.py): the
    native outcomes, no stub. A symbolic argument forks on what its bytes decide (a dash, which
    option letter or long-option name, the end of the word) and follows glibc in each case: the run
    completes, no stub (before: getopt_long stayed a stub on the paths where the argument was an
    option, whose any-value return kept the option loop going until the time limit), and every
    test replays."""
    b = os.fspath(BUILD / "gnustart_O0")
    for argv in (["-v"], ["--verbose", "x"], ["--verb"]):
        r = explore(b, 1, args=argv, tests=True)
        native = {(p.returncode, p.stdout) for p in
                  (subprocess.run([b, *argv], input=bytes([x]), capture_output=True) for x in range(256))}
        assert r.stopped is None and r.stubs == {} and r.outcomes == native, argv
    r = explore(b, 1, args=[2], tests=True, timeout=300)
    assert r.stopped is None and r.stubs == {} and r.errors == []
    assert any(t.args[0][:2] == b"-v" for t in r.tests)              # the option's own path
    runs = replay(r.tests, b)
    assert all(run.status == "ok" for run in runs), [(run.status, run.detail) for run in runs]
    plain = explore(b, 1, args=["plain"], tests=True)      # not an option: exact again
    assert plain.stubs == {} and plain.outcomes == outcome_set(b, 1)


@pytest.mark.skipif(shutil.which("tr") is None, reason="no tr on this machine")
def test_debians_tr_translates_stdin_and_every_test_replays():
    """``tr a b`` on one symbolic stdin byte: angr's stubs sent every path to the usage message
    (exit 1, all 41 tests mismatching natively); now its outcomes are the native ones."""
    tr = shutil.which("tr")
    r = explore(tr, 1, args=["a", "b"], tests=True, timeout=240)
    native = {(p.returncode, p.stdout) for p in
              (subprocess.run([tr, "a", "b"], input=bytes([x]), capture_output=True) for x in range(256))}
    assert r.stopped is None and r.outcomes == native
    assert r.stubs == {}
    runs = replay(r.tests, tr)
    assert runs and all(run.status == "ok" for run in runs if run.test.kind == "exit")


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_signal_sets_strsignal_and_isatty_are_modelled(opt):
    """sigcalls: a signal chosen by the input added to a sigset_t (one 1024-bit value, no fork),
    strsignal's glibc text (m4 calls it at start-up; the stub's pointer went to strlen anywhere),
    isatty 0 as on a replay's pipe: both native outcomes, no stub, tests replay."""
    b = os.fspath(BUILD / f"sigcalls_{opt}")
    r = explore(b, 1, tests=True)
    assert r.outcomes == outcome_set(b, 1) and len(r.outcomes) == 2
    assert r.stubs == {} and not r.errors
    assert_tests_replay(b, r)
