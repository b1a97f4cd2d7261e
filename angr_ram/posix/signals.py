"""Signal dispositions and the blocked set as a fresh process has them: ``sigaction``, ``signal``,
``sigprocmask``.

angr's ``sigaction`` writes a *symbolic* ``struct sigaction`` to ``oldact`` and its ``signal`` is a
stub: a program that asks whether a signal is ignored before handling it (GNU make does for
``SIGHUP``, ``SIGINT``, ``SIGTERM``..., as the GNU coding standards ask) forked on every such
call, 2^n paths for n signals, each with an impossible "inherited disposition". A process started
by a replay has every signal at its default disposition (``SIG_DFL``, all fields zero; Python's
``subprocess`` restores the ones it ignores). These models keep, per path, the action each signal
was last given (``state.globals``, an immutable tuple of pairs, as :mod:`.threads` keeps its keys):
``oldact`` and ``signal``'s return value are the previous action, zero before the first;
``sigprocmask`` keeps the blocked set the same way. A symbolic
signal number gets angr's behaviour and is recorded as a stub (:mod:`.stubs`)."""

from __future__ import annotations

import angr
import claripy

from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.stubs import record

_KEY = "angr_ram_signal_actions"    # state.globals: ((signum, action bytes as stored in memory), ...)
ACTION_BYTES = 152                  # struct sigaction on x86-64: handler, 128-byte mask, flags, restorer
MAX_SIGNAL = 64                     # glibc's _NSIG - 1
SIGKILL, SIGSTOP = 9, 19
SA_RESTART = 0x10000000             # what glibc's signal() sets (BSD semantics)
EINVAL = "EINVAL"


def _actions(state) -> dict:
    return dict(state.globals.get(_KEY, ()))


def set_action(state, signum: int, blob) -> None:
    actions = _actions(state)
    actions[signum] = blob
    state.globals[_KEY] = tuple(sorted(actions.items(), key=lambda kv: kv[0]))


def current_action(state, signum: int):
    """The ``struct sigaction`` bytes (memory order) ``signum`` has on this path: zeros if never set."""
    return _actions(state).get(signum, claripy.BVV(0, ACTION_BYTES * 8))


def memory_order(state, value):
    """``value``'s bytes as the architecture stores them (reversed on a little-endian one); its own inverse."""
    return value.reversed if state.arch.memory_endness == "Iend_LE" else value


def handler_of(state, blob):
    """The handler field (the first 8 bytes) of an action stored in memory order."""
    return memory_order(state, blob[blob.size() - 1:blob.size() - 64])


def _valid(signum: int | None, setting: bool) -> bool:
    return signum is not None and 1 <= signum <= MAX_SIGNAL and not (setting and signum in (SIGKILL, SIGSTOP))


class Sigaction(angr.SimProcedure):
    """``sigaction(signum, act, oldact)``: ``*oldact`` is the action in force (the default before any
    was set), ``*act`` becomes it; -1 with ``EINVAL`` for a number that is not a signal (or
    ``SIGKILL``/``SIGSTOP`` given an action)."""

    def run(self, signum, act, oldact):  # pylint: disable=arguments-differ
        k = single_value(self.state, signum[31:0])
        setting = not (not act.symbolic and act.concrete_value == 0)
        if k is None:
            record(self.state, "sigaction")     # a symbolic signal number: angr's model
            return self.inline_call(angr.SIM_PROCEDURES["posix"]["sigaction"], signum, act, oldact).ret_expr
        if not _valid(k, setting):
            return ret_errno(self.state, EINVAL)
        if not (not oldact.symbolic and oldact.concrete_value == 0):
            self.state.memory.store(oldact, current_action(self.state, k))
        if setting:
            set_action(self.state, k, self.state.memory.load(act, ACTION_BYTES))
        return claripy.BVV(0, 32)


class Signal(angr.SimProcedure):
    """``signal(signum, handler)``: the previous handler (``SIG_DFL``, 0, before any was set);
    ``handler`` becomes the action with an empty mask and ``SA_RESTART``, as glibc's ``signal``
    does; ``SIG_ERR`` (-1) with ``EINVAL`` for a number that is not a signal."""

    def run(self, signum, handler):  # pylint: disable=arguments-differ
        k = single_value(self.state, signum[31:0])
        if k is None:
            record(self.state, "signal")
            return claripy.BVS("signal_previous", self.state.arch.bits)
        if not _valid(k, True):
            ret_errno(self.state, EINVAL)
            return claripy.BVV(-1, self.state.arch.bits)
        previous = handler_of(self.state, current_action(self.state, k))
        rest = claripy.BVV(0, 128 * 8)
        flags = memory_order(self.state, claripy.BVV(SA_RESTART, 32))
        set_action(self.state, k, claripy.Concat(memory_order(self.state, handler), rest, flags,
                                                  claripy.BVV(0, 32 + 64)))
        return previous


MASK = "angr_ram_signal_mask"      # state.globals: the blocked signals (64 bits, as the kernel keeps them)
SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK = 0, 1, 2
MASK_BYTES = 8                      # what glibc passes the kernel of a 128-byte sigset_t


class Sigprocmask(angr.SimProcedure):
    """``sigprocmask(how, set, oldset)``: the blocked set, empty at start (a replay's process
    inherits none), kept per path; ``*oldset``'s first 8 bytes get the previous one, as glibc's
    wrapper of the system call writes them. -1 with ``EINVAL`` for an unknown ``how``."""

    def run(self, how, set_, oldset):  # pylint: disable=arguments-differ
        endness = self.state.arch.memory_endness
        mask = self.state.globals.get(MASK, claripy.BVV(0, 64))
        given = not (not set_.symbolic and set_.concrete_value == 0)
        h = single_value(self.state, how[31:0]) if given else SIG_BLOCK
        if h is None:
            record(self.state, type(self).__name__.lower())
            return claripy.BVS("sigprocmask", 32)
        if h not in (SIG_BLOCK, SIG_UNBLOCK, SIG_SETMASK):
            return self._fail("EINVAL")
        if not (not oldset.symbolic and oldset.concrete_value == 0):
            self.state.memory.store(oldset, mask, endness=endness)
        if given:
            new = self.state.memory.load(set_, MASK_BYTES, endness=endness)
            never = claripy.BVV((1 << (SIGKILL - 1)) | (1 << (SIGSTOP - 1)), 64)
            mask = (mask | new) if h == SIG_BLOCK else (mask & ~new) if h == SIG_UNBLOCK else new
            self.state.globals[MASK] = mask & ~never
        return claripy.BVV(0, 32)

    def _fail(self, name: str):
        return ret_errno(self.state, name)


class PthreadSigmask(Sigprocmask):
    """``pthread_sigmask(how, set, oldset)``: :class:`Sigprocmask` returning the error number."""

    def _fail(self, name: str):
        return claripy.BVV(getattr(self.state.posix, name), 32)


SIGNAL_PROCEDURES = {"sigprocmask": Sigprocmask, "pthread_sigmask": PthreadSigmask, "sigaction": Sigaction, "__sigaction": Sigaction, "signal": Signal,
                     "bsd_signal": Signal, "__sysv_signal": Signal, "sysv_signal": Signal}
