"""``nanosleep``, ``clock_nanosleep``, ``sleep``, ``usleep``: a sleep that completes.

angr stubs ``nanosleep`` (any return value). A program sleeps in a loop that sleeps again while the
call reports ``EINTR`` (gnulib's ``xnanosleep``, used by coreutils' ``sleep``): with the stub every
iteration forked a path that returned -1 and one that returned 0, so the loop forked forever
(``sleep`` with one symbolic argument byte: 900 paths a minute, no end). No signal interrupts a
sleep here (a handler runs only when the program itself raises: :mod:`.signal_delivery`), so a
sleep completes: 0, ``*rem`` untouched; a request whose ``tv_nsec`` is outside 0..999999999 or
whose ``tv_sec`` is negative fails with ``EINVAL`` as the kernel's does. Time does not pass: the
clocks are the environment's (:mod:`.environment`)."""

from __future__ import annotations

import angr
import claripy

from angr_ram.procedures.libc import set_errno

EINVAL = 22
NSEC_PER_SEC = 1_000_000_000


def invalid_request(state, req):
    """The condition that the ``struct timespec`` at ``req`` is one the kernel rejects."""
    endness = state.arch.memory_endness
    sec = state.memory.load(req, 8, endness=endness)
    nsec = state.memory.load(req + 8, 8, endness=endness)
    return claripy.Or(claripy.SLT(sec, 0), claripy.SLT(nsec, 0), claripy.SGE(nsec, NSEC_PER_SEC))


class Nanosleep(angr.SimProcedure):
    """``nanosleep(req, rem)``: 0, or -1 with ``EINVAL`` for an invalid request."""

    def run(self, req, rem):  # pylint: disable=arguments-differ,unused-argument
        bad = invalid_request(self.state, req)
        if not bad.symbolic and bad.is_false():
            return claripy.BVV(0, 32)
        set_errno(self.state, EINVAL, bad)
        return claripy.If(bad, claripy.BVV(-1 & 0xFFFFFFFF, 32), claripy.BVV(0, 32))


class ClockNanosleep(angr.SimProcedure):
    """``clock_nanosleep(clock, flags, req, rem)``: 0, or ``EINVAL`` (returned, not in errno)."""

    def run(self, clock, flags, req, rem):  # pylint: disable=arguments-differ,unused-argument
        bad = invalid_request(self.state, req)
        return claripy.If(bad, claripy.BVV(EINVAL, 32), claripy.BVV(0, 32))


class Sleep(angr.SimProcedure):
    """``sleep(seconds)`` and ``usleep(usec)``: 0 (the whole time slept)."""

    def run(self, amount):  # pylint: disable=arguments-differ,unused-argument
        return claripy.BVV(0, 32)


SLEEP_PROCEDURES = {"nanosleep": Nanosleep, "__nanosleep": Nanosleep, "clock_nanosleep": ClockNanosleep,
                    "sleep": Sleep, "usleep": Sleep}
