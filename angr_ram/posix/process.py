"""The process's own attributes, as libc functions report them: working directory, ids, file mask.

angr stubs these libc functions (any return value): a stubbed ``getcwd`` returned an arbitrary
pointer that GNU make later freed, a false error on every path. The models answer from angr's
state (``state.fs.cwd``, the ``getpid``/``getuid`` system-call models' values) so that every call
on a path agrees with the others:

* ``getcwd(buf, size)`` writes the working directory (NULL with ``ERANGE`` when it does not fit;
  a NULL ``buf`` gets a heap object, as glibc's extension does); ``get_current_dir_name`` and
  ``getwd`` likewise; ``chdir`` changes it;
* ``getpid``, ``getppid``, ``getuid``, ``geteuid``, ``getgid``, ``getegid`` are angr's system
  calls' values; ``umask`` returns the previous mask (022 at start, as a replay's shell gives);
* ``strerror`` returns glibc's message for a concrete error number.

A test's native run has its own working directory and process id: a program that prints them
differs there by nature."""

from __future__ import annotations

import errno
import os

import angr
import claripy

from angr_ram.posix.startup import static_string, system_call
from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.stubs import record

_UMASK = "angr_ram_umask"
START_UMASK = 0o022


def heap_string(proc, text: bytes):
    """A fresh heap object holding ``text`` and a NUL (``state.heap``: angr-ram's heap in its runs)."""
    addr = proc.state.heap._malloc(claripy.BVV(len(text) + 1, proc.state.arch.bits))
    proc.state.memory.store(addr, claripy.BVV(text + b"\0"))
    return addr


class Getcwd(angr.SimProcedure):
    """``getcwd(buf, size)``: ``buf`` holding the working directory."""

    def run(self, buf, size):  # pylint: disable=arguments-differ
        cwd = self.state.fs.cwd
        n = single_value(self.state, size)
        if not buf.symbolic and buf.concrete_value == 0:
            if n not in (None, 0) and n < len(cwd) + 1:
                ret_errno(self.state, "ERANGE")
                return claripy.BVV(0, self.state.arch.bits)
            return heap_string(self, cwd)
        if n is None:
            n = self.state.solver.min(size)
        if n < len(cwd) + 1:
            ret_errno(self.state, "ERANGE" if n else "EINVAL")
            return claripy.BVV(0, self.state.arch.bits)
        self.state.memory.store(buf, claripy.BVV(cwd + b"\0"))
        return buf


class GetCurrentDirName(angr.SimProcedure):
    """``get_current_dir_name()``: a heap copy of the working directory."""

    def run(self):  # pylint: disable=arguments-differ
        return heap_string(self, self.state.fs.cwd)


class Chdir(angr.SimProcedure):
    """``chdir(path)``: angr's model (the working directory becomes ``path``)."""

    def run(self, path):  # pylint: disable=arguments-differ
        return self.inline_call(angr.SIM_PROCEDURES["linux_kernel"]["chdir"], path).ret_expr


class Umask(angr.SimProcedure):
    """``umask(mask)``: the previous mask (022 at start); ``mask & 0777`` becomes it."""

    def run(self, mask):  # pylint: disable=arguments-differ
        prev = self.state.globals.get(_UMASK, START_UMASK)
        self.state.globals[_UMASK] = mask[31:0] & 0o777
        return prev if isinstance(prev, claripy.ast.Base) else claripy.BVV(prev, 32)


def error_message(n: int) -> bytes:
    """glibc's ``strerror`` text for error number ``n``."""
    if n == 0:
        return b"Success"
    if n in errno.errorcode:
        return os.strerror(n).encode()
    return b"Unknown error %d" % n


class Strerror(angr.SimProcedure):
    """``strerror(n)``: glibc's message (a constant string per number)."""

    def run(self, n):  # pylint: disable=arguments-differ
        k = single_value(self.state, n[31:0])
        if k is None:
            record(self.state, "strerror")
            return claripy.BVS("strerror", self.state.arch.bits)
        k = k - (1 << 32) if k >= 1 << 31 else k
        return static_string(self, error_message(k))


PROCESS_PROCEDURES = {
    "getcwd": Getcwd, "getppid": system_call("getppid", 0), "get_current_dir_name": GetCurrentDirName, "chdir": Chdir, "umask": Umask,
    "strerror": Strerror, **{n: system_call(n, 0) for n in ("getpid", "getuid", "geteuid", "getgid", "getegid")},
}
