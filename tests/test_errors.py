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
