"""Statically linked programs: libc recognised by its symbols (angr_ram/procedures/static_libc.py).

``samples/staticio.c`` built dynamically, with ``-static`` at -O0 and -O2, and ``-static-pie``:
each reaches the outcomes the program gives natively over every two-byte input (the dynamic build's
set, computed with the fork server, which cannot preload into a static program), and every test
replays natively on the binary it was made for. Before, every path of a static build printed
nothing (glibc's buffered output is flushed by exit handlers angr never runs).
"""

import os

import angr
import claripy
import pytest

import angr_ram
from angr_ram.procedures.static_libc import indirect_slots, install_static_libc, is_static
from angr_ram.run.runner import explore, summarize

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set

VARIANTS = ("staticio_static_O0", "staticio_static_O2", "staticio_staticpie_O2")


@pytest.fixture(scope="module")
def native():
    return outcome_set(os.fspath(BUILD / "staticio_O0"), 2)


@pytest.mark.parametrize("binary", ("staticio_O0", *VARIANTS))
def test_static_builds_reach_the_native_outcomes_and_replay(binary, native):
    b = os.fspath(BUILD / binary)
    r = explore(b, 2, tests=True)
    assert len(native) == 14 and r.errors == []
    assert r.outcomes == native
    assert_tests_replay(b, r)


def test_libc_functions_are_hooked_by_symbol_and_through_their_selected_implementations():
    """printf, puts and the rest get angr's procedures at their symbols; strlen (a GNU indirect
    function) gets angr-ram's, at its selector and at the implementation CLE put in its slot."""
    p = angr.Project(os.fspath(BUILD / "staticio_static_O2"), auto_load_libs=False)
    assert is_static(p)
    assert not is_static(angr.Project(os.fspath(BUILD / "staticio_O2"), auto_load_libs=False))
    names = install_static_libc(p)
    assert {"printf", "puts", "fputs", "fwrite", "malloc", "exit"} <= set(names)
    slots = indirect_slots(p.loader.main_object)
    strlen = p.loader.find_symbol("strlen").rebased_addr
    assert strlen in slots and p.is_hooked(slots[strlen])
    assert p.hooked_by(slots[strlen]) is p.hooked_by(strlen)
    assert install_static_libc(angr.Project(os.fspath(BUILD / "staticio_O2"), auto_load_libs=False)) == []


def test_a_users_script_on_a_static_pie_program(native):
    """Driven as angr users drive it: their own entry state, one 16-bit BVS as stdin, angr's
    default options, the technique attached by hand."""
    p = angr.Project(os.fspath(BUILD / "staticio_staticpie_O2"), auto_load_libs=False)
    x = claripy.BVS("x", 16)
    sm = p.factory.simulation_manager(p.factory.entry_state(
        stdin=angr.SimFileStream(name="stdin", content=x, has_end=True)))
    tech = sm.use_technique(angr_ram.RelocatableMemory())
    sm.run()
    assert len(sm.deadended) == 14 and not sm.errored
    assert summarize(sm, tech).outcomes == native       # a path printing a selected name: each of its outcomes
