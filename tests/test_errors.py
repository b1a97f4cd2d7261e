"""Memory errors become error paths with reproducing inputs; the in-bounds part continues.

The oracle is the same program built with AddressSanitizer and run over the whole input domain.
"""

import os
from functools import cache

from angr_ram.groundtruth import domain, run_inputs
from angr_ram.runner import explore

from .conftest import BUILD

ASAN_ERROR = 99
ASAN_ENV = {"ASAN_OPTIONS": "exitcode=99:detect_leaks=0:verify_asan_link_order=0"}


@cache
def asan_results(name: str) -> dict:
    inputs = domain(1)
    res = run_inputs(os.fspath(BUILD / f"{name}_asan"), inputs, forkserver=BUILD / "forkserver.so", env=ASAN_ENV)
    return dict(zip(inputs, res, strict=True))


def check(name: str, expected_kinds: set):
    r = explore(os.fspath(BUILD / f"{name}_O0"), 1)
    native = asan_results(name)
    clean = {out for out in native.values() if out[0] != ASAN_ERROR}
    assert r.outcomes == clean
    assert {k for k, _, _ in r.errors} == expected_kinds
    for kind, _, stdin in r.errors:
        assert stdin is not None and native[stdin][0] == ASAN_ERROR, (kind, stdin)
    return r


def test_out_of_bounds_write_is_an_error_path():
    r = check("oob", {"out-of-bounds"})
    assert r.stats["paths"] >= 2  # the in-bounds part went on to both exits


def test_use_after_free_double_free_invalid_free():
    r = check("uaf", {"use-after-free", "double-free", "invalid-free"})
    assert sorted(s for _, _, s in r.errors) == [b"d", b"f", b"i"]


def test_bad_allocation_sizes_become_error_paths():
    """A few feasible sizes fork; an absurd size or one with many values is an error path."""
    b = os.fspath(BUILD / "allocsize_O0")
    r = explore(b, 1)
    inputs = domain(1)
    native = dict(zip(inputs, run_inputs(b, inputs), strict=True))
    ok = {native[i] for i in inputs if i[0] < 0x80 and i != b"H"}
    assert r.outcomes == ok == {(8, b""), (9, b""), (10, b""), (11, b"")}
    kinds = {k: s for k, _, s in r.errors}
    assert set(kinds) == {"allocation-too-large", "symbolic-allocation-size"}
    assert kinds["allocation-too-large"] == b"H"
    assert kinds["symbolic-allocation-size"][0] >= 0x80
    assert r.stats["forks"] >= 1
