"""Models of what GNU programs call at start-up and for output, where angr has none.

angr hooks a library function it has no model of with a stub (any return value, no effect,
:mod:`.stubs`). Debian's coreutils call several at start-up (``setlocale``, ``bindtextdomain``,
``textdomain``, ``__cxa_atexit``) and for their messages (``dcgettext``, ``__fprintf_chk``), and
decide on their options with ``getopt_long``: a stubbed ``getopt_long`` returns any value, so
``base64`` took its usage path on every input. These models are exact for a process in the C
locale (what a replay runs in, and where message catalogues translate nothing):

* ``setlocale`` returns ``"C"``; ``bindtextdomain``/``textdomain`` return their argument (the
  default when it is NULL); ``gettext``, ``dgettext``, ``dcgettext`` return the message itself,
  ``ngettext`` and ``dcngettext`` the singular or plural form by ``n``;
* ``posix_fadvise`` and ``sigaltstack`` succeed (return 0); ``__cxa_atexit`` and ``atexit``
  register handlers that ``exit`` runs (:mod:`.exit_handlers`);
* ``__fprintf_chk`` and ``__sprintf_chk`` are ``fprintf`` and ``sprintf`` with the fortify flag;
  ``__overflow`` (``putc``'s slow path) writes its byte;
* ``strrchr`` of a concrete string (a program's name) finds the last occurrence; ``strsignal``
  returns glibc's description; ``isatty`` is 0 (a replay runs on pipes); the ``sigset_t``
  functions set and test bits; ``fstat``, ``lseek`` and ``munmap`` are angr's
  models of the system calls;
* ``__ctype_get_mb_cur_max`` (``MB_CUR_MAX``) is 1 and ``nl_langinfo`` gives the C locale's strings;
* ``mincore`` answers from the address space's map (m4's stack-overflow handler probes the stack);
* ``getopt``, ``getopt_long`` and ``getopt_long_only`` parse options as glibc does (:mod:`.getopt`).
"""

from __future__ import annotations

import angr
import claripy
from angr.procedures.stubs.format_parser import FormatParser
from cle.backends.externs.simdata.io_file import io_file_data_for_arch

from angr_ram.core.named_classes import module_class
from angr_ram.memory.fixed_regions import cover_loaded
from angr_ram.procedures.libc import single_value
from angr_ram.procedures.stubs import record

_STRINGS_KEY = "angr_ram_startup_strings"


def extern_allocate(loader, size: int) -> int:
    """``size`` bytes in the loader's extern objects: the first object with room, a new one when all
    are full. cle's own ``ExternObject.allocate`` (9.2.213) adds its object's base to the address
    the next object in the chain returns, which is already absolute: once the first extern object
    is full (at once with ``auto_load_libs=False``) every address it gives lies in no loaded object,
    a place the address space sees as unmapped (a pointer that may be one of two such strings was a
    false out-of-bounds error)."""
    obj = loader.extern_object
    while True:
        offset = obj._allocate(size=size, alignment=8)    # pylint: disable=protected-access
        if offset is not None:
            return obj.mapped_base + offset
        if obj._next_object is None:                      # pylint: disable=protected-access
            obj._make_new_externs(size, 8, False)         # pylint: disable=protected-access
        obj = obj._next_object                            # pylint: disable=protected-access


def static_string(proc, text: bytes) -> int:
    """The address of a constant string, stored once per project in an extern object."""
    table = proc.project.__dict__.setdefault(_STRINGS_KEY, {})
    addr = table.get(text)
    if addr is None:
        addr = table[text] = extern_allocate(proc.project.loader, len(text) + 1)
    proc.state.memory.store(addr, claripy.BVV(text + b"\0"))
    cover_loaded(proc.state, addr)
    return addr


def _or_default(proc, ptr, default: bytes):
    if not ptr.symbolic and ptr.concrete_value == 0:
        return static_string(proc, default)
    if ptr.symbolic:
        return claripy.If(ptr == 0, static_string(proc, default), ptr)
    return ptr


class Setlocale(angr.SimProcedure):
    def run(self, category, locale):  # pylint: disable=arguments-differ,unused-argument
        return static_string(self, b"C")


class Bindtextdomain(angr.SimProcedure):
    def run(self, domain, dirname):  # pylint: disable=arguments-differ,unused-argument
        return _or_default(self, dirname, b"/usr/share/locale")


class Textdomain(angr.SimProcedure):
    def run(self, domain):  # pylint: disable=arguments-differ
        return _or_default(self, domain, b"messages")


class Gettext(angr.SimProcedure):
    def run(self, msgid):  # pylint: disable=arguments-differ
        return msgid


class Dgettext(angr.SimProcedure):
    def run(self, domain, msgid):  # pylint: disable=arguments-differ,unused-argument
        return msgid


class Dcgettext(angr.SimProcedure):
    def run(self, domain, msgid, category):  # pylint: disable=arguments-differ,unused-argument
        return msgid


class Ngettext(angr.SimProcedure):
    def run(self, singular, plural, n):  # pylint: disable=arguments-differ
        return claripy.If(n == 1, singular, plural)


class Dcngettext(angr.SimProcedure):
    def run(self, domain, singular, plural, n, category):  # pylint: disable=arguments-differ,unused-argument
        return claripy.If(n == 1, singular, plural)


class Succeed(angr.SimProcedure):
    """Returns 0: ``posix_fadvise``, ``sigaltstack``."""

    def run(self):  # pylint: disable=arguments-differ
        return 0


class FprintfChk(FormatParser):
    def run(self, file_ptr, flag, fmt):  # pylint: disable=arguments-differ,unused-argument
        fd_offset = io_file_data_for_arch(self.state.arch)["fd"]
        fileno = self.state.mem[file_ptr + fd_offset:].int.resolved
        simfd = self.state.posix.get_fd(fileno)
        if simfd is None:
            return -1
        out = self._parse(fmt).replace(self.va_arg)
        simfd.write_data(out, out.size() // 8)
        return out.size() // 8


class SprintfChk(FormatParser):
    def run(self, dst, flag, size, fmt):  # pylint: disable=arguments-differ,unused-argument
        out = self._parse(fmt).replace(self.va_arg)
        self.state.memory.store(dst, out)
        self.state.memory.store(dst + out.size() // 8, claripy.BVV(0, 8))
        return out.size() // 8


class Overflow(angr.SimProcedure):
    """``__overflow(FILE *f, int c)``: ``putc``'s slow path writes the byte ``c`` (EOF: nothing)."""

    def run(self, file_ptr, c):  # pylint: disable=arguments-differ
        fd_offset = io_file_data_for_arch(self.state.arch)["fd"]
        fileno = self.state.mem[file_ptr + fd_offset:].int.resolved
        simfd = self.state.posix.get_fd(fileno)
        byte = c[7:0]
        if simfd is None:
            return -1
        if not c.symbolic and c.concrete_value & 0xFFFFFFFF == 0xFFFFFFFF:
            return 0
        simfd.write_data(byte, 1)
        return byte.zero_extend(24)


MAX_CONCRETE_STRING = 4096


class Strrchr(angr.SimProcedure):
    """``strrchr(s, c)`` of a concrete string and byte (a program's name in ``argv[0]``); a
    symbolic one is left to a stub (recorded on the path)."""

    def run(self, s, c):  # pylint: disable=arguments-differ
        ch = single_value(self.state, c)
        base = single_value(self.state, s)
        if ch is not None and base is not None:
            ch &= 0xFF
            found = None
            for k in range(MAX_CONCRETE_STRING):
                b = single_value(self.state, self.state.memory.load(base + k, 1))
                if b is None:
                    break
                if b == ch:
                    found = k
                if b == 0:
                    return 0 if found is None else base + found
        record(self.state, "strrchr")
        return claripy.BVS("unconstrained_ret_strrchr", 64)


SIGNAL_NAMES = ("Hangup", "Interrupt", "Quit", "Illegal instruction", "Trace/breakpoint trap", "Aborted",
                "Bus error", "Floating point exception", "Killed", "User defined signal 1",
                "Segmentation fault", "User defined signal 2", "Broken pipe", "Alarm clock", "Terminated",
                "Stack fault", "Child exited", "Continued", "Stopped (signal)", "Stopped",
                "Stopped (tty input)", "Stopped (tty output)", "Urgent I/O condition",
                "CPU time limit exceeded", "File size limit exceeded", "Virtual timer expired",
                "Profiling timer expired", "Window changed", "I/O possible", "Power failure", "Bad system call")
SIGRTMIN, SIGRTMAX = 34, 64


def signal_description(sig: int) -> bytes:
    """glibc's ``strsignal(sig)`` text in the C locale."""
    if 1 <= sig <= len(SIGNAL_NAMES):
        return SIGNAL_NAMES[sig - 1].encode()
    if SIGRTMIN <= sig <= SIGRTMAX:
        return f"Real-time signal {sig - SIGRTMIN}".encode()
    return f"Unknown signal {sig}".encode()


class Strsignal(angr.SimProcedure):
    """``strsignal(sig)``: glibc's description of a signal (m4 names SIGSEGV's at start-up; the
    stub's pointer went to ``strlen`` anywhere); a symbolic number with several values stays a stub."""

    def run(self, sig):  # pylint: disable=arguments-differ
        k = single_value(self.state, sig[31:0])
        if k is None:
            record(self.state, "strsignal")
            return claripy.BVS("strsignal_ret", 64)
        k = k - (1 << 32) if k & (1 << 31) else k
        return static_string(self, signal_description(k))


class _Syscall0(angr.SimProcedure):
    """A libc wrapper of no arguments that is angr's model of the system call ``syscall``."""

    syscall = ""

    def run(self):  # pylint: disable=arguments-differ
        return self.inline_call(angr.SIM_PROCEDURES["linux_kernel"][self.syscall]).ret_expr


class _Syscall2(angr.SimProcedure):
    """A libc wrapper of two arguments that is angr's model of the system call ``syscall``."""

    syscall = ""

    def run(self, a0, a1):  # pylint: disable=arguments-differ
        return self.inline_call(angr.SIM_PROCEDURES["linux_kernel"][self.syscall], a0, a1).ret_expr


class _Syscall3(angr.SimProcedure):
    """A libc wrapper of three arguments that is angr's model of the system call ``syscall``."""

    syscall = ""

    def run(self, a0, a1, a2):  # pylint: disable=arguments-differ
        return self.inline_call(angr.SIM_PROCEDURES["linux_kernel"][self.syscall], a0, a1, a2).ret_expr


_SYSCALL_WRAPPERS = {0: _Syscall0, 2: _Syscall2, 3: _Syscall3}


def system_call(name: str, nargs: int) -> type:
    """The libc wrapper of the system call ``name`` with ``nargs`` arguments (angr's model of it)."""
    return module_class(globals(), f"Syscall_{name}", (_SYSCALL_WRAPPERS[nargs],), {"syscall": name})


SIGSET_BYTES = 128      # glibc's sigset_t: 1024 bits


class Sigemptyset(angr.SimProcedure):
    def run(self, setp):  # pylint: disable=arguments-differ
        self.state.memory.store(setp, claripy.BVV(0, SIGSET_BYTES * 8))
        return claripy.BVV(0, 32)


class Sigfillset(angr.SimProcedure):
    def run(self, setp):  # pylint: disable=arguments-differ
        self.state.memory.store(setp, claripy.BVV(-1 & ((1 << SIGSET_BYTES * 8) - 1), SIGSET_BYTES * 8))
        return claripy.BVV(0, 32)


class _SigBit(angr.SimProcedure):
    """A signal's bit in a sigset_t: bit ``(sig - 1) % 8`` of byte ``(sig - 1) // 8``; a number
    outside 1..1024 is refused (-1, EINVAL). The whole set is one 1024-bit value, so a symbolic
    signal number (chosen by the input) needs no fork."""

    BITS = SIGSET_BYTES * 8

    def parts(self, setp, sig):
        k = sig[31:0]
        valid = claripy.And(claripy.SGE(k, 1), claripy.SLE(k, self.BITS))
        i = (k - 1).zero_extend(self.BITS - 32)
        pos = claripy.BVV(self.BITS - 8, self.BITS) - claripy.LShR(i, 3) * 8 + (i & 7)   # memory order
        mask = claripy.BVV(1, self.BITS) << pos
        return valid, self.state.memory.load(setp, SIGSET_BYTES), mask

    def update(self, setp, sig, op):
        valid, old, mask = self.parts(setp, sig)
        self.state.memory.store(setp, claripy.If(valid, op(old, mask), old))
        return claripy.If(valid, claripy.BVV(0, 32), claripy.BVV(-1 & 0xFFFFFFFF, 32))


class Sigaddset(_SigBit):
    def run(self, setp, sig):  # pylint: disable=arguments-differ
        return self.update(setp, sig, lambda old, mask: old | mask)


class Sigdelset(_SigBit):
    def run(self, setp, sig):  # pylint: disable=arguments-differ
        return self.update(setp, sig, lambda old, mask: old & ~mask)


class Sigismember(_SigBit):
    def run(self, setp, sig):  # pylint: disable=arguments-differ
        valid, old, mask = self.parts(setp, sig)
        member = claripy.If(old & mask == 0, claripy.BVV(0, 32), claripy.BVV(1, 32))
        return claripy.If(valid, member, claripy.BVV(-1 & 0xFFFFFFFF, 32))


class Isatty(angr.SimProcedure):
    """``isatty(fd)``: 0 (a replay's stdin and stdout are pipes, not terminals)."""

    def run(self, fd):  # pylint: disable=arguments-differ,unused-argument
        return claripy.BVV(0, 32)


class MbCurMax(angr.SimProcedure):
    """``__ctype_get_mb_cur_max()`` (``MB_CUR_MAX``): 1, as in the C locale."""

    def run(self):  # pylint: disable=arguments-differ
        return claripy.BVV(1, 64)


# nl_langinfo items of the C locale (glibc's <langinfo.h> values); any other item is ""
LANGINFO_C = {
    14: b"ANSI_X3.4-1968",                 # CODESET
    0x10000: b".", 0x10001: b"",           # RADIXCHAR, THOUSEP
    0x50000: b"^[yY]", 0x50001: b"^[nN]",  # YESEXPR, NOEXPR
    0x2028: b"%a %b %e %H:%M:%S %Y",       # D_T_FMT
    0x2029: b"%m/%d/%y", 0x202A: b"%H:%M:%S",   # D_FMT, T_FMT
    0x2026: b"AM", 0x2027: b"PM",          # AM_STR, PM_STR
}


class NlLanginfo(angr.SimProcedure):
    """``nl_langinfo(item)``: the C locale's string for ``item`` (``CODESET``: "ANSI_X3.4-1968")."""

    def run(self, item):  # pylint: disable=arguments-differ
        v = single_value(self.state, item[31:0])
        text = LANGINFO_C.get(v, b"") if v is not None else b""
        return static_string(self, text)


_LCONV_KEY = "_angr_ram_lconv"
LCONV_FIELDS = 10       # struct lconv's string pointers (decimal_point ... negative_sign)
LCONV_BYTES = 96        # x86-64 glibc: the pointers, then 14 char fields


class Localeconv(angr.SimProcedure):
    """``localeconv()``: the C locale's ``struct lconv`` (one per program, as glibc's): ``decimal_point``
    ".", the other strings "", every ``char`` field ``CHAR_MAX``. (angr: a stub whose pointer every
    field read went through: Debian's ``sum`` ended in null-dereference error paths.)"""

    def run(self):  # pylint: disable=arguments-differ
        table = self.project.__dict__
        addr = table.get(_LCONV_KEY)
        if addr is None:
            addr = table[_LCONV_KEY] = extern_allocate(self.project.loader, LCONV_BYTES)
        e = self.state.arch.memory_endness
        for k in range(LCONV_FIELDS):
            text = b"." if k == 0 else b""
            self.state.memory.store(addr + 8 * k, claripy.BVV(static_string(self, text), 64), endness=e)
        self.state.memory.store(addr + 8 * LCONV_FIELDS, claripy.BVV(b"\x7f" * (LCONV_BYTES - 8 * LCONV_FIELDS)))
        cover_loaded(self.state, addr)
        return addr


PAGE = 4096


class Mincore(angr.SimProcedure):
    """``mincore(addr, length, vec)``: 0 with every page marked resident when each page of the range
    is mapped (a fixed region: the stack, a loaded object, or a heap object of the address space),
    else -1 (``ENOMEM``). gnulib's stack-overflow handler (m4 at start-up) probes the stack's extent
    with it; the stub's any-value return forked at every probe."""

    def run(self, addr, length, vec):  # pylint: disable=arguments-differ
        a, n = single_value(self.state, addr), single_value(self.state, length)
        if a is None or n is None:
            return claripy.BVV(-1 & 0xFFFFFFFF, 32)
        first, pages = a - a % PAGE, (a % PAGE + n + PAGE - 1) // PAGE
        if not all(self._mapped(first + i * PAGE) for i in range(min(pages, 1 << 16))) or pages > 1 << 16:
            return claripy.BVV(-1 & 0xFFFFFFFF, 32)
        if pages:
            self.state.memory.store(vec, claripy.BVV(b"\x01" * pages))
        return claripy.BVV(0, 32)

    def _mapped(self, page: int) -> bool:
        if self.state.has_plugin("ram"):
            space = self.state.ram
            return space.region_of(page) is not None or space.find(page) is not None
        return self.project.loader.find_object_containing(page) is not None


STARTUP_PROCEDURES = {
    "setlocale": Setlocale, "bindtextdomain": Bindtextdomain, "textdomain": Textdomain,
    "gettext": Gettext, "dgettext": Dgettext, "dcgettext": Dcgettext, "ngettext": Ngettext,
    "dcngettext": Dcngettext, "posix_fadvise": Succeed,
    "__fprintf_chk": FprintfChk, "__sprintf_chk": SprintfChk, "__overflow": Overflow,
    "strrchr": Strrchr,
    "strsignal": Strsignal, "isatty": Isatty, "sigemptyset": Sigemptyset, "sigfillset": Sigfillset,
    "sigaddset": Sigaddset, "sigdelset": Sigdelset, "sigismember": Sigismember,
    "lseek": system_call("lseek", 3),
    "lseek64": system_call("lseek", 3), "munmap": system_call("munmap", 2),
    "__ctype_get_mb_cur_max": MbCurMax, "nl_langinfo": NlLanginfo, "localeconv": Localeconv, "mincore": Mincore,
    "sigaltstack": Succeed,
}
