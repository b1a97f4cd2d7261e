"""BSD's ``<err.h>`` reports: ``err``, ``errx``, ``warn``, ``warnx`` and their ``va_list`` forms.

angr models ``err`` alone, and not as glibc does: it writes the format, unformatted, to *standard
output* (a path's stdout then differed from the native run's). ``errx``, ``warn``, ``warnx`` and
``verr``... are stubs: a stub returns, so a path that called ``errx`` ran on past a call that
never returns, into whatever code the compiler placed after it (at -O2, the next function).
Here each writes glibc's line to standard error: the program's name (the last part of
``argv[0]``, glibc's ``program_invocation_short_name``), ``": "``, the formatted message, and for
``err``/``warn`` (and their ``v`` forms) ``": "`` and the ``strerror`` text of ``errno``; then
``err``/``errx`` exit with their status. A status that may or may not be zero exits with that
expression (``exit`` of a symbolic status is angr's). The ``errno`` text of a path on which
``errno`` may have several values is ``"?"``: standard error is not part of a path's outcome,
and one message is not worth a fork."""

from __future__ import annotations

import os

import claripy
from angr.procedures.stubs.format_parser import FormatParser

from angr_ram.posix.process import error_message
from angr_ram.posix.varargs import VaList
from angr_ram.procedures.exit_handlers import RunsExitHandlers
from angr_ram.procedures.libc import single_value
from angr_ram.procedures.strings import concrete_string

MAX_NAME = 4096         # the longest argv[0] read for the program's name


def program_name(proc) -> bytes:
    """glibc's ``program_invocation_short_name``: ``argv[0]`` after its last ``/`` (the binary's
    file name where ``argv[0]`` is not one concrete string)."""
    state = proc.state
    argv = getattr(state.posix, "argv", None)
    name = None
    if isinstance(argv, claripy.ast.BV) and not argv.symbolic:
        p = state.memory.load(argv, state.arch.bytes, endness=state.arch.memory_endness)
        if not p.symbolic and p.concrete_value != 0:
            name = concrete_string(proc, p, MAX_NAME)
    if name is None:
        name = os.path.basename(proc.project.filename or "").encode()
    return name.rsplit(b"/", 1)[-1]


def errno_text(proc) -> bytes:
    """``strerror(errno)`` on ``proc``'s path, ``"?"`` where ``errno`` is not one value."""
    libc = proc.state.libc
    if libc.errno_location is None:
        return error_message(0)
    n = single_value(proc.state, libc.errno[31:0])
    return b"?" if n is None else error_message(n if n < 1 << 31 else n - (1 << 32))


class _Report(RunsExitHandlers, FormatParser):
    """One report: ``"<name>: "``, the message of ``fmt`` (none when ``fmt`` is NULL), the errno
    text when ``with_errno`` (after ``": "`` when there was a message), ``"\\n"``."""

    def report(self, fmt, args, with_errno: bool) -> None:
        errno = errno_text(self) if with_errno else None     # before formatting (glibc saves it first)
        parts = [claripy.BVV(program_name(self) + b": ")]
        has_message = fmt.symbolic or fmt.concrete_value != 0
        if has_message:
            parts.append(self._parse(fmt).replace(args))
        if errno is not None:
            parts.append(claripy.BVV((b": " if has_message else b"") + errno))
        parts.append(claripy.BVV(b"\n"))
        out = claripy.Concat(*parts)
        fd = self.state.posix.get_fd(2)
        if fd is not None:
            fd.write_data(out, out.size() // 8)

    def leave(self, status) -> None:
        self.exit_after_handlers(status[31:0] if status.size() > 32 else status)


class Warn(_Report):
    def run(self, fmt):  # pylint: disable=arguments-differ
        self.report(fmt, self.va_arg, True)


class Warnx(_Report):
    def run(self, fmt):  # pylint: disable=arguments-differ
        self.report(fmt, self.va_arg, False)


class Vwarn(_Report):
    def run(self, fmt, ap):  # pylint: disable=arguments-differ
        self.report(fmt, VaList(self.state, ap), True)


class Vwarnx(_Report):
    def run(self, fmt, ap):  # pylint: disable=arguments-differ
        self.report(fmt, VaList(self.state, ap), False)


class Err(_Report):
    NO_RET = True

    def run(self, status, fmt):  # pylint: disable=arguments-differ
        self.report(fmt, self.va_arg, True)
        self.leave(status)


class Errx(_Report):
    NO_RET = True

    def run(self, status, fmt):  # pylint: disable=arguments-differ
        self.report(fmt, self.va_arg, False)
        self.leave(status)


class Verr(_Report):
    NO_RET = True

    def run(self, status, fmt, ap):  # pylint: disable=arguments-differ
        self.report(fmt, VaList(self.state, ap), True)
        self.leave(status)


class Verrx(_Report):
    NO_RET = True

    def run(self, status, fmt, ap):  # pylint: disable=arguments-differ
        self.report(fmt, VaList(self.state, ap), False)
        self.leave(status)


ERR_PROCEDURES = {"warn": Warn, "warnx": Warnx, "vwarn": Vwarn, "vwarnx": Vwarnx,
                  "err": Err, "errx": Errx, "verr": Verr, "verrx": Verrx}
