"""Exact string procedures (angr_ram.procedures.strings) and the modelled environment
(angr_ram.posix.environment): semantics against C on every assignment of small alphabets, whole
programs against native ground truth, and getrandom/time in both environments."""

import itertools
import os

import claripy
import pytest

from angr_ram.core.patches import holding
from angr_ram.memory.pointers import pointer_cases
from angr_ram.memory.strategies.fork import value_forking
from angr_ram.posix.environment import FIXED_EPOCH, fixed_bytes
from angr_ram.procedures import strings
from angr_ram.run.runner import explore, prepare

from .conftest import BUILD, assert_tests_replay
from .groundtruth import outcome_set_over
from .test_testcases import argv_truth

ALPHA = b"\x00ab"


def _heap_string(state, data):
    """A heap object holding ``data`` (ints or 8-bit ASTs); its program-level base pointer."""
    obj = state.ram.allocate(len(data))
    for i, b in enumerate(data):
        state.memory.store(obj.base + i, b if isinstance(b, claripy.ast.BV) else claripy.BVV(b, 8))
    return obj.base


def _c_strncmp(a: bytes, b: bytes, n: int | None) -> int:
    i = 0
    while n is None or i < n:
        x, y = a[i], b[i]
        if x != y or x == 0:
            return x - y
        i += 1
    return 0


def _sign(v: int) -> int:
    return (v > 0) - (v < 0)


@pytest.fixture
def state(ram_state):
    return ram_state.copy()


def test_strlen_without_new_symbols(state):
    x, y = claripy.BVS("x", 8), claripy.BVS("y", 8)
    p = _heap_string(state, [x, ord("b"), y, 0])
    n = strings.string_length(state, p)
    assert n.variables == x.variables | y.variables         # no strlen_N symbol
    for vx, vy in itertools.product(ALPHA, repeat=2):
        want = bytes([vx, ord("b"), vy, 0]).index(0)
        assert state.solver.eval(n, extra_constraints=[x == vx, y == vy]) == want
    assert strings.string_length(state, _heap_string(state, [x, y])) is None   # no NUL: angr's


def test_comparisons_match_c_on_every_assignment(state):
    """strcmp, strncmp (n = 2) and memcmp (n = 3): the sign of the result equals C's on every
    assignment of two symbolic bytes per string over {NUL, 'a', 'b'}."""
    xs = [claripy.BVS(f"x{i}", 8) for i in range(2)]
    ys = [claripy.BVS(f"y{i}", 8) for i in range(2)]
    pa = _heap_string(state, [xs[0], ord("a"), xs[1], 0])
    pb = _heap_string(state, [ys[0], ys[1], ord("b"), 0])
    cases = [(strings.compare(state, pa, pb, None, True), None, True),
             (strings.compare(state, pa, pb, 2, True), 2, True),
             (strings.compare(state, pa, pb, 3, False), 3, False)]
    assert all(r is not None for r, _, _ in cases)
    for vals in itertools.product(ALPHA, repeat=4):
        a = bytes([vals[0], ord("a"), vals[1], 0])
        b = bytes([vals[2], vals[3], ord("b"), 0])
        fix = [xs[0] == vals[0], xs[1] == vals[1], ys[0] == vals[2], ys[1] == vals[3]]
        for r, n, is_str in cases:
            got = state.solver.eval(r, extra_constraints=fix)
            got = got - (1 << 64) if got >> 63 else got
            want = _c_strncmp(a, b, n) if is_str else _sign(a[0] - b[0]) or _sign(a[1] - b[1]) or _sign(a[2] - b[2])
            assert _sign(got) == _sign(want), (a, b, n, is_str, got)


def test_pointer_that_selects_among_strings(state):
    """A key chosen by an input (a table entry): one case per feasible pointer, in program terms."""
    i = claripy.BVS("i", 8)
    keys = [_heap_string(state, list(w) + [0]) for w in (b"ab", b"a", b"")]
    sel = claripy.If(i == 0, keys[0], claripy.If(i == 1, keys[1], keys[2]))
    state.add_constraints(claripy.ULE(i, 2))
    n = strings.string_length(state, sel)
    assert [state.solver.eval(n, extra_constraints=[i == k]) for k in range(3)] == [2, 1, 0]
    assert not any(v.startswith("strlen") for v in n.variables)


def test_freed_or_symbolic_sized_objects_go_to_angr(state):
    p = _heap_string(state, [ord("a"), 0])
    state.ram.free(state.ram.object_of_base(p).id)
    assert strings.string_length(state, p) is None


@pytest.mark.parametrize("opt", ("O0", "O2"))
def test_string_calls_against_native(opt):
    """strlen, strcmp (key chosen by an input byte), strncmp, memcmp and strnlen on heap copies
    of the input: native outcomes over the byte classes, no error path, every call exact."""
    b = os.fspath(BUILD / f"strcalls_{opt}")
    r = explore(b, 4, tests=True)
    assert r.errors == []
    assert r.outcomes == outcome_set_over(b, [b"\x00abcz"] * 3 + [bytes(range(4))])
    assert r.stats["string_exact"] >= 4 and r.stats["string_fallback"] == 0
    assert_tests_replay(b, r)


@pytest.mark.parametrize("binary", ("envcalls_O0", "envcalls_O2", "envcalls_static"))
def test_getrandom_and_time(binary):
    """Symbolic environment: every random value is possible ({3, 4} by the low bit, +4 when the
    input equals the random bytes); the fixed one: the documented bytes and clock only. The static
    binary reaches getrandom as a system call."""
    b = os.fspath(BUILD / binary)
    r = explore(b, 2)
    assert r.errors == [] and {c for c, _ in r.outcomes} == {3, 4, 7, 8}
    # every path branched on the random bytes, and the summary says so (angr's clock >= 0 is no branch)
    assert r.environment["random bytes"] == r.stats["paths"] == sum(r.endings.values())
    low = 4 if fixed_bytes(0, 2)[0] & 1 else 3
    r = explore(b, 2, environment="fixed")
    assert r.errors == [] and {c for c, _ in r.outcomes} == {low, low + 4}
    assert r.environment == {}
    if binary != "envcalls_static":
        r = explore(b, 2, engine="stock", environment="fixed")   # the same model under stock angr
        assert {c for c, _ in r.outcomes} == {low, low + 4}


def test_fixed_clock_and_unknown_environment():
    """The fixed clock starts at FIXED_EPOCH and advances one second per read on a path; an
    unknown environment name is a clear error."""
    from angr_ram.core.errors import AngrRamError
    from angr_ram.posix.environment import RamFixedTime

    simgr, _ = prepare(os.fspath(BUILD / "envcalls_O0"), 2, environment="fixed")
    proc = RamFixedTime()
    proc.state = simgr.active[0]
    assert [proc.run(claripy.BVV(0, 64)).concrete_value for _ in range(2)] == [FIXED_EPOCH, FIXED_EPOCH + 1]
    with pytest.raises(AngrRamError, match="environment"):
        prepare(os.fspath(BUILD / "envcalls_O0"), 2, environment="random")


def test_aligned_allocations_keep_their_alignment(state):
    """posix_memalign's alignment holds for the hidden address, after a relocation and inside a
    segment (dynamically segmented memory merges it with a 16-aligned object)."""
    space = state.ram
    small = space.allocate(24)
    big = space.allocate(100, align=4096)
    assert space.concrete_of(big.name) % 4096 == 0
    space.relocate(big.id)
    assert space.concrete_of(big.name) % 4096 == 0
    objs, offsets, _ = space.segment_layout([small.id, big.id])
    assert all(off % o.align == 0 for o, off in zip(objs, offsets, strict=True))
    seg = space.make_segment([small.id, big.id])
    assert seg.addr % 4096 == 0 and space.concrete_of(big.name) % 4096 == 0
    with pytest.raises(ValueError):
        space.allocate(8, align=24)


def test_pthread_keys_and_sysconf():
    """Thread-specific data in a single-threaded process, sysconf's machine constants."""
    from angr_ram.posix.environment import RamSysconf
    from angr_ram.posix.threads import GetSpecific, KeyCreate, SetSpecific

    simgr, _ = prepare(os.fspath(BUILD / "envcalls_O0"), 2)
    st = simgr.active[0]

    def call(cls, *args):
        p = cls()
        p.state = st
        return p.run(*args)

    slot = claripy.BVV(st.regs.rsp.concrete_value - 0x100, 64)
    assert call(KeyCreate, slot, claripy.BVV(0, 64)).concrete_value == 0
    key = st.memory.load(slot, 4, endness="Iend_LE")
    assert call(GetSpecific, key).concrete_value == 0                 # NULL until set
    call(SetSpecific, key, claripy.BVV(0x1234, 64))
    assert call(GetSpecific, key).concrete_value == 0x1234
    call(KeyCreate, slot, claripy.BVV(0, 64))
    assert call(GetSpecific, st.memory.load(slot, 4, endness="Iend_LE")).concrete_value == 0
    assert call(RamSysconf, claripy.BVV(30, 32)).concrete_value == 4096
    assert call(RamSysconf, claripy.BVV(9999, 32)).concrete_value == (1 << 64) - 1


@pytest.mark.parametrize("opt", ["O0", "O2"])
@pytest.mark.slow
def test_puts_of_a_copy_sized_by_its_symbolic_length(opt):
    """argdup: ``p = malloc(strlen(arg) + 1)``, the argument copied in, ``puts(p)``: angr's strlen
    searches ``p`` in chunks of 129 bytes, past the copy's symbolic size (Debian's ``expr`` prints
    its result so). The chunk is the copy's bytes then zeros, not a false segfault that ended the
    path (``speculative chunk of a search leaves its object``); every exit outcome is a native one
    and its test replays."""
    from angr_ram.run.replay import replay

    b = os.fspath(BUILD / f"argdup_{opt}")
    r = explore(b, args=[2], tests=True)
    assert r.errors == [] and r.stats["paths"] >= 1     # (angr's puts loaded 2 bytes of a 1-byte copy)
    assert r.outcomes and r.outcomes <= argv_truth(f"argdup_{opt}")
    runs = [x for x in replay(r.tests, b) if x.test.kind == "exit"]
    assert runs and all(x.status == "ok" for x in runs)


@pytest.mark.parametrize("opt", ["O0", "O2"])
def test_string_functions_read_a_copy_sized_by_its_symbolic_length(opt):
    """argscan: argv[1] copied into ``malloc(strlen + 1)`` (gnulib's xstrdup), that copy copied so
    again (angr's memcpy loads the largest length: the paths with a shorter copy were cut off as a
    false over-read, 16 of 71 outcomes lost), then strcspn, strspn, strchr, strcoll, strcmp and
    strtol on the second copy. An object of symbolic size whose terminator is
    inside it on every path is read exactly: no stub (strspn and strcspn were, with a
    fresh length that indexed past the copy: Debian's ``expr index`` replayed 7 of 4,895 tests
    wrong), no fallback to angr's procedures (angr's strchr ended the path with a false
    segfault; angr's strcoll answered 1 for every difference of symbolic bytes). The outcomes are
    exactly the native ones over every 2-byte argument and every test replays."""
    b = os.fspath(BUILD / f"argscan_{opt}")
    r = explore(b, args=[2], tests=True)
    assert r.errors == [] and r.stubs == {}
    assert r.stats["string_fallback"] == 0 and r.stats["string_exact"] > 0
    assert r.outcomes == argv_truth(f"argscan_{opt}")
    assert_tests_replay(b, r)


def _object_of(state, p):
    obj, off = state.ram.find(state.ram.substitute(p).concrete_value)
    assert off == 0 and obj.limit is not None
    return obj


def test_terminator_inside_every_size_is_read_exactly(state):
    """Objects of symbolic size holding ``x, y`` then a NUL. Size ``If(x == 0, 2, 3)``: on every
    path the string ends inside the object (at ``x`` when it is 0), so a string reader may read
    it up to the NUL (3 bytes) and its length is exact; a reader that may pass a NUL (``memcmp``)
    may not. Size ``If(x == 1, 1, 3)``: where ``x`` is 1 the object has one byte and the string
    runs past it, so it is not read exactly (angr's procedure, as before)."""


    x, y = claripy.BVS("sx", 8), claripy.BVS("sy", 8)
    text = claripy.Concat(x, y, claripy.BVV(0, 8))
    p = state.heap._malloc(claripy.If(x == 0, claripy.BVV(2, 64), claripy.BVV(3, 64)))
    _object_of(state, p).store.write(0, text, 3)    # as the program's copy left it (no bounds check)
    assert pointer_cases(state, p) is None
    assert pointer_cases(state, p, strings=True) == [(None, p, 3)]
    n = strings.string_length(state, p)
    assert {state.solver.eval(n, extra_constraints=c) for c in ([x == 0], [x == 5, y == 0], [x == 5, y == 6])} == {0, 1, 2}
    q = state.heap._malloc(claripy.If(x == 1, claripy.BVV(1, 64), claripy.BVV(3, 64)))
    _object_of(state, q).store.write(0, text, 3)
    assert pointer_cases(state, q, strings=True) is None
    assert strings.string_length(state, q) is None


def test_a_load_for_a_symbolic_length_reads_only_that_length(state):
    """``puts``/``fputs``/``fwrite``/``write`` of ``n`` bytes (symbolic) load ``n``'s largest value
    (angr's file write). From an object of symbolic size ``If(x == 0, 1, 2)`` holding ``x, NUL``:
    with ``n`` its string length, no path faults (before: the paths where the copy has one byte
    were cut off as an over-read); with ``n`` past the size where ``x`` is 0, those paths fault."""
    x = claripy.BVS("rx", 8)
    p = state.heap._malloc(claripy.If(x == 0, claripy.BVV(1, 64), claripy.BVV(2, 64)))
    _object_of(state, p).store.write(0, claripy.Concat(x, claripy.BVV(0, 8)), 2)
    fits, over = claripy.If(x == 0, claripy.BVV(0, 64), claripy.BVV(1, 64)), claripy.If(x == 0, claripy.BVV(2, 64), claripy.BVV(1, 64))
    outcomes = []
    for n in (fits, over, None):
        s = state.copy()
        if n is None:
            s.memory.load(p, 2)
        else:
            with s.memory.reading(p, n):
                s.memory.load(p, 2)
        outcomes.append((s.solver.satisfiable([x == 0]), s.solver.satisfiable([x == 1])))
    assert outcomes == [(True, True), (False, True), (False, True)]


def test_strlen_past_its_symbolic_budget_is_angrs_counted_once(state):
    """A NUL behind more than ``max_str_len`` symbolic bytes: RamStrlen hands the call to angr's
    procedure once (its exact search already ran: the patched angr strlen searched again and
    counted a second fallback), and the length is angr's, which may be 0."""
    xs = [claripy.BVS(f"x{i}", 8) for i in range(state.libc.max_str_len + 2)]
    p = _heap_string(state, xs + [0])
    assert strings.string_length(state, p) is None
    exact, fallback = state.ram.stats.string_exact, state.ram.stats.string_fallback
    with holding(["format-values"]), value_forking():
        n = strings.RamStrlen().execute(state, arguments=[p]).ret_expr
    assert (state.ram.stats.string_exact, state.ram.stats.string_fallback) == (exact, fallback + 1)
    assert state.solver.eval(n, extra_constraints=[xs[0] == 0]) == 0
