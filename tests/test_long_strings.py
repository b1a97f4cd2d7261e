"""Strings longer than angr's ``max_str_len`` (128) and strings whose end depends on the input,
driven as a user's script drives angr (own entry_state, one wide BVS as stdin whose bytes are in a
small alphabet): printf's ``%s``, strlen, strdup, puts, fputs, strcmp and strchr give every
native outcome, and every test replays."""

import os

import pytest

from .conftest import BUILD
from .test_scanning import _same_as_native


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_strings_past_angrs_length_limit_end_where_c_ends_them(opt):
    """longstrings: a 300-byte stack line whose NUL is at 150 or 250 (chosen by an input byte) and a
    copy of it on the heap; fputs of the three input bytes, which stop at the first NUL. angr's
    strlen gave up at 128 bytes (puts of the copy unsatisfiable) and angr's fputs wrote the longest
    length: 3 error paths, 16 of 40 outcomes, 16/16 tests mismatched natively."""
    r, native = _same_as_native(os.fspath(BUILD / f"longstrings_{opt}"), b"1-a\x00", 3)
    assert len(native) == 40
