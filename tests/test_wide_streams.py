"""Wide-character streams in the C locale (angr_ram.posix.wide_streams), driven as a user's
script drives angr: the outcome set equals glibc's over an alphabet with a newline and a byte
above 0x7f, every test replays; and Debian's ``rev`` (fgetws, wcslen, fputws: angr's stubs)."""

import os
import shutil

import pytest

from angr_ram.run.replay import replay
from angr_ram.run.runner import explore

from .conftest import BUILD
from .test_scanning import _same_as_native


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_wide_lines_reversed_as_glibc_reads_them(opt):
    """widestream: ``fgetwc`` then ``ungetwc``, lines of at most 3 characters through ``fgetws``,
    ``wcslen``, ``fputwc``/``putwchar``/``putwc``/``fputws``; a byte above 0x7f is ``WEOF`` with the
    error flag and stays unread. angr's stubs: no result in 300 s (fgetws's any-value pointer)."""
    r, native = _same_as_native(os.fspath(BUILD / f"widestream_{opt}"), b"a\n\xe9b", 4)
    assert len(native) == 105


@pytest.mark.skipif(shutil.which("rev") is None, reason="util-linux's rev is not installed")
@pytest.mark.slow
def test_debians_rev_replays():
    """``rev`` on 3 symbolic stdin bytes: complete, no error path, every test replays (its
    ``warn`` on an invalid byte is a named stub: stderr only)."""
    b = shutil.which("rev")
    r = explore(b, 3, timeout=120, tests=True)
    assert r.stopped is None and r.errors == [] and set(r.stubs) <= {"warn"} and r.stats["paths"] >= 4
    runs = replay(r.tests, b, jobs=2)
    assert [x.status for x in runs if x.status != "ok"] == []
