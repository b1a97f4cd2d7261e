"""``fcntl`` on the descriptors a path has open, as Linux answers it.

angr's ``fcntl`` returns an unconstrained value whatever is asked: GNU make (through gnulib's
``rpl_fcntl``) asks ``F_GETFD``/``F_GETFL`` of its descriptors at start-up and forked on each answer,
hundreds of paths of which one is real. This model answers from angr's descriptor table
(``state.posix.fd``):

* ``F_GETFD``/``F_SETFD``: the close-on-exec flag, kept per path (``state.globals``); a descriptor
  opened with ``O_CLOEXEC`` has it, the standard ones do not;
* ``F_GETFL``: the access mode and status flags the descriptor was opened with; the standard
  descriptors are what a replay gives the program (stdin read-only, stdout and stderr write-only
  pipes); ``F_SETFL`` succeeds;
* ``F_DUPFD``/``F_DUPFD_CLOEXEC``: the lowest free descriptor at or above the argument, sharing the
  open file;
* record locks (``F_GETLK``, ``F_SETLK``, ``F_SETLKW`` and the open-file-description forms): one
  process holds every lock it asks for, so setting succeeds and ``F_GETLK`` reports ``F_UNLCK``;
* a descriptor that is not open: -1 with ``EBADF``.

Any other command, or a symbolic descriptor or command, gets angr's model and is recorded as a
stub (:mod:`.stubs`), so a result that depends on it is named."""

from __future__ import annotations

import angr
import claripy
from angr.storage.file import Flags, SimFileDescriptorDuplex

from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.stubs import record

_CLOEXEC = "angr_ram_fd_cloexec"    # state.globals: (fd, open file, FD_CLOEXEC) as fcntl last set them
F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK, F_SETLK, F_SETLKW = range(8)
F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW = 36, 37, 38
F_DUPFD_CLOEXEC = 1030
FD_CLOEXEC = 1
F_UNLCK = 2
O_CLOEXEC = 0o2000000
O_LARGEFILE = 0o100000
STATUS_FLAGS = Flags.O_APPEND | 0o4000          # O_APPEND | O_NONBLOCK: what F_GETFL reports beside the mode
MAX_DESCRIPTORS = 1024                           # RLIMIT_NOFILE's usual soft limit


def _open_file(state, fd: int):
    """What identifies the open behind ``fd``: its file's name (or the descriptor object's kind)."""
    simfd = state.posix.fd[fd]
    f = getattr(simfd, "file", None)
    return getattr(f, "name", None) if f is not None else type(simfd).__name__


def _cloexec(state, fd: int) -> bool:
    """``FD_CLOEXEC`` of ``fd``: as ``F_SETFD``/``F_DUPFD_CLOEXEC`` last set it for the open it names
    now, else ``O_CLOEXEC`` of the flags it was opened with (so a descriptor opened after a first
    ``fcntl``, or closed and opened again, answers for its own open)."""
    for k, opened, on in state.globals.get(_CLOEXEC, ()):
        if k == fd and opened == _open_file(state, fd):
            return on
    flags = getattr(state.posix.fd[fd], "flags", 0)
    return isinstance(flags, int) and bool(flags & O_CLOEXEC)


def _set_cloexec(state, fd: int, on: bool) -> None:
    kept = tuple(e for e in state.globals.get(_CLOEXEC, ()) if e[0] != fd)
    state.globals[_CLOEXEC] = kept + ((fd, _open_file(state, fd), on),)


def status_flags(state, fd: int) -> int:
    """What ``F_GETFL`` answers for the open descriptor ``fd``."""
    simfd = state.posix.fd[fd]
    standard = (state.posix.stdin, state.posix.stdout, state.posix.stderr)
    if isinstance(simfd, SimFileDescriptorDuplex) or getattr(simfd, "file", None) in standard:
        return Flags.O_RDONLY if fd == 0 else Flags.O_WRONLY     # the replay's pipes
    flags = simfd.flags if isinstance(simfd.flags, int) else single_value(state, simfd.flags) or 0
    return (flags & (Flags.O_ACCMODE | STATUS_FLAGS)) | O_LARGEFILE


class Fcntl(angr.SimProcedure):
    """``fcntl(fd, cmd, arg)`` for the commands the module lists."""

    def run(self, fd, cmd, arg):  # pylint: disable=arguments-differ
        n = single_value(self.state, fd[31:0])
        c = single_value(self.state, cmd[31:0])
        if n is None or c is None:
            return self._stub(fd, cmd)
        n = n - (1 << 32) if n >= 1 << 31 else n
        if n not in self.state.posix.fd:
            return ret_errno(self.state, "EBADF")
        if c == F_GETFD:
            return claripy.BVV(FD_CLOEXEC if _cloexec(self.state, n) else 0, 32)
        if c == F_SETFD:
            v = single_value(self.state, arg[31:0])
            if v is None:
                return self._stub(fd, cmd)
            _set_cloexec(self.state, n, bool(v & FD_CLOEXEC))
            return claripy.BVV(0, 32)
        if c == F_GETFL:
            return claripy.BVV(status_flags(self.state, n), 32)
        if c == F_SETFL:
            return claripy.BVV(0, 32)
        if c in (F_DUPFD, F_DUPFD_CLOEXEC):
            low = single_value(self.state, arg[31:0])
            if low is None or low >= MAX_DESCRIPTORS:
                return ret_errno(self.state, "EINVAL") if low is not None else self._stub(fd, cmd)
            new = next((k for k in range(low, MAX_DESCRIPTORS) if k not in self.state.posix.fd), None)
            if new is None:
                return ret_errno(self.state, "EMFILE")
            self.state.posix.fd[new] = self.state.posix.fd[n]
            _set_cloexec(self.state, new, c == F_DUPFD_CLOEXEC)
            return claripy.BVV(new, 32)
        if c in (F_GETLK, F_OFD_GETLK):
            self.state.memory.store(arg, claripy.BVV(F_UNLCK, 16), endness=self.state.arch.memory_endness)
            return claripy.BVV(0, 32)
        if c in (F_SETLK, F_SETLKW, F_OFD_SETLK, F_OFD_SETLKW):
            return claripy.BVV(0, 32)
        return self._stub(fd, cmd)

    def _stub(self, fd, cmd):
        record(self.state, "fcntl")
        return self.inline_call(angr.SIM_PROCEDURES["posix"]["fcntl"], fd, cmd).ret_expr


DESCRIPTOR_PROCEDURES = {"fcntl": Fcntl, "fcntl64": Fcntl, "__fcntl": Fcntl}
