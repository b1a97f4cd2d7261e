"""Floating-point values a program prints or keeps in a ``long double``: printf's ``%e %f %g %a``
(angr: "Unimplemented format specifier", the path ended) checked against glibc's own snprintf, the
x87 80-bit loads and stores VEX leaves to helpers angr lacks on x86-64 (every ``long double`` in
memory ended its path) checked against the hardware's ``long double``, and a program printing
computed values with every conversion, driven as a user drives angr."""

import ctypes
import os
import struct

import claripy
import pytest

from angr_ram.memory.extended_precision import f64_to_f80, f80_to_f64
from angr_ram.procedures.float_text import double_text
from angr_ram.procedures.format_specs import _SPEC

from .conftest import BUILD

GLIBC = ctypes.CDLL(None)
VALUES = [0.0, -0.0, 1.0, -1.5, 0.1, 2.5, 0.5, 1.125, 123456.789, 1e-5, 1e-310, 5e-324, 1e300, 1.7976931348623157e308,
          -2.2250738585072014e-308, 0.000123, 999999.5, 1e16, float("inf"), float("-inf"), float("nan"), -float("nan"),
          3.0 / 7, float.fromhex("0x1.fffffffffffffp0"), float.fromhex("0x1.f8p0")]
SPECS = [b"%#g", b"%#.2g", b"%f", b"%.2f", b"%e", b"%E", b"%g", b"%G", b"%a", b"%A", b"%+08.3f", b"%-10.1e|", b"%#g", b"% .0f",
         b"%#.0e", b"%.3a", b"%.0a", b"%#a", b"%12g", b"%012.4E", b"%.20g", b"%-+9.1f|", b"%.15a", b"%010a", b"%F",
         b"%.0f", b"%5.1G"]


def _bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _glibc(spec: bytes, x: float) -> bytes:
    buf = ctypes.create_string_buffer(512)
    GLIBC.snprintf(buf, 512, spec, ctypes.c_double(x))
    return buf.value


def _ours(spec: bytes, x: float) -> bytes:
    m = _SPEC.match(spec[1:])
    flags, width, precision = m.group(1), m.group(2), m.group(3)
    conv = spec[1 + m.end():1 + m.end() + 1]
    tail = spec[1 + m.end() + 1:]
    return double_text(conv, flags, int(width) if width else None,
                       None if precision is None else int(precision or 0), _bits(x)) + tail


@pytest.mark.parametrize("spec", SPECS)
def test_double_text_is_glibcs(spec):
    """A conversion parsed into flags, width and precision (angr-ram's parser) and formatted
    prints, for every value (zeros with their sign, subnormals, the largest double, ties in
    rounding, infinities, NaNs of both signs), the bytes glibc's snprintf prints for the spec."""
    for x in VALUES:
        assert _ours(spec, x) == _glibc(spec, x), (spec, x)


def test_double_text_refuses_what_is_not_a_float_conversion():
    """Only the floating-point conversions and C's flags reach the C library; a field wider than
    MAX_FIELD is an error for the path, not a giant buffer."""
    from angr.errors import SimProcedureError

    for conv, flags, width in ((b"d", b"", None), (b"f", b"'", None), (b"n", b"", None), (b"f", b"", 1 << 20)):
        with pytest.raises(SimProcedureError):
            double_text(conv, flags, width, None, _bits(1.0))


def _hardware_f80(x: float) -> int:
    """The 80 bits of ``(long double) x`` as this machine's x87 stores them."""
    raw = bytes(ctypes.c_longdouble(x))[:10]
    return int.from_bytes(raw, "little")


def test_extended_stores_and_loads_are_the_hardwares():
    """A double stored as an x87 extended value has the hardware's 80 bits (a subnormal double
    normalised, zeros, infinities keep their sign); loaded back it is the same double. An extended
    value above the double range loads as infinity, one far below it as zero; a symbolic double
    converts to an expression that agrees with the concrete conversion."""
    for x in VALUES:
        if x != x:
            continue        # NaN payloads: kind and sign checked below
        bits = _bits(x)
        f80 = f64_to_f80(claripy.BVV(bits, 64))
        assert f80.concrete_value == _hardware_f80(x), x
        assert f80_to_f64(f80).concrete_value == bits, x
    nan = f64_to_f80(claripy.BVV(_bits(float("nan")), 64)).concrete_value
    assert nan >> 64 == 0x7FFF and nan & (1 << 62)
    big = claripy.BVV((0x7FFE << 64) | (1 << 63), 80)           # 2**16383
    assert f80_to_f64(big).concrete_value == _bits(float("inf"))
    tiny = claripy.BVV((1 << 64) | (1 << 63), 80)               # 2**-16382
    assert f80_to_f64(tiny).concrete_value == 0
    sub = claripy.BVV(((16383 - 1060) << 64) | (1 << 63), 80)    # 2**-1060: a subnormal double
    assert f80_to_f64(sub).concrete_value == _bits(2.0 ** -1060)
    s = claripy.BVS("d", 64)
    expr = f64_to_f80(s)
    for x in (1.5, -0.0, 1e-310, float("inf")):
        assert claripy.Solver().eval(expr, 1, extra_constraints=[s == _bits(x)])[0] == _hardware_f80(x)


@pytest.mark.parametrize("opt", (pytest.param("O0", marks=pytest.mark.slow), "O2"))
def test_a_program_prints_computed_doubles(opt):
    """floats: values computed from three input bytes printed with every floating-point conversion,
    flags, widths and precisions, infinity, NaN, a subnormal and a negative zero, directly and
    through vprintf's va_list; every native outcome, every test replayed (angr: 0 paths, one error)."""
    from .test_scanning import _same_as_native

    r, native = _same_as_native(os.fspath(BUILD / f"floats_{opt}"), b"\x03\x00", 3)
    assert len(native) == 8 and r.stubs == {}
