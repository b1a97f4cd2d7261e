"""A program's own libraries (angr_ram.run.libraries): Debian's ``expr`` computes with libgmp.
Loaded without it, every gmp call is an angr stub that returns any value and the paths print
numbers the native program never prints; the CLI and explore() load it, a user's script that loads
it gets the native outcome set, and one that does not is told which library to load."""

import itertools
import os
import shutil
import subprocess

import angr
import claripy
import pytest

import angr_ram
from angr_ram.run.libraries import MODELLED, needed_libraries, own_libraries
from angr_ram.run.replay import replay
from angr_ram.run.runner import explore, summarize

from .conftest import BUILD, assert_tests_replay

EXPR = shutil.which("expr") or "/usr/bin/expr"
needs_gmp_expr = pytest.mark.skipif(not os.path.isfile(EXPR) or not any(
    "libgmp" in n for n in needed_libraries(EXPR)), reason="no expr linked with libgmp on this machine")


def test_glibcs_and_the_cxx_runtimes_libraries_are_modelled_others_are_the_programs_own():
    for name in ("libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "ld-linux-x86-64.so.2",
                 "libstdc++.so.6", "libgcc_s.so.1"):
        assert MODELLED.match(name), name
    for name in ("libgmp.so.10", "libselinux.so.1", "libz.so.1", "libmagic.so.1", "libcrypt.so.1"):
        assert not MODELLED.match(name), name
    assert own_libraries(os.fspath(BUILD / "branches_O2")) == []
    assert own_libraries(os.fspath(BUILD / "no-such-binary")) == []


def _users_expr_run(alphabet: bytes, n: int, libraries):
    """A user's script: ``expr length X``, X one ``8 * n``-bit BVS over ``alphabet``."""
    proj = angr.Project(EXPR, auto_load_libs=False, force_load_libs=libraries)
    arg = claripy.BVS("x", 8 * n)
    st = proj.factory.entry_state(args=[EXPR, "length", arg])
    for byte in arg.chop(8):
        st.solver.add(claripy.Or(*[byte == c for c in alphabet]))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    return summarize(simgr, tech, tests=True)


def _native_length(alphabet: bytes, n: int) -> set:
    out = set()
    for v in itertools.product(alphabet, repeat=n):
        arg = bytes(v).split(b"\0")[0]        # argv strings end at a NUL
        p = subprocess.run([EXPR, "length", arg], capture_output=True, check=False, env={"LC_ALL": "C"})
        out.add((p.returncode, p.stdout))
    return out


@needs_gmp_expr
def test_a_users_script_that_loads_exprs_libgmp_gets_the_native_outcomes():
    """``expr length X`` over ``\\0 a ( +``: lengths 1 and 2 (exit 0), 0 (exit 1) and the syntax
    errors of ``(`` and ``+`` (exit 2); every test replays natively."""
    alphabet = b"\0a(+"
    r = _users_expr_run(alphabet, 2, own_libraries(EXPR))
    native = _native_length(alphabet, 2)
    assert len(native) == 4
    assert r.stubs == {} and r.errors == [] and r.warnings == []
    assert r.outcomes == native
    runs = replay(r.tests, EXPR, jobs=2)
    assert [x.status for x in runs if x.status != "ok"] == []


@needs_gmp_expr
def test_a_users_script_without_libgmp_is_told_which_library_to_load():
    """Without libgmp the stubs print any number (a test that does not replay); the summary names
    the library and the way to load it."""
    r = _users_expr_run(b"ab", 2, ())
    assert "__gmpz_out_str" in r.stubs
    gmp = next(p for p in own_libraries(EXPR) if "libgmp" in p)
    assert len(r.warnings) == 1 and "libgmp" in r.warnings[0] and f"force_load_libs=[{gmp!r}]" in r.warnings[0]


@needs_gmp_expr
@pytest.mark.slow
def test_explore_loads_exprs_libgmp_and_multiplies_a_symbolic_digit():
    """``expr X * 7`` with X any byte: 7 * d for the digits 1..9, ``0`` (exit 1) and the
    non-integer argument (exit 2), as natively; no stub."""
    r = explore(EXPR, args=[1, "*", "7"], tests=True)
    assert r.stubs == {} and r.errors == []
    assert r.outcomes == {(0, b"%d\n" % (7 * d)) for d in range(1, 10)} | {(1, b"0\n"), (2, b"")}
    assert_tests_replay(EXPR, r)
