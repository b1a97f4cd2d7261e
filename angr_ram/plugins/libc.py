"""libc models made complete for angr-ram runs.

* ``__libc_start_main``: the path's exit code is main's return value (stock angr exits with 0).
* ``printf`` and friends: stock angr formats a symbolic integer argument with one arbitrary value
  and adds no constraint, so the printed text can contradict the path. Inside a RelocatableMemory
  step a symbolic integer argument forks the state once per feasible value (at most
  ``MAX_FORMAT_VALUES``; more ends the path as a ``symbolic-format-argument`` error path).
"""

from __future__ import annotations

import angr
from angr.procedures.stubs import format_parser

from ..errors import ForkRequest, MemoryFault, Target
from ..strategies.fork import forking_enabled

MAX_FORMAT_VALUES = 256


class RamLibcStartMain(angr.SIM_PROCEDURES["glibc"]["__libc_start_main"]):
    """__libc_start_main whose exit code is main's return value (stock angr always exits 0)."""

    def after_main(self, main, argc, argv, init, fini, exit_addr=0):  # pylint: disable=arguments-differ
        self.exit(self.state.regs.eax.zero_extend(32))


_stock_replace = format_parser.FormatString.replace


def _complete_replace(self, va_arg):
    """FormatString.replace that forks on symbolic integer arguments instead of picking one value."""
    if not forking_enabled():
        return _stock_replace(self, va_arg)
    state = self.parser.state

    def checked(ty):
        v = va_arg(ty)
        if ty == "void*" and not isinstance(v, int) and v.symbolic:
            sub = state.ram.substitute(v) if state.has_plugin("ram") else v
            if sub.symbolic:
                vals = state.solver.eval_upto(sub, MAX_FORMAT_VALUES + 1)
                if len(vals) > MAX_FORMAT_VALUES:
                    raise MemoryFault("symbolic-format-argument",
                                      f"printf argument has more than {MAX_FORMAT_VALUES} values")
                if len(vals) > 1:
                    raise ForkRequest([Target(v == x, "value") for x in sorted(vals)], "printf argument")
        return v

    return _stock_replace(self, checked)


def install_format_fix() -> None:
    """Make angr's format-string procedures fork on symbolic integers during angr-ram steps."""
    format_parser.FormatString.replace = _complete_replace
