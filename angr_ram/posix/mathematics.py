"""The C library's mathematics (C11 7.12: ``sqrt``, ``pow``, ``sin``, ``exp``, ``floor``, ...) over
symbolic arguments: each value the arguments can take, computed by this machine's ``libm``.

angr loads no ``libm`` (``auto_load_libs=False``) and stubs its functions: the stub returns an
unconstrained integer in ``rax`` and leaves ``xmm0`` (the result of a ``double`` function) holding
the argument, so ``sqrt(x) == 2.0`` held for ``x == 2``, a path no input takes natively. The
transcendental functions have no exact solver theory (and z3's floating-point theory is slow on
doubles: 22.7 s for one division, :mod:`.float_parsing`), so the arguments are made concrete
instead: their values on the path are asked of the solver (their bits, so a NaN is one value),
each value's result is computed with glibc's own function, which also gives ``errno`` (``EDOM``,
``ERANGE``) as a native run sets it, and the state forks once per result (up to ``MAX_VALUES``
argument values). Arguments computed from a few input bytes are enumerated over those bytes, so
the solver answers a bit-vector question however much floating point computes them.
Arguments with more values: ``fabs`` and ``copysign`` are bit operations and ``sqrt`` is IEEE's
correctly rounded square root (z3's ``fp.sqrt``, ``EDOM`` below zero), so they stay expressions;
any other function ends the path as a ``symbolic-math-argument`` error, never a guess. ``float``
variants (``sqrtf``, ...) take and give ``float``."""

from __future__ import annotations

import ctypes
import struct

import angr
import claripy

from angr_ram.core.errors import CallHint, ForkRequest, MemoryFault
from angr_ram.core.named_classes import module_class
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.procedures.libc import set_errno
from angr_ram.solver.evaluator import dag_nodes

MAX_VALUES = 256                # the most argument values one call forks into
MAX_PIECE_BITS = 64             # the most input bits the arguments' values are enumerated over
MAX_NODES = 4096                # the most expression nodes looked through for them
EDOM = 33
RESULT_HINT = CallHint("angr_ram.math_result")
MORE_VALUES = object()          # _enumerated: the arguments have more than MAX_VALUES values   # a fork's (result, errno), left by the call that forked

ONE_ARGUMENT = ("sqrt", "cbrt", "fabs", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "sin", "cos",
                "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "exp", "exp2",
                "expm1", "log", "log10", "log2", "log1p", "erf", "erfc", "tgamma", "lgamma", "logb")
TWO_ARGUMENTS = ("pow", "atan2", "fmod", "hypot", "fmin", "fmax", "copysign", "fdim", "remainder", "nextafter")

_LIBM = ctypes.CDLL("libm.so.6", use_errno=True)
_SORT = {64: claripy.FSORT_DOUBLE, 32: claripy.FSORT_FLOAT}
_CTYPE = {64: ctypes.c_double, 32: ctypes.c_float}
_PACK = {64: ("<d", "<Q"), 32: ("<f", "<I")}


def host(name: str, bits: int, raws: tuple[int, ...]) -> tuple[int, int]:
    """``(result's bits, errno)`` of glibc's ``name`` (its ``f`` variant for ``bits`` 32) on the
    arguments whose bits are ``raws``."""
    fn = getattr(_LIBM, name if bits == 64 else name + "f")
    fn.restype = _CTYPE[bits]
    fn.argtypes = [_CTYPE[bits]] * len(raws)
    fmt, raw = _PACK[bits]
    args = [struct.unpack(fmt, struct.pack(raw, r))[0] for r in raws]
    ctypes.set_errno(0)
    v = fn(*args)
    return struct.unpack(raw, struct.pack(fmt, v))[0], ctypes.get_errno()


def input_pieces(e, most: int = MAX_NODES) -> list | None:
    """The pieces of input ``e`` is computed from: the extracts of variables it reads and the
    variables it reads whole (None when it has a variable that is not a bit-vector or more than
    ``most`` distinct nodes)."""
    out = {}
    for i, n in enumerate(dag_nodes(e, _below)):
        if i >= most or n.op in ("FPS", "BoolS"):
            return None
        if _piece(n):
            out[n.hash()] = n
    return list(out.values())


def _piece(n) -> bool:
    return n.op == "BVS" or (n.op == "Extract" and n.args[2].op == "BVS")


def _below(n):
    return () if _piece(n) else [a for a in n.args if isinstance(a, claripy.ast.Base) and a.symbolic]


def argument_values(state, key) -> dict:
    """The values of ``key`` (the arguments' bits) on the path, each with its constraint: at most
    ``MAX_VALUES`` + 1 of them. Where the arguments are computed from at most ``MAX_PIECE_BITS``
    bits of input (not addresses), the solver is asked for those bits (a bit-vector question,
    however much floating point computes the arguments from them) and each value of the key is
    computed from them, its constraint over the input; otherwise the key's values are asked."""
    sub = state.ram.substitute if state.has_plugin("ram") else (lambda e: e)
    pieces = input_pieces(key) if sub(key) is key else None
    if pieces and sum(p.size() for p in pieces) <= MAX_PIECE_BITS:
        inputs = claripy.Concat(*pieces) if len(pieces) > 1 else pieces[0]
        found: dict[int, list] = {}
        vecs = state.solver.eval_upto(inputs, MAX_VALUES + 1)
        for vec in vecs if len(vecs) <= MAX_VALUES else ():    # more: ask for the key's own values
            repl, low = {}, inputs.size()
            for p in pieces:
                low -= p.size()
                repl[p.hash()] = claripy.BVV((vec >> low) & ((1 << p.size()) - 1), p.size())
            v = claripy.replace_dict(key, repl)
            if v.symbolic:
                break
            found.setdefault(v.concrete_value, []).append(inputs == vec)
        else:
            if found:
                return {v: claripy.Or(*conds) for v, conds in found.items()}
    return {v: key == v for v in state.solver.eval_upto(key, MAX_VALUES + 1)}


def _exact(name: str, bits: int, args: list):
    """The result as an expression, for the functions that have one (None for the others)."""
    sign = 1 << (bits - 1)
    raw = [a.raw_to_bv() for a in args]
    if name == "fabs":
        return (raw[0] & (sign - 1)).raw_to_fp(), None
    if name == "copysign":
        return ((raw[0] & (sign - 1)) | (raw[1] & sign)).raw_to_fp(), None
    if name == "sqrt":
        x = args[0]
        return claripy.fpSqrt(claripy.fp.RM.RM_NearestTiesEven, x), claripy.fpLT(x, claripy.FPV(0.0, _SORT[bits]))
    return None


class MathFunction(angr.SimProcedure):
    """One function of ``libm`` (see the module doc); the subclasses name it."""

    NAME = "sqrt"
    ARITY = 1
    BITS = 64

    def __init__(self, **kwargs):
        t = "double" if self.BITS == 64 else "float"
        sig = f"{t} f({', '.join([t] * self.ARITY)})"
        super().__init__(prototype=angr.types.parse_signature(sig), **kwargs)

    def run(self, *args):  # pylint: disable=arguments-differ
        state, name, bits = self.state, self.NAME, self.BITS
        args = [a if isinstance(a, claripy.ast.FP) else a.raw_to_fp() for a in args]
        key = claripy.Concat(*[a.raw_to_bv() for a in args]) if len(args) > 1 else args[0].raw_to_bv()
        if not key.symbolic:
            return self._set(self._result(key.concrete_value))
        if name in ("fabs", "copysign"):
            return _exact(name, bits, args)[0]
        result = self._enumerated(key)
        if result is not MORE_VALUES:
            return result
        exact = _exact(name, bits, args)
        if exact is None:
            message = f"{self._fname()} of arguments with more than {MAX_VALUES} values"
            if value_forking_enabled():
                raise MemoryFault("symbolic-math-argument", message)
            raise angr.errors.SimProcedureError(message)
        result, domain_error = exact
        set_errno(state, EDOM, domain_error)
        return result

    def _fname(self) -> str:
        return self.NAME if self.BITS == 64 else self.NAME + "f"

    def _enumerated(self, key):
        """The call's result where ``key`` (the arguments' bits) has one result on the path; a fork
        once per result (up to ``MAX_VALUES`` argument values); :data:`MORE_VALUES` with more."""
        call = CallHint.identity(self.state, key)
        known = RESULT_HINT.take(self.state, call)          # a fork of this call: its result is known
        if known is not None:
            return self._set(known)
        values = argument_values(self.state, key)
        if len(values) > MAX_VALUES:
            return MORE_VALUES
        results: dict[tuple, list] = {}     # arguments giving one result: one path
        for v, cond in values.items():
            results.setdefault(self._result(v), []).append(cond)
        if len(results) == 1:
            return self._set(next(iter(results)))
        if not value_forking_enabled():
            raise angr.errors.SimProcedureError(f"{self._fname()} of arguments with several values outside a forking step")
        raise ForkRequest([RESULT_HINT.target(claripy.Or(*conds), call, r) for r, conds in results.items()],
                          f"{self._fname()} arguments")

    def _result(self, key: int) -> tuple[int, int]:
        """``(result's bits, errno)`` for the arguments whose bits are ``key``."""
        bits = self.BITS
        raws = tuple((key >> (bits * (self.ARITY - 1 - i))) & ((1 << bits) - 1) for i in range(self.ARITY))
        return host(self.NAME, bits, raws)

    def _set(self, result: tuple[int, int]):
        raw, err = result
        if err:
            set_errno(self.state, err)
        return claripy.BVV(raw, self.BITS).raw_to_fp()


# functions with integer arguments or results, or results stored through pointers: name ->
# (argument kinds, kinds stored through the pointers after them, result kind); "f" a double (a
# float for the f variant), "i" an int, "l" a long, "v" no result
MIXED = {"frexp": ("f", "i", "f"), "modf": ("f", "f", "f"), "ldexp": ("fi", "", "f"), "scalbn": ("fi", "", "f"),
         "sincos": ("f", "ff", "v"), "ilogb": ("f", "", "i"), "lround": ("f", "", "l"), "lrint": ("f", "", "l"),
         "remquo": ("ff", "i", "f")}
_C_NAME = {"f": None, "i": "int", "l": "long", "v": "void"}
_WIDTH = {"i": 32, "l": 64}


class MixedMathFunction(MathFunction):
    """A ``libm`` function of :data:`MIXED`: the same enumeration of its arguments' values, each
    computed by glibc's function, which also gives what it stores through its pointers."""

    KINDS = ("f", "i", "f")

    def __init__(self, **kwargs):  # pylint: disable=super-init-not-called
        t = "double" if self.BITS == 64 else "float"
        ins, outs, ret = self.KINDS
        params = [t if k == "f" else "int" for k in ins] + [(t if k == "f" else "int") + " *" for k in outs]
        sig = f"{_C_NAME[ret] or t} f({', '.join(params)})"
        angr.SimProcedure.__init__(self, prototype=angr.types.parse_signature(sig), **kwargs)

    def run(self, *args):  # pylint: disable=arguments-differ
        ins, outs, _ = self.KINDS
        self._pointers = args[len(ins):]
        parts = [(a if isinstance(a, claripy.ast.FP) else a.raw_to_fp()).raw_to_bv() if k == "f" else a[31:0]
                 for a, k in zip(args, ins, strict=False)]
        key = claripy.Concat(*parts) if len(parts) > 1 else parts[0]
        if not key.symbolic:
            return self._set(self._result(key.concrete_value))
        result = self._enumerated(key)
        if result is MORE_VALUES:
            raise MemoryFault("symbolic-math-argument", f"{self._fname()} of arguments with more than {MAX_VALUES} values")
        return result

    def _result(self, key: int) -> tuple:
        """``(result's bits, errno, the stored values' bits)`` for the arguments whose bits are ``key``."""
        ins, outs, ret = self.KINDS
        widths = [self.BITS if k == "f" else 32 for k in ins]
        fmt, raw = _PACK[self.BITS]
        args, low = [], sum(widths)
        for k, w in zip(ins, widths, strict=True):
            low -= w
            bits = (key >> low) & ((1 << w) - 1)
            args.append(struct.unpack(fmt, struct.pack(raw, bits))[0] if k == "f" else ctypes.c_int(bits).value)
        ctype = {"f": _CTYPE[self.BITS], "i": ctypes.c_int, "l": ctypes.c_long, "v": None}
        fn = getattr(_LIBM, self._fname())
        fn.restype = ctype[ret]
        cells = [ctype[k]() for k in outs]
        fn.argtypes = [ctype[k] for k in ins] + [ctypes.POINTER(ctype[k]) for k in outs]
        ctypes.set_errno(0)
        v = fn(*args, *[ctypes.byref(c) for c in cells])
        err = ctypes.get_errno()
        stored = tuple(_bits(c.value, k, self.BITS) for c, k in zip(cells, outs, strict=True))
        return (None if ret == "v" else _bits(v, ret, self.BITS)), err, stored

    def _set(self, result: tuple):
        value, err, stored = result
        if err:
            set_errno(self.state, err)
        _, outs, ret = self.KINDS
        for ptr, k, bits in zip(self._pointers, outs, stored, strict=True):
            width = self.BITS if k == "f" else 32
            self.state.memory.store(ptr, claripy.BVV(bits, width), endness=self.state.arch.memory_endness)
        if ret == "v":
            return None
        if ret == "f":
            return claripy.BVV(value, self.BITS).raw_to_fp()
        return claripy.BVV(value, _WIDTH[ret])


def _bits(v, kind: str, bits: int) -> int:
    if kind == "f":
        fmt, raw = _PACK[bits]
        return struct.unpack(raw, struct.pack(fmt, v))[0]
    return v & ((1 << _WIDTH[kind]) - 1)


def _procedures() -> dict:
    out = {}
    for name, kinds in MIXED.items():
        for bits, suffix in ((64, ""), (32, "f")):
            out[name + suffix] = module_class(globals(), f"Math_{name}{suffix}", (MixedMathFunction,),
                                      {"NAME": name, "KINDS": kinds, "BITS": bits})
    for names, arity in ((ONE_ARGUMENT, 1), (TWO_ARGUMENTS, 2)):
        for name in names:
            for bits, suffix in ((64, ""), (32, "f")):
                cls = module_class(globals(), f"Math_{name}{suffix}", (MathFunction,),
                                   {"NAME": name, "ARITY": arity, "BITS": bits})
                out[name + suffix] = cls
    return out


MATH_PROCEDURES = _procedures()
