"""``getopt``, ``getopt_long`` and ``getopt_long_only`` as glibc parses options.

angr has no model of them: a stub returns any value, so a GNU program (``base64 -d``,
``tr -d x``) took an arbitrary option path on every input. When the arguments from ``optind`` on,
the option string and the long-option table are concrete (what a user gives on a command line,
with the input in stdin or a file), these procedures follow glibc's ``getopt_long`` (POSIX
``getopt`` and GNU's extensions, as its manual page describes them):

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

``optind``, ``optarg`` and ``optopt`` are read and written where the program holds them (its copies
of glibc's variables); the scan's own position lives in the state. When something it must read is
symbolic (an argument from ``--arg N``), the procedure returns -1 if no argument from ``optind`` on
can start with ``-``; inside an angr-ram step, an argument that may or may not look like an option
forks the state on it (where it does not, the parse goes on exactly); where it does, the procedure is
a stub (recorded on the path, :mod:`.stubs`).
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.procedures.stubs import record

MAX_ARGS = 4096
MAX_STRING = 4096
MAX_LONGOPTS = 1024
OPTION_SIZE = 32            # struct option on x86-64: name, has_arg (padded), flag, val (padded)
_KEY = "angr_ram_getopt"    # state.globals: the scan's position (see _Scan)
PERMUTE, REQUIRE_ORDER, RETURN_IN_ORDER = "permute", "require", "in-order"


class Symbolic(Exception):
    """Something the parse must read is symbolic."""


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
        if v.symbolic:
            raise Symbolic
        return v.concrete_value

    def _word(self, addr: int) -> int:
        return self._int(self.state.memory.load(addr, 8, endness=self.arch.memory_endness))

    def _string(self, addr: int) -> bytes:
        out = bytearray()
        while len(out) < MAX_STRING:
            b = self._int(self.state.memory.load(addr + len(out), 1))
            if b == 0:
                return bytes(out)
            out.append(b)
        raise Symbolic        # too long to be an option

    def _var(self, name: str):
        sym = self.project.loader.find_symbol(name)
        return None if sym is None else sym.rebased_addr

    def _get_int(self, name: str, default: int) -> int:
        addr = self._var(name)
        return default if addr is None else self._int(self.state.memory.load(addr, 4, endness="Iend_LE"))

    def _set_int(self, name: str, value: int) -> None:
        addr = self._var(name)
        if addr is not None:
            self.state.memory.store(addr, claripy.BVV(value & 0xFFFFFFFF, 32), endness="Iend_LE")

    def _set_optarg(self, ptr: int) -> None:
        addr = self._var("optarg")
        if addr is not None:
            self.state.memory.store(addr, claripy.BVV(ptr, 64), endness=self.arch.memory_endness)

    def _error(self, text: bytes) -> None:
        fd = self.state.posix.get_fd(2)
        if fd is not None:
            fd.write_data(claripy.BVV(text))

    # ------------------------------------------------------------------ the parse
    def parse(self, argc, argv, optstring, longopts, longindex):
        try:
            return claripy.BVV(self._parse(argc, argv, optstring, longopts, longindex) & 0xFFFFFFFF, 32)
        except Symbolic:
            return self._fallback(argc, argv)

    def _parse(self, argc_v, argv_v, optstring_v, longopts_v, longindex_v) -> int:  # noqa: C901 - glibc's one loop
        argc = self._int(argc_v)
        if argc < 1 or argc > MAX_ARGS:
            return -1
        argv = self._int(argv_v)
        opts = self._string(self._int(optstring_v))
        longopts = self._longopts(self._int(longopts_v)) if longopts_v is not None else None
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
            a = arg(k)
            return a[:1] != b"-" or len(a) == 1

        def exchange() -> None:
            lo, mid, hi = scan.first_nonopt, scan.last_nonopt, optind
            args[lo:hi] = args[mid:hi] + args[lo:mid]
            for k in range(lo, hi):
                self.state.memory.store(argv + 8 * k, claripy.BVV(args[k], 64), endness=self.arch.memory_endness)
            scan.first_nonopt += hi - mid
            scan.last_nonopt = hi

        def done(code: int) -> int:
            self._set_int("optind", optind)
            scan.optind = optind
            self.state.globals[_KEY] = scan.key()
            return code

        def prog() -> bytes:
            try:
                return arg(0) if args[0] else b""
            except Symbolic:
                return b""

        if scan.nextchar is None or self._int(self.state.memory.load(scan.nextchar, 1)) == 0:
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
            if optind != argc and arg(optind) == b"--":
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
            word = arg(optind)
            if longopts is not None:
                if word[1:2] == b"-":
                    scan.nextchar = args[optind] + 2
                    code, optind = self._long(argc, args, arg, optind, opts, longopts, longindex_v, scan,
                                              print_errors, prog, b"--")
                    return done(code)
                if self.long_only and (len(word) > 2 or bytes(word[1:2]) not in _short_set(opts)):
                    scan.nextchar = args[optind] + 1
                    code, optind = self._long(argc, args, arg, optind, opts, longopts, longindex_v, scan,
                                              print_errors, prog, b"-")
                    if code != -1:
                        return done(code)
            scan.nextchar = args[optind] + 1

        # a short option at nextchar
        c = self._int(self.state.memory.load(scan.nextchar, 1))
        scan.nextchar += 1
        rest = self._string(scan.nextchar)
        if not rest:
            optind += 1
        at = opts.find(bytes([c]))
        if at < 0 or c in (ord(":"), ord(";")):
            if print_errors:
                self._error(prog() + b": invalid option -- '" + bytes([c]) + b"'\n")
            self._set_int("optopt", c)
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
                        self._error(prog() + b": option requires an argument -- '" + bytes([c]) + b"'\n")
                    self._set_int("optopt", c)
                    c = ord(":") if opts[:1] == b":" else ord("?")
                else:
                    self._set_optarg(args[optind])
                    optind += 1
                scan.nextchar = None
        return done(c)

    def _longopts(self, table: int) -> list | None:
        if table == 0:
            return None
        out = []
        for k in range(MAX_LONGOPTS):
            base = table + OPTION_SIZE * k
            name_ptr = self._word(base)
            if name_ptr == 0:
                return out
            has_arg = self._int(self.state.memory.load(base + 8, 4, endness="Iend_LE"))
            flag = self._word(base + 16)
            val = self._int(self.state.memory.load(base + 24, 4, endness="Iend_LE"))
            out.append((self._string(name_ptr), has_arg, flag, val))
        raise Symbolic

    def _long(self, argc, args, arg, optind, opts, longopts, longindex_v, scan, print_errors, prog, prefix):
        """glibc's ``process_long_option``: (code, optind)."""
        text = self._string(scan.nextchar)
        name, eq, value = text.partition(b"=")
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
            if not self.long_only or arg(optind)[1:2] == b"-" or text[:1] not in _short_set(opts):
                if print_errors:
                    self._error(prog() + b": unrecognized option '" + prefix + text + b"'\n")
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
            li = self._int(longindex_v)
            if li:
                self.state.memory.store(li, claripy.BVV(index, 32), endness="Iend_LE")
        if flag:
            self.state.memory.store(flag, claripy.BVV(val & 0xFFFFFFFF, 32), endness="Iend_LE")
            return 0, optind
        return val, optind

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
            if forking_enabled():
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
