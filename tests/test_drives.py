"""The same answers and the same work however angr-ram is driven (issue: drive parity).

Users attach the techniques to their own ``entry_state`` with angr's default options and one wide
``claripy.BVS``; the CLI and ``explore()`` use one variable per byte. What unwritten memory holds is
the technique's decision (``uninitialized``, the same default for both). These tests run both ways
and compare what the mechanisms do, not only the outcomes."""

import os

import angr
import claripy
import pytest

import angr_ram
from angr_ram.memory.object_store import ObjectStore
from angr_ram.run.runner import explore, summarize

from .conftest import BUILD, assert_tests_replay
from .test_loop_corpus import native as loop_native

ZERO_FILL = {angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY, angr.options.ZERO_FILL_UNCONSTRAINED_REGISTERS}


def script(binary: str, nbytes: int, wide: bool = True, options=frozenset(), merge: str | None = None, **tech):
    """A user's script: their entry state (angr's default options plus ``options``), the
    techniques attached (RelocatableMemory with ``tech``), ``simgr.run()``."""
    proj = angr.Project(binary, auto_load_libs=False)
    content = (claripy.BVS("stdin", 8 * nbytes) if wide
               else claripy.Concat(*[claripy.BVS(f"in{k}", 8) for k in range(nbytes)]))
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=content, size=nbytes, has_end=True),
                                  add_options=set(options))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory(**tech))
    if merge:
        simgr.use_technique(angr_ram.QuantifiedMerging(mode=merge, merge_points="auto"))
    simgr.run()
    return summarize(simgr, tech, tests=True)


def test_a_fully_written_array_read_at_a_symbolic_index_has_no_uninitialized_default():
    """An array of row pointers filled by a loop (malloc'd: unwritten bytes are unconstrained under
    angr's defaults) read at a symbolic aligned index: every word in bounds was written, so the
    selection has no fresh ``ram_uninit_read`` branch for z3 to reason about (4x slower checks);
    with one word missing it must keep it."""
    full = ObjectStore(32, claripy.BVS("ram_uninit_1", 256))
    for k in range(4):
        full.write(8 * k, claripy.BVS(f"row{k}", 64), 8)
    i = claripy.BVS("i", 64)
    v = full.read(i << 3, 8)
    assert not any(n.startswith("ram_uninit") for n in v.variables)
    assert {f"row{k}" for k in range(4)} <= {n.split("_")[0] for n in v.variables}
    partial = ObjectStore(32, claripy.BVS("ram_uninit_2", 256))
    for k in range(3):
        partial.write(8 * k, claripy.BVS(f"row{k}", 64), 8)
    assert any(n.startswith("ram_uninit") for n in partial.read(i << 3, 8).variables)


@pytest.mark.slow
def test_merging_with_symbolic_uninitialized_memory_merges_as_with_zero_fill():
    """wordcount under pattern merging with ``uninitialized="symbolic"``: unwritten registers read
    as stable ``uninit_reg_*`` variables, so forks that read ``xmm0`` at different times still
    merge; the merges and outcomes equal those of the zero-filled default."""
    b = os.fspath(BUILD / "wordcount6_O0")
    plain = script(b, 7, merge="pat", uninitialized="symbolic")
    zero = script(b, 7, merge="pat")
    assert plain.errors == [] and plain.unknown == 0
    assert plain.outcomes == zero.outcomes == loop_native("wordcount", "O0", 6)
    assert plain.stats["merge_merged_states"] == zero.stats["merge_merged_states"]
    assert not plain.stats.get("merge_incremental_refused_reg:xmm0lq")


@pytest.mark.parametrize("prog,nbytes,merge", [("c_strspn4_O0", 5, "pat"), ("b64class4_O2", 5, "pat"),
                                               pytest.param("hopsw4x3_O2", 4, None, marks=pytest.mark.slow),
                                               ("matrix10_O0", 2, None)])
@pytest.mark.parametrize("wide", [True, False])
def test_script_drives_reach_the_outcomes_of_explore_and_replay(prog, nbytes, merge, wide):
    """The three drives (explore, a wide BVS, a BVS per byte; angr's default options for the
    scripts) reach the same outcomes, and the scripts' tests replay natively."""
    b = os.fspath(BUILD / prog)
    want = explore(b, nbytes, merge=merge, merge_points="auto" if merge else ()).outcomes
    r = script(b, nbytes, wide=wide, merge=merge)
    assert r.errors == [] and r.unknown == 0
    assert r.outcomes == want
    assert_tests_replay(b, r)


@pytest.mark.slow
def test_double_matrix_lookup_with_sixteen_input_bytes_from_a_script():
    """Two [i][j] lookups with 4-byte indices (16 stdin bytes) in a 20x20 calloc'd matrix: the
    wide-BVS script finds the outcomes of explore()."""
    b = os.fspath(BUILD / "matrix2x_O0")
    want = explore(b, 16).outcomes
    r = script(b, 16)
    assert r.errors == [] and r.unknown == 0 and r.outcomes == want


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_quantified_merging_alone_prints_what_the_program_prints(opt):
    """QuantifiedMerging without RelocatableMemory (docs/reference/semantics.md: it works on any angr states): a
    merged word counter's ``printf("%d\\n", words)`` forks per value instead of printing one
    arbitrary value for every exit code, and main's return value is the exit code; the outcomes
    and stdout equal the native program's, and the tests replay."""
    from .groundtruth import outcome_set_over
    b = os.fspath(BUILD / f"wcprint_{opt}")
    proj = angr.Project(b, auto_load_libs=False)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=claripy.BVS("stdin", 56), size=7,
                                                           has_end=True))
    simgr = proj.factory.simulation_manager(st)
    qm = simgr.use_technique(angr_ram.QuantifiedMerging(mode="pat", merge_points="auto"))
    simgr.run()
    r = summarize(simgr, None, tests=True)
    assert r.outcomes == outcome_set_over(b, [range(0, 8)] + [b"\0 x"] * 6)
    assert qm.stats.merged_states > 0
    assert_tests_replay(b, r)


def _merging_alone(binary: str, alphabet: bytes, n: int):
    """A user's script with QuantifiedMerging(merge_points="auto") alone over ``n`` stdin bytes of
    ``alphabet``: (the outcomes of its deadended states, the native ones, the technique)."""
    from angr_ram.run.outcomes import path_outcomes

    from .groundtruth import outcome_set_over
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("stdin", 8 * n)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=n, has_end=True))
    for byte in data.chop(8):
        st.solver.add(claripy.Or(*[byte == c for c in alphabet]))
    simgr = proj.factory.simulation_manager(st)
    qm = simgr.use_technique(angr_ram.QuantifiedMerging(merge_points="auto"))
    simgr.run()
    assert not simgr.errored
    got = set().union(*(path_outcomes(s) for s in simgr.deadended))
    return got, outcome_set_over(binary, [alphabet] * n), qm


@pytest.mark.parametrize("prog", ["widestream", "sorting", "getopts"])
def test_merging_alone_runs_on_angr_rams_libc(prog):
    """QuantifiedMerging without RelocatableMemory hooks angr-ram's libc models (not its heap) and
    forks where they must know a value: widestream (fgetws: angr's stub gave an unconstrained FILE *,
    no result in 300 s; then a newline that may be there was taken as absent: 8 of 27 outcomes),
    sorting (angr's qsort is a stub: 3 wrong outcomes, 6 of 9 missing), getopts (getopt: no result in
    60 s). Every native outcome over three bytes (two for sorting), no wrong one."""
    n = 2 if prog == "sorting" else 3
    got, native, _ = _merging_alone(os.fspath(BUILD / f"{prog}_O2"), b"a\n\x00" if prog != "widestream" else b"ab\n", n)
    assert got == native


def test_merging_points_auto_in_a_program_without_loops(caplog):
    """merge_points="auto" on a program with no loop (intfmt) merges nothing and says so; the run
    goes on and reaches every native outcome (it raised an error before)."""
    import logging

    with caplog.at_level(logging.WARNING, logger="angr_ram.merging.fragments"):
        got, native, qm = _merging_alone(os.fspath(BUILD / "intfmt_O2"), b"a-1\x00", 2)
    assert got == native and qm.stats.merged_states == 0
    assert any("no loops" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("opt", ["O0", pytest.param("O2", marks=pytest.mark.slow)])
@pytest.mark.parametrize("mode", ["ite", "pat"])
@pytest.mark.slow
def test_a_merged_path_prints_no_byte_the_program_does_not_write(mode, opt):
    """``printf("acc %s\\n", words[k])`` with ``k`` computed without a branch in a merged state:
    the string's length is symbolic (4, 5 or 3 bytes); stock angr printed the longest case, so
    "acc big" came out as "acc big\\x00\\x00". The state forks per length: the outcomes and stdout
    are the native program's, and the tests replay."""
    from .groundtruth import outcome_set_over
    b = os.fspath(BUILD / f"swparse_{opt}")
    r = explore(b, 4, merge=mode, merge_points="auto", tests=True)
    assert r.errors == [] and r.outcomes == outcome_set_over(b, [b"abc;x"] * 4)
    assert all(b"\0" not in out for _, out in r.outcomes)
    assert_tests_replay(b, r)


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("wide", [True, False])
@pytest.mark.slow
def test_uninitialized_memory_is_the_techniques_decision_with_one_default(opt, wide):
    """A malloc'd block of which only the first byte was written, read at four input-chosen
    indices. The default (``uninitialized="zero"``) is the same for a user's script (angr's
    default options) and for ``explore()``: unwritten bytes read 0 as natively, the outcomes are
    the native ones and every test replays. ``"symbolic"``, from a script or ``explore()``, finds
    the paths where an unwritten byte holds anything else (exit codes 50..53), as stable
    variables (no re-fork loop); each test's input is chosen with unwritten bytes zero where its
    path allows, so those tests replay, and the others say they depend on unwritten memory."""
    import itertools
    import subprocess

    from angr_ram.run.replay import replay
    from angr_ram.run.testcases import UNWRITTEN_NOTE
    b = os.fspath(BUILD / f"heapuninit_{opt}")
    # run as a fresh process each (the fork server's children inherit a used heap)
    want = {(subprocess.run([b], input=bytes(t), capture_output=True, check=False).returncode, b"")
            for t in itertools.product(b"\x00\x01\x3f", repeat=4)}
    assert want == {(k, b"") for k in range(5)}
    r = script(b, 4, wide=wide)
    assert r.errors == [] and r.unknown == 0 and r.outcomes == want
    assert explore(b, 4).outcomes == want
    assert_tests_replay(b, r)
    sym = script(b, 4, wide=wide, uninitialized="symbolic")
    assert sym.errors == [] and sym.unknown == 0
    assert sym.outcomes == want | {(k, b"") for k in range(50, 54)}
    assert explore(b, 4, uninitialized="symbolic").outcomes == sym.outcomes
    # each input is chosen with the unwritten bytes zero where the path allows: those tests replay;
    # the others (every exit 50..53, and hits counted on an unwritten 7) say so in their message
    plain = [t for t in sym.tests if t.kind == "exit" and UNWRITTEN_NOTE not in t.message]
    assert {t.exit for t in plain} == set(range(5))
    assert all(UNWRITTEN_NOTE in t.message for t in sym.tests if t.kind == "exit" and t.exit >= 50)
    runs = replay(plain, b, jobs=2)
    assert all(x.status in ("ok", "confirmed") for x in runs), [x for x in runs if x.status != "ok"][:3]


def test_the_uninitialized_option_is_checked_and_applied_to_managed_states():
    b = os.fspath(BUILD / "heapuninit_O0")
    with pytest.raises(angr_ram.AngrRamError, match="uninitialized"):
        angr_ram.RelocatableMemory(uninitialized="random")
    with pytest.raises(angr_ram.AngrRamError, match="uninitialized"):
        angr_ram.QuantifiedMerging(uninitialized="ones")
    proj = angr.Project(b, auto_load_libs=False)
    for mode, has in (("zero", True), ("symbolic", False)):
        simgr = proj.factory.simulation_manager(proj.factory.entry_state(add_options=set(ZERO_FILL) if not has
                                                                         else set()))
        simgr.use_technique(angr_ram.RelocatableMemory(uninitialized=mode))
        simgr.step()
        assert simgr.active and all(all(o in s.options for o in ZERO_FILL) == has for s in simgr.active)
    simgr = proj.factory.simulation_manager(proj.factory.entry_state())
    simgr.use_technique(angr_ram.RelocatableMemory(uninitialized="zero"))
    simgr.use_technique(angr_ram.QuantifiedMerging(merge_points="main", uninitialized="symbolic"))
    with pytest.raises(angr_ram.AngrRamError, match="differs"):
        simgr.step()


def test_quantified_merging_alone_zero_fills_by_default():
    """QuantifiedMerging on its own applies the same default to the states it steps."""
    b = os.fspath(BUILD / "heapuninit_O0")
    proj = angr.Project(b, auto_load_libs=False)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=claripy.BVS("stdin", 32), size=4,
                                                           has_end=True))
    simgr = proj.factory.simulation_manager(st)
    simgr.use_technique(angr_ram.QuantifiedMerging(mode="ite", merge_points="auto"))
    simgr.step()
    assert simgr.active and all(o in s.options for s in simgr.active for o in ZERO_FILL)


def test_the_drives_table_shows_the_symbolic_drive_beside_the_three():
    from bench.drives import format_drives

    def cell(sec, outs):
        return {"seconds": sec, "paths": len(outs), "outcomes": outs, "errors": 0, "unknown": 0, "rss_mb": 100.0}

    rows = [{"program": "p", "drives": {"explore": cell(2.0, [[0, ""]]), "wide": cell(3.0, [[0, ""]]),
                                        "bytes": cell(2.5, [[0, ""]]), "symbolic": cell(5.0, [[0, ""], [50, ""]])}}]
    text = format_drives(rows)
    head, line = text.splitlines()[:2]
    assert head.split()[-2:] == ["symbolic", "symbolic/fastest"]
    assert line.split()[13:15] == ["1.50", "yes"] and line.split()[-1] == "2.50"
    assert "geometric mean 1.50" in text


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("name", ["aes_sbox", "crc32_zlib", "strspn_generic"])
@pytest.mark.parametrize("wide", [True, False])
def test_corpus_programs_driven_by_a_script(name, opt, wide):
    """Programs not written for angr-ram (FIPS-197's S-box, Debian zlib's crc32 table, strspn from
    the C standard) driven as a user would: the script drives reach the native outcome set over the
    whole two-byte input domain, and their tests replay."""
    from .test_corpus import native
    b = os.fspath(BUILD / f"{name}_{opt}")
    r = script(b, 2, wide=wide)
    assert r.errors == [] and r.unknown == 0
    assert r.outcomes == native(b)
    assert_tests_replay(b, r)
