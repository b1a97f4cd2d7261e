"""libc functions angr has no model of, or only a placeholder for (issue 45 item 3): strspn,
strcspn, strpbrk, strchr and strchrnul answered from the bytes; angr's searches (strlen, strncpy...) from a
pointer that selects among a few positions; weak imports bound as the dynamic linker binds them;
the v*printf family over a va_list; glibc's rand_r. Semantics against C on every assignment of
small alphabets, whole programs against native ground truth at -O0 and -O2."""

import itertools
import os

import angr
import archinfo
import claripy
import pytest

from angr_ram.posix.environment import RamRandR
from angr_ram.procedures import libc
from angr_ram.procedures import string_search as search
from angr_ram.procedures.format_specs import RamSpec
from angr_ram.procedures.heap import holds_for_sure
from angr_ram.procedures.stubs import stubs_of
from angr_ram.procedures.weak_imports import resolve_weak_imports, unresolved_weak_imports
from angr_ram.run.inputs import Template
from angr_ram.run.runner import explore, load_project

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set, outcome_set_over
from .test_strings_env import _heap_string

ALPHA = b"\x00ab:"


def _c_strspn(s: bytes, accept: bytes, reject: bool) -> int:
    s, accept = s[:s.index(0)], accept[:accept.index(0)]
    i = 0
    while i < len(s) and ((s[i] in accept) != reject):
        i += 1
    return i


@pytest.fixture
def state(ram_state):
    return ram_state.copy()


def test_span_functions_match_c_on_every_assignment(state):
    """strspn, strcspn, strpbrk, strchr and strchrnul with symbolic bytes in the string and in the set: the
    value equals C's on every assignment over {NUL, 'a', 'b', ':'}, with no new symbol."""
    xs = [claripy.BVS(f"x{i}", 8) for i in range(2)]
    y = claripy.BVS("y", 8)
    s = _heap_string(state, [xs[0], ord("a"), xs[1], ord("b"), 0])
    accept = _heap_string(state, [ord("a"), y, 0])
    results = {"spn": search.span(state, s, accept, reject=False),
               "cspn": search.span(state, s, accept, reject=True),
               "pbrk": search.first_of(state, s, accept),
               "chr": search.find_byte(state, s, y.zero_extend(24)),
               "chrnul": search.find_byte(state, s, y.zero_extend(24), at_end=True)}
    assert all(r is not None for r in results.values())
    for r in results.values():
        assert r.variables <= (xs[0].variables | xs[1].variables | y.variables | s.variables)
    base = state.solver.eval(s)
    for vx0, vx1, vy in itertools.product(ALPHA, repeat=3):
        cs = bytes([vx0, ord("a"), vx1, ord("b"), 0])
        ca = bytes([ord("a"), vy, 0])
        fix = [xs[0] == vx0, xs[1] == vx1, y == vy]
        got = {k: state.solver.eval(r, extra_constraints=fix) for k, r in results.items()}
        assert got["spn"] == _c_strspn(cs, ca, False)
        n = _c_strspn(cs, ca, True)
        assert got["cspn"] == n
        assert got["pbrk"] == (0 if cs[n] == 0 else base + n)
        c_string = cs[:cs.index(0) + 1]            # strchr looks up to the first NUL, included
        k = c_string.find(bytes([vy]))
        assert got["chr"] == (0 if k < 0 else base + k), (cs, vy)
        assert got["chrnul"] == base + (len(c_string) - 1 if k < 0 else k), (cs, vy)


def test_memrchr_matches_c_on_every_assignment(state):
    """memrchr(s, c, n) with symbolic bytes and a symbolic c: the last match among the first n bytes
    (NULs included, they do not end the search) or NULL, on every assignment over {NUL, 'a', 'b', ':'};
    a length with several values is a named stub."""
    xs = [claripy.BVS(f"m{i}", 8) for i in range(3)]
    y = claripy.BVS("y", 8)
    s = _heap_string(state, [xs[0], ord("a"), xs[1], xs[2], 0])
    base = state.solver.eval(s)
    proc = search.RamMemrchr
    for n in (0, 3, 5):
        r = proc().execute(state.copy(), arguments=[s, y.zero_extend(24), claripy.BVV(n, 64)]).ret_expr
        for vals in itertools.product(ALPHA, repeat=4):
            cs = bytes([vals[0], ord("a"), vals[1], vals[2], 0])
            fix = [xs[0] == vals[0], xs[1] == vals[1], xs[2] == vals[2], y == vals[3]]
            k = cs[:n].rfind(bytes([vals[3]]))
            assert state.solver.eval(r, extra_constraints=fix) == (0 if k < 0 else base + k), (cs, n, vals[3])
    z = claripy.BVS("len", 64)
    st = state.copy()
    st.add_constraints(z.ULE(4))
    inst = proc().execute(st, arguments=[s, claripy.BVV(ord("a"), 32), z])
    assert stubs_of(inst.state) == {"memrchr"}


def test_rawmemchr_matches_c_on_every_assignment(state):
    """rawmemchr(s, c) with symbolic bytes and a symbolic c: the first match from s, NULs searched
    past, on every assignment for which C finds a match within the object (its last byte is the
    sentinel ':'); an object where no byte can match is a named stub."""
    xs = [claripy.BVS(f"r{i}", 8) for i in range(3)]
    y = claripy.BVS("y", 8)
    s = _heap_string(state, [xs[0], 0, xs[1], xs[2], ord(":")])
    base = state.solver.eval(s)
    st = state.copy()       # a match within the object, as the caller knows (else a fork: a stub side)
    st.add_constraints(claripy.Or(y == 0, y == ord(":"), *(y == x for x in xs)))
    r = search.RamRawmemchr().execute(st, arguments=[s, y.zero_extend(24)]).ret_expr
    checked = 0
    for vals in itertools.product(ALPHA, repeat=4):
        cs = bytes([vals[0], 0, vals[1], vals[2], ord(":")])
        k = cs.find(bytes([vals[3]]))
        if k < 0:
            continue
        fix = [xs[0] == vals[0], xs[1] == vals[1], xs[2] == vals[2], y == vals[3]]
        assert state.solver.eval(r, extra_constraints=fix) == base + k, (cs, vals[3])
        checked += 1
    assert checked == 2 * 4 ** 3 + 2 * (4 ** 3 - 3 ** 3)     # NUL, ":" always found; "a", "b" where a byte is one
    plain = _heap_string(state, [ord("a"), ord("b"), 0])
    inst = search.RamRawmemchr().execute(state.copy(), arguments=[plain, claripy.BVV(ord(":"), 32)])
    assert stubs_of(inst.state) == {"rawmemchr"}


def test_angr_search_from_a_selected_pointer(state):
    """angr's own strlen (a chunked memory search) from ``buf + k``, ``k`` chosen by an input byte:
    every value searched from its position, no error, the length of each case."""
    x = claripy.BVS("x", 8)
    buf = _heap_string(state, [ord(" "), ord("a"), ord("b"), 0])
    k = claripy.If(x == 1, claripy.BVV(1, 64), claripy.If(x == 2, claripy.BVV(2, 64), claripy.BVV(0, 64)))
    proc = angr.SIM_PROCEDURES["libc"]["strlen"]()
    n = proc.execute(state, arguments=[buf + k]).ret_expr
    for vx, want in ((0, 3), (1, 2), (2, 1), (9, 3)):
        assert state.solver.eval_upto(n, 2, extra_constraints=[x == vx]) == [want]


@pytest.mark.parametrize("opt", ("O0", "O2"))
@pytest.mark.slow
def test_libc_calls_reach_the_native_outcomes(opt):
    """samples/libcalls.c: every outcome over the two-byte domain, no error, no stub on any path,
    every test replays natively (stock angr: strspn/strcspn/strpbrk are stubs, vsnprintf writes
    an empty string, and the weak pthread_mutex_init is address 0)."""
    b = os.fspath(BUILD / f"libcalls_{opt}")
    r = explore(b, 2, tests=True)
    assert r.errors == []
    assert r.stubs == {}
    assert r.outcomes == outcome_set(b, 2)
    assert_tests_replay(b, r)
    assert r.stats["string_exact"] > 0


def test_weak_imports_bound_only_where_a_library_defines_them():
    proj = load_project(os.fspath(BUILD / "libcalls_O0"))
    weak = unresolved_weak_imports(proj)
    assert "pthread_mutex_init" in weak and "__gmon_start__" in weak
    bound = resolve_weak_imports(proj)
    assert {"pthread_mutex_init", "pthread_mutex_lock", "pthread_mutex_unlock"} <= set(bound)
    assert "__gmon_start__" not in bound            # glibc defines no such function: stays 0
    assert proj.loader.find_symbol("pthread_mutex_init") is not None
    assert proj.loader.find_symbol("__gmon_start__") is None


def test_a_librarys_functions_are_looked_up_in_its_hash_table_as_in_its_symbol_table():
    """``library_defines`` (the GNU hash table, a few lookups) agrees with the full walk of the
    dynamic symbols on names glibc defines, names it does not, and a data symbol."""
    from angr_ram.procedures.weak_imports import find_library, library_defines, library_functions
    libc = find_library("libc.so.6")
    names = frozenset({"pthread_mutex_init", "__cxa_finalize", "strlen", "__gmon_start__",
                       "_ITM_registerTMCloneTable", "environ", "no_such_function_here"})
    assert library_defines(libc, names) == names & library_functions(libc)
    assert {"pthread_mutex_init", "__cxa_finalize", "strlen"} <= library_defines(libc, names)


def _glibc_rand_r(seed: int) -> tuple[int, int]:
    out = 0
    for bits in (11, 10, 10):
        seed = (seed * 1103515245 + 12345) & 0xFFFFFFFF
        part = (seed >> 16) & ((1 << bits) - 1)
        out = part if bits == 11 else ((out << 10) ^ part)
    return out, seed


def test_rand_r_is_glibcs_generator(state):
    """rand_r's result and the seed it writes back, for a symbolic seed, equal glibc's (the
    algorithm of stdlib/rand_r.c) on sample seeds."""
    s = claripy.BVS("seed", 32)
    ptr = _heap_string(state, [0, 0, 0, 0])
    state.memory.store(ptr, s, endness="Iend_LE")
    proc = RamRandR().execute(state, arguments=[ptr])
    after = proc.state.memory.load(ptr, 4, endness="Iend_LE")
    for seed in (0, 1, 17, 0xFFFFFFFF, 123456789):
        want, nxt = _glibc_rand_r(seed)
        assert proc.state.solver.eval(proc.ret_expr, extra_constraints=[s == seed]) == want
        assert proc.state.solver.eval(after, extra_constraints=[s == seed]) == nxt


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_integer_conversions_print_as_glibc_does(opt):
    """printf's %x, %X, %o, %p (NULL: "(nil)"), widths and %c of a byte above 0x7f: angr prints
    ``f"{v:x}"[2:]`` (two digits lost), %X in lower case, %p without "0x" and %c as UTF-8; inside a
    run they are glibc's text, and the tests replay natively."""
    b = os.fspath(BUILD / f"intfmt_{opt}")
    r = explore(b, 1, tests=True)
    assert r.outcomes == outcome_set(b, 1) and len(r.outcomes) == 2
    assert_tests_replay(b, r)


def _byte_range_matches_native(name: str, lo: int, hi: int, count: int) -> None:
    """``name`` explored with one stdin byte in ``lo..hi``: no error, no stub, the ``count`` native
    outcomes over that range, every test replaying."""
    b = os.fspath(BUILD / name)
    r = explore(b, Template(b"?", lo, hi), tests=True)
    native = outcome_set_over(b, [bytes(range(lo, hi + 1))])
    assert len(native) == count
    assert r.errors == [] and r.outcomes == native and r.stubs == {}
    assert_tests_replay(b, r)


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_a_format_string_picked_by_the_input(opt):
    """formatpick: ``sprintf(out, isprint(c) ? "[%c]" : "\\\\%03o", c)``, at -O2 a conditional move: a
    symbolic pointer to the format string. The state forks once per format (stock angr: "Symbolic
    pointer to (format) string", no path); every native output over the bytes 'x'..0x84 (7 printable,
    6 not: each path's outputs are listed in full), every test replays."""
    _byte_range_matches_native(f"formatpick_{opt}", 0x78, 0x84, 13)


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_printf_flags_widths_and_precisions_match_glibc(opt):
    """printfspecs: %*s, %-*s, %-6d, %.2s, %.*s, %*d of a negative width, %06d, %.3d, %-3c, %5.1s...
    (angr's parser knew a digit width, ``.*`` and ``0``: the others were printed as text and their
    arguments went to the next conversion; Debian's nl read a string at the address 6, its width)."""
    b = os.fspath(BUILD / f"printfspecs_{opt}")
    r = explore(b, 1, tests=True)
    native = outcome_set_over(b, [b"ab"])
    assert len(native) == 2
    assert r.errors == [] and r.outcomes == native and r.stubs == {}
    assert_tests_replay(b, r)


@pytest.mark.parametrize("opt", ("O0", "O2"))
@pytest.mark.slow
def test_printf_flags_signs_and_forms_match_glibc(opt):
    """printfflags: ``%+d``, ``% d``, ``%#x`` (no ``0x`` for 0), ``%#o``, ``%05d`` of a negative number
    (zeros after the sign), ``%5.3d``, ``%.0d`` of 0 (no digit), ``%.*s`` of a malloc'd array without
    a NUL and a precision that depends on the input, then the same flags on the input byte itself
    (more values than a fork per value: symbolic digits, 0 a path of its own). Every native output
    over the bytes 0..127, every test replays (angr-ram before: the flags ignored, 128/128 tests
    mismatched at -O2; a precision with several values ended the -O0 run)."""
    _byte_range_matches_native(f"printfflags_{opt}", 0, 127, 128)


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_localeconv_is_the_c_locales(opt):
    """lconv: ``localeconv()``'s decimal point ".", empty strings, ``CHAR_MAX`` fields (angr: a stub,
    its pointer unconstrained: Debian's ``sum`` ended in null-dereference error paths). Every native
    output over the bytes 0x30..0x3f, every test replays."""
    _byte_range_matches_native(f"lconv_{opt}", 0x30, 0x3F, 16)


def test_scanf_parsers_keep_angrs_conversions():
    """A scanf call angr-ram's model leaves to angr (a ``%ls``, a symbolic format) is parsed by
    angr's parser: there ``*`` suppresses the assignment, which C99's printf syntax (:mod:`.format_specs`)
    would read as a width taken from an argument that is not there (a false null-dereference on
    every path of ``sscanf(buf, "%*c%d", &x)`` before the guard)."""
    scanf = object.__new__(angr.SIM_PROCEDURES["libc"]["sscanf"])
    assert libc.complete_format_spec.replacement(lambda self, nugget: ("angr", nugget), scanf, b"*c%d") == \
        ("angr", b"*c%d")
    printf = object.__new__(angr.SIM_PROCEDURES["libc"]["printf"])
    printf.arch = archinfo.ArchAMD64()
    spec = libc.complete_format_spec.replacement(lambda self, nugget: ("angr", nugget), printf, b"*c%d")
    assert isinstance(spec, RamSpec) and spec.width == "*" and spec.string == b"*c"


def test_holds_for_sure_asks_the_solver_only_when_the_condition_is_symbolic(state):
    """A model's "is this pointer NULL / this size 0" on a concrete value (getline's buffer and size,
    realloc's size on most calls) is decided without a solver call; a symbolic one still asks, and
    a condition the path decides is answered without a fork."""
    calls = []
    satisfiable = state.solver.satisfiable
    state.solver.satisfiable = lambda **kw: calls.append(kw) or satisfiable(**kw)
    assert holds_for_sure(state, claripy.BVV(0, 64) == 0, "zero") is True
    assert holds_for_sure(state, claripy.BVV(8, 64) == 0, "eight") is False
    assert calls == []
    x = claripy.BVS("x", 8)
    state.add_constraints(x == 3)
    assert holds_for_sure(state, x == 3, "decided") is True and len(calls) == 2
    assert holds_for_sure(state, x == 4, "decided") is False
