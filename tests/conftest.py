"""Shared fixtures: built samples, a bare angr-ram state."""

import functools
import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from angr_ram.core.errors import CallHint

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "samples" / "build"


# Cases of parametrized tests that run with the tests marked slow (``make test-slow``): each took
# 15 s or more of CPU, and ``make test`` keeps to about 12 minutes on 2 cores; the test's other
# cases stay in ``make test``. Keyed by file and function, the cases by their parameter ids.
SLOW_CASES = {
    'test_compiled_code.py::test_binary_idioms_on_heap_pointers': {'fork-O0'},
    'test_compiled_code.py::test_dependent_lookups_reach_native_outcomes': {'8-O2'},
    'test_compiled_code.py::test_length_prefixed_reader': {'fork-O2', 'ite-O0'},
    'test_compiled_code.py::test_inlined_memcpy_into_a_heap_table_has_no_false_error': {'fork-O0'},
    'test_fragment_budget.py::test_a_given_up_fragment_loses_no_outcome': {'dfs'},
    'test_distributed.py::test_outcomes_equal_native_and_single_process': {'hashtables_O0-dsmm'},
    'test_corpus.py::test_table_lookup_programs': {'aes_sbox-fork-O0', 'crc32_zlib-fork-O0'},   # -O2 and dsmm/ite -O0 stay
    'test_drives.py::test_corpus_programs_driven_by_a_script': {'True-strspn_generic-O0', 'True-strspn_generic-O2'},
    'test_drives.py::test_script_drives_reach_the_outcomes_of_explore_and_replay': {
        'False-b64class4_O2-5-pat', 'True-b64class4_O2-5-pat',
    },
    'test_getopt.py::test_debian_tools_with_options': {'base64-argv0-False', 'tr-argv2-True'},
    'test_incremental.py::test_auto_merge_points_are_the_program_loops': {'memspn2x4_O0-5-alphabets0'},
    'test_loop_corpus.py::test_ctype_loop_merges_without_register_refusals': {'O0'},
    'test_loop_corpus.py::test_ite_and_unmerged_runs_match_native': {'kmp'},
    'test_loop_corpus.py::test_pattern_merging_matches_native': {
        'b64class-O0', 'b64class-O2', 'c_atoi-O0', 'c_atoi-O2', 'kmp-O2', 'rle-O2', 'wordcount-O0', 'wordcount-O2',
    },
    'test_merging.py::test_ite_merging_keeps_outcomes_and_merges_paths': {'memspn2x4_O2', 'strloops_O0'},
    'test_models.py::test_big_table_with_and_without_splitting': {'fork-opts2'},
    'test_long_double.py::test_gnu_printf_float_conversions_print_as_natively': {'args1', 'args3'},
    'test_long_double.py::test_strtold_reads_as_glibc_does_and_a_text_beyond_a_double_is_an_error_path': {'O0-5.-e'},
    'test_models.py::test_model_outcomes_equal_native_ground_truth': {
        "twolookup_O0-flat-{}", "twolookup_O0-smm-{}", "ptrarray_O0-dsmm-{}",
        "hashtables_O0-dsmm-{'split': 32, 'split_threshold': 16}",
        "hashtables_O0-fork-{'split': 32, 'split_threshold': 16}",
    },
    'test_process_models.py::test_fgets_reads_a_file_template_line_by_line': {'??????-10-11-O0', '??????-10-11-O2'},
    'test_query_cache.py::test_cache_modes_change_no_outcome_and_validation_finds_no_mismatch': {'hashtables_O0'},
    'test_relocation_property.py::test_random_relocation_keeps_queries_and_outcomes': {
        'chainhash_O0-1-7-True', 'hashtables_O0-1-3-False', 'ptrarray_O0-2-4-False',
    },
    'test_samples.py::test_concrete_bases_agree_with_symbolic_bases': {'ptrpaths', 'twolookup'},
    'test_search.py::test_coverage_is_the_set_of_instructions_the_tests_execute': {'branches_O0'},
    'test_spilling.py::test_spilling_keeps_every_path': {'dfs'},
    'test_spilling.py::test_the_spilled_states_are_those_the_search_takes_last': {'dfs'},
    'test_samples.py::test_outcomes_equal_native_ground_truth': {
        'branches-O0', 'branches-O2', 'checksum-O0', 'hashpaths-O0', 'matrix40-O0', 'matrix40-O2', 'ptrpaths-O0', 'ptrpaths-O2',
        'twolookup-O0', 'twolookup-O2',
    },
    'test_samples.py::test_path_count_equals_stock_without_symbolic_pointers': {'checksum-O0'},
    'test_semantics.py::test_semantics_program_under_fork': {
        'symsize-O0-explore', 'tripcount-O0-explore', 'tripcount-O0-script',
    },
    'test_static_libc.py::test_static_builds_reach_the_native_outcomes_and_replay': {'staticio_O0'},
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest's hook signature
    """Mark :data:`SLOW_CASES` slow before ``-m`` selects (``tryfirst``: pytest's own selection is
    this same hook)."""
    for item in items:
        spec = getattr(item, "callspec", None)
        if spec is not None and spec.id in SLOW_CASES.get(f"{item.path.name}::{item.originalname}", ()):
            item.add_marker(pytest.mark.slow)


class ForgottenHint(CallHint):
    """A call hint whose forks find nothing: each works its way out again (what a hint saves)."""

    def take(self, state, ident):
        return None


@pytest.fixture(scope="session", autouse=True)
def built_samples():
    """Build the samples once (``make test`` already did; this keeps plain ``pytest`` working)."""
    subprocess.run(["make", "-s", "-C", str(ROOT / "samples")], check=True, capture_output=True)
    return BUILD


@pytest.fixture
def ram_state():
    """An angr-ram state on a small sample, with the technique's plugins installed."""
    import angr_ram
    from angr_ram.run.runner import load_project, make_state

    proj = load_project(str(BUILD / "matrix3_O0"))
    st = make_state(proj, 2)
    simgr = proj.factory.simulation_manager(st)
    simgr.use_technique(angr_ram.RelocatableMemory())
    return simgr.active[0]


def assert_tests_replay(binary: str, result, asan: str | None = None):
    """Tests-as-oracle: ``result`` (an ``explore(..., tests=True)``) has one test per outcome it
    reports, and every test replays natively as predicted (exit tests: same exit code and stdout;
    error tests: the native or ASan run fails)."""
    from angr_ram.run.replay import replay

    tests = result.tests
    assert tests is not None, "explore(..., tests=True) collects the tests"
    assert {(t.exit, t.stdout) for t in tests if t.kind == "exit"} == set(result.outcomes)
    assert sum(t.kind == "error" for t in tests) == sum(k != "angr-error" for k, _, _ in result.errors)
    runs = replay(tests, binary, asan=asan, jobs=2)
    bad = [(r.test, r.status, r.exit, r.stdout, r.detail) for r in runs   # unfinished paths predict nothing
           if r.status not in ("ok", "confirmed") and r.test.kind != "unfinished"]
    assert not bad, bad[:3]
    return runs


def _source_digest() -> str:
    """SHA-256 of angr-ram's source and of the angr, claripy and z3 versions."""
    import claripy
    import z3

    h = hashlib.sha256(f"{claripy.__version__}:{z3.get_version_string()}".encode())
    for p in sorted((ROOT / "angr_ram").rglob("*.py")):
        h.update(p.relative_to(ROOT).as_posix().encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def shared_run(binary: str, n: int, **opts):
    """``explore(binary, n, tests=True, **opts)``, computed once for every test that asks for the
    same run: the result is kept in ``samples/build/.runs`` under a key of the binary's and angr-ram's
    source digests and the arguments, so a change to either runs it again, and xdist workers wait
    for the one that computes it (a file lock) instead of repeating it."""
    import fcntl
    import pickle

    from angr_ram.run.runner import explore

    b = Path(binary).resolve()
    key = hashlib.sha256(f"{hashlib.sha256(b.read_bytes()).hexdigest()}:{_SOURCE()}:{n}:"
                         f"{sorted(opts.items())!r}".encode()).hexdigest()[:32]
    store = b.parent / ".runs"
    store.mkdir(exist_ok=True)
    f = store / f"{b.name}.{key}.pickle"
    with open(store / f"{b.name}.{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if f.is_file():
            return pickle.loads(f.read_bytes())
        r = explore(os.fspath(b), n, tests=True, **opts)
        tmp = f.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(r))
        os.replace(tmp, f)
        return r


_SOURCE = functools.cache(_source_digest)


def drive_as_a_script(binary: str, content, wide, lo: int, hi: int, tests: bool = True):
    """Run ``binary`` as a user's script drives angr: ``entry_state`` with ``content`` (a claripy
    expression) as stdin, each byte of the symbolic ``wide`` constrained to ``lo..hi``, angr's
    default options, ``RelocatableMemory()`` attached, ``simgr.run()``; the run's summary."""
    import angr
    import claripy

    import angr_ram
    from angr_ram.run.runner import summarize

    proj = angr.Project(binary, auto_load_libs=False)
    st = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=content, size=content.size() // 8,
                                                           has_end=True))
    for k in range(wide.size() // 8):
        byte = wide.get_byte(k)
        st.solver.add(claripy.UGE(byte, lo), claripy.ULE(byte, hi))
    simgr = proj.factory.simulation_manager(st)
    tech = simgr.use_technique(angr_ram.RelocatableMemory())
    simgr.run()
    return summarize(simgr, tech, tests=tests)
