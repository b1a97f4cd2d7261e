"""``rename``, ``mkdir``, ``rmdir``, ``remove``, ``chmod`` and ``fchmod`` over the run's files.

angr stubs them (any return value, nothing changed): a file a program renamed was still under its
old name, a directory it made did not exist for ``stat``, and each call "failed" on some path.
Here they change the run's file system (``state.fs``, and the directories a path made, kept in
``state.globals`` and seen by :func:`angr_ram.posix.file_status.lookup`):

* ``rename(old, new)`` moves a file (replacing ``new``) or a directory the path made; ``ENOENT``
  when ``old`` is none of them;
* ``mkdir(path, mode)`` makes a directory (``EEXIST`` when the name is taken); ``rmdir(path)``
  removes one the path made (``ENOTEMPTY`` when a file is in it, ``ENOTDIR`` for a file, ``EBUSY``
  for the working directory and its parents, ``ENOENT`` otherwise);
* ``remove(path)`` is ``unlink`` for a file and ``rmdir`` for a directory;
* ``chmod``/``fchmod`` succeed on what exists (modes are not kept: ``stat`` reports the usual ones);
* ``ftruncate(fd, length)`` sets the size of the run's file open as ``fd`` (bytes past its old end
  read as zeros; ``EINVAL`` for a stream or a negative length): GNU ``tac`` copies a pipe into a
  temporary file and truncates it before each refill, and under angr's stub the copies piled up;
* ``freopen(path, mode, stream)`` opens ``path`` on ``stream``'s own descriptor (glibc keeps the
  number) after closing it; a name that is none of the run's files fails with ``ENOENT`` in a
  reading mode (the stream stays closed, as glibc leaves it); a directory is an angr error for
  the path (glibc opens it and its reads fail with ``EISDIR``, which is not modelled). angr has no
  model: ``uniq FILE`` read its stdin on.

Names looked up are made concrete as ``stat``'s are
(:func:`~angr_ram.posix.file_status.path_name`); a name a call creates (``rename``'s new name,
``mkdir``'s) that is symbolic forks once per value, up to ``MAX_NEW_NAMES``."""

from __future__ import annotations

import errno

import angr
import claripy
from angr.procedures.libc.fopen import mode_to_flag
from angr.storage.file import Flags, SimFile
from cle.backends.externs.simdata.io_file import io_file_data_for_arch

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.posix.file_status import MADE_DIRECTORIES, MAX_PATH, MISSING, absolute, lookup, path_name
from angr_ram.procedures.byte_scan import until_nul
from angr_ram.procedures.libc import set_errno, single_value
from angr_ram.procedures.strings import concrete_string

MAX_NEW_NAMES = 16      # the most values a created name's symbolic bytes may have (one path each)


def _fail(state, code: int):
    set_errno(state, code)
    return claripy.BVV(-1 & 0xFFFFFFFF, 32)


def _made(state) -> frozenset:
    return state.globals.get(MADE_DIRECTORIES, frozenset())


def _rmdir(proc, name: bytes):
    state = proc.state
    full = absolute(state, name)
    found = lookup(state, name)
    if found is not None and found[0] == "file":
        return _fail(state, errno.ENOTDIR)
    if full not in _made(state):
        return _fail(state, errno.EBUSY if found is not None else errno.ENOENT)
    inside = [p for p in getattr(state.fs, "_files", {}) if absolute(state, p).startswith(full + b"/")]
    if inside or any(d.startswith(full + b"/") for d in _made(state)):
        return _fail(state, errno.ENOTEMPTY)
    state.globals[MADE_DIRECTORIES] = _made(state) - {full}
    return claripy.BVV(0, 32)


def _name(proc, ptr):
    """The name of an existing file or directory at ``ptr`` (None: none the run has)."""
    name = path_name(proc, ptr)
    return None if not name or name == MISSING else name


def _new_name(proc, ptr):
    """The name at ``ptr`` that a call creates: a name of symbolic bytes with a few values forks
    once per value (None: an empty name, or one with more than ``MAX_NEW_NAMES`` values)."""
    state = proc.state
    data = until_nul(state, ptr, MAX_PATH)
    if not data:
        return None
    text = claripy.Concat(*data) if len(data) > 1 else data[0]
    if not text.symbolic:
        return text.concrete_value.to_bytes(len(data), "big").split(b"\0")[0] or None
    values = state.solver.eval_upto(text, MAX_NEW_NAMES + 1)
    if len(values) == 1:
        return values[0].to_bytes(len(data), "big").split(b"\0")[0] or None
    if len(values) > MAX_NEW_NAMES or not value_forking_enabled():
        return None
    raise ForkRequest([Target(text == v, "value") for v in values], f"{proc.display_name} new name")


class Rename(angr.SimProcedure):
    """``rename(old, new)``."""

    def run(self, old, new):  # pylint: disable=arguments-differ
        state = self.state
        a, b = _name(self, old), _new_name(self, new)
        if a is None or b is None:
            return _fail(state, errno.ENOENT)
        found = lookup(state, a)
        if found is not None and found[0] == "file":
            simfile = found[1]
            state.fs.delete(a)
            if state.fs.get(b) is not None:
                state.fs.delete(b)
            state.fs.insert(b, simfile)
            return claripy.BVV(0, 32)
        full = absolute(state, a)
        if full in _made(state):
            state.globals[MADE_DIRECTORIES] = (_made(state) - {full}) | {absolute(state, b)}
            return claripy.BVV(0, 32)
        return _fail(state, errno.ENOENT)


class Mkdir(angr.SimProcedure):
    """``mkdir(path, mode)``."""

    def run(self, path, mode):  # pylint: disable=arguments-differ,unused-argument
        state = self.state
        name = _new_name(self, path)
        if name is None:
            return _fail(state, errno.ENOENT)
        if lookup(state, name) is not None:
            return _fail(state, errno.EEXIST)
        state.globals[MADE_DIRECTORIES] = _made(state) | {absolute(state, name)}
        return claripy.BVV(0, 32)


class Rmdir(angr.SimProcedure):
    """``rmdir(path)``."""

    def run(self, path):  # pylint: disable=arguments-differ
        name = _name(self, path)
        return _fail(self.state, errno.ENOENT) if name is None else _rmdir(self, name)


class Remove(angr.SimProcedure):
    """``remove(path)``: ``unlink`` for a file, ``rmdir`` for a directory."""

    def run(self, path):  # pylint: disable=arguments-differ
        name = _name(self, path)
        if name is None:
            return _fail(self.state, errno.ENOENT)
        found = lookup(self.state, name)
        if found is not None and found[0] == "file":
            return self.inline_call(angr.SIM_PROCEDURES["posix"]["unlink"], path).ret_expr
        return _rmdir(self, name)


class Chmod(angr.SimProcedure):
    """``chmod(path, mode)``: 0 when ``path`` exists."""

    def run(self, path, mode):  # pylint: disable=arguments-differ,unused-argument
        name = _name(self, path)
        ok = name is not None and lookup(self.state, name) is not None
        return claripy.BVV(0, 32) if ok else _fail(self.state, errno.ENOENT)


class Fchmod(angr.SimProcedure):
    """``fchmod(fd, mode)``: 0 on an open descriptor."""

    def run(self, fd, mode):  # pylint: disable=arguments-differ,unused-argument
        k = single_value(self.state, fd[31:0])
        ok = k is not None and k in self.state.posix.fd
        return claripy.BVV(0, 32) if ok else _fail(self.state, errno.EBADF)


MAX_GROWTH = 1 << 20     # the most zero bytes ftruncate writes past a file's end


class Ftruncate(angr.SimProcedure):
    """``ftruncate(fd, length)``: see the module doc."""

    def run(self, fd, length):  # pylint: disable=arguments-differ
        state = self.state
        k = single_value(state, fd[31:0])
        simfd = state.posix.get_fd(k) if k is not None else None
        if simfd is None:
            return _fail(state, errno.EBADF)
        n = single_value(state, length)
        if n is None:
            raise angr.errors.SimProcedureError("ftruncate to a symbolic length")
        simfile = getattr(simfd, "file", None)
        if n >= 1 << 63 or not isinstance(simfile, SimFile) or not simfile.has_end:
            return _fail(state, errno.EINVAL)
        old = single_value(state, simfile.size)
        if old is None:
            raise angr.errors.SimProcedureError("ftruncate of a file of symbolic size")
        if n > old:
            if n - old > MAX_GROWTH:
                raise angr.errors.SimProcedureError(f"ftruncate growing a file by more than {MAX_GROWTH} bytes")
            simfile.store(old, claripy.BVV(0, 8 * (n - old)))
        simfile._size = claripy.BVV(n, state.arch.bits)       # pylint: disable=protected-access
        return claripy.BVV(0, 32)


class Freopen(angr.SimProcedure):
    """``freopen(path, mode, stream)``: see the module doc."""

    def run(self, path, mode, stream):  # pylint: disable=arguments-differ
        state = self.state
        where = stream + io_file_data_for_arch(state.arch)["fd"]
        old = single_value(state, state.memory.load(where, 4, endness=state.arch.memory_endness))
        m = concrete_string(self, mode, 16)
        if old is None or m is None:
            raise angr.errors.SimProcedureError("freopen of a stream or mode that is not one value")
        if not path.symbolic and path.concrete_value == 0:
            return stream                       # the same file in another mode
        flags = mode_to_flag(m)
        name = path_name(self, path)
        if name is None:
            raise angr.errors.SimProcedureError("freopen of a name that cannot be read")
        found = lookup(state, name) if name != MISSING else None
        creates = flags & Flags.O_ACCMODE != Flags.O_RDONLY
        if found is None and creates:
            raise angr.errors.SimProcedureError("freopen for writing of a name that is none of the run's files")
        if found is not None and found[0] == "dir":
            raise angr.errors.SimProcedureError("freopen of a directory (reads that fail with EISDIR are not modelled)")
        if old in state.posix.fd:
            state.posix.close(old)
        if found is None:
            set_errno(state, errno.ENOENT)
            return claripy.BVV(0, state.arch.bits)
        new = state.posix.open(name, flags, preferred_fd=old)
        k = single_value(state, new) if not isinstance(new, int) else new
        if k is None or k < 0:
            set_errno(state, errno.ENOENT)
            return claripy.BVV(0, state.arch.bits)
        if k != old:
            state.posix.fd[old] = state.posix.fd.pop(k)
        return stream


FILE_CHANGE_PROCEDURES = {"rename": Rename, "mkdir": Mkdir, "rmdir": Rmdir, "remove": Remove, "chmod": Chmod, "fchmod": Fchmod, "ftruncate": Ftruncate, "freopen": Freopen}
