"""The loop corpus of the merging issue (``samples/loops``): C string and buffer loops written from
the C standard's descriptions, a wc-style counter, a run-length decoder and an accept-set walk, each
over n <= M symbolic bytes, and programs written later as a probe of merging on code it was not
tuned on (strstr, strrchr, strncmp, a Luhn check, base64 classes by a table, a KMP search, a
``<ctype.h>`` classifier). Every merging mode must reach exactly the native outcome set with no
error path; incremental merging must merge once per outer iteration of the pointer-walking span,
comparing each new state with the one candidate the index finds.

The native domains use one representative per byte class each program distinguishes (and n = 0..M
plus one size above M).
"""

import os

import pytest

from angr_ram.run.runner import explore

from .conftest import BUILD
from .groundtruth import outcome_set_over

M = 4
CLASSES = {"acceptwalk": b"\0abd", "c_strspn": b"\0abd", "c_strcspn": b"\0abd", "c_strpbrk": b"\0xyd",
           "c_strtok": b"\0 ,x", "c_strchr": b"\0cd", "c_memchr": b"\0cd", "c_atoi": b"\0 -+012x",
           "wordcount": b"\0 \nx", "rle": b"\0\1\2\3a", "c_strstr": b"\0abx", "c_strrchr": b"\0cx",
           "c_strncmp": b"\0\x01`abcd\xff", "b64class": b"\0A=!\x80", "kmp": b"\0abx"}


def native(prog: str, opt: str, m: int = M) -> set:
    """The program's native outcomes over its byte classes."""
    return outcome_set_over(os.fspath(BUILD / f"{prog}{m}_{opt}"), [range(0, m + 2)] + [CLASSES[prog]] * m)


def run(prog: str, opt: str, mode: str | None, m: int = M, **kw):
    """One exploration of the program with the loops as merge points (``mode`` None: no merging)."""
    return explore(os.fspath(BUILD / f"{prog}{m}_{opt}"), m + 1, merge=mode,
                   merge_points="auto" if mode else (), **kw)


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.parametrize("prog", sorted(CLASSES))
def test_pattern_merging_matches_native(prog, opt):
    r = run(prog, opt, "pat")
    assert r.errors == []
    assert r.outcomes == native(prog, opt)


@pytest.mark.parametrize("prog", ["acceptwalk", "c_strcspn", "rle", "c_strstr", "kmp",
                                  pytest.param("c_strtok", marks=pytest.mark.slow),
                                  pytest.param("wordcount", marks=pytest.mark.slow)])
def test_ite_and_unmerged_runs_match_native(prog):
    want = native(prog, "O0")
    for mode in (None, "ite"):
        r = run(prog, "O0", mode)
        assert r.errors == [] and r.outcomes == want, mode


@pytest.mark.parametrize("m", [6, 8])
def test_accept_walk_merges_once_per_outer_iteration(m):
    """The issue's loop (a pointer restarted into "ab" after every match, in main): the states that
    matched 'a' and 'b' at one position join at the loop head, so the paths stay linear in M, and
    each merge took one comparison (the candidate index)."""
    r = run("acceptwalk", "O0", "pat", m=m)
    st = r.stats
    assert r.errors == [] and r.outcomes == {(c, b"") for c in [*range(m + 1), 255]}
    assert st["merge_incremental"] >= m - 1
    assert st["merge_incremental_compared"] <= 2 * st["merge_incremental"]
    assert st["paths"] <= 6


@pytest.mark.slow
def test_refusals_are_counted_by_their_first_difference():
    """wordcount keeps states apart whose word or line counts differ: the comparisons that did not
    merge are counted by what differed (a frame slot at -O0, the caller's line counter above the
    frame), and every merge took at most two comparisons."""
    st = run("wordcount", "O0", "pat", m=6).stats
    assert st["merge_incremental"] > 0
    assert st.get("merge_incremental_refused_frame", 0) > 0
    assert st.get("merge_incremental_refused_memory", 0) > 0
    assert st["merge_incremental_compared_per_merge"] <= 2


def test_reject_set_loop_finds_formula_patterns():
    """strcspn's words repeat one shape ("byte != c") per set character; the partition with one
    character per unit has no formula pattern (the constants 0, 'a', 'b' are not linear in the
    position) and the one with a whole set per unit has; the merge validates (Theorem 3.7 and
    every quantified answer against z3's ForAll). Its patterns cover two leaves each and leave
    most leaves over, so by default (``patterns="smaller"``) the leaves merge with ite instead
    (at M = 4 here: 105 + 117 and 99 + 126 nodes against 121 and 120), with the same outcomes. How
    many merges decline can differ between runs (one CI run kept one pattern; not reproduced,
    suspected: timing-based decisions such as the deferral budget change the tree), so the default
    is only asked to keep fewer pattern merges than ``"always"``."""
    r = run("c_strcspn", "O0", "pat", merge_validate=True, merge_patterns="always")
    st = r.stats
    assert r.errors == [] and r.outcomes == native("c_strcspn", "O0")
    assert st["merge_patterns"] >= 2
    assert "merge_no_pattern_no-formula-pattern" not in st
    d = run("c_strcspn", "O0", "pat")
    assert d.errors == [] and d.outcomes == native("c_strcspn", "O0")
    assert d.stats["merge_merges_pat"] < st["merge_merges_pat"] and d.stats["merge_no_pattern_larger-than-ite"] >= 1
    assert d.stats["paths"] <= st["paths"]


@pytest.mark.slow
def test_an_inner_loop_merges_its_exits_once_per_outer_iteration():
    """rle's copy loop (``for j < in[i] & 3``) leaves with four output lengths per input pair: as a
    part of the decoder loop's fragment they multiplied (354 leaves at M = 8, 1381 at M = 10); as
    a fragment nested in it, opened when the decoder's body enters it, its exits merge once per
    pair and the decoder's leaves stay linear in M, with the native outcomes."""
    for m in (6, 8):
        r = run("rle", "O0", "pat", m=m)
        st = r.stats
        pairs = [b"\0\1\2\3", b"a\0"] * (m // 2)      # count bytes, then data bytes
        assert r.errors == []
        assert r.outcomes == outcome_set_over(os.fspath(BUILD / f"rle{m}_O0"), [range(0, m + 2)] + pairs)
        assert st["merge_nested_fragments"] >= m // 2
        assert st["merge_leaves"] <= 6 * m


@pytest.mark.slow
def test_loops_in_a_callee_nest_and_stay_exact():
    """strtok's loops run in calls from main's token loop: each call opens nested fragments (merged
    with if-then-else, going on in main's loop), validated against z3."""
    r = run("c_strtok", "O0", "pat", merge_validate=True)
    assert r.errors == [] and r.outcomes == native("c_strtok", "O0")
    assert r.stats["merge_nested_fragments"] > 0


def test_a_merged_path_reports_every_outcome_and_names_unwritten_bytes_once():
    """rle at M = 8: the merged decoder path stands for 70 exit codes, more than the 64 that the
    outcome enumeration used to stop at. The output buffer is written up to a different length on
    each merged path: the bytes a state never wrote are one ``uninit_`` variable per address in
    every merge, never angr's fresh ``merge_uc_`` variable per merge."""
    from angr_ram.run.outcomes import Outcome
    from angr_ram.run.runner import RunResult, collect_paths, prepare

    want = outcome_set_over(os.fspath(BUILD / "rle8_O0"), [range(0, 10)] + [b"\0\1\2\3", b"a\0"] * 4)
    assert len(want) > 64
    simgr, _ = prepare(os.fspath(BUILD / "rle8_O0"), 9, merge="pat", merge_points="auto")
    simgr.run()
    r = collect_paths(simgr, RunResult())
    assert r.errors == [] and r.outcomes == want
    names = set()
    for s in simgr.deadended:
        for e in [Outcome(s).expr, *s.solver.constraints]:
            names |= e.variables
    assert not any(n.startswith("merge_uc_") for n in names)
    uninit = {n for n in names if n.startswith("uninit_mem_")}
    assert 0 < len(uninit) <= 3 * (8 // 2) + 1          # at most one per byte of the output buffer


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_ctype_loop_merges_without_register_refusals(opt):
    """A ``<ctype.h>`` classifier (glibc's locale tables through ``__ctype_b_loc``, library calls in
    the loop body): states that classified a byte alike merge at the next block however the calls
    left ``rdi``, ``rax`` and the flag thunk, since those are dead there. What keeps states apart
    is data: the counters (in the frame at -O0, in registers at -O2)."""
    classes = b"\0aQB1 \n!\x80"      # lower, upper 'Q', other upper, digit, spaces, other, high
    want = outcome_set_over(os.fspath(BUILD / f"c_ctype2_{opt}"), [range(0, 4)] + [classes] * 2)
    r = run("c_ctype", opt, "pat", m=2)
    assert r.errors == [] and r.outcomes == want
    st = r.stats
    assert st["merge_incremental"] > 0
    refused = {k.removeprefix("merge_incremental_refused_") for k in st if k.startswith("merge_incremental_refused_")}
    assert not any(w.startswith(("reg:cc_", "reg:di", "reg:rdi")) for w in refused), refused
    if opt == "O0":
        assert not any(w.startswith("reg:") for w in refused), refused


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_luhn_digit_sum_matches_native_in_every_mode(opt):
    """A Luhn check over n <= 3 digits read right to left (every digit value leads elsewhere, so the
    native domain is all ten digits and one non-digit)."""
    want = outcome_set_over(os.fspath(BUILD / f"luhn3_{opt}"), [range(0, 5)] + [b"/0123456789"] * 3)
    for mode in ("ite", "pat"):
        r = run("luhn", opt, mode, m=3)
        assert r.errors == [] and r.outcomes == want, mode
