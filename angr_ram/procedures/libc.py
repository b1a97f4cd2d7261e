"""libc models made complete for angr-ram runs.

* ``__libc_start_main``: the path's exit code is main's return value (stock angr exits with 0).
* ``error``: angr's model passes a file descriptor where ``fprintf`` expects a ``FILE *`` and
  raises a TypeError; angr-ram's writes the message to stderr and exits on a non-zero status.
* ``printf`` and friends: stock angr formats a symbolic integer argument with one arbitrary value
  and adds no constraint, so the printed text can contradict the path. Inside a RelocatableMemory
  step a symbolic integer argument forks the state once per feasible value: a number conversion
  (``%d %i %u %x %X %o``) up to ``FORK_VALUES`` values, else once per length of its text, with
  symbolic digits (:mod:`.integer_text`); ``%c`` prints the symbolic byte; others (``%p``) up to
  ``MAX_FORMAT_VALUES`` values, more ends the path as a ``symbolic-format-argument`` error path.
"""

from __future__ import annotations

import angr
import claripy
from angr.procedures.stubs import format_parser
from angr.procedures.stubs.UserHook import UserHook

from angr_ram.core.errors import ForkRequest, MemoryFault, Target
from angr_ram.core.patches import PatchSet
from angr_ram.memory.strategies.fork import forking_enabled, value_forking_enabled
from angr_ram.procedures.byte_scan import until_nul
from angr_ram.procedures.exit_handlers import RunsExitHandlers
from angr_ram.procedures.float_text import FLOAT_CONVERSIONS, double_text
from angr_ram.procedures.format_specs import RamSpec, deciding_targets, match_spec
from angr_ram.procedures.integer_text import (
    base_of,
    class_on_path,
    compose,
    concat,
    fixed_digits,
    layout,
    length_classes,
    symbolic_text,
    zero_differs,
)

MAX_FORMAT_VALUES = 256
# a number conversion forks once per value up to this many values, else once per length of its
# text (symbolic digits): counting 257 values of a CRC took 25 s of z3
FORK_VALUES = 16
# %.Ns reads up to this many bytes one at a time looking for the NUL (a larger precision: to the NUL)
MAX_PRECISION_READ = 1 << 16


def single_value(state, v) -> int | None:
    """The one value ``v`` has on ``state``'s path (the solver substitutes the address
    constraints), or None if it has several: what a SimProcedure needs of a length, key or name.
    A Python int (a SimFile's position after a write to a concrete offset) is its own value."""
    if isinstance(v, int):
        return v
    if not v.symbolic:
        return v.concrete_value
    vals = state.solver.eval_upto(v, 2)
    return vals[0] if len(vals) == 1 else None


def set_errno(state, code: int, cond=True) -> None:
    """Set ``errno`` to ``code`` where ``cond`` holds (a claripy Bool: an if-then-else over the old
    value when symbolic); nothing while the program has no ``errno`` location yet."""
    libc = state.libc
    if libc.errno_location is None:
        return
    if isinstance(cond, bool) or not cond.symbolic:
        if cond is True or (not isinstance(cond, bool) and cond.is_true()):
            libc.errno = code
        return
    errno = libc.errno
    libc.errno = claripy.If(cond, claripy.BVV(code, errno.size()), errno)


def ret_errno(state, val):
    """angr's ``state.libc.ret_errno`` on any state: -1 with ``errno`` set to ``val`` (a name such as
    ``"EINVAL"``, or its number), or ``-val`` for a system call. A state without libc's set-up (a
    ``blank_state`` or ``call_state``) has no ``errno`` location: errno is then left alone, where
    angr's raised ``ValueError`` out of the procedure."""
    ival = val if isinstance(val, int) else getattr(state.posix, val)
    proc = state.scratch.sim_procedure
    if proc is not None and proc.is_syscall:
        return -ival
    set_errno(state, ival)
    return -1


class RamLibcStartMain(RunsExitHandlers, angr.SIM_PROCEDURES["glibc"]["__libc_start_main"]):
    """__libc_start_main whose exit code is main's return value (stock angr always exits 0), after
    the exit handlers (:mod:`.exit_handlers`)."""

    local_vars = (*angr.SIM_PROCEDURES["glibc"]["__libc_start_main"].local_vars, *RunsExitHandlers.local_vars)

    def after_main(self, main, argc, argv, init, fini, exit_addr=0):  # pylint: disable=arguments-differ
        self.exit_after_handlers(self.state.regs.eax.zero_extend(32))


class RamError(RunsExitHandlers, angr.SIM_PROCEDURES["libc"]["error"], format_parser.FormatParser):
    """glibc's ``error(status, errnum, format, ...)``: "<message>\\n" on stderr, then ``exit(status)``
    when the status is non-zero (a symbolic status forks on being zero inside an angr-ram step)."""

    def run(self, status, errnum, fmt):  # pylint: disable=arguments-differ,unused-argument
        text = self._parse(fmt).replace(self.va_arg)
        self._report(status, claripy.Concat(text, claripy.BVV(b"\n")))

    def _report(self, status, out):
        self.state.posix.get_fd(2).write_data(out, out.size() // 8)
        status = status[31:0] if status.size() > 32 else status
        if status.concrete:
            if status.concrete_value != 0:
                self.exit_after_handlers(status)
            return
        if self.state.solver.satisfiable(extra_constraints=[status != 0]):
            if not self.state.solver.satisfiable(extra_constraints=[status == 0]):
                self.exit_after_handlers(status)
            elif value_forking_enabled():
                raise ForkRequest([Target(status == 0, "value"), Target(status != 0, "value")], "error status")
            else:   # reported (the path goes to the errored stash), never silently cut to one case
                raise angr.errors.SimProcedureError("error() with a status that may or may not be zero")


class RamErrorAtLine(RamError):
    """glibc's ``error_at_line(status, errnum, file, line, format, ...)``: "<file>:<line>: <message>\\n"
    on stderr, then ``exit(status)`` when the status is non-zero (m4's "end of file in string")."""

    def run(self, status, errnum, fname, line, fmt):  # pylint: disable=arguments-differ,unused-argument
        text = self._parse(fmt).replace(self.va_arg)
        name = self._get_str(fname)
        n = single_value(self.state, line[31:0])
        head = claripy.BVV(name + (b":%d: " % n if n is not None else b": "))
        self._report(status, claripy.Concat(head, text, claripy.BVV(b"\n")))

    def _get_str(self, ptr) -> bytes:
        if not ptr.symbolic and ptr.concrete_value == 0:
            return b""
        n = single_value(self.state, self._sim_strlen(ptr))
        if n is None:
            return b"?"
        return self.state.solver.eval(self.state.memory.load(ptr, n), cast_to=bytes) if n else b""


ERROR_PROCEDURES = {"error": RamError, "error_at_line": RamErrorAtLine}


def install_error_fix(project) -> None:
    """Hook glibc's ``error`` and ``error_at_line`` of ``project`` with :class:`RamError` and
    :class:`RamErrorAtLine` (angr's ``error`` raises a TypeError)."""
    for name, cls in ERROR_PROCEDURES.items():
        if project.loader.find_symbol(name) is not None:
            project.hook_symbol(name, cls(display_name=name), replace=True)


# while a technique that forks on a procedure's symbolic value steps a state
FORMAT = PatchSet("format-values", value_forking_enabled)


@FORMAT.patch(format_parser.FormatString, "replace")
def complete_format_replace(stock_replace, self, va_arg):  # pylint: disable=unused-argument
    """FormatString.replace that forks on symbolic integer arguments (while angr-ram steps a state,
    or QuantifiedMerging alone does) instead of picking one value: once per value up to
    ``MAX_FORMAT_VALUES`` values, else (``%d %i %u %x %X %o``) once per length of the text, whose
    digits are then expressions of the value (:mod:`.integer_text`)."""
    return _replace_fixed(self, va_arg)


def signed_conversion(comp) -> bool:
    """Whether conversion ``comp`` is signed (``%d``, ``%ld``, ...). angr's ``FormatSpecifier.signed``
    is the argument's size in bits, true for every conversion: ``%u`` of 0xf72046f9 printed
    ``-148879623``."""
    return bool(getattr(comp.ty, "signed", False))


def _fault(message: str):
    if forking_enabled():
        return MemoryFault("symbolic-format-argument", message)
    return angr.errors.SimProcedureError(message)


def _integer(fmt, comp, raw):
    """The text of integer conversion ``comp`` of the argument ``raw``."""
    state = fmt.parser.state
    bits = comp.size * 8
    v = raw[bits - 1:0] if isinstance(raw, claripy.ast.BV) and raw.size() > bits else raw
    if isinstance(v, claripy.ast.BV) and v.symbolic:
        sub = state.ram.substitute(v) if state.has_plugin("ram") else v
        if sub.symbolic and comp.string[-1:] == b"c":     # the byte itself, with its padding
            return _padded(comp, sub[7:0], 1)
        base = base_of(comp)
        fixed = fixed_digits(comp, sub, signed_conversion(comp)) if sub.symbolic else None
        if fixed is not None:
            return fixed
        if sub.symbolic and base is not None and class_on_path(state, sub, signed_conversion(comp), base):
            return _symbolic_integer(fmt, comp, sub)     # a fork of this conversion's lengths
        if sub.symbolic:
            limit = FORK_VALUES if base_of(comp) is not None else MAX_FORMAT_VALUES
            vals = state.solver.eval_upto(sub, limit + 1)
            if len(vals) > limit:
                return _symbolic_integer(fmt, comp, sub)
            if len(vals) > 1:     # a value fork: RelocatableMemory's step or QuantifiedMerging's
                raise ForkRequest([Target(v == x, "value") for x in sorted(vals)], "printf argument")
    c = int(state.solver.eval(v)) & ((1 << bits) - 1)
    if signed_conversion(comp) and c & (1 << (bits - 1)):
        c -= 1 << bits
    return _int_text(comp, c)


def _symbolic_integer(fmt, comp, v):
    state = fmt.parser.state
    base = base_of(comp)
    if base is None:
        raise _fault(f"printf argument has more than {MAX_FORMAT_VALUES} values")
    classes = length_classes(state, v, signed_conversion(comp), base)
    if len(classes) > 1:
        raise ForkRequest([Target(c, "value") for _, c in classes], "printf argument length")
    (negative, ndigits), _ = classes[0]
    zero = False
    if ndigits == 1 and zero_differs(comp):     # 0 has a text of its own (``%#x``, ``%.0d``)
        can_zero = state.solver.satisfiable(extra_constraints=[v == 0])
        if can_zero and state.solver.satisfiable(extra_constraints=[v != 0]):
            raise ForkRequest([Target(v == 0, "value"), Target(v != 0, "value")], "printf argument zero")
        zero = can_zero
    return symbolic_text(comp, v, negative, ndigits, zero)


def _int_text(spec, v: int):
    """glibc's text for integer conversion ``spec`` of the value ``v`` (already sized and signed)."""
    t = spec.string[-1:]          # angr's spec_type is lower-cased: %X would print as %x
    base = base_of(spec)
    if base is not None:
        s = format(abs(v), {10: "d", 16: "x", 8: "o"}[base])
        s = s.upper() if t == b"X" else s
        return compose(spec, v < 0, [s.encode()], len(s), v == 0)
    if t == b"c":
        return _padded(spec, claripy.BVV(v & 0xFF, 8), 1)
    if t == b"p":
        s = (f"0x{v:x}" if v else "(nil)").encode()
        return _padded(spec, claripy.BVV(s), len(s))
    raise angr.errors.SimProcedureError(f"Unimplemented format specifier '{t.decode(errors='replace')}'")


def _padded(spec, text, n: int):
    """``text`` (``n`` bytes) padded to the width of ``spec``: spaces after it with ``-``, else its
    pad character before it."""
    flags, width, _ = layout(spec)
    if not width or width <= n:
        return text
    if b"-" in flags:
        return claripy.Concat(text, claripy.BVV(b" " * (width - n)))
    return claripy.Concat(claripy.BVV(spec.pad_chr.encode("latin-1") * (width - n)), text)


def _replace_fixed(fmt, va_arg):
    """``FormatString.replace`` with glibc's text for every integer conversion (the same as angr's
    for ``%d %i %u %c %s``), and the flags, widths and precisions of :mod:`.format_specs`."""
    out = None
    for comp in fmt.components:
        if isinstance(comp, bytes):
            out = fmt._add_to_string(out, claripy.BVV(comp))
        elif isinstance(comp, claripy.ast.BV):
            out = fmt._add_to_string(out, comp)
        elif not isinstance(comp, RamSpec):       # parsed by angr's own _match_spec
            if comp.spec_type == b"s":
                n = va_arg("size_t") if comp.length_spec == b".*" else None
                out = fmt._add_to_string(out, fmt._get_str_at(va_arg("char*"), max_length=n))
            else:
                out = fmt._add_to_string(out, _integer(fmt, comp, va_arg("void*")))
        else:
            out = fmt._add_to_string(out, _conversion(fmt, comp, va_arg))
    return out


def _conversion(fmt, comp: RamSpec, va_arg):
    """The text of one conversion: a width or precision of ``*`` read from the arguments first (a
    negative width is the ``-`` flag, a negative precision none), ``%s`` cut at its precision
    (:func:`_string_text`) and padded with spaces, an integer as C99 lays it out
    (:func:`.integer_text.compose`)."""
    width, precision, flags = comp.width, comp.precision, comp.flags
    if width == "*":
        width = _star(fmt, va_arg("int"), "width")
        flags, width = (flags + b"-", -width) if width < 0 else (flags, width)
    if precision == "*":
        precision = _star(fmt, va_arg("int"), "precision")
        precision = None if precision < 0 else precision
    spec = RamSpec(comp.string, comp.ty, flags, width, precision)
    if comp.string[-1] in FLOAT_CONVERSIONS:
        if comp.string[-2:-1] == b"L":
            return _float(fmt, spec, long_double_arg(fmt, va_arg), 80)
        return _float(fmt, spec, va_arg("double"))
    if comp.spec_type != b"s":
        return _integer(fmt, spec, va_arg("void*"))
    text = _string_text(fmt, va_arg("char*"), precision)
    return _padded(RamSpec(comp.string, comp.ty, flags.replace(b"0", b""), width, None), text, text.size() // 8)


def long_double_arg(fmt, va_arg):
    """The 80 bits of the next ``long double`` argument. The System V ABI passes one in memory, on
    the stack 16-byte aligned; angr's calling convention puts it in a vector register (a ``double``
    there), so the stack slots are taken here: from angr's argument session for ``printf``, from the
    ``va_list``'s overflow area for ``vprintf`` (:class:`.varargs.VaList`)."""
    own = getattr(va_arg, "long_double", None)
    if own is not None:
        return own()
    proc = getattr(va_arg, "__self__", None)
    session = getattr(proc, "arg_session", None)
    if session is None or isinstance(session, int):
        raise angr.errors.SimProcedureError("printf of a long double whose arguments were given to the model")
    slot = next(session.both_iter)
    if slot.stack_offset % 16 != 8:        # the first stack argument is at rsp + 8 on entry, 16-byte aligned
        slot = next(session.both_iter)
    next(session.both_iter)                # a long double takes 16 bytes
    state = fmt.parser.state
    return state.memory.load(state.regs.rsp + slot.stack_offset, 10, endness=state.arch.memory_endness)


def _float(fmt, spec: RamSpec, raw, size: int = 64):
    """The text of floating-point conversion ``spec`` of the double argument ``raw``
    (:mod:`.float_text`; ``size`` 80: a ``long double``): a symbolic value forks the state once per
    value (up to ``MAX_FORMAT_VALUES``; more is a fault)."""
    state = fmt.parser.state
    v = raw.raw_to_bv() if isinstance(raw, claripy.ast.FP) else raw     # angr's va_arg gives a double as FP
    v = v[size - 1:0] if v.size() > size else v
    if v.symbolic:
        sub = state.ram.substitute(v) if state.has_plugin("ram") else v
        vals = state.solver.eval_upto(sub, MAX_FORMAT_VALUES + 1)
        if len(vals) > MAX_FORMAT_VALUES:
            raise _fault(f"printf floating-point argument has more than {MAX_FORMAT_VALUES} values")
        if len(vals) > 1:
            raise ForkRequest([Target(v == x, "value") for x in sorted(vals)], "printf floating-point argument")
        v = claripy.BVV(vals[0], size)
    text = double_text(spec.string[-1:], spec.flags, spec.width, spec.precision, v.concrete_value, size)
    return claripy.BVV(text)


def _string_text(fmt, ptr, precision: int | None):
    """The bytes ``%s`` prints from ``ptr``: to the NUL (a fork per length, :func:`complete_format_string`),
    or with a precision at most that many, read one at a time up to the NUL: an array without one
    (``printf("%.*s", n, line)``) is not read past its ``precision`` bytes. Symbolic bytes fork the
    state once per feasible length, each fork constrained by the bytes."""
    if precision is None or precision > MAX_PRECISION_READ:
        text = fmt._get_str_at(ptr)
        return text if precision is None or text.size() // 8 <= precision else text.get_bytes(0, precision)
    state = fmt.parser.state
    data = until_nul(state, ptr, precision)
    if not any(b.symbolic for b in data):
        return concat(data)
    return concat(data[:_fork_length(state, data)])


def _fork_length(state, data: list) -> int:
    """The one feasible length of the string whose first bytes are ``data`` (all of them: no NUL
    among them), or a ForkRequest once per feasible length; more than ``MAX_FORMAT_VALUES``: a fault."""
    length = claripy.BVV(len(data), 32)
    for i in range(len(data) - 1, -1, -1):
        length = claripy.If(data[i] == 0, claripy.BVV(i, 32), length)
    vals = state.solver.eval_upto(length, MAX_FORMAT_VALUES + 1)
    if len(vals) > MAX_FORMAT_VALUES:
        raise _fault(f"printf string argument has more than {MAX_FORMAT_VALUES} lengths")
    if len(vals) == 1:
        return vals[0]
    raise ForkRequest([Target(length == v, "value") for v in sorted(vals)], "printf string length")


def _star(fmt, v, what: str) -> int:
    """The value of a ``*`` width or precision (an ``int`` argument): the state forks once per
    value (up to ``MAX_FORMAT_VALUES``; more is a fault)."""
    v = v[31:0] if v.size() > 32 else v
    vals = fmt.parser.state.solver.eval_upto(v, MAX_FORMAT_VALUES + 1)
    if len(vals) > MAX_FORMAT_VALUES:
        raise _fault(f"printf {what} from an argument has more than {MAX_FORMAT_VALUES} values")
    if len(vals) > 1:
        raise ForkRequest([Target(v == x, "value") for x in sorted(vals)], f"printf {what}")
    return vals[0] - (1 << 32) if vals[0] >= 1 << 31 else vals[0]


@FORMAT.patch(format_parser.FormatParser, "_match_spec")
def complete_format_spec(stock_match_spec, self, nugget):
    """printf's conversion specifications with C99's flags, ``*`` widths and precisions
    (:mod:`.format_specs`). scanf's are angr's own: there ``*`` suppresses the assignment, which a
    printf width would turn into a store through an argument that is not there."""
    if isinstance(self, format_parser.ScanfFormatParser):
        return stock_match_spec(self, nugget)
    return match_spec(self, nugget)


@FORMAT.patch(format_parser.FormatParser, "extract_components")
def decided_format_bytes(stock_extract, self, fmt):
    """A printf format whose symbolic bytes change how it parses (one that may be ``%``, one inside
    a conversion) forks until each is decided (:func:`.format_specs.deciding_targets`); angr's
    parser then reads the fork's format. scanf's formats are angr's own."""
    if not isinstance(self, format_parser.ScanfFormatParser) and forking_enabled():
        found = deciding_targets(self, fmt)
        if found is not None:
            raise ForkRequest([Target(t, "value") for t in found[0]], found[1])
    return stock_extract(self, fmt)


@FORMAT.patch(format_parser.FormatParser, "_parse")
def complete_format_pointer(stock_parse, self, fmtstr_ptr):
    """A format string whose pointer is symbolic (``sprintf(buf, isprint(c) ? "%c" : "%03o", c)``
    compiled to a conditional move, as Debian's ``od -c`` does): stock angr gives up ("Symbolic
    pointer to (format) string"). The state forks once per value of the pointer, up to
    ``MAX_FORMAT_VALUES`` (a re-executed step finds it one value and parses that string); more
    is an error path that names it."""
    if not self.state.solver.symbolic(fmtstr_ptr):
        return stock_parse(self, fmtstr_ptr)
    state = self.state
    sub = state.ram.substitute(fmtstr_ptr) if state.has_plugin("ram") else fmtstr_ptr
    vals = state.solver.eval_upto(sub, MAX_FORMAT_VALUES + 1)
    if not vals:    # an infeasible path: the technique drops the fault's state as unsatisfiable
        raise _fault("format string pointer has no value on this path")
    if len(vals) > MAX_FORMAT_VALUES:
        raise _fault(f"format string pointer has more than {MAX_FORMAT_VALUES} values")
    if len(vals) > 1:
        raise ForkRequest([Target(sub == x, "value") for x in sorted(vals)], "format string pointer")
    return stock_parse(self, claripy.BVV(vals[0], fmtstr_ptr.size()))


@FORMAT.patch(format_parser.FormatString, "_get_str_at")
def complete_format_string(stock_get_str_at, self, str_addr, max_length=None):
    """``%s`` of a string whose length is symbolic (a merged state's pointer to one of several
    strings, an input buffer): stock angr prints the longest case, so a shorter one came out with
    its NUL and the bytes after it (``acc big\\x00s``). The state forks once per feasible length,
    each fork constrained by the string's own bytes (non-zero before the length, zero at it), which
    a re-executed step reads again (angr's ``strlen`` makes a fresh symbol each time)."""
    if max_length is not None:
        return stock_get_str_at(self, str_addr, max_length=max_length)
    state = self.parser.state
    strlen = self.parser._sim_strlen(str_addr)
    if not strlen.symbolic:
        return stock_get_str_at(self, str_addr)
    vals = state.solver.eval_upto(strlen, MAX_FORMAT_VALUES + 1)
    if len(vals) <= 1:
        return stock_get_str_at(self, str_addr)
    if len(vals) > MAX_FORMAT_VALUES:
        if forking_enabled():
            raise MemoryFault("symbolic-format-argument",
                              f"printf string argument has more than {MAX_FORMAT_VALUES} lengths")
        raise angr.errors.SimProcedureError(f"printf string argument has more than {MAX_FORMAT_VALUES} lengths")
    top = max(vals)
    data = state.memory.load(str_addr, top + 1)
    byte = [claripy.Extract(8 * (top - i) + 7, 8 * (top - i), data) for i in range(top + 1)]
    targets = []
    for v in sorted(vals):
        cons = [byte[i] != 0 for i in range(v)] + [byte[v] == 0]
        targets.append(Target(claripy.And(*cons), "value"))
    raise ForkRequest(targets, "printf string length")


def users_own(proc) -> bool:
    """Whether hook ``proc`` is the user's: a procedure of their own class, a Python function they
    hooked (``project.hook(addr, fn)``, angr's ``UserHook``), or one of angr's procedures they made
    themselves (angr's own hooks come from a SimLibrary, which names itself in ``library_name``, or
    are stubs)."""
    if isinstance(proc, UserHook) or not type(proc).__module__.startswith(("angr.", "angr_ram.")):
        return True
    return (type(proc).__module__.startswith("angr.") and getattr(proc, "library_name", None) is None
            and not getattr(proc, "is_stub", False))
