"""Paths that end in SIGABRT and the string copies, plain and fortified (angr_ram/procedures/aborts.py,
copies.py). Before these: angr ended ``abort()`` and a failed ``assert`` with exit 1 (every such test
mismatched natively: the process is killed by SIGABRT), and angr has no model of the fortified
copies that Debian's builds call (``__strcpy_chk`` and friends were stubs that copied nothing)."""

import itertools
import os
import subprocess

import pytest

from angr_ram.run.replay import NATIVE_ENV
from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay
from .test_drives import script

SIGABRT_STATUS = 134


def _native(binary: str, inputs) -> dict:
    """(exit status as a shell gives it, stdout) -> how many of ``inputs`` give it."""
    out: dict = {}
    for data in inputs:
        p = subprocess.run([binary], input=data, capture_output=True, env={**os.environ, **NATIVE_ENV}, timeout=10)
        key = (128 - p.returncode if p.returncode < 0 else p.returncode, b"" if p.returncode < 0 else p.stdout)
        out[key] = out.get(key, 0) + 1
    return out


def _exits(native: dict) -> set:
    return {k for k in native if k[0] != SIGABRT_STATUS}


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_abort_and_a_failed_assert_are_error_paths_confirmed_by_sigabrt(opt):
    """aborts (one input byte): the native exits over all 256 inputs, one ``abort``, one
    ``assertion-failure`` (glibc's message) and one ``stack-smashing`` error path, and every test
    replays: the error tests as confirmed by a native SIGABRT."""
    b = os.fspath(BUILD / f"aborts_{opt}")
    native = _native(b, [bytes([x]) for x in range(256)])
    r = explore(b, 1, tests=True)
    assert r.outcomes == _exits(native) and len(r.outcomes) == 18
    kinds = sorted(k for k, _, _ in r.errors)
    assert kinds == ["abort", "assertion-failure", "stack-smashing"]
    msg = next(m for k, m, _ in r.errors if k == "assertion-failure")
    assert "aborts.c:" in msg and "main" in msg and "Assertion `c != 'b' && \"b is refused\"' failed." in msg
    assert r.stubs == {}
    runs = assert_tests_replay(b, r)
    assert sum(x.status == "confirmed" for x in runs) == 3


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_string_copies_plain_and_fortified_give_the_native_outcomes(opt):
    """fortify (6 input bytes; outcomes depend only on where the first NUL is, so {0, 'a'} per byte
    covers them): at -O0 the plain copies (``stpcpy``, ``strcpy``, ``strncpy``'s NUL padding,
    ``strncat``) and the spill of a 5-byte copy into the next member; at -O2 with
    ``_FORTIFY_SOURCE=2`` the ``__*_chk`` forms, whose overflow check is a
    ``buffer-overflow-detected`` error path confirmed natively."""
    b = os.fspath(BUILD / f"fortify_{opt}")
    native = _native(b, [bytes(t) for t in itertools.product(b"\0a", repeat=6)])
    r = explore(b, 6, tests=True)
    assert r.outcomes == _exits(native)
    overflow = (SIGABRT_STATUS, b"") in native
    assert overflow == (opt == "O2")
    assert sorted(k for k, _, _ in r.errors) == (["buffer-overflow-detected"] if overflow else [])
    assert r.stubs == {}
    assert_tests_replay(b, r)


def test_a_users_script_finds_the_fortify_failure_with_one_wide_input():
    """Driven as an angr user drives it (own entry state, one wide ``claripy.BVS``, angr's default
    options): the same exits and the overflow error."""
    b = os.fspath(BUILD / "fortify_O2")
    native = _native(b, [bytes(t) for t in itertools.product(b"\0a", repeat=6)])
    r = script(b, 6)
    assert r.outcomes == _exits(native)
    assert [k for k, _, _ in r.errors] == ["buffer-overflow-detected"]
    assert_tests_replay(b, r)


@pytest.mark.parametrize("build", ["O0", "O2", "fortify"])
def test_asprintf_and_vasprintf_allocate_the_formatted_text(build):
    """asprintf (3 input bytes; ``%s`` of the input, ``vasprintf`` through a variadic wrapper, the
    fortified ``__asprintf_chk``/``__vasprintf_chk`` in the fortify build): the native outcomes,
    both texts freed without error, no stub (angr: stubs that allocated nothing)."""
    b = os.fspath(BUILD / f"asprintf_{build}")
    native = _native(b, [bytes(t) for t in itertools.product(b"\0a", repeat=3)])
    r = explore(b, 3, tests=True)
    assert r.outcomes == _exits(native) and len(r.outcomes) == 4
    assert not r.errors and r.stubs == {}
    assert_tests_replay(b, r)


@pytest.mark.parametrize("build", ["O0", "fortify"])
def test_large_file_names_open_read_and_stat_the_runs_file(build, tmp_path):
    """largefile, built with ``-D_FILE_OFFSET_BITS=64`` (``fopen64``, ``open64``, ``lseek64``,
    ``fstat64``, ``openat64``; ``__open_2`` where fortified): the native outcome set over a file
    template, ``fstat`` giving the file's size, no stub, tests replay (before: ``fopen64`` and
    ``open64`` were stubs and ``fstat`` any size)."""
    from angr_ram.run.inputs import Template

    from .test_process_models import _native_over_file
    b = os.fspath(BUILD / f"largefile_{build}")
    t = Template(b"?x??", ord("w"), ord("y"))
    r = explore(b, files=[("A", t)], tests=True)
    want = _native_over_file(b, t, tmp_path)
    assert r.outcomes == want and len(want) == 4
    assert not r.errors and r.stubs == {}
    assert_tests_replay(b, r)


def _native_outcomes_without_stubs(name: str, inputs: list, count: int) -> None:
    """``name`` explored over inputs as long as ``inputs``' reaches exactly their ``count`` native
    outcomes, with no error path and no stub, and every test replays."""
    b = os.fspath(BUILD / name)
    native = _native(b, inputs)
    r = explore(b, len(inputs[0]), tests=True)
    assert r.outcomes == _exits(native) and len(r.outcomes) == count
    assert not r.errors and r.stubs == {}
    assert_tests_replay(b, r)


CHAR_CLASSES = b"\x00aA1 \t\x7f\x80\xff!\x01"      # NUL, lower, upper, digit, space, tab, DEL, high, punct, control


@pytest.mark.parametrize("opt", ["O2", pytest.param("O0", marks=pytest.mark.slow)])
@pytest.mark.slow
def test_wide_characters_in_the_c_locale(opt):
    """widechar (3 bytes: ``mbrtowc`` restarting after ``EILSEQ``, ``iswprint``/``iswalpha``/
    ``iswspace``, ``wcwidth``, ``towupper``, ``btowc``/``wctob``, ``mbsinit``): the 112 native outcomes
    over one byte of each class per position, no stub, every test replays (angr: all stubs)."""
    _native_outcomes_without_stubs(f"widechar_{opt}", [bytes(t) for t in itertools.product(CHAR_CLASSES, repeat=3)],
                                   112)


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_wctype_and_iswctype_answer_every_class_as_glibcs_c_locale_does(opt):
    """wctypes (2 bytes: the first picks one of glibc's twelve class names or one that is none, the
    second is tested with ``iswctype``): the 25 native outcomes over all 3,328 inputs, no stub
    (angr has no model of either: Debian's expr hit the ``wctype`` stub on regex char classes),
    every test replays."""
    _native_outcomes_without_stubs(f"wctypes_{opt}", [bytes([a, c]) for a in range(13) for c in range(256)], 25)


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_iconv_converts_as_glibc_does_in_the_c_locale(opt):
    """iconvnames (1 byte picks: UTF-8 to ASCII strictly (EILSEQ) and with //TRANSLIT ('?', one
    irreversible conversion), UTF-8 to Latin-1, Latin-1 to UTF-8 into a buffer too small (E2BIG),
    ASCII to UTF-8, an unknown charset (EINVAL)): the 6 native outcomes over all 256 inputs, no
    stub, every test replays. Under angr's stubs Debian's ``factor --version`` lost its authors'
    names (gnulib's proper_name_utf8)."""
    _native_outcomes_without_stubs(f"iconvnames_{opt}", [bytes([x]) for x in range(256)], 6)
