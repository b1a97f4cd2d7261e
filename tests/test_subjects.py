"""The seed papers' evaluation subjects at binary level (issue 45 item 2): drivers of our own that
call each library's public API as the seeds' drivers do, statically linked against Debian's
``-dev`` packages (samples/subjects), run on KLEE-style templates at their smallest sizes. Each run
reaches the outcome set the native driver gives over the template's whole domain, with no error
path and no stub on any path, and every test replays natively. ``angr-ram bench --subjects``
runs them at larger sizes beside stock angr."""

import os
import subprocess
import sys
import time

import claripy
import pytest

import bench
from angr_ram.run.inputs import Template
from angr_ram.run.runner import explore
from bench.native import run_inputs
from bench.subjects import inputs_of, native_outcomes

from .conftest import BUILD, assert_tests_replay, drive_as_a_script
from .groundtruth import outcome_set_over


def _domain(t: Template):
    return [range(t.lo, t.hi + 1) if b == ord("?") else [b] for b in t.data]


def check(name: str, opt: str, template: Template, at_least: int, **kw):
    b = os.fspath(BUILD / f"{name}_{opt}")
    r = explore(b, template, tests=True, **kw)
    want = outcome_set_over(b, _domain(template))
    assert len(want) >= at_least                  # the template's bytes do decide something
    assert r.stopped is None and r.errors == [], r.errors[:3]
    assert r.stubs == {}
    assert r.outcomes == want
    assert_tests_replay(b, r)
    return r


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
@pytest.mark.slow
def test_expat_parses_a_two_byte_document(opt):
    """expat (XML_Parse with a fixed hash salt): well-formed, no element, or each syntax error."""
    check("expat_parse", opt, Template(b"??"), 3)


@pytest.mark.slow   # make test-slow: 20 s per run
@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_libosip_parses_a_request_line_with_a_symbolic_method_and_host(opt):
    """osip_message_parse: INVITE, another method, or a parse error (the method's first byte and
    the host decide); strspn/strcspn/strchr from pointers the input moves."""
    check("osip_parse", opt, Template(b"?NVITE sip:a@? SIP/2.0\r\n\r\n"), 3)


@pytest.mark.slow
def test_libosip_parses_a_status_line_with_symbolic_digits():
    """A response's status code from two symbolic digits: every status class, or an error."""
    check("osip_parse", "O2", Template(b"SIP/2.0 ?0? OK\r\n\r\n", ord("0"), ord("9")), 11)


@pytest.mark.slow   # make test-slow: 25-30 s per run
@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_libyaml_scans_two_symbolic_bytes(opt):
    """yaml_parser_scan over two bytes: each token sequence and each scanner error."""
    check("yaml_scan", opt, Template(b"??"), 9)


def test_expat_parses_utf16_as_the_seeds_driver_does():
    """The seeds' expat driver parses UTF-16 (``XML_ParserCreate("utf-16")``, bench's ``expat-10``):
    ``<X/>`` in UTF-16LE with the name's code unit symbolic ('0'..'A'): an element, or a digit that
    cannot start a name; the native outcomes, each test replaying with the encoding argument."""
    b = os.fspath(BUILD / "expat_parse_O2")
    r = explore(b, Template(b"<\0?\0/\0>\0", ord("0"), ord("A")), args=["UTF-16LE"], tests=True,
                environment="fixed")
    want = set(run_inputs(b, [bytes([0x3C, 0, x, 0, 0x2F, 0, 0x3E, 0]) for x in range(ord("0"), ord("A") + 1)],
                          args=("UTF-16LE",)))
    assert want == {(0, b"1 1 0\n"), (4, b"0 0 0\n")}
    assert r.outcomes == want and not r.errors and r.stopped is None
    assert_tests_replay(b, r)


@pytest.mark.slow   # make test-slow: 25 s; libxml2's start-up (weak pthread imports, rand_r)
def test_libxml2_parses_a_two_byte_html_document():
    """htmlParseDocument: libxml2 initialises its globals through weak pthread references and
    seeds its dictionaries with rand_r; the document is built on every input."""
    check("html_parse", "O0", Template(b"??"), 1)


@pytest.mark.slow   # make test-slow: about 2 minutes
def test_libxml2_parses_an_element_with_a_symbolic_name_in_the_fixed_environment():
    """htmlParseDocument of ``<?>?``: libxml2 seeds its dictionaries' hash from ``time()``. In the
    fixed environment (one instant, as a native run and KLEE see it) the name's bucket follows from
    the name: both native outcomes, each test replays, no more paths than the name's 58 values
    (under angr's symbolic clock every bucket is open to every name: 97 paths, about 10 minutes)."""
    r = check("html_parse", "O0", Template(b"<?>?"), 2, environment="fixed")
    assert r.stats["paths"] <= 58


@pytest.mark.slow   # make test-slow: SQLite opening a database and creating a table and a trigger
def test_sqlite_creates_a_trigger_with_a_symbolic_name():
    """SQLite's trigger creation with a one-byte symbolic name after one trigger 'a': created, or
    an error (the name taken, case-insensitively, or no identifier); sqlite3_str_vappendf's
    strchrnul answered from the bytes (angr: a stub whose pointer gave false out-of-bounds errors)."""
    r = check("sqlite_trigger", "O2", Template(b"?"), 2)
    assert r.stats["string_exact"] > 0


@pytest.mark.slow
def test_libosip_from_a_users_script_with_one_wide_variable():
    """Driven as an angr user drives it: their own entry_state (angr's default options), stdin the
    status line with one 16-bit BVS for the two digits (constrained to '0'..'9' by the script),
    RelocatableMemory() attached, simgr.run(): the same 11 native outcomes, and the tests replay."""
    b = os.fspath(BUILD / "osip_parse_O2")
    digits = claripy.BVS("digits", 16)
    content = claripy.Concat(claripy.BVV(b"SIP/2.0 "), digits[15:8], claripy.BVV(b"0"), digits[7:0],
                             claripy.BVV(b" OK\r\n\r\n"))
    r = drive_as_a_script(b, content, digits, ord("0"), ord("9"))
    t = Template(b"SIP/2.0 ?0? OK\r\n\r\n", ord("0"), ord("9"))
    assert r.outcomes == outcome_set_over(b, _domain(t))
    assert not r.errors and r.stubs == {}
    assert_tests_replay(b, r)


def test_the_make_subject_reads_its_template_from_a_file():
    """make-1 (the papers' make input): the template is the makefile ``A`` given by ``-f A``, to the
    native runs as to ``explore``; over names a..z make prints the two definitions' values, both, or
    one (a name that is no variable expands to nothing)."""
    if not os.path.isfile("/usr/bin/make"):
        pytest.skip("Debian's make is not installed")
    kw = inputs_of("make-1")
    assert kw["stdin_bytes"] == 0 and kw["args"][-2:] == ["-f", "A"] and kw["files"][0][0] == "A"
    server = (BUILD / "forkserver.so").resolve()
    assert native_outcomes("/usr/bin/make", "make-1", server) == {
        (0, b"echo glarblor\n"), (0, b"echo blorblor\n"), (0, b"echo blor\n")}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_benchmark_child_past_its_budget_is_killed_with_what_it_started(tmp_path):
    """``bench.run_child`` kills the child's whole process group at the time-out: a process the
    child started (a native replay, a solver) does not live on beside the next row."""
    pidfile = tmp_path / "grandchild"
    code = (f"import subprocess, time; p = subprocess.Popen(['sleep', '60']); "
            f"open({str(pidfile)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        bench.run_child([sys.executable, "-c", code], 2.0)
    assert time.monotonic() - t0 < 10
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    assert bench.run_child([sys.executable, "-c", "print(6 * 7)"], 30).stdout == "42\n"


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_apr_looks_up_a_symbolic_key_in_a_table_of_fifteen(opt):
    """The seeds' APR subject reduced (bench/seeds_sizes.py runs it at the seeds' size): 15 int keys
    in an apr_hash_t, then a lookup of a key whose low byte is symbolic (0..20) and one of 3. APR
    seeds its hash with the clock and the table's addresses; in the fixed environment (the seeds' KLEE
    runs saw one clock) every key found and every miss, each test replaying."""
    check("apr_seeds", opt, Template(b"?\0\0\0\3\0\0\0", 0, 20), 16, environment="fixed")


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_json_c_looks_up_a_symbolic_key_after_each_add(opt):
    """The seeds' json-c subject reduced: keys a..d added one by one, the second lookup's key
    symbolic (a..e): a, b or a miss, with json-c's hash seeded by fixed random bytes."""
    check("jsonc_seeds", opt, Template(b"a?cd", ord("a"), ord("e")), 3, environment="fixed")
