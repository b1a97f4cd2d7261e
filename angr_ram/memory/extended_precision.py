"""x87 80-bit ``long double`` loads and stores on x86-64.

VEX computes x87 arithmetic in 64-bit doubles and moves an 80-bit value between memory and the FPU
stack with two helpers, ``amd64g_dirtyhelper_loadF80le`` (``fldt``) and
``amd64g_dirtyhelper_storeF80le`` (``fstpt``). angr implements them for 32-bit x86 only, so on
x86-64 every ``long double`` in memory ended the path with ``UnsupportedDirtyError`` (Debian's
``numfmt`` and ``seq``, ``printf("%Lf")``, ``strtold``: 0 paths). Here both are given, as VEX's own
``convert_f64le_to_f80le`` and ``convert_f80le_to_f64le`` convert:

* store: a normal double keeps its value (the integer bit made explicit); a subnormal one is
  normalised (it is a normal extended value); zeros, infinities and NaNs keep their sign and kind;
* load: a value within the double's range keeps its value to 52 fraction bits (truncated, as the
  VEX arithmetic itself keeps 53 bits); one above it is an infinity, one below it a subnormal
  double or zero; infinities and NaNs keep their kind.

Every conversion is an expression over the bits (an if-then-else over the exponent's cases), so
a symbolic ``long double`` converts without a solver call. An engine mixin over angr's dirty-call
dispatch (:mod:`angr_ram.core.engines`), acting while angr-ram steps a state.
"""

from __future__ import annotations

import claripy
from angr.engines.vex.heavy.heavy import HeavyVEXMixin

from angr_ram.memory.block_guard import dead_continuation
from angr_ram.memory.privileged import PRIVILEGED_HELPERS, privileged_fault
from angr_ram.memory.strategies.fork import value_forking_enabled

F64_BIAS, F80_BIAS = 1023, 16383


def _top_bit(m, width: int):
    """The index of the highest set bit of ``m`` (not 0), as a ``width``-bit expression."""
    r = claripy.BVV(0, width)
    for k in range(1, m.size()):
        r = claripy.If(m[k] == 1, claripy.BVV(k, width), r)
    return r


def f64_to_f80(bits):
    """The 80 bits of the double whose 64 bits are ``bits``."""
    sign, exp, frac = bits[63], bits[62:52], bits[51:0]
    normal_exp = exp.zero_extend(4) + (F80_BIAS - F64_BIAS)
    normal_mant = claripy.Concat(claripy.BVV(1, 1), frac, claripy.BVV(0, 11))
    # a subnormal double: frac * 2**-1074, its highest bit k the integer bit of the extended value
    k = _top_bit(frac, 15)
    sub_exp = k + (F80_BIAS - 1074)
    sub_mant = frac.zero_extend(12) << (claripy.BVV(63, 64) - k.zero_extend(49))
    nan_mant = claripy.If(frac[51] == 1, claripy.BVV(0xFFFF_FFFF_FFFF_FFFF, 64), claripy.BVV(0xBFFF_FFFF_FFFF_FFFF, 64))
    special_mant = claripy.If(frac == 0, claripy.BVV(1 << 63, 64), nan_mant)
    zero = exp == 0
    e = claripy.If(zero, claripy.If(frac == 0, claripy.BVV(0, 15), sub_exp),
                   claripy.If(exp == 0x7FF, claripy.BVV(0x7FFF, 15), normal_exp))
    m = claripy.If(zero, claripy.If(frac == 0, claripy.BVV(0, 64), sub_mant),
                   claripy.If(exp == 0x7FF, special_mant, normal_mant))
    return claripy.Concat(sign, e, m)


def f80_to_f64(tbyte):
    """The 64 bits of the double nearest below the extended value ``tbyte`` (80 bits) in size."""
    sign, exp, mant = tbyte[79], tbyte[78:64], tbyte[63:0]
    unbiased = exp.zero_extend(1) - F80_BIAS            # 16 bits, signed
    normal = claripy.Concat((unbiased[10:0] + F64_BIAS)[10:0], mant[62:11])
    # below the normal range: 2**unbiased * 1.f as a subnormal double, shifted right (0 below 2**-1075)
    shift = (claripy.BVV(-1022, 16) - unbiased).zero_extend(48) + 11
    subnormal = claripy.Concat(claripy.BVV(0, 11), claripy.LShR(mant, shift)[51:0])
    inf = claripy.BVV(0x7FF << 52, 63)
    nan = claripy.If(mant[62] == 1, claripy.BVV(0x7FFF_FFFF_FFFF_FFFF, 63), claripy.BVV(0x7FF7_FFFF_FFFF_FFFF, 63))
    body = claripy.If(exp == 0, claripy.BVV(0, 63),
                      claripy.If(exp == 0x7FFF, claripy.If(mant[62:0] == 0, inf, nan),
                                 claripy.If(claripy.SGT(unbiased, 1023), inf,
                                            claripy.If(claripy.SGE(unbiased, -1022), normal,
                                                       claripy.If(claripy.SGE(unbiased, -1086), subnormal,
                                                                  claripy.BVV(0, 63))))))
    return claripy.Concat(sign, body)


def load_f80(state, addr):
    """``amd64g_dirtyhelper_loadF80le(addr)``: the double of the 10 bytes at ``addr``."""
    return f80_to_f64(state.memory.load(addr, 10, endness="Iend_LE")), []


def store_f80(state, addr, bits):
    """``amd64g_dirtyhelper_storeF80le(addr, f64)``: the double's 10 bytes at ``addr``."""
    state.memory.store(addr, f64_to_f80(bits), endness="Iend_LE")
    return None, []


HELPERS = {"amd64g_dirtyhelper_loadF80le": load_f80, "amd64g_dirtyhelper_storeF80le": store_f80}


class ExtendedPrecisionMixin(HeavyVEXMixin):
    """angr's dirty-call dispatch, with the x86-64 80-bit helpers angr lacks; I/O port
    instructions fault as natively (:mod:`angr_ram.memory.privileged`)."""

    def _perform_vex_stmt_Dirty_call(self, func_name, ty, args, func=None):
        if value_forking_enabled():
            if func is None and func_name in HELPERS:
                func = HELPERS[func_name]
            if func_name in PRIVILEGED_HELPERS and not dead_continuation(self.state):
                raise privileged_fault(self.state, func_name)
        return super()._perform_vex_stmt_Dirty_call(func_name, ty, args, func)
