"""A signal a process sends itself: ``raise(sig)`` and ``kill(getpid() or 0, sig)``.

angr has neither (stubs: an unconstrained return and no delivery), so a handler the program
installed never ran: a program whose outcome depends on its handler (a flag the handler sets, the
"covert propagation through a signal" logic bombs) lost that path. Here the signal is delivered
as the kernel delivers a signal a process sends itself, before the call returns, with the action
:mod:`.signals` keeps for it on the path:

* a handler is called with the signal number (and, for ``SA_SIGINFO``, NULL ``info`` and
  ``context``), then the call returns 0; ``SA_RESETHAND`` puts the default back first;
* ``SIG_IGN``, or the default action of a signal the kernel ignores by default (``SIGCHLD``,
  ``SIGCONT``, ``SIGURG``, ``SIGWINCH``): returns 0;
* the default action of any other signal ends the path as the process dies: a ``fatal-signal``
  error path under RelocatableMemory (a test that replays as confirmed if the native run dies of
  the same signal), exit status 128 + the signal number otherwise; a stop signal is an error (the
  native process would stop, not end);
* ``kill(pid, 0)`` of this process returns 0 (it exists); a signal number that is not one: -1 with
  ``EINVAL``. A blocked signal, a symbolic signal number or ``kill`` of another process are named
  errors or stubs: nothing is silently dropped.
"""

from __future__ import annotations

import signal as host_signal

import angr
import claripy

from angr_ram.core.errors import FATAL_SIGNAL, MemoryFault
from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.posix.signals import (
    ACTION_BYTES,
    MASK,
    MAX_SIGNAL,
    current_action,
    handler_of,
    memory_order,
    set_action,
)
from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.stubs import record

SIG_IGN = 1
IGNORED_BY_DEFAULT = frozenset({17, 18, 23, 28})      # SIGCHLD, SIGCONT, SIGURG, SIGWINCH
STOPPING = frozenset({19, 20, 21, 22})                 # SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU
SA_SIGINFO, SA_RESETHAND = 0x4, 0x80000000
FLAGS_AT = 8 + 128                                     # sa_flags' offset in struct sigaction


def _name(k: int) -> str:
    try:
        return host_signal.Signals(k).name
    except ValueError:
        return f"SIGRTMIN+{k - 34}" if k >= 34 else f"signal {k}"


def _flags(state, blob) -> int | None:
    top = blob.size() - 8 * FLAGS_AT
    return single_value(state, memory_order(state, blob[top - 1:top - 32]))


class _Delivering(angr.SimProcedure):
    """Delivery of signal ``k`` to this process, then a return of 0 (see module doc)."""

    def deliver(self, k: int):
        state = self.state
        mask = state.globals.get(MASK, claripy.BVV(0, 64))
        if not state.solver.is_false(mask & (1 << (k - 1)) != 0):
            raise angr.errors.SimProcedureError(f"{_name(k)} sent while it may be blocked: pending signals are not modelled")
        blob = current_action(state, k)
        handler = single_value(state, handler_of(state, blob))
        if handler is None:
            raise angr.errors.SimProcedureError(f"the handler of {_name(k)} has several values")
        if handler == SIG_IGN or (handler == 0 and k in IGNORED_BY_DEFAULT):
            return claripy.BVV(0, 32)
        if handler == 0:
            if k in STOPPING:
                raise angr.errors.SimProcedureError(f"{_name(k)} stops the process: not modelled")
            if forking_enabled():
                raise MemoryFault(FATAL_SIGNAL, f"killed by signal {k} ({_name(k)})")
            return self.exit(128 + k)
        flags = _flags(state, blob) or 0
        if flags & SA_RESETHAND:
            set_action(state, k, claripy.BVV(0, ACTION_BYTES * 8))
        if flags & SA_SIGINFO:
            self.call(handler, (k, 0, 0), "delivered", prototype="void handler(int, void *, void *)")
        else:
            self.call(handler, (k,), "delivered", prototype="void handler(int)")
        return None

    def delivered(self, *args):  # pylint: disable=unused-argument
        """The handler returned: the call returns 0."""
        return claripy.BVV(0, 32)


class Raise(_Delivering):
    """``raise(sig)``."""

    def run(self, sig):  # pylint: disable=arguments-differ
        k = single_value(self.state, sig[31:0])
        if k is None:
            raise angr.errors.SimProcedureError("raise of a symbolic signal number")
        if not 1 <= k <= MAX_SIGNAL:
            return ret_errno(self.state, "EINVAL")
        return self.deliver(k)


class Kill(_Delivering):
    """``kill(pid, sig)``: delivered when ``pid`` is this process (its id, or 0: its group)."""

    def run(self, pid, sig):  # pylint: disable=arguments-differ
        p = single_value(self.state, pid[31:0])
        k = single_value(self.state, sig[31:0])
        if p is None or k is None:
            raise angr.errors.SimProcedureError("kill with a symbolic process id or signal number")
        if p not in (0, single_value(self.state, self.state.posix.pid)):
            record(self.state, "kill")          # another process: nothing is modelled of it
            return claripy.BVV(0, 32)
        if not 0 <= k <= MAX_SIGNAL:
            return ret_errno(self.state, "EINVAL")
        return claripy.BVV(0, 32) if k == 0 else self.deliver(k)


DELIVERY_PROCEDURES = {"raise": Raise, "gsignal": Raise, "kill": Kill}
