"""Paths that end in ``SIGABRT``: ``abort()``, a failed ``assert``, and glibc's stack-protector and
fortify checks.

angr's ``abort`` (aliased to ``__assert_fail`` and ``__stack_chk_fail``) ends the path with exit
status 1, where the native process is killed by ``SIGABRT`` (status 134 in a shell) and loses what
stdio still buffered: every test of such a path mismatched natively, and nothing told the user that
an assertion had failed. Here each ends the path as an error path, as KLEE reports them
(``abort.err``, ``assert.err``), whose kind says which check failed and whose test replays as
confirmed when the native run is killed by ``SIGABRT``:

* ``abort``: ``abort()``;
* ``assertion-failure``: ``__assert_fail``, ``__assert_perror_fail``, ``__assert`` (the message is
  glibc's: file, line, function and the assertion's text, where they are concrete);
* ``stack-smashing``: ``__stack_chk_fail`` (the canary check of ``-fstack-protector``);
* ``buffer-overflow-detected``: ``__chk_fail``/``__fortify_fail`` and the fortified functions'
  checks (:mod:`.copies`).

Outside an angr-ram step (angr's own stepping of a state whose project has these hooks) the path
exits with status 134, what a shell reports for ``SIGABRT``."""

from __future__ import annotations

import angr

from angr_ram.core.errors import MemoryFault
from angr_ram.memory.strategies.fork import forking_enabled
from angr_ram.procedures.libc import single_value
from angr_ram.procedures.strings import concrete_string

SIGABRT = 6
ABORT_STATUS = 128 + SIGABRT
MAX_TEXT = 512          # the longest assertion text or file name put in a message


def abort_path(proc, kind: str, message: str):
    """End ``proc``'s path as an error of ``kind`` (one of :data:`angr_ram.core.errors.ABORTING_ERRORS`)."""
    if forking_enabled():
        raise MemoryFault(kind, message)
    proc.exit(ABORT_STATUS)


def _text(proc, p) -> str:
    if not p.symbolic and p.concrete_value == 0:
        return ""
    s = concrete_string(proc, p, MAX_TEXT)
    return "?" if s is None else s.decode("latin-1")


def _line(proc, line) -> str:
    v = single_value(proc.state, line[31:0])
    return "?" if v is None else str(v)


class _Aborting(angr.SimProcedure):
    """A function of no arguments that ends the path as a ``kind`` error with ``message``."""

    NO_RET = True
    kind = message = ""

    def run(self):  # pylint: disable=arguments-differ
        abort_path(self, self.kind, self.message)


def _aborting(name: str, kind: str, message: str, doc: str) -> type:
    return type(name, (_Aborting,), {"kind": kind, "message": message, "__doc__": doc})


Abort = _aborting("Abort", "abort", "abort() called", "``abort()``.")
StackChkFail = _aborting("StackChkFail", "stack-smashing", "*** stack smashing detected ***",
                         "``__stack_chk_fail()``: the stack canary was overwritten.")
ChkFail = _aborting("ChkFail", "buffer-overflow-detected", "*** buffer overflow detected ***",
                    "``__chk_fail()``: a fortified function's size check failed.")


class AssertFail(angr.SimProcedure):
    """``__assert_fail(assertion, file, line, function)``: what a failed ``assert`` calls."""

    NO_RET = True

    def run(self, assertion, file, line, function):  # pylint: disable=arguments-differ
        where = f"{_text(self, file)}:{_line(self, line)}: "
        func = _text(self, function)
        abort_path(self, "assertion-failure",
                   f"{where}{func + ': ' if func else ''}Assertion `{_text(self, assertion)}' failed.")


class AssertPerrorFail(angr.SimProcedure):
    """``__assert_perror_fail(errnum, file, line, function)``: ``assert_perror``'s failure."""

    NO_RET = True

    def run(self, errnum, file, line, function):  # pylint: disable=arguments-differ
        e = single_value(self.state, errnum[31:0])
        abort_path(self, "assertion-failure",
                   f"{_text(self, file)}:{_line(self, line)}: {_text(self, function)}: "
                   f"Unexpected error: {'?' if e is None else e}.")


class BsdAssert(angr.SimProcedure):
    """``__assert(assertion, file, line)``."""

    NO_RET = True

    def run(self, assertion, file, line):  # pylint: disable=arguments-differ
        abort_path(self, "assertion-failure",
                   f"{_text(self, file)}:{_line(self, line)}: Assertion `{_text(self, assertion)}' failed.")


class FortifyFail(angr.SimProcedure):
    """``__fortify_fail(msg)``."""

    NO_RET = True

    def run(self, msg):  # pylint: disable=arguments-differ
        abort_path(self, "buffer-overflow-detected", f"*** {_text(self, msg)} ***")


ABORT_PROCEDURES = {"abort": Abort, "__assert_fail": AssertFail, "__assert_perror_fail": AssertPerrorFail,
                    "__assert": BsdAssert, "__stack_chk_fail": StackChkFail, "__stack_chk_fail_local": StackChkFail,
                    "__chk_fail": ChkFail, "__fortify_fail": FortifyFail}
