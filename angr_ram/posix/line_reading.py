"""``getline`` and ``getdelim``: a line of any length into a buffer the call grows, as glibc's
``_IO_getdelim`` does.

angr has a procedure for neither name (only ``__getdelim``, which reads 1023 symbolic bytes at once
and asserts where the delimiter is not, or re-reads a concrete file from a fresh 120-byte buffer):
a program reading its input with ``getline`` got a stub's unconstrained count and buffer (Debian's
``numfmt``: 10 false error paths, its one test mismatched). Here:

* ``*lineptr`` NULL or ``*n`` 0: a 120-byte buffer is allocated first (glibc does so before it
  reads, so a call at the end of input still leaves a buffer to free);
* bytes (those ``ungetc`` pushed back first) are read up to and including the delimiter, or to the
  end of input; a byte that may or may not be the delimiter forks the call on it (one path per
  line length, as :class:`~angr_ram.posix.stdio_flags.Fgets` does);
* the buffer grows with ``realloc`` to at least twice its size when the line and its NUL do not
  fit, and ``*lineptr``/``*n`` are updated; the result is the number of bytes read, or -1 (with
  ``_IO_EOF_SEEN`` set) when the input had ended before the call read a byte;
* NULL ``lineptr`` or ``n``: EINVAL; a stream that is not open: EBADF.
"""

from __future__ import annotations

import angr
import claripy

from angr_ram.posix.stdio_flags import fd_number, next_byte, set_eof_if, stream_fd
from angr_ram.procedures.heap import holds_for_sure
from angr_ram.procedures.libc import ret_errno, single_value

FIRST_BUFFER = 120          # glibc's first getline buffer
MAX_GETLINE = 1 << 20       # bytes one call reads at most (a bound on its loop; more ends the path)


class RamGetdelim(angr.SimProcedure):
    """``getdelim(lineptr, n, delim, fp)``; see the module doc."""

    def run(self, lineptr, n, delim, file_ptr):  # pylint: disable=arguments-differ
        state = self.state
        d = single_value(state, delim)
        if d is None:
            raise angr.errors.SimProcedureError("getdelim with a symbolic delimiter")
        d &= 0xFF
        if state.solver.is_true(lineptr == 0) or state.solver.is_true(n == 0):
            return ret_errno(state, "EINVAL")
        simfd = stream_fd(self, file_ptr)
        if simfd is None:
            return ret_errno(state, "EBADF")
        endness = state.arch.memory_endness
        buf = state.memory.load(lineptr, 8, endness=endness)
        size = state.memory.load(n, 8, endness=endness)
        if holds_for_sure(state, buf == 0, "getline buffer") or holds_for_sure(state, size == 0, "getline size"):
            buf = state.heap._realloc(buf, claripy.BVV(FIRST_BUFFER, 64))  # pylint: disable=protected-access
            size = claripy.BVV(FIRST_BUFFER, 64)
        have = single_value(state, size)
        if have is None:
            raise angr.errors.SimProcedureError("getline of a buffer whose size may vary")
        line, ended = self._read(simfd, fd_number(self, file_ptr), d)
        if ended:
            set_eof_if(self, file_ptr, True)
        if line:
            need = len(line) + 1
            if need > have:
                have = max(need, 2 * have)
                buf = state.heap._realloc(buf, claripy.BVV(have, 64))  # pylint: disable=protected-access
            state.memory.store(buf, claripy.Concat(*line, claripy.BVV(0, 8)))
        state.memory.store(lineptr, buf, endness=endness)
        state.memory.store(n, claripy.BVV(have, 64), endness=endness)
        return claripy.BVV(len(line), 64) if line else claripy.BVV(-1, 64)

    def _read(self, simfd, fd, d: int):
        """The line's bytes (up to and including the delimiter) and whether the input ended."""
        state = self.state
        line = []
        while len(line) < MAX_GETLINE:
            byte = next_byte(state, simfd, fd, "getline")
            if byte is None:
                return line, True
            line.append(byte)
            hit = byte == d
            if hit.is_true() or (hit.symbolic and holds_for_sure(state, hit, "getline delimiter")):
                return line, False
        raise angr.errors.SimProcedureError(f"getline: a line longer than {MAX_GETLINE} bytes")


class RamGetline(angr.SimProcedure):
    """``getline(lineptr, n, fp)``: ``getdelim`` with a newline."""

    def run(self, lineptr, n, file_ptr):  # pylint: disable=arguments-differ
        return self.inline_call(RamGetdelim, lineptr, n, claripy.BVV(10, 32), file_ptr).ret_expr


LINE_PROCEDURES = {"getline": RamGetline, "getdelim": RamGetdelim, "__getdelim": RamGetdelim}
