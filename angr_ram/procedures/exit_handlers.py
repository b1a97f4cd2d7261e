"""Exit handlers: ``atexit``, ``__cxa_atexit`` and ``on_exit`` register, ``exit`` runs them.

C11 7.22.4.4: ``exit`` calls the functions registered by ``atexit`` in the reverse order of their
registration (each as many times as registered), then ends the process; returning from ``main``
is ``exit`` of its value. ``_exit``, ``abort`` and a fatal signal run none. ``quick_exit`` (7.22.4.7)
runs, the same way, only those ``at_quick_exit`` registered. glibc's ``on_exit``
handlers take the exit status and their argument and share the one list; ``__cxa_atexit`` (what
``atexit`` calls: the program links glibc's small ``atexit`` wrapper in) gives its handler its
argument.

angr's ``__cxa_atexit`` and ``atexit`` are stubs, and angr's ``exit`` ends the path at once: a
program that prints from a handler (Debian's ``factor`` writes its whole output from
``atexit(lbuf_flush)``; ``factor 12`` printed nothing) lost that output and whatever the handler
decided (a status through ``_exit`` in the handler).

The handlers a path registered are kernel-free process state kept in the state's globals (an
immutable tuple, so forks share it until one registers); :class:`RunsExitHandlers` is the part of
every procedure that exits as ``exit`` does (``exit``, the return from ``main``, glibc's
``error``, ``<err.h>``'s ``err``): it pops the newest handler and calls it through angr's
continuations until none is left, then ends the path with the status. A handler that calls
``exit`` again finds the rest of the list, as in glibc.
"""

from __future__ import annotations

import angr
import claripy

_HANDLERS = "angr_ram_exit_handlers"    # globals key: tuple of (function, argument, takes the status)
_QUICK = "angr_ram_quick_exit_handlers"  # at_quick_exit's, the same way
HANDLER = "void handler(void *arg)"
STATUS_HANDLER = "void handler(int status, void *arg)"


def exit_handlers(state, key: str = _HANDLERS) -> tuple:
    """The handlers ``state``'s path registered and ``exit`` (``quick_exit``: ``key`` ``_QUICK``)
    has not yet run, oldest first."""
    return state.globals.get(key, ()) if state.has_plugin("globals") else ()


def exit_handlers_key(state) -> tuple:
    """What two states must share to be merged: the same handlers."""
    return tuple(tuple((f.hash(), a.hash(), s) for f, a, s in exit_handlers(state, k))
                 for k in (_HANDLERS, _QUICK))


def _register(state, function, argument, takes_status: bool, key: str = _HANDLERS) -> None:
    state.globals[key] = (*exit_handlers(state, key), (function, argument, takes_status))


class CxaAtexit(angr.SimProcedure):
    """``__cxa_atexit(function, argument, dso)``: 0."""

    def run(self, function, argument, dso):  # pylint: disable=arguments-differ,unused-argument
        _register(self.state, function, argument, False)
        return claripy.BVV(0, 32)


class Atexit(angr.SimProcedure):
    """``atexit(function)``: 0."""

    def run(self, function):  # pylint: disable=arguments-differ
        _register(self.state, function, claripy.BVV(0, 64), False)
        return claripy.BVV(0, 32)


class OnExit(angr.SimProcedure):
    """glibc's ``on_exit(function, argument)``: 0; the handler gets the status and the argument."""

    def run(self, function, argument):  # pylint: disable=arguments-differ
        _register(self.state, function, argument, True)
        return claripy.BVV(0, 32)


class AtQuickExit(angr.SimProcedure):
    """``at_quick_exit(function)``: 0."""

    def run(self, function):  # pylint: disable=arguments-differ
        _register(self.state, function, claripy.BVV(0, 64), False, _QUICK)
        return claripy.BVV(0, 32)


class CxaAtQuickExit(angr.SimProcedure):
    """``__cxa_at_quick_exit(function, dso)`` (what ``at_quick_exit`` calls): 0."""

    def run(self, function, dso):  # pylint: disable=arguments-differ,unused-argument
        _register(self.state, function, claripy.BVV(0, 64), False, _QUICK)
        return claripy.BVV(0, 32)


class RunsExitHandlers(angr.SimProcedure):
    """A procedure that ends the process as ``exit`` does: :meth:`exit_after_handlers`."""

    local_vars = ("exit_status",)
    exit_status = None      # saved across every continuation of the procedure, also those before the exit
    handlers = _HANDLERS    # which list it runs

    def exit_after_handlers(self, status) -> None:
        """Run the registered handlers, newest first, then end the path with ``status``."""
        self.exit_status = status
        self._next_handler()

    def _next_handler(self) -> None:
        pending = exit_handlers(self.state, self.handlers)
        if not pending:
            self.exit(self.exit_status)
            return
        function, argument, takes_status = pending[-1]
        self.state.globals[self.handlers] = pending[:-1]
        if takes_status:
            status = self.exit_status
            status = status[31:0] if status.size() > 32 else status
            self.call(function, [status, argument], "after_exit_handler", prototype=STATUS_HANDLER)
        else:
            self.call(function, [argument], "after_exit_handler", prototype=HANDLER)

    def after_exit_handler(self, *args, **kwargs) -> None:  # pylint: disable=unused-argument
        self._next_handler()


class Exit(RunsExitHandlers):
    """``exit(status)``."""

    NO_RET = True

    def run(self, status):  # pylint: disable=arguments-differ
        self.exit_after_handlers(status)


class QuickExit(Exit):
    """``quick_exit(status)``: ``at_quick_exit``'s handlers, then the end of the path."""

    handlers = _QUICK


EXIT_HANDLER_PROCEDURES = {"__cxa_atexit": CxaAtexit, "atexit": Atexit, "on_exit": OnExit, "exit": Exit,
                           "at_quick_exit": AtQuickExit, "__cxa_at_quick_exit": CxaAtQuickExit,
                           "quick_exit": QuickExit}
