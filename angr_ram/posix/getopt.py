"""``getopt``, ``getopt_long`` and ``getopt_long_only`` as glibc parses options.

angr has no model of them: a stub returns any value, so a GNU program (``base64 -d``, ``tr -d x``)
took an arbitrary option path on every input. These procedures follow glibc's ``getopt_long``
(POSIX ``getopt`` and GNU's extensions, as its manual page describes them):

* short options, grouped (``-ab``) or apart; a required argument in the same word or the next
  (``-n3``, ``-n 3``), an optional one only in the same word (``-v2``); ``?`` for an unknown
  option and for a missing argument, ``:`` for the latter when the option string starts with ``:``
  (``optopt`` holds the option); error messages on stderr unless ``opterr`` is 0 or the option
  string starts with ``:``;
* long options (``--name``, ``--name=value``, ``--name value`` for a required argument), unique
  prefixes, ambiguous ones (``?``, ``optopt`` 0), a ``flag`` pointer set to ``val`` (return 0),
  ``*longindex``; ``getopt_long_only`` also takes ``-name``;
* ordering: non-options are moved after the options (``argv`` is permuted in memory as glibc
  does), unless the option string starts with ``+`` (stop at the first non-option) or ``-``
  (each non-option returned as the argument of option 1); ``--`` ends the options; ``optind``
  is then the first non-option; setting ``optind`` to 0 starts over.

``optind``, ``optarg``, ``optopt`` are read and written where the program holds them, the scan's
position lives in the state. Pointers are read through the run's address bindings (a heap ``argv``
has symbolic-base pointers). A symbolic byte the parse looks at is taken by cases: inside an
angr-ram step the state forks on the values that decide the parse there (a leading ``-``, the
option letters, the long names' bytes at that position, ``=``, the end of the word) and "none of
them" (an unknown option: its message and ``optopt`` hold the symbolic byte). What still cannot be
read (a pointer with several values, outside a step) returns -1 when no argument from ``optind`` on
can start with ``-``, else makes the call a stub (recorded on the path, :mod:`.stubs`).
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.procedures.stubs import record

MAX_ARGS = 4096
MAX_STRING = 4096
MAX_LONGOPTS = 1024
OPTION_SIZE = 32            # struct option on x86-64: name, has_arg (padded), flag, val (padded)
_KEY = "angr_ram_getopt"    # state.globals: the scan's position (see _Scan)
PERMUTE, REQUIRE_ORDER, RETURN_IN_ORDER = "permute", "require", "in-order"


class Symbolic(Exception):
    """Something the parse must read is symbolic."""


class _Cases(Exception):  # noqa: N818 - a control-flow signal
    """The parse depends on which of a few cases a symbolic value is in: fork on them."""

    def __init__(self, conditions: list, what: str):
        super().__init__(what)
        self.conditions, self.what = conditions, what


class _Scan:
    """glibc's ``struct _getopt_data`` apart from the public variables: where the scan is."""

    __slots__ = ("first_nonopt", "last_nonopt", "nextchar", "ordering", "optind")

    def __init__(self, first_nonopt=1, last_nonopt=1, nextchar=None, ordering=PERMUTE, optind=1):
        self.first_nonopt, self.last_nonopt, self.nextchar, self.ordering = (first_nonopt, last_nonopt, nextchar,
                                                                               ordering)
        self.optind = optind        # for a program that holds no optind of its own

    def key(self) -> tuple:
        return self.first_nonopt, self.last_nonopt, self.nextchar, self.ordering, self.optind


class Getopt(angr.SimProcedure):
    """``getopt(argc, argv, optstring)``."""

    name_for_stub = "getopt"
    long_only = False

    def run(self, argc, argv, optstring):  # pylint: disable=arguments-differ
        return self.parse(argc, argv, optstring, None, None)

    # ------------------------------------------------------------------ memory
    def _int(self, v) -> int:
        """``v``'s value: concrete, a heap pointer (a symbolic base, concrete once the run's
        address bindings are substituted), or a symbolic value that has one solution on the path;
        else :class:`Symbolic`."""
        if isinstance(v, int):
            return v
        if not v.symbolic:
            return v.concrete_value
        if self.state.has_plugin("ram"):
            a = self.state.ram.substitute(v)
            if not a.symbolic:
                return a.concrete_value
        vals = self.state.solver.eval_upto(v, 2)
        if len(vals) != 1:
            raise Symbolic
        return vals[0]

    def _word(self, addr):
        """The pointer at ``addr``, as the program holds it (a heap pointer stays relocatable)."""
        return self.state.memory.load(addr, 8, endness=self.arch.memory_endness)

    def _string(self, addr) -> bytes:
        out = bytearray()
        while len(out) < MAX_STRING and (b := self._int(self.state.memory.load(addr + len(out), 1))):
            out.append(b)
        if len(out) < MAX_STRING:
            return bytes(out)
        raise Symbolic        # too long to be an option

    def _byte_is(self, addr, value: int) -> bool:
        """Whether the byte at ``addr`` is ``value`` (forks when it may be either)."""
        b = self._case_of(self.state.memory.load(addr, 1), [value], "what an argument starts with")
        return isinstance(b, int) and b == value

    def _byte_in(self, addr, opts: bytes) -> bool:
        """Whether the byte at ``addr`` is one of the option letters in ``opts``."""
        b = self._case_of(self.state.memory.load(addr, 1), _letters(opts), "which option letter")
        return isinstance(b, int) and b in _letters(opts)

    def _word_is(self, addr, text: bytes) -> bool:
        """Whether the string at ``addr`` is ``text``, byte by byte (forks where a byte decides)."""
        return all(self._byte_is(addr + i, x) for i, x in enumerate(text)) and self._nul(addr + len(text))

    def _nul(self, addr) -> bool:
        """Whether the byte at ``addr`` is 0 (forks when it may be either)."""
        b = self._case_of(self.state.memory.load(addr, 1), [0], "whether an option word ends")
        return isinstance(b, int) and b == 0

    def _case_of(self, v, values: list[int], what: str):
        """``v`` (a byte) as an int when its value is one of ``values`` or it has one value, as
        ``v`` itself when it is surely none of them; when several cases are feasible,
        :class:`_Cases` over each feasible value and "none of them"."""
        if not v.symbolic:
            return v.concrete_value
        vals = self.state.solver.eval_upto(v, 2)
        if len(vals) == 1:
            return vals[0]
        try:        # one query for the feasible candidates (not one per candidate)
            feasible = sorted(set(self.state.solver.eval_upto(v, len(values) + 1, extra_constraints=[
                claripy.Or(*[v == x for x in values])])) & set(values))
        except angr.errors.SimUnsatError:
            feasible = []
        if not feasible:
            return v
        none = claripy.And(*[v != x for x in values])
        conds = [v == x for x in feasible]
        if self.state.solver.satisfiable(extra_constraints=[none]):
            conds.append(none)
        raise _Cases(conds, f"{self.name_for_stub}: {what}")

    def _var(self, name: str):
        sym = self.project.loader.find_symbol(name)
        return None if sym is None else sym.rebased_addr

    def _get_int(self, name: str, default: int) -> int:
        addr = self._var(name)
        return default if addr is None else self._int(self.state.memory.load(addr, 4, endness="Iend_LE"))

    def _set_int(self, name: str, value) -> None:
        addr = self._var(name)
        if addr is not None:
            v = claripy.BVV(value & 0xFFFFFFFF, 32) if isinstance(value, int) else value.zero_extend(32 - value.size())
            self.state.memory.store(addr, v, endness="Iend_LE")

    def _set_optarg(self, ptr) -> None:
        addr = self._var("optarg")
        if addr is not None:
            v = claripy.BVV(ptr, 64) if isinstance(ptr, int) else ptr
            self.state.memory.store(addr, v, endness=self.arch.memory_endness)

    def _error(self, *parts) -> None:
        """Write the message made of ``parts`` (bytes, or a symbolic byte) to stderr."""
        fd = self.state.posix.get_fd(2)
        if fd is not None:
            exprs = [claripy.BVV(x) if isinstance(x, bytes) else x for x in parts if not isinstance(x, bytes) or x]
            fd.write_data(claripy.Concat(*exprs) if len(exprs) > 1 else exprs[0])

    # ------------------------------------------------------------------ the parse
    def parse(self, argc, argv, optstring, longopts, longindex):
        try:
            return claripy.BVV(self._parse(argc, argv, optstring, longopts, longindex) & 0xFFFFFFFF, 32)
        except _Cases as c:
            if value_forking_enabled():
                raise ForkRequest([Target(x, "value") for x in c.conditions], c.what) from None
            return self._fallback(argc, argv)
        except Symbolic:
            return self._fallback(argc, argv)

    def _parse(self, argc_v, argv_v, optstring_v, longopts_v, longindex_v) -> int:  # noqa: C901 - glibc's one loop
        argc = self._int(argc_v)
        if argc < 1 or argc > MAX_ARGS:
            return -1
        argv = argv_v
        opts = self._string(optstring_v)
        longopts = self._longopts(longopts_v) if longopts_v is not None else None
        scan = self.state.globals.get(_KEY)
        scan = None if scan is None else _Scan(*scan)
        optind = self._get_int("optind", 1 if scan is None else scan.optind)
        self._set_optarg(0)
        if optind == 0 or scan is None:
            optind = max(optind, 1)
            ordering = PERMUTE
            if opts[:1] == b"-":
                ordering = RETURN_IN_ORDER
            elif opts[:1] == b"+":
                ordering = REQUIRE_ORDER
            scan = _Scan(optind, optind, None, ordering, optind)
        if opts[:1] in (b"-", b"+"):
            opts = opts[1:]
        print_errors = self._get_int("opterr", 1) != 0 and opts[:1] != b":"
        args = [self._word(argv + 8 * k) for k in range(argc)]

        def arg(k: int) -> bytes:
            return self._string(args[k])

        def nonoption(k: int) -> bool:
            return not self._byte_is(args[k], ord("-")) or self._nul(args[k] + 1)

        def exchange() -> None:
            lo, mid, hi = scan.first_nonopt, scan.last_nonopt, optind
            args[lo:hi] = args[mid:hi] + args[lo:mid]
            for k in range(lo, hi):
                self.state.memory.store(argv + 8 * k, args[k], endness=self.arch.memory_endness)
            scan.first_nonopt += hi - mid
            scan.last_nonopt = hi

        def done(code: int) -> int:
            self._set_int("optind", optind)
            scan.optind = optind
            self.state.globals[_KEY] = scan.key()
            return code

        def prog() -> bytes:
            try:
                return arg(0) if self._int(args[0]) else b""
            except Symbolic:
                return b""

        if scan.nextchar is None or self._nul(scan.nextchar):
            scan.last_nonopt = min(scan.last_nonopt, optind)
            scan.first_nonopt = min(scan.first_nonopt, optind)
            if scan.ordering == PERMUTE:
                if scan.first_nonopt != scan.last_nonopt and scan.last_nonopt != optind:
                    exchange()
                elif scan.last_nonopt != optind:
                    scan.first_nonopt = optind
                while optind < argc and nonoption(optind):
                    optind += 1
                scan.last_nonopt = optind
            if optind != argc and self._word_is(args[optind], b"--"):
                optind += 1
                if scan.first_nonopt != scan.last_nonopt and scan.last_nonopt != optind:
                    exchange()
                elif scan.first_nonopt == scan.last_nonopt:
                    scan.first_nonopt = optind
                scan.last_nonopt = argc
                optind = argc
            if optind == argc:
                if scan.first_nonopt != scan.last_nonopt:
                    optind = scan.first_nonopt
                return done(-1)
            if nonoption(optind):
                if scan.ordering == REQUIRE_ORDER:
                    return done(-1)
                self._set_optarg(args[optind])
                optind += 1
                return done(1)
            if longopts is not None:
                if self._byte_is(args[optind] + 1, ord("-")):
                    scan.nextchar = args[optind] + 2
                    code, optind = self._long(argc, args, arg, optind, opts, longopts, longindex_v, scan,
                                              print_errors, prog, b"--")
                    return done(code)
                if self.long_only and (not self._nul(args[optind] + 2) or not self._byte_in(args[optind] + 1, opts)):
                    scan.nextchar = args[optind] + 1
                    code, optind = self._long(argc, args, arg, optind, opts, longopts, longindex_v, scan,
                                              print_errors, prog, b"-")
                    if code != -1:
                        return done(code)
            scan.nextchar = args[optind] + 1

        # a short option at nextchar: a symbolic letter forks on the option letters it may be
        c = self._case_of(self.state.memory.load(scan.nextchar, 1), _letters(opts), "which option letter")
        scan.nextchar += 1
        rest = not self._nul(scan.nextchar)
        if not rest:
            optind += 1
        at = opts.find(bytes([c])) if isinstance(c, int) else -1
        if at < 0 or c in (ord(":"), ord(";")):
            if print_errors:
                self._error(prog(), b": invalid option -- '", bytes([c]) if isinstance(c, int) else c, b"'\n")
            self._set_int("optopt", _signed_char(c))
            return done(ord("?"))
        spec = opts[at + 1:at + 3]
        if spec[:1] == b":":
            if spec == b"::":                      # optional: only in the same word
                if rest:
                    self._set_optarg(scan.nextchar)
                    optind += 1
                scan.nextchar = None
            else:
                if rest:
                    self._set_optarg(scan.nextchar)
                    optind += 1
                elif optind == argc:
                    if print_errors:
                        self._error(prog(), b": option requires an argument -- '", bytes([c]), b"'\n")
                    self._set_int("optopt", _signed_char(c))
                    c = ord(":") if opts[:1] == b":" else ord("?")
                else:
                    self._set_optarg(args[optind])
                    optind += 1
                scan.nextchar = None
        return done(c)

    def _longopts(self, table) -> list | None:
        if self._int(table) == 0:
            return None
        out = []
        for k in range(MAX_LONGOPTS):
            base = table + OPTION_SIZE * k
            name_ptr = self._word(base)
            if self._int(name_ptr) == 0:
                return out
            has_arg = self._int(self.state.memory.load(base + 8, 4, endness="Iend_LE"))
            flag = self._word(base + 16)
            val = self._int(self.state.memory.load(base + 24, 4, endness="Iend_LE"))
            out.append((self._string(name_ptr), has_arg, flag, val))
        raise Symbolic

    def _long(self, argc, args, arg, optind, opts, longopts, longindex_v, scan, print_errors, prog, prefix):
        """glibc's ``process_long_option``: (code, optind)."""
        name, eq = self._long_name(scan.nextchar, longopts, opts)
        if eq is None:              # no option name goes on with this (symbolic) byte
            if self.long_only and prefix == b"-" and name[:1] in _short_set(opts):
                return -1, optind   # getopt_long_only: short options after all
            if print_errors:
                self._error(prog(), b": unrecognized option '", prefix, *self._message_word(scan.nextchar), b"'\n")
            scan.nextchar = None
            self._set_int("optopt", 0)
            return ord("?"), optind + 1
        found, index = None, -1
        for i, o in enumerate(longopts):
            if o[0] == name:
                found, index = o, i
                break
        if found is None:
            ambiguous = False
            for i, o in enumerate(longopts):
                if o[0].startswith(name):
                    if found is None:
                        found, index = o, i
                    elif self.long_only or o[1:] != found[1:]:
                        ambiguous = True
            if ambiguous:
                if print_errors:
                    self._error(prog() + b": option '" + prefix + name + b"' is ambiguous\n")
                scan.nextchar = None
                self._set_int("optopt", 0)
                return ord("?"), optind + 1
        if found is None:
            if not self.long_only or prefix == b"--" or name[:1] not in _short_set(opts):
                if print_errors:
                    self._error(prog(), b": unrecognized option '", prefix, *self._message_word(scan.nextchar), b"'\n")
                scan.nextchar = None
                self._set_int("optopt", 0)
                return ord("?"), optind + 1
            return -1, optind        # getopt_long_only: a short option after all
        optind += 1
        start = scan.nextchar
        scan.nextchar = None
        _, has_arg, flag, val = found
        if eq:
            if has_arg:
                self._set_optarg(start + len(name) + 1)
            else:
                if print_errors:
                    self._error(prog() + b": option '" + prefix + found[0] + b"' doesn't allow an argument\n")
                self._set_int("optopt", val)
                return ord("?"), optind
        elif has_arg == 1:
            if optind < argc:
                self._set_optarg(args[optind])
                optind += 1
            else:
                if print_errors:
                    self._error(prog() + b": option '" + prefix + found[0] + b"' requires an argument\n")
                self._set_int("optopt", val)
                return (ord(":") if opts[:1] == b":" else ord("?")), optind
        if longindex_v is not None:
            if self._int(longindex_v):
                self.state.memory.store(longindex_v, claripy.BVV(index, 32), endness="Iend_LE")
        if self._int(flag):
            self.state.memory.store(flag, claripy.BVV(val & 0xFFFFFFFF, 32), endness="Iend_LE")
            return 0, optind
        return val, optind

    def _long_name(self, addr, longopts, opts) -> tuple:
        """``(name, eq)``: the option name at ``addr`` (up to ``=`` or the end of the word) and
        whether ``=`` follows. A symbolic byte forks on the bytes that decide the match (those the
        table's names have there, ``=``, the end, and for ``getopt_long_only`` the short letters
        first); where it is none of them no name matches: ``(the bytes before it, None)``."""
        out = bytearray()
        while len(out) < MAX_STRING:
            i = len(out)
            cands = {o[0][i] for o in longopts if len(o[0]) > i and o[0][:i] == bytes(out)} | {0, ord("=")}
            if self.long_only and i == 0:
                cands |= {b for b in opts if b not in b":;+-"}
            b = self._case_of(self.state.memory.load(addr + i, 1), sorted(cands), "which long option")
            if not isinstance(b, int):
                return bytes(out), None
            if b in (0, ord("=")):
                return bytes(out), b == ord("=")
            out.append(b)
        raise Symbolic

    def _message_word(self, addr) -> list:
        """The word at ``addr`` for an error message: its bytes (symbolic ones as they are) up to a
        NUL that ends it on this path (a byte that may end it or not: a case each)."""
        parts = []
        for i in range(MAX_STRING):
            b = self.state.memory.load(addr + i, 1)
            if not b.symbolic:
                if b.concrete_value == 0:
                    return parts
                parts.append(bytes([b.concrete_value]))
                continue
            if self.state.solver.satisfiable(extra_constraints=[b == 0]):
                if not self.state.solver.satisfiable(extra_constraints=[b != 0]):
                    return parts
                # where the word ends is not decided: one case per end (the message's length)
                raise _Cases([b == 0, b != 0], f"{self.name_for_stub}: where an unrecognized option ends")
            parts.append(b)
        raise Symbolic

    # ------------------------------------------------------------------ symbolic arguments
    def _fallback(self, argc, argv):
        """-1 when no argument from ``optind`` on can be an option; inside an angr-ram step, a
        symbolic argument that may or may not be an option forks the state on it (the fork where it
        is not one parses on); else a stub (recorded)."""
        n = argc.concrete_value if not argc.symbolic else None
        optind = 1
        addr = self._var("optind")
        if addr is not None:
            v = self.state.memory.load(addr, 4, endness="Iend_LE")
            optind = v.concrete_value if not v.symbolic else 1
        if n is not None and n < MAX_ARGS:
            dashes = [self._dash(argv, k) for k in range(max(optind, 1), n)]
            can = [self.state.solver.satisfiable(extra_constraints=[d]) for d in dashes]
            if not any(can):
                return claripy.BVV(0xFFFFFFFF, 32)
            if value_forking_enabled():
                for d, c in zip(dashes, can, strict=True):
                    if c and self.state.solver.satisfiable(extra_constraints=[claripy.Not(d)]):
                        raise ForkRequest([Target(claripy.Not(d), "value"), Target(d, "value")],
                                          f"{self.name_for_stub}: an argument that may be an option")
        record(self.state, self.name_for_stub)
        return claripy.BVS(f"unconstrained_ret_{self.name_for_stub}", 32)

    def _dash(self, argv, k: int):
        """The condition that argument ``k`` looks like an option: ``-`` and at least one more byte."""
        p = self.state.memory.load(argv + 8 * k, 8, endness=self.arch.memory_endness)
        head = self.state.memory.load(p, 2)
        return claripy.And(head[15:8] == 0x2D, head[7:0] != 0)


def _letters(opts: bytes) -> list[int]:
    return sorted({b for b in opts if b not in b":;"})


def _signed_char(c):
    """glibc's ``optopt = c`` for ``char c``: a byte above 0x7f is negative."""
    if isinstance(c, int):
        return c - 0x100 if c >= 0x80 else c
    return c.sign_extend(24)


def _short_set(opts: bytes) -> set:
    return {bytes([b]) for b in opts}


class GetoptLong(Getopt):
    """``getopt_long(argc, argv, optstring, longopts, longindex)``."""

    name_for_stub = "getopt_long"

    def run(self, argc, argv, optstring, longopts, longindex):  # pylint: disable=arguments-differ
        return self.parse(argc, argv, optstring, longopts, longindex)


class GetoptLongOnly(GetoptLong):
    """``getopt_long_only``: long options also after a single ``-``."""

    name_for_stub = "getopt_long_only"
    long_only = True


GETOPT_PROCEDURES = {"getopt": Getopt, "getopt_long": GetoptLong, "getopt_long_only": GetoptLongOnly}
