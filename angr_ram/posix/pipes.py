"""``pipe(fds)`` and ``pipe2(fds, flags)`` inside one process.

angr has neither (stubs: an unconstrained return, ``fds`` left as they were), so a value a program
passed through a pipe to itself (the "covert propagation" logic bombs; a program that sets up a
pipe before forking) reached its branches as garbage: every such test mismatched natively. Here a
pipe is one :class:`angr.SimFile` (named ``pipe:N``) behind two descriptors, the lowest free ones,
as Linux gives them: ``fds[0]`` reads it from its start and ``fds[1]`` writes it at its end, each
with its own position, so bytes come out in the order they went in. A read past what was written
returns what there is (0 at the end), where a real pipe whose write end is open would block: a
program that waits on its own empty pipe hangs natively, and ends its read here.
``pipe2``'s ``O_CLOEXEC``/``O_NONBLOCK`` are accepted (one process execs nothing); other flags: -1
with ``EINVAL``; more than 1024 open descriptors: ``EMFILE``."""

from __future__ import annotations

import angr
import claripy
from angr.storage.file import Flags, SimFile, SimFileDescriptor

from angr_ram.procedures.libc import ret_errno, single_value

MAX_DESCRIPTORS = 1024                           # RLIMIT_NOFILE's usual soft limit
O_NONBLOCK, O_CLOEXEC, O_DIRECT = 0o4000, 0o2000000, 0o40000
PIPE_FLAGS = O_NONBLOCK | O_CLOEXEC | O_DIRECT


def open_pipe(state, written=None, ends: int = 2) -> tuple[int, ...] | None:
    """A new pipe's (read, write) descriptors on ``state`` (``ends`` 1: the read end only), holding
    the bytes ``written`` (a bit-vector; None: none), or None when not enough descriptors are free."""
    free = [k for k in range(MAX_DESCRIPTORS) if k not in state.posix.fd][:ends]
    if len(free) < ends:
        return None
    count = state.globals.get("angr_ram_pipes", 0)
    state.globals["angr_ram_pipes"] = count + 1
    simfile = SimFile(f"pipe:{count}", content=written if written is not None else b"",
                      size=0 if written is None else len(written) // 8, has_end=True)
    simfile.set_state(state)
    for k, flags in zip(free, (Flags.O_RDONLY, Flags.O_WRONLY)[:ends], strict=True):
        simfd = SimFileDescriptor(simfile, flags)
        simfd.set_state(state)
        state.posix.fd[k] = simfd
    return tuple(free)


class Pipe(angr.SimProcedure):
    """``pipe(fds)`` / ``pipe2(fds, flags)``: see the module doc."""

    def run(self, fds, flags=None):  # pylint: disable=arguments-differ
        if flags is not None:
            f = single_value(self.state, flags[31:0])
            if f is None:
                raise angr.errors.SimProcedureError("pipe2 with symbolic flags")
            if f & ~PIPE_FLAGS:
                return ret_errno(self.state, "EINVAL")
        ends = open_pipe(self.state)
        if ends is None:
            return ret_errno(self.state, "EMFILE")
        for i, k in enumerate(ends):
            self.state.memory.store(fds + 4 * i, claripy.BVV(k, 32), endness=self.state.arch.memory_endness)
        return claripy.BVV(0, 32)


class Pipe2(Pipe):
    """``pipe2(fds, flags)``."""

    def run(self, fds, flags):  # pylint: disable=arguments-differ,useless-parent-delegation
        return super().run(fds, flags)


PIPE_PROCEDURES = {"pipe": Pipe, "pipe2": Pipe2}
