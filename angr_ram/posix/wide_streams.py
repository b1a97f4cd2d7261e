"""Wide-character stream I/O in the C locale, as glibc 2.36 runs it.

angr models none of ``fgetwc``, ``getwc``, ``getwchar``, ``fgetws``, ``ungetwc``, ``fputwc``, ``putwc``,
``putwchar``, ``fputws``, ``wcslen``: stubs returning any value, so util-linux's ``rev``, ``col``, ``colrm``
and ``ul`` ended in error paths through the stubs' pointers. Read off glibc natively (``LC_ALL=C``):

* input is ASCII: a byte below 0x80 is the character; at the end ``WEOF`` with the end-of-file flag;
  a byte at or above 0x80 gives ``WEOF`` with ``errno = EILSEQ`` and the error flag, and stays unread
  (the next read fails on it again);
* ``fgetws(ws, n, fp)`` reads characters up to and including a newline, at most ``n - 1``, then
  L'\\0'; NULL when the end came first or on ``EILSEQ``;
* output of a character below 0x80 is its byte, of any other ``?`` (glibc's transliteration), and
  succeeds; ``fputws`` returns 1.

Bytes come through angr-ram's ``fgetc`` (:mod:`.stdio_flags`: pushed-back bytes, the end-of-file
flag); a byte that may or may not be ASCII, a newline or the end forks the call on it (inside an
angr-ram step; outside one, the case where it does not hold). A stream's orientation is not
modelled: a byte function after a wide one on the same stream behaves as if it were byte-oriented.
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.posix.stdio_flags import (
    EOF_SEEN,
    ERR_SEEN,
    Fgetc,
    Getchar,
    fd_number,
    file_flags,
    stream_fd,
)
from angr_ram.posix.wide_chars import EILSEQ, WEOF
from angr_ram.procedures.heap import holds_for_sure
from angr_ram.procedures.libc import set_errno, single_value

MAX_WIDE = 1 << 16      # characters a wide string is read to its L'\0' at most


def read_wide(proc, file_ptr):
    """The next character of ``file_ptr`` (None: standard input as ``getchar`` reads it) and how
    the read went: ``(wc, "ok" | "end" | "bad")``."""
    state = proc.state
    call = proc.inline_call(Fgetc, file_ptr) if file_ptr is not None else proc.inline_call(Getchar)
    c = call.ret_expr
    if not c.symbolic and c.concrete_value == WEOF:
        return claripy.BVV(WEOF, 32), "end"
    if c.symbolic and holds_for_sure(state, c == WEOF, "wide read end"):
        return claripy.BVV(WEOF, 32), "end"
    byte = c[7:0]
    if holds_for_sure(state, claripy.ULT(byte, 0x80), "wide read ASCII"):
        return byte.zero_extend(24), "ok"
    fd = fd_number(proc, file_ptr) if file_ptr is not None else 0
    if fd is not None:
        state.ram_stdio.push(fd, byte)                  # glibc's next read fails on it again
    if file_ptr is not None:
        state.memory.store(file_ptr, file_flags(proc, file_ptr) | ERR_SEEN, endness=state.arch.memory_endness)
    set_errno(state, EILSEQ)
    return claripy.BVV(WEOF, 32), "bad"


def _stdio_file(proc, name: str):
    """The ``FILE *`` in the program's ``stdin``/``stdout``, or None."""
    sym = proc.project.loader.find_symbol(name)
    if sym is None:
        return None
    return proc.state.memory.load(sym.rebased_addr, 8, endness=proc.arch.memory_endness)


def _write(proc, simfd, wc) -> None:
    wc = wc[31:0]
    byte = claripy.If(claripy.ULT(wc, 0x80), wc[7:0], claripy.BVV(ord("?"), 8))
    if simfd is not None:
        simfd.write_data(byte)


class Fgetwc(angr.SimProcedure):
    """``fgetwc(fp)``, ``getwc(fp)``."""

    def run(self, file_ptr):  # pylint: disable=arguments-differ
        return read_wide(self, file_ptr)[0]


class Getwchar(angr.SimProcedure):
    """``getwchar()``: ``fgetwc(stdin)``."""

    def run(self):  # pylint: disable=arguments-differ
        return read_wide(self, _stdio_file(self, "stdin"))[0]


class Fgetws(angr.SimProcedure):
    """``fgetws(ws, n, fp)``."""

    def run(self, ws, size, file_ptr):  # pylint: disable=arguments-differ
        state = self.state
        n = single_value(state, size[31:0])
        if n is None:
            raise angr.errors.SimProcedureError("fgetws with a symbolic size")
        n = n - (1 << 32) if n >= 1 << 31 else n
        count = 0
        while count < n - 1:
            wc, how = read_wide(self, file_ptr)
            if how == "bad":
                return claripy.BVV(0, state.arch.bits)
            if how == "end":
                if count == 0:
                    return claripy.BVV(0, state.arch.bits)
                break
            state.memory.store(ws + 4 * count, wc, endness=state.arch.memory_endness)
            count += 1
            if holds_for_sure(state, wc == 10, "fgetws newline"):
                break
        if n <= 0:
            return claripy.BVV(0, state.arch.bits)
        state.memory.store(ws + 4 * count, claripy.BVV(0, 32))
        return ws


class Ungetwc(angr.SimProcedure):
    """``ungetwc(wc, fp)``: an ASCII character is the next one read; clears the end-of-file flag."""

    def run(self, wc, file_ptr):  # pylint: disable=arguments-differ
        wc = wc[31:0]
        fd = fd_number(self, file_ptr)
        if (not wc.symbolic and wc.concrete_value == WEOF) or fd is None:
            return claripy.BVV(WEOF, 32)
        self.state.ram_stdio.push(fd, wc[7:0])
        flags = file_flags(self, file_ptr)
        self.state.memory.store(file_ptr, flags & (~EOF_SEEN & 0xFFFFFFFF), endness=self.arch.memory_endness)
        return wc


class Fputwc(angr.SimProcedure):
    """``fputwc(wc, fp)``, ``putwc(wc, fp)``."""

    def run(self, wc, file_ptr):  # pylint: disable=arguments-differ
        _write(self, stream_fd(self, file_ptr), wc)
        return wc[31:0]


class Putwchar(angr.SimProcedure):
    """``putwchar(wc)``: to standard output."""

    def run(self, wc):  # pylint: disable=arguments-differ
        _write(self, self.state.posix.get_fd(1), wc)
        return wc[31:0]


def wide_units(proc, ws) -> list:
    """The characters of the wide string at ``ws`` before its L'\\0' (a character that may or may
    not be L'\\0' forks the call)."""
    state, out = proc.state, []
    for k in range(MAX_WIDE):
        u = state.memory.load(ws + 4 * k, 4, endness=state.arch.memory_endness)
        if not u.symbolic:
            if u.concrete_value == 0:
                return out
        elif holds_for_sure(state, u == 0, "wide string end"):
            return out
        out.append(u)
    raise angr.errors.SimProcedureError(f"wide string longer than {MAX_WIDE} characters")


class Fputws(angr.SimProcedure):
    """``fputws(ws, fp)``: 1."""

    def run(self, ws, file_ptr):  # pylint: disable=arguments-differ
        simfd = stream_fd(self, file_ptr)
        for u in wide_units(self, ws):
            _write(self, simfd, u)
        return claripy.BVV(1, 32)


class Wcslen(angr.SimProcedure):
    """``wcslen(ws)``: 4-byte characters (angr's ``strlen`` with ``wchar`` counts 2-byte ones)."""

    def run(self, ws):  # pylint: disable=arguments-differ
        return claripy.BVV(len(wide_units(self, ws)), self.state.arch.bits)


WIDE_STREAM_PROCEDURES = {
    "fgetwc": Fgetwc, "getwc": Fgetwc, "fgetwc_unlocked": Fgetwc, "getwc_unlocked": Fgetwc,
    "getwchar": Getwchar, "getwchar_unlocked": Getwchar, "fgetws": Fgetws, "fgetws_unlocked": Fgetws,
    "ungetwc": Ungetwc, "fputwc": Fputwc, "putwc": Fputwc, "fputwc_unlocked": Fputwc, "putwc_unlocked": Fputwc,
    "putwchar": Putwchar, "putwchar_unlocked": Putwchar, "fputws": Fputws, "fputws_unlocked": Fputws,
    "wcslen": Wcslen,
}
