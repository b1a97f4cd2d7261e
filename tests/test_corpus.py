"""Programs not written for angr-ram: third-party libraries (Debian's zlib, uthash) and programs
written from a public specification (FIPS-197's S-box, the C standard's strspn/strtok), at -O0
and -O2, against the native program over the whole two-byte input domain, with no error path
(every program here is memory-safe). ``angr-ram bench --corpus`` runs the full matrix, json-c
included."""

import os
from functools import cache

import pytest

from angr_ram.run.runner import explore

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set


@cache
def native(binary: str) -> frozenset:
    return frozenset(outcome_set(binary, 2))


def check(name: str, opt: str, **kw):
    b = os.fspath(BUILD / f"{name}_{opt}")
    r = explore(b, 2, tests=True, **kw)
    assert r.errors == [], r.errors[:3]
    assert r.outcomes == native(b)
    assert_tests_replay(b, r)
    return r


@pytest.mark.parametrize("opt", ("O0", "O2"))
@pytest.mark.parametrize("model", ("fork", "dsmm", "ite"))
@pytest.mark.parametrize("name", ("aes_sbox", "crc32_zlib"))
def test_table_lookup_programs(name, opt, model):
    r = check(name, opt, model=model)
    assert r.stats["let_bindings"] >= 2          # two dependent lookups, each bound once per path


@pytest.mark.parametrize("opt", ("O0", "O2"))
@pytest.mark.parametrize("model", ("fork", "ite"))
def test_string_functions_from_the_c_standard(opt, model):
    check("strspn_generic", opt, model=model)


def test_string_functions_under_dsmm():
    check("strspn_generic", "O2", model="dsmm")


@pytest.mark.slow   # make test-slow: the interpreter's jump table under each model, 8 s each
@pytest.mark.parametrize("model", ("fork", "dsmm", "ite"))
def test_bytecode_interpreter_jump_table(model):
    """At -O2 the switch is a jump table: a symbolic read of .rodata decides the jump target."""
    check("bytecode", "O2", model=model)


@pytest.mark.slow   # make test-slow: uthash lookup, 60 s (bench --corpus runs it too)
def test_uthash_lookup_of_a_symbolic_key():
    """Jenkins hash of the key, then the bucket chain: both outcomes (found, not found) and the
    found values' classes, with z3 never asked about the hash."""
    r = check("uthash_find", "O2")
    assert r.stats["enumerated_queries"] > 0


@pytest.mark.slow   # make test-slow: the uthash lookup under dsmm (55 s) and ite (80 s)
@pytest.mark.parametrize("model", ("dsmm", "ite"))
def test_uthash_lookup_under_other_models(model):
    check("uthash_find", "O2", model=model)


@pytest.mark.parametrize("opt", ("O2", pytest.param("O0", marks=pytest.mark.slow)))
@pytest.mark.slow
def test_jsonc_lookup_in_a_fixed_environment(opt):
    """json-c seeds its string hash from ``getrandom``: in the fixed environment the seed is one
    value, the keys' hashes are concrete, and ``strcmp`` against the stored keys (a bucket entry
    chosen by the input's hash) is answered from the bytes, with no fallback to angr's procedure
    (which took 84 s of z3 in 656 checks before)."""
    r = check("jsonc_get", opt, environment="fixed")
    assert r.stats["string_exact"] >= 12 and r.stats["string_fallback"] == 0
    assert r.stats["z3_checks_exploring"] < 400


@pytest.mark.parametrize("opt", ("O2", pytest.param("O0", marks=pytest.mark.slow)))
@pytest.mark.slow
def test_glib_hash_table_lookup(opt):
    """glib's GHashTable (static libglib-2.0.a): its slice allocator keeps thread-specific data
    (pthread keys), sizes slabs from ``sysconf(_SC_PAGESIZE)`` and takes them from
    ``posix_memalign``; with those modelled every native outcome is reached with no error path
    (stock angr: none of the three, and an outcome the native program never has)."""
    r = check("glib_hash", opt)
    assert r.stats["string_exact"] > 0 and r.stats["string_fallback"] == 0


@pytest.mark.parametrize("opt", ("O2", pytest.param("O0", marks=pytest.mark.slow)))
@pytest.mark.slow
def test_apr_hash_lookup_in_a_fixed_environment(opt):
    """APR's hash (static libapr-1.a) seeds from ``apr_time_now()`` and the table's address; in the
    fixed environment the seed is concrete up to the hidden addresses."""
    check("apr_hash", opt, environment="fixed")


@pytest.mark.slow   # make test-slow: the default (symbolic clock) on APR, about 70 s
def test_apr_hash_lookup_with_a_symbolic_clock():
    check("apr_hash", "O2")


@pytest.mark.slow   # make test-slow: the three library lookups under dsmm and ite, about 80 s
@pytest.mark.parametrize("model", ("dsmm", "ite"))
@pytest.mark.parametrize("name,kw", [("glib_hash", {}), ("apr_hash", {"environment": "fixed"}),
                                     ("jsonc_get", {"environment": "fixed"})])
def test_library_lookups_under_other_models(name, kw, model):
    check(name, "O2", model=model, **kw)
