"""``iconv_open``, ``iconv`` and ``iconv_close`` between UTF-8, ASCII and Latin-1, as glibc does.

angr stubs all three (any return value, no effect). gnulib's ``proper_name_utf8`` converts an
author's name from UTF-8 to the locale's charset (ASCII in the C locale angr-ram's runs and replays
use) and, natively, falls back to the name's ASCII spelling when the conversion fails or its
transliteration has a ``?``: under the stubs Debian's ``factor --version`` printed "Written by Paul
Rubin, , and ." where the native program prints "Torbjorn Granlund" and "Niels Moller".

The model converts concrete text (a program's own strings, which is how programs use it): a code
point the target cannot hold is ``EILSEQ`` (-1), or ``?`` with ``//TRANSLIT`` (glibc's C locale
has no closer transliteration for such letters); an invalid or incomplete UTF-8 sequence is
``EILSEQ`` / ``EINVAL``; output that does not fit is ``E2BIG``; ``*inbuf``, ``*inbytesleft``,
``*outbuf`` and ``*outbytesleft`` advance over what was converted. A charset it does not know is
``EINVAL`` from ``iconv_open`` (glibc knows many more: such a path reports its fallback). Text or
pointers that vary on the path are left to a stub's answer, and the path names ``iconv`` among
its stubs.
"""

from __future__ import annotations

import errno

import angr
import claripy

from angr_ram.procedures.libc import set_errno, single_value
from angr_ram.procedures.strings import concrete_string
from angr_ram.procedures.stubs import record

CODES = {"UTF-8": "utf8", "UTF8": "utf8", "ASCII": "ascii", "ANSI_X3.4-1968": "ascii", "US-ASCII": "ascii",
         "646": "ascii", "": "ascii", "ISO-8859-1": "latin1", "ISO8859-1": "latin1", "LATIN1": "latin1",
         "L1": "latin1"}       # "": the locale's charset, ASCII in the C locale
LIMIT = {"ascii": 0x80, "latin1": 0x100, "utf8": 0x110000}
KEY = "ram_iconv"               # state.globals: handle -> (to, from, translit)
HANDLE_BASE = 0x1C0000          # handles are numbers the program only passes back
MAX_TEXT = 1 << 16              # bytes one iconv call converts at most (more: the stub's answer)


def _code(text: bytes):
    name, _, suffix = text.decode("latin-1").upper().partition("//")
    return CODES.get(name), "TRANSLIT" in suffix.split("//")


def _fail(state, code: int, bits: int):
    set_errno(state, code)
    return claripy.BVV(-1 & ((1 << bits) - 1), bits)


class IconvOpen(angr.SimProcedure):
    """``iconv_open(tocode, fromcode)``."""

    def run(self, tocode, fromcode):  # pylint: disable=arguments-differ
        to, fr = concrete_string(self, tocode, 64), concrete_string(self, fromcode, 64)
        if to is None or fr is None:
            record(self.state, "iconv_open")
            return claripy.BVS("iconv_open", self.arch.bits)
        (t, translit), (f, _) = _code(to), _code(fr)
        if t is None or f is None:
            return _fail(self.state, errno.EINVAL, self.arch.bits)
        table = dict(self.state.globals.get(KEY, {}))
        h = max(table, default=HANDLE_BASE) + 16
        table[h] = (t, f, translit)
        self.state.globals[KEY] = table
        return claripy.BVV(h, self.arch.bits)


class IconvClose(angr.SimProcedure):
    """``iconv_close(cd)``."""

    def run(self, cd):  # pylint: disable=arguments-differ
        table = self.state.globals.get(KEY, {})
        h = single_value(self.state, cd)
        if h not in table:
            return _fail(self.state, errno.EBADF, 32)
        self.state.globals[KEY] = {k: v for k, v in table.items() if k != h}
        return claripy.BVV(0, 32)


def _decode(data: bytes, f: str):
    """(code points, bytes each took, error): error is None, EILSEQ or EINVAL (incomplete) at the
    first character that could not be read."""
    out, sizes, i = [], [], 0
    while i < len(data):
        b = data[i]
        if f != "utf8" or b < 0x80:
            if f == "ascii" and b >= 0x80:
                return out, sizes, errno.EILSEQ
            out.append(b)
            sizes.append(1)
            i += 1
            continue
        n = 2 if 0xC2 <= b < 0xE0 else 3 if 0xE0 <= b < 0xF0 else 4 if 0xF0 <= b < 0xF5 else 0
        if n == 0:
            return out, sizes, errno.EILSEQ
        if i + n > len(data):
            tail = data[i + 1:]
            return out, sizes, errno.EINVAL if all(0x80 <= c < 0xC0 for c in tail) else errno.EILSEQ
        try:
            out.append(ord(data[i:i + n].decode("utf-8")))
        except UnicodeDecodeError:
            return out, sizes, errno.EILSEQ
        sizes.append(n)
        i += n
    return out, sizes, None


class Iconv(angr.SimProcedure):
    """``iconv(cd, inbuf, inbytesleft, outbuf, outbytesleft)`` (the module's doc)."""

    def run(self, cd, inbuf, inleft, outbuf, outleft):  # pylint: disable=arguments-differ
        state, bits = self.state, self.arch.bits
        size_t = bits // 8
        spec = state.globals.get(KEY, {}).get(single_value(state, cd))
        if spec is None:
            return _fail(state, errno.EBADF, bits)
        if single_value(state, inbuf) == 0:
            return claripy.BVV(0, bits)         # reset: these charsets have no shift state
        ptrs = [single_value(state, p) for p in (inbuf, inleft, outbuf, outleft)]
        vals = [single_value(state, state.memory.load(p, size_t, endness=self.arch.memory_endness))
                if p else None for p in ptrs]
        src, n, dst, room = vals
        if None in (src, n, dst, room) or n > MAX_TEXT:
            record(state, "iconv")
            return claripy.BVS("iconv", bits)
        if src == 0:
            return claripy.BVV(0, bits)
        raw = single_value(state, state.memory.load(src, n, endness="Iend_BE")) if n else 0
        if raw is None:
            record(state, "iconv")
            return claripy.BVS("iconv", bits)
        t, f, translit = spec
        points, sizes, err = _decode(raw.to_bytes(n, "big"), f)
        out, used, lossy = bytearray(), 0, 0
        for cp, k in zip(points, sizes, strict=False):
            if cp < LIMIT[t]:
                enc = chr(cp).encode("utf-8") if t == "utf8" else bytes([cp])
            elif translit:
                enc, lossy = b"?", lossy + 1
            else:
                err = errno.EILSEQ
                break
            if len(out) + len(enc) > room:
                err = errno.E2BIG
                break
            out += enc
            used += k
        if out:
            state.memory.store(dst, claripy.BVV(bytes(out)))
        for p, v in ((ptrs[0], src + used), (ptrs[1], n - used), (ptrs[2], dst + len(out)), (ptrs[3], room - len(out))):
            state.memory.store(p, claripy.BVV(v, bits), endness=self.arch.memory_endness)
        if err is not None:
            return _fail(state, err, bits)
        return claripy.BVV(lossy, bits)


CHARSET_PROCEDURES = {"iconv_open": IconvOpen, "iconv": Iconv, "iconv_close": IconvClose}
