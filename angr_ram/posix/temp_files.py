"""Temporary files: ``mkstemp`` and its variants, and ``tmpfile``.

angr models none of them: ``mkstemp`` returned an unconstrained descriptor and created nothing,
so a program that copies a pipe into a temporary file before reading it back (GNU ``tac``, ``sort``
on large input, ``sed -i``) wrote to no file and read garbage, and ``fcntl`` of the descriptor was a
stub too. These models do what glibc's ``__gen_tempname`` does, with names the run chooses:

* the template must end (before ``suffixlen`` suffix bytes) in ``XXXXXX``, else -1 with
  ``EINVAL`` and the template unchanged;
* the six ``X`` are replaced by letters that name no file in ``state.fs``, and an empty regular
  file (size 0, with an end: a read past what was written is end of file) is created under that
  name and opened read-write (``O_RDWR | O_CREAT | O_EXCL`` and the caller's flags);
* ``tmpfile()`` is such a file with no name left in ``state.fs`` (glibc unlinks it), opened as a
  ``FILE *`` in mode ``w+``.

A template whose bytes may vary on the path goes to angr's stub and is recorded as one
(:mod:`.stubs`). A test's native run picks other names: a program that prints the name differs
by nature."""

from __future__ import annotations

import itertools
import string

import angr
import claripy
from angr.storage.file import Flags, SimFile
from cle.backends.externs.simdata.io_file import io_file_data_for_arch

from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.strings import concrete_string
from angr_ram.procedures.stubs import record

MAX_TEMPLATE = 4096
O_EXCL = 0o200
PLACEHOLDER = b"XXXXXX"
_LETTERS = string.ascii_letters + string.digits
_TRIES = 1000                     # names tried before EEXIST, as glibc's attempts


def _fresh_name(state, stem: bytes, suffix: bytes) -> bytes | None:
    """``stem`` + six letters + ``suffix`` naming no file in ``state.fs`` (None after ``_TRIES``)."""
    for letters in itertools.islice(itertools.product(_LETTERS, repeat=len(PLACEHOLDER)), _TRIES):
        name = stem + "".join(letters).encode() + suffix
        if state.fs.get(name) is None:
            return name
    return None


def create_temporary(state, name: bytes, flags: int) -> int:
    """An empty regular file ``name`` in ``state.fs``, opened with ``flags`` (read-write,
    created): its descriptor."""
    state.fs.insert(name, SimFile(name, size=0, has_end=True))
    return state.posix.open(name, claripy.BVV(Flags.O_RDWR | Flags.O_CREAT | O_EXCL | flags, 32))


def make_temporary(proc, template, suffixlen, flags, what: str):
    """glibc's ``mkostemps(template, suffixlen, flags)``."""
    state = proc.state
    n = single_value(state, suffixlen[31:0])
    extra = single_value(state, flags[31:0])
    t = concrete_string(proc, template, MAX_TEMPLATE)
    if n is None or extra is None or t is None:
        record(state, what)
        return claripy.BVS(what, 32)
    end = len(t) - n
    if n >= 1 << 31 or end < len(PLACEHOLDER) or t[end - len(PLACEHOLDER):end] != PLACEHOLDER:
        return ret_errno(state, "EINVAL")
    name = _fresh_name(state, t[:end - len(PLACEHOLDER)], t[end:])
    if name is None:
        return ret_errno(state, "EEXIST")
    state.memory.store(template, claripy.BVV(name))
    return claripy.BVV(create_temporary(state, name, extra), 32)


class Mkstemp(angr.SimProcedure):
    """``mkstemp(template)``."""

    def run(self, template):  # pylint: disable=arguments-differ
        return make_temporary(self, template, claripy.BVV(0, 32), claripy.BVV(0, 32), "mkstemp")


class Mkostemp(angr.SimProcedure):
    """``mkostemp(template, flags)``."""

    def run(self, template, flags):  # pylint: disable=arguments-differ
        return make_temporary(self, template, claripy.BVV(0, 32), flags, "mkostemp")


class Mkstemps(angr.SimProcedure):
    """``mkstemps(template, suffixlen)``."""

    def run(self, template, suffixlen):  # pylint: disable=arguments-differ
        return make_temporary(self, template, suffixlen, claripy.BVV(0, 32), "mkstemps")


class Mkostemps(angr.SimProcedure):
    """``mkostemps(template, suffixlen, flags)``."""

    def run(self, template, suffixlen, flags):  # pylint: disable=arguments-differ
        return make_temporary(self, template, suffixlen, flags, "mkostemps")


class Tmpfile(angr.SimProcedure):
    """``tmpfile()``: a ``FILE *`` on an empty read-write file with no name."""

    def run(self):  # pylint: disable=arguments-differ
        state = self.state
        name = _fresh_name(state, b"/tmp/tmpf", b"")
        if name is None:
            return claripy.BVV(0, 64)
        fd = create_temporary(state, name, 0)
        state.fs.delete(name)
        return stream_of(self, fd)


def stream_of(proc, fd: int):
    """A new ``FILE *`` on descriptor ``fd``: the structure angr's ``fopen`` and ``fdopen`` build."""
    state = proc.state
    layout = io_file_data_for_arch(state.arch)
    f = proc.inline_call(angr.SIM_PROCEDURES["libc"]["malloc"], layout["size"]).ret_expr
    state.memory.store(f + layout["fd"], claripy.BVV(fd, 32), endness=state.arch.memory_endness)
    return f


TEMP_FILE_PROCEDURES = {"mkstemp": Mkstemp, "mkostemp": Mkostemp, "mkstemps": Mkstemps, "mkostemps": Mkostemps,
                        "tmpfile": Tmpfile}
