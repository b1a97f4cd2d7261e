"""Memory errors become error paths with reproducing inputs; the in-bounds part continues.

The oracle is the same program built with AddressSanitizer and run over the whole input domain.
"""

import os
from functools import cache

from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay
from .groundtruth import domain, run_inputs

ASAN_ERROR = 99
ASAN_ENV = {"ASAN_OPTIONS": "exitcode=99:detect_leaks=0:verify_asan_link_order=0"}


@cache
def asan_results(name: str) -> dict:
    inputs = domain(1)
    res = run_inputs(os.fspath(BUILD / f"{name}_asan"), inputs, forkserver=BUILD / "forkserver.so", env=ASAN_ENV)
    return dict(zip(inputs, res, strict=True))


def check(name: str, expected_kinds: set):
    r = explore(os.fspath(BUILD / f"{name}_O0"), 1, tests=True)
    native = asan_results(name)
    clean = {out for out in native.values() if out[0] != ASAN_ERROR}
    assert r.outcomes == clean
    assert {k for k, _, _ in r.errors} == expected_kinds
    for kind, _, stdin in r.errors:
        assert stdin is not None and native[stdin][0] == ASAN_ERROR, (kind, stdin)
    runs = assert_tests_replay(os.fspath(BUILD / f"{name}_O0"), r, asan=os.fspath(BUILD / f"{name}_asan"))
    assert sorted(x.test.error for x in runs if x.status == "confirmed") == sorted(expected_kinds)
    return r


def test_out_of_bounds_write_is_an_error_path():
    r = check("oob", {"out-of-bounds"})
    assert r.stats["paths"] >= 2  # the in-bounds part went on to both exits


def test_use_after_free_double_free_invalid_free():
    r = check("uaf", {"use-after-free", "double-free", "invalid-free"})
    assert sorted(s for _, _, s in r.errors) == [b"d", b"f", b"i"]


def test_bad_allocation_sizes_become_error_paths():
    """An absurd concrete size is an error path; a symbolic size (128 values) is an object with a
    symbolic limit, so that path reaches its exit like the native program."""
    b = os.fspath(BUILD / "allocsize_O0")
    r = explore(b, 1)
    inputs = domain(1)
    native = dict(zip(inputs, run_inputs(b, inputs), strict=True))
    ok = {native[i] for i in inputs if i != b"H"}
    assert r.outcomes == ok == {(5, b""), (8, b""), (9, b""), (10, b""), (11, b"")}
    kinds = {k: s for k, _, s in r.errors}
    assert set(kinds) == {"allocation-too-large"}
    assert kinds["allocation-too-large"] == b"H"
    assert r.stats["forks"] == 0


def test_symbolic_size_above_the_cap_is_an_error_path_with_an_input():
    """Sizes up to max_symbolic_size are explored; larger ones are forked off with an input."""
    b = os.fspath(BUILD / "allocsize_O0")
    r = explore(b, 1, max_symbolic_size=0xA0)
    assert (5, b"") in r.outcomes
    sym = [s for k, _, s in r.errors if k == "symbolic-allocation-size"]
    assert len(sym) == 1 and sym[0][0] > 0xA0


def test_an_access_that_may_hit_several_unmapped_gaps_is_one_error_path():
    """A pointer with any value (eight input bytes) may fault in the null page and in each of the
    gaps between the program's regions: one null-dereference path and one out-of-bounds path that
    names the gaps, not one path per gap (issue 45); the error tests' inputs fault natively."""
    b = os.fspath(BUILD / "anyptr_O2")
    r = explore(b, 8, tests=True)
    kinds = [k for k, _, _ in r.errors]
    assert kinds.count("null-dereference") == 1
    assert kinds.count("out-of-bounds") == 1
    gaps = next(m for k, m, _ in r.errors if k == "out-of-bounds")
    assert "may hit any of" in gaps
    for test in r.tests:
        if test.kind == "error" and test.error in ("null-dereference", "out-of-bounds"):
            code, _ = run_inputs(b, [test.stdin])[0]
            assert code == 128 + 11, (test.error, test.stdin)    # SIGSEGV natively
