"""A ``FILE``'s end-of-file and error flags, as glibc keeps them, for angr's stream models.

glibc's ``feof_unlocked``, ``ferror_unlocked``, ``getc_unlocked`` and ``putc_unlocked`` are macros:
a program compiled against them reads ``fp->_flags`` (``_IO_EOF_SEEN`` 0x10, ``_IO_ERR_SEEN``
0x20) and the buffer pointers itself. angr's ``FILE`` (cle's ``_io_stdin`` and ``fopen``'s) is
zero-filled and angr's ``fread`` and ``fgetc`` never set a flag, so Debian's ``base64`` (``do
fread_unlocked(...) while (!(in->_flags & 0x30))``) read its end of input forever, and every
``ferror`` (a stub: any value) invented a write error. These models keep the flags as glibc does:

* ``fread``/``fread_unlocked`` set ``_IO_EOF_SEEN`` when they return fewer items than asked (glibc:
  end of input or an error; angr's files have no read errors); ``fgetc``, ``getc``, ``_IO_getc``,
  their ``_unlocked`` forms and ``__uflow`` (``getc_unlocked``'s slow path, taken always since
  angr's buffer pointers are null) set it when no byte is left;
* ``fgets`` reads a line byte by byte (a byte that may be a newline forks; see :class:`Fgets`);
* ``ungetc`` pushes a byte back that the next ``fgetc`` or ``fread`` returns, and clears the
  end-of-file flag (angr's moved a descriptor position that streams do not read from: m4, which
  peeks with ``getc`` and ``ungetc``, lost every byte it peeked); ``getchar`` reads ``stdin``'s
  ``FILE``;
* ``feof``, ``ferror`` and their ``_unlocked`` forms test the flags (angr's ``feof`` asked whether
  the position is at the end: 1 after reading the last byte, where glibc says 0 until a read
  fails); ``clearerr`` clears both;
* ``fwrite`` returns the number of items written (angr's: the number of bytes);
* ``__fpending`` is 0 (angr writes output when it is made; nothing waits in a buffer);
  ``__freading``/``__fwriting`` tell a read-only or write-only stream.
"""

from __future__ import annotations

import angr
import claripy
from cle.backends.externs.simdata.io_file import io_file_data_for_arch

from angr_ram.memory.relocatable import reading_length
from angr_ram.posix.symbolic_lines import read_line, store_line
from angr_ram.procedures.byte_scan import count_answer
from angr_ram.procedures.heap import holds_for_sure
from angr_ram.procedures.libc import single_value
from angr_ram.procedures.strings import string_length

EOF_SEEN = 0x10     # glibc's _IO_EOF_SEEN
ERR_SEEN = 0x20     # glibc's _IO_ERR_SEEN


class Pushback(angr.SimStatePlugin):
    """The bytes ``ungetc`` pushed back, per file descriptor, last pushed last (angr's ``ungetc``
    moved a descriptor's own position, which a stream such as stdin does not read from: m4 peeks
    with getc and ungetc, and lost every byte it peeked)."""

    def __init__(self, pending=None):
        super().__init__()
        self.pending: dict[int, tuple] = dict(pending or {})

    @angr.SimStatePlugin.memo
    def copy(self, memo):  # pylint: disable=unused-argument
        return Pushback(self.pending)

    def merge(self, others, merge_conditions, common_ancestor=None):  # pylint: disable=unused-argument
        if any(set(o.pending) != set(self.pending) or any(
                len(o.pending[k]) != len(v) or any(a is not b for a, b in zip(o.pending[k], v, strict=True))
                for k, v in self.pending.items()) for o in others):
            raise angr.errors.SimMergeError("different bytes pushed back with ungetc")
        return False

    def widen(self, others):  # pylint: disable=unused-argument
        return False

    def take(self, fd: int, n: int) -> list:
        """Up to ``n`` pushed-back bytes of ``fd``, in the order a read returns them."""
        pb = self.pending.get(fd, ())
        k = min(n, len(pb))
        if not k:
            return []
        out = list(reversed(pb[len(pb) - k:]))
        self.pending[fd] = pb[:len(pb) - k]
        return out

    def push(self, fd: int, byte) -> None:
        self.pending[fd] = self.pending.get(fd, ()) + (byte,)


Pushback.register_default("ram_stdio")


def _fileno(proc, file_ptr):
    fd_offset = io_file_data_for_arch(proc.state.arch)["fd"]
    return proc.state.mem[file_ptr + fd_offset:].int.resolved


def stream_fd(proc, file_ptr):
    return proc.state.posix.get_fd(_fileno(proc, file_ptr))


def fd_number(proc, file_ptr) -> int | None:
    f = _fileno(proc, file_ptr)
    return None if f.symbolic else f.concrete_value


def file_flags(proc, file_ptr):
    return proc.state.memory.load(file_ptr, 4, endness=proc.arch.memory_endness)


def set_eof_if(proc, file_ptr, cond) -> None:
    """``fp->_flags |= _IO_EOF_SEEN`` where ``cond`` holds."""
    if cond is False or (isinstance(cond, claripy.ast.Bool) and cond.is_false()):
        return
    flags = file_flags(proc, file_ptr)
    new = flags | EOF_SEEN
    if isinstance(cond, claripy.ast.Bool) and not cond.is_true():
        new = claripy.If(cond, new, flags)
    proc.state.memory.store(file_ptr, new, endness=proc.arch.memory_endness)


class Fread(angr.SimProcedure):
    """``fread(dst, size, n, fp)``: the bytes ``ungetc`` pushed back, then angr's read, and
    ``_IO_EOF_SEEN`` after a short one."""

    def run(self, dst, size, nm, file_ptr):  # pylint: disable=arguments-differ
        simfd = stream_fd(self, file_ptr)
        if simfd is None:
            return claripy.BVV(0, 64)
        want = size * nm
        fd = fd_number(self, file_ptr)
        pushed = []
        if fd is not None and not want.symbolic:
            pushed = self.state.ram_stdio.take(fd, want.concrete_value)
        if pushed:
            self.state.memory.store(dst, claripy.Concat(*pushed) if len(pushed) > 1 else pushed[0])
        got = simfd.read(dst + len(pushed), want - len(pushed)) + len(pushed)
        set_eof_if(self, file_ptr, claripy.ULT(got, want))
        return claripy.If(claripy.Or(size == 0, nm == 0), claripy.BVV(0, got.size()), got // size)


class Fgetc(angr.SimProcedure):
    """``fgetc(fp)`` (and ``getc``, ``__uflow``, ...): the last byte ``ungetc`` pushed back, else
    the next byte, or EOF with ``_IO_EOF_SEEN`` set."""

    def run(self, file_ptr):  # pylint: disable=arguments-differ
        fd = fd_number(self, file_ptr)
        if fd is not None:
            pushed = self.state.ram_stdio.take(fd, 1)
            if pushed:
                return pushed[0].zero_extend(24)
        simfd = stream_fd(self, file_ptr)
        if simfd is None:
            return claripy.BVV(0xFFFFFFFF, 32)
        data, length = simfd.read_data(1)
        empty = length == 0
        set_eof_if(self, file_ptr, empty)
        return claripy.If(empty, claripy.BVV(0xFFFFFFFF, 32), data.zero_extend(24))


MAX_LINE = 1 << 16      # bytes an fgets with a symbolic size reads at most (a bound on its loop)


def next_byte(state, simfd, fd, what: str):
    """The stream's next byte (the last one ``ungetc`` pushed back first), or None at the end of
    input; an end that may or may not have come forks the state on it (``what`` names the call)."""
    pushed = state.ram_stdio.take(fd, 1) if fd is not None else []
    if pushed:
        return pushed[0]
    byte, length = simfd.read_data(1)
    if not isinstance(length, int):
        length = 0 if holds_for_sure(state, length == 0, f"{what} end of input") else 1
    return None if length == 0 else byte


class Fgets(angr.SimProcedure):
    """``fgets(s, n, fp)``: bytes (pushed-back ones first) up to and including a newline, at most
    ``n - 1``, then a NUL; NULL when the end came before any byte. Reaching the end sets
    ``_IO_EOF_SEEN``. A byte that may or may not be a newline forks the call on it (one path per
    line length, inside an angr-ram step). angr's ``fgets`` read ``n - 1`` bytes of symbolic data at
    once and asserted that none before the last was a newline: with a template file (concrete
    newlines between symbolic bytes) that made every path unsatisfiable (GNU make lost its only
    path reading its makefile)."""

    def run(self, dst, size, file_ptr):  # pylint: disable=arguments-differ
        state = self.state
        n = single_value(state, size[31:0])
        if n is None:
            n = min(state.solver.max(size[31:0], extra_constraints=[claripy.SLE(size[31:0], MAX_LINE)]), MAX_LINE)
            state.add_constraints(size[31:0] == n)
        n = n - (1 << 32) if n >= 1 << 31 else n
        simfd = stream_fd(self, file_ptr)
        if n <= 0 or simfd is None:
            return claripy.BVV(0, state.arch.bits)
        fd = fd_number(self, file_ptr)
        count, ended = 0, False
        pushed = state.ram_stdio.take(fd, n - 1) if fd is not None else []
        for k, byte in enumerate(pushed):
            newline = byte == 10
            if newline.symbolic and not newline.is_false() and not state.solver.is_false(newline):
                for b in reversed(pushed[k:]):      # unread: byte by byte below
                    state.ram_stdio.push(fd, b)
                break
            state.memory.store(dst + count, byte)
            count += 1
            if not newline.symbolic and newline.is_true():
                for b in reversed(pushed[k + 1:]):
                    state.ram_stdio.push(fd, b)
                state.memory.store(dst + count, claripy.BVV(0, 8))
                return dst
        else:
            if count < n - 1:
                line = read_line(state, simfd, n - 1 - count)
                if line is not None:
                    store_line(state, dst, line, count)
                    set_eof_if(self, file_ptr, line.eof)
                    return dst if count else claripy.If(line.length == 0, claripy.BVV(0, state.arch.bits), dst)
        while count < n - 1:
            byte = next_byte(state, simfd, fd, "fgets")
            if byte is None:
                ended = True
                break
            state.memory.store(dst + count, byte)
            count += 1
            newline = byte == 10
            if newline.is_true() or (newline.symbolic and holds_for_sure(state, newline, "fgets newline")):
                break
        if ended:
            set_eof_if(self, file_ptr, True)
            if count == 0:
                return claripy.BVV(0, state.arch.bits)
        state.memory.store(dst + count, claripy.BVV(0, 8))
        return dst


class Getchar(angr.SimProcedure):
    """``getchar()``: ``fgetc(stdin)`` on the ``FILE`` the program's ``stdin`` points to (angr's read
    fd 0 without the flags). A program that never names ``stdin`` itself, loaded without libc,
    has no such symbol: then the next byte of fd 0 (pushed-back bytes first), or EOF."""

    def run(self):  # pylint: disable=arguments-differ
        sym = self.project.loader.find_symbol("stdin")
        if sym is not None:
            fp = self.state.memory.load(sym.rebased_addr, 8, endness=self.arch.memory_endness)
            return self.inline_call(Fgetc, fp).ret_expr
        pushed = self.state.ram_stdio.take(0, 1)
        if pushed:
            return pushed[0].zero_extend(24)
        simfd = self.state.posix.get_fd(0)
        if simfd is None:
            return claripy.BVV(0xFFFFFFFF, 32)
        data, length = simfd.read_data(1)
        return claripy.If(length == 0, claripy.BVV(0xFFFFFFFF, 32), data.zero_extend(24))


class Ungetc(angr.SimProcedure):
    """``ungetc(c, fp)``: ``c`` is the next byte read from ``fp`` (EOF pushes nothing); clears the
    end-of-file flag (C11 7.21.7.10)."""

    def run(self, c, file_ptr):  # pylint: disable=arguments-differ
        c32 = c[31:0]
        if not c32.symbolic and c32.concrete_value == 0xFFFFFFFF:
            return c32
        fd = fd_number(self, file_ptr)
        if fd is None:
            return claripy.BVV(0xFFFFFFFF, 32)
        self.state.ram_stdio.push(fd, c32[7:0])
        flags = file_flags(self, file_ptr)
        self.state.memory.store(file_ptr, flags & (~EOF_SEEN & 0xFFFFFFFF), endness=self.arch.memory_endness)
        return c32[7:0].zero_extend(24)


class _FlagTest(angr.SimProcedure):
    MASK = 0

    def run(self, file_ptr):  # pylint: disable=arguments-differ
        return claripy.If(file_flags(self, file_ptr) & self.MASK != 0, claripy.BVV(1, 32), claripy.BVV(0, 32))


class Feof(_FlagTest):
    """``feof(fp)``: whether a read hit the end (``_IO_EOF_SEEN``)."""
    MASK = EOF_SEEN


class Ferror(_FlagTest):
    """``ferror(fp)``: whether an operation failed (``_IO_ERR_SEEN``)."""
    MASK = ERR_SEEN


class Clearerr(angr.SimProcedure):
    """``clearerr(fp)``: clears both flags."""

    def run(self, file_ptr):  # pylint: disable=arguments-differ
        flags = file_flags(self, file_ptr)
        self.state.memory.store(file_ptr, flags & ~(EOF_SEEN | ERR_SEEN) & 0xFFFFFFFF,
                                endness=self.arch.memory_endness)


class Fpending(angr.SimProcedure):
    """``__fpending(fp)``: 0 bytes wait in the buffer (angr writes output when it is made)."""

    def run(self, file_ptr):  # pylint: disable=arguments-differ,unused-argument
        return claripy.BVV(0, 64)


O_ACCMODE, O_RDONLY, O_WRONLY = 3, 0, 1


def _access(proc, file_ptr) -> int | None:
    """The access mode of ``file_ptr``'s descriptor (stdin read-only, stdout and stderr write-only;
    angr keeps the mode a file was opened with), or None for a closed one."""
    fd_offset = io_file_data_for_arch(proc.state.arch)["fd"]
    fileno = proc.state.mem[file_ptr + fd_offset:].int.resolved
    if fileno.symbolic:
        return None
    fd = fileno.concrete_value
    if fd in (0, 1, 2):
        return O_RDONLY if fd == 0 else O_WRONLY
    simfd = proc.state.posix.get_fd(fd)
    return None if simfd is None else getattr(simfd, "flags", 0) & O_ACCMODE


class Freading(angr.SimProcedure):
    """``__freading(fp)``: nonzero for a read-only stream (the last operation on angr's streams
    was a read exactly when they are read-only)."""

    def run(self, file_ptr):  # pylint: disable=arguments-differ
        return claripy.BVV(int(_access(self, file_ptr) == O_RDONLY), 32)


class Fwriting(angr.SimProcedure):
    """``__fwriting(fp)``: nonzero for a write-only stream."""

    def run(self, file_ptr):  # pylint: disable=arguments-differ
        return claripy.BVV(int(_access(self, file_ptr) == O_WRONLY), 32)


def write_from(state, simfd, src, n):
    """``simfd.write(src, n)``, whose load of ``n``'s largest value reads only ``n`` bytes of an
    object of symbolic size (:meth:`~angr_ram.memory.relocatable.RelocatableMixin.reading`)."""
    with reading_length(state, src, n):
        return simfd.write(src, n)


def write_string(proc: angr.SimProcedure, simfd, s):
    """Write the bytes of string ``s`` before its NUL to ``simfd`` (the length measured by
    :func:`~.strings.string_length`, else by angr's ``strlen``); the count written."""
    n = string_length(proc.state, s)
    count_answer(proc.state, n is not None)
    if n is None:
        n = proc.inline_call(angr.SIM_PROCEDURES["libc"]["strlen"], s).ret_expr
    return write_from(proc.state, simfd, s, n)


class Puts(angr.SimProcedure):
    """``puts(s)``: the bytes of ``s`` before its NUL (measured as :class:`Fputs` does), then a
    newline, to file descriptor 1; angr's value (the count written plus one). angr's loaded the
    longest length ``s`` could have, and past the copy ``malloc(strlen(arg) + 1)`` holds on a path
    where it is shorter, that was an out-of-bounds read the program does not make."""

    def run(self, s):  # pylint: disable=arguments-differ
        simfd = self.state.posix.get_fd(1)
        if simfd is None:
            return claripy.BVV(-1, 32)
        out = write_string(self, simfd, s)
        simfd.write_data(claripy.BVV(b"\n"))
        return (out + 1)[31:0]


class Write(angr.SimProcedure):
    """``write(fd, buf, n)`` as angr's, its load of ``n``'s largest value reading ``n`` bytes."""

    def run(self, fd, src, length):  # pylint: disable=arguments-differ
        simfd = self.state.posix.get_fd(fd)
        if simfd is None:
            return -1
        return write_from(self.state, simfd, src, length)


class Fputs(angr.SimProcedure):
    """``fputs(s, fp)``: the bytes of ``s`` before its NUL, as :func:`~.strings.string_length`
    measures it; 1 (glibc's value), or EOF for a stream that is not open. angr's wrote the longest
    length ``s`` could have on the path: ``fputs`` of a 3-byte input ``a\0a`` printed ``a\0a``."""

    def run(self, s, file_ptr):  # pylint: disable=arguments-differ
        simfd = stream_fd(self, file_ptr)
        if simfd is None:
            return claripy.BVV(-1, 32)
        write_string(self, simfd, s)
        return claripy.BVV(1, 32)


class Fwrite(angr.SimProcedure):
    """``fwrite(src, size, n, fp)``: ``size * n`` bytes written; the number of items, ``n`` (0 when
    ``size`` or ``n`` is 0), or 0 with the error flag set for a stream that is closed or read-only.
    angr's returned the number of bytes, so Debian's ``tee`` (``fwrite(buf, n, 1, stdout) != 1``)
    reported a write error and exited 1 on every input."""

    def run(self, src, size, nmemb, file_ptr):  # pylint: disable=arguments-differ
        simfd = stream_fd(self, file_ptr)
        if simfd is None or _access(self, file_ptr) == O_RDONLY:
            flags = file_flags(self, file_ptr)
            self.state.memory.store(file_ptr, flags | ERR_SEEN, endness=self.arch.memory_endness)
            return claripy.BVV(0, 64)
        write_from(self.state, simfd, src, size * nmemb)
        return claripy.If(claripy.Or(size == 0, nmemb == 0), claripy.BVV(0, 64), nmemb)


STDIO_PROCEDURES = {
    "fread": Fread, "fread_unlocked": Fread,
    "fgetc": Fgetc, "getc": Fgetc, "_IO_getc": Fgetc, "fgetc_unlocked": Fgetc, "getc_unlocked": Fgetc,
    "__uflow": Fgetc, "fgets": Fgets, "fgets_unlocked": Fgets, "getchar": Getchar, "getchar_unlocked": Getchar, "ungetc": Ungetc,
    "feof": Feof, "feof_unlocked": Feof, "ferror": Ferror, "ferror_unlocked": Ferror,
    "clearerr": Clearerr, "clearerr_unlocked": Clearerr, "__fpending": Fpending,
    "__freading": Freading, "__fwriting": Fwriting, "fputs": Fputs, "fputs_unlocked": Fputs,
    "fwrite": Fwrite, "fwrite_unlocked": Fwrite, "puts": Puts, "write": Write,
}
