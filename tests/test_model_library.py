"""angr-ram's models as a SimLibrary with one precedence rule (angr_ram/procedures/model_library.py),
and the POSIX models as a package a script can put on stock angr (angr_ram/posix/)."""

import os
import subprocess

import angr
import pytest

from angr_ram.posix.getopt import GETOPT_PROCEDURES
from angr_ram.posix.installation import install_procedures, ram_library
from angr_ram.posix.library import install_posix, posix_library
from angr_ram.posix.startup import Setlocale
from angr_ram.procedures.installation import core_library
from angr_ram.procedures.model_library import ModelLibrary, ModelSet, Precedence, hook_library
from angr_ram.procedures.strings import RamStrlen

from .conftest import BUILD


class _Mine(angr.SimProcedure):
    def run(self):  # pylint: disable=arguments-differ
        return 7


def _project(name="getopts_O0"):
    return angr.Project(os.fspath(BUILD / name), auto_load_libs=False)


def test_a_name_belongs_to_one_model_set():
    with pytest.raises(ValueError, match="'strlen' is modelled by both 'a' and 'b'"):
        ModelLibrary("x", [ModelSet("a", {"strlen": RamStrlen}), ModelSet("b", {"strlen": RamStrlen})])
    with pytest.raises(ValueError, match="'strlen'"):
        ModelLibrary("x", [ModelSet("a", {"strlen": RamStrlen})]).merged(
            ModelLibrary("y", [ModelSet("b", {"strlen": RamStrlen})]))
    lib = ram_library()
    assert set(lib.procedures) == set(core_library().procedures) | set(posix_library().procedures)
    assert len(lib.procedures) == len(core_library().procedures) + len(posix_library().procedures) > 400
    assert lib.set_of["getopt_long"] == "getopt" and lib.precedence["getopt_long"] is Precedence.UNDER_ANGR
    assert lib.set_of["malloc"] == "heap" and lib.precedence["malloc"] is Precedence.OVER_ANGR
    assert "malloc" not in ram_library(heap=False).procedures
    assert "strlen" not in ram_library(string_procedures=False).procedures


def test_the_precedence_rule_over_angr_under_angr_and_the_users():
    p = _project()
    angr_puts = p.hooked_by(p.loader.find_symbol("puts").rebased_addr)
    assert angr_puts.library_name.startswith("libc.so") and not angr_puts.is_stub
    p.hook_symbol("atoi", _Mine(display_name="mine"), replace=True)         # the user's
    lib = ModelLibrary("t", [ModelSet("over", {"atoi": RamStrlen, "getchar": _Mine}),
                             ModelSet("under", {"puts": Setlocale, "getopt_long": GETOPT_PROCEDURES["getopt_long"]},
                                      Precedence.UNDER_ANGR)])
    done = hook_library(p, lib)
    assert sorted(done) == ["getchar", "getopt_long"]
    by = {n: p.hooked_by(p.loader.find_symbol(n).rebased_addr) for n in ("atoi", "getchar", "puts", "getopt_long")}
    assert by["atoi"].display_name == "mine"                    # the user's hook stays
    assert isinstance(by["getchar"], _Mine)                       # over angr's model
    assert by["puts"] is angr_puts                                # angr models puts: under it, nothing
    assert type(by["getopt_long"]).__name__ == "GetoptLong"       # angr stubs getopt_long: filled in
    assert {h.display_name for n, h in by.items() if n != "atoi"} == {"getchar", "puts", "getopt_long"}
    assert by["getopt_long"].library_name == "t"


@pytest.mark.skipif(not os.path.exists("/usr/bin/sort"), reason="Debian's coreutils")
def test_every_installed_model_carries_its_name_and_library():
    p = angr.Project("/usr/bin/sort", auto_load_libs=False)
    install_procedures(p)
    ours = {s.name: p.hooked_by(s.rebased_addr) for s in p.loader.symbols
            if s.name in ram_library().procedures and p.is_hooked(s.rebased_addr)}
    assert len(ours) > 60
    assert {n: (h.display_name, h.library_name) for n, h in ours.items()} == {n: (n, "angr-ram") for n in ours}


def _native(b, args, stdin):
    r = subprocess.run([b, *args], input=stdin, capture_output=True, timeout=10, check=False)
    return r.returncode, r.stdout


@pytest.mark.parametrize("args", [["-ab", "--count=3", "--verbose", "x"], ["--cou=2", "-v2", "--", "-a"],
                                  ["-n"], ["--quiet", "-z", "y"]])
def test_the_posix_models_run_on_stock_angr(args):
    """``install_posix`` on a stock project, stepped by a stock simulation manager: glibc's
    ``getopt_long`` (which angr only stubs) parses as natively (stock angr's stub returns any value)."""
    b = os.fspath(BUILD / "getopts_O0")
    p = angr.Project(b, auto_load_libs=False)
    hooked = install_posix(p)
    assert "getopt_long" in hooked and "malloc" not in hooked
    st = p.factory.entry_state(args=[b, *args], stdin=angr.SimFileStream(name="stdin", content=b"\x02", has_end=True))
    simgr = p.factory.simgr(st)
    simgr.run()
    assert {s.posix.dumps(1) for s in simgr.deadended} == {_native(b, args, b"\x02")[1]}   # stock angr exits 0



def test_without_the_posix_models_stock_angr_stubs_getopt():
    p = angr.Project(os.fspath(BUILD / "getopts_O0"), auto_load_libs=False)
    assert p.hooked_by(p.loader.find_symbol("getopt_long").rebased_addr).is_stub
