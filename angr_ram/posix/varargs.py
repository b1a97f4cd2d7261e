"""The ``v*printf`` family: formatting from a ``va_list``.

angr's ``vsnprintf`` writes an empty string and returns 1 whatever the format, and ``vsprintf``,
``vfprintf``, ``vprintf`` and their fortified ``__v*_chk`` forms are stubs (any return value, no
effect). Libraries format their messages with them (libxml2's error reports size a buffer from
``vsnprintf``'s result: under the stub every error message became a ``realloc`` of a symbolic
size). These models read the arguments from the x86-64 ``va_list`` (``gp_offset``, ``fp_offset``,
``overflow_arg_area``, ``reg_save_area``) without changing it, format with angr's format parser
(and angr-ram's forking on symbolic integers and string lengths), and write and return what the C
functions do: ``vsnprintf(s, n, ...)`` stores at most ``n - 1`` bytes and a NUL and returns the full
length. ``asprintf``/``vasprintf`` and their ``__*_chk`` forms (angr: stubs that allocated nothing)
put the text in a new heap object. A ``double`` argument is read from the vector registers' part of
the save area (``fp_offset``) and printed by :mod:`.float_text`.
"""

from __future__ import annotations

import angr
import claripy
from angr.procedures.stubs.format_parser import FormatParser
from cle.backends.externs.simdata.io_file import io_file_data_for_arch

from angr_ram.procedures.libc import single_value

GP_AREA = 48        # six integer registers of 8 bytes in the register save area
FP_AREA_END = 176   # then eight vector registers of 16 bytes


class VaList:
    """The arguments of a ``va_list`` at ``ap``, in order (``va_arg``), read without changing it."""

    def __init__(self, state, ap):
        self.state, self.ap = state, ap
        e = state.arch.memory_endness
        gp = single_value(state, state.memory.load(ap, 4, endness=e))
        if gp is None:
            raise angr.errors.SimProcedureError("va_list with a symbolic gp_offset")
        self.gp = gp
        self.fp = single_value(state, state.memory.load(ap + 4, 4, endness=e))
        self.overflow = state.memory.load(ap + 8, 8, endness=e)
        self.save = state.memory.load(ap + 16, 8, endness=e)

    def long_double(self):
        """The next ``long double``'s 80 bits: in the overflow area, 16-byte aligned, 16 bytes."""
        self.overflow = (self.overflow + 15) & ~15
        v = self.state.memory.load(self.overflow, 10, endness=self.state.arch.memory_endness)
        self.overflow = self.overflow + 16
        return v

    def __call__(self, ty):
        e = self.state.arch.memory_endness
        if ty == "double":          # the next vector register's low 8 bytes, then the stack
            if self.fp is None:
                raise angr.errors.SimProcedureError("va_list with a symbolic fp_offset")
            if self.fp < FP_AREA_END:
                v = self.state.memory.load(self.save + self.fp, 8, endness=e)
                self.fp += 16
            else:
                v = self.state.memory.load(self.overflow, 8, endness=e)
                self.overflow = self.overflow + 8
            return v
        if self.gp < GP_AREA:
            v = self.state.memory.load(self.save + self.gp, 8, endness=e)
            self.gp += 8
        else:
            v = self.state.memory.load(self.overflow, 8, endness=e)
            self.overflow = self.overflow + 8
        return v


class _VFormat(FormatParser):
    def formatted(self, fmt, ap):
        return self._parse(fmt).replace(VaList(self.state, ap))

    def to_buffer(self, dst, size, fmt, ap):
        out = self.formatted(fmt, ap)
        n = out.size() // 8
        if size is not None:
            k = single_value(self.state, size)
            if k is None:
                raise angr.errors.SimProcedureError("vsnprintf with a symbolic size")
            if k == 0:
                return claripy.BVV(n, 32)
            if n > k - 1:
                out = out.get_bytes(0, k - 1) if k > 1 else None
        if out is not None:
            self.state.memory.store(dst, out)
        self.state.memory.store(dst + (0 if out is None else out.size() // 8), claripy.BVV(0, 8))
        return claripy.BVV(n, 32)

    def to_file(self, file_ptr, fmt, ap):
        if file_ptr is None:
            simfd = self.state.posix.get_fd(1)
        else:
            fd_offset = io_file_data_for_arch(self.state.arch)["fd"]
            simfd = self.state.posix.get_fd(self.state.mem[file_ptr + fd_offset:].int.resolved)
        if simfd is None:
            return claripy.BVV(-1 & 0xFFFFFFFF, 32)
        out = self.formatted(fmt, ap)
        simfd.write_data(out, out.size() // 8)
        return claripy.BVV(out.size() // 8, 32)


class Vsnprintf(_VFormat):
    def run(self, dst, size, fmt, ap):  # pylint: disable=arguments-differ
        return self.to_buffer(dst, size, fmt, ap)


class VsnprintfChk(_VFormat):
    def run(self, dst, size, flag, slen, fmt, ap):  # pylint: disable=arguments-differ,unused-argument
        return self.to_buffer(dst, size, fmt, ap)


class Vsprintf(_VFormat):
    def run(self, dst, fmt, ap):  # pylint: disable=arguments-differ
        return self.to_buffer(dst, None, fmt, ap)


class VsprintfChk(_VFormat):
    def run(self, dst, flag, slen, fmt, ap):  # pylint: disable=arguments-differ,unused-argument
        return self.to_buffer(dst, None, fmt, ap)


class Vfprintf(_VFormat):
    def run(self, file_ptr, fmt, ap):  # pylint: disable=arguments-differ
        return self.to_file(file_ptr, fmt, ap)


class VfprintfChk(_VFormat):
    def run(self, file_ptr, flag, fmt, ap):  # pylint: disable=arguments-differ,unused-argument
        return self.to_file(file_ptr, fmt, ap)


class Vprintf(_VFormat):
    def run(self, fmt, ap):  # pylint: disable=arguments-differ
        return self.to_file(None, fmt, ap)


class VprintfChk(_VFormat):
    def run(self, flag, fmt, ap):  # pylint: disable=arguments-differ,unused-argument
        return self.to_file(None, fmt, ap)


def allocated_text(proc, strp, out):
    """``asprintf``'s ending: a heap object (``state.heap``: angr-ram's in its runs) holding ``out``
    and a NUL, its address stored at ``*strp``; the text's length."""
    n = out.size() // 8
    buf = proc.state.heap._malloc(claripy.BVV(n + 1, 64))
    if n:
        proc.state.memory.store(buf, out)
    proc.state.memory.store(buf + n, claripy.BVV(0, 8))
    proc.state.memory.store(strp, buf, endness=proc.state.arch.memory_endness)
    return claripy.BVV(n, 32)


class Asprintf(FormatParser):
    """``asprintf(strp, fmt, ...)``: the formatted text in a new heap object (angr: a stub)."""

    def run(self, strp, fmt):  # pylint: disable=arguments-differ
        return allocated_text(self, strp, self._parse(fmt).replace(self.va_arg))


class AsprintfChk(FormatParser):
    """``__asprintf_chk(strp, flag, fmt, ...)``."""

    def run(self, strp, flag, fmt):  # pylint: disable=arguments-differ,unused-argument
        return allocated_text(self, strp, self._parse(fmt).replace(self.va_arg))


class Vasprintf(_VFormat):
    """``vasprintf(strp, fmt, ap)``."""

    def run(self, strp, fmt, ap):  # pylint: disable=arguments-differ
        return allocated_text(self, strp, self.formatted(fmt, ap))


class VasprintfChk(_VFormat):
    """``__vasprintf_chk(strp, flag, fmt, ap)``."""

    def run(self, strp, flag, fmt, ap):  # pylint: disable=arguments-differ,unused-argument
        return allocated_text(self, strp, self.formatted(fmt, ap))


VARARG_PROCEDURES = {"asprintf": Asprintf, "__asprintf_chk": AsprintfChk, "vasprintf": Vasprintf,
                     "__vasprintf_chk": VasprintfChk, "vsnprintf": Vsnprintf, "__vsnprintf_chk": VsnprintfChk, "vsprintf": Vsprintf,
                     "__vsprintf_chk": VsprintfChk, "vfprintf": Vfprintf, "__vfprintf_chk": VfprintfChk,
                     "vprintf": Vprintf, "__vprintf_chk": VprintfChk}
