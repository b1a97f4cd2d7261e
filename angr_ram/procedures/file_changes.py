"""``rename``, ``mkdir``, ``rmdir``, ``remove``, ``chmod`` and ``fchmod`` over the run's files.

angr stubs them (any return value, nothing changed): a file a program renamed was still under its
old name, a directory it made did not exist for ``stat``, and each call "failed" on some path.
Here they change the run's file system (``state.fs``, and the directories a path made, kept in
``state.globals`` and seen by :func:`angr_ram.procedures.file_status.lookup`):

* ``rename(old, new)`` moves a file (replacing ``new``) or a directory the path made; ``ENOENT``
  when ``old`` is none of them;
* ``mkdir(path, mode)`` makes a directory (``EEXIST`` when the name is taken); ``rmdir(path)``
  removes one the path made (``ENOTEMPTY`` when a file is in it, ``ENOTDIR`` for a file, ``EBUSY``
  for the working directory and its parents, ``ENOENT`` otherwise);
* ``remove(path)`` is ``unlink`` for a file and ``rmdir`` for a directory;
* ``chmod``/``fchmod`` succeed on what exists (modes are not kept: ``stat`` reports the usual ones).

Names looked up are made concrete as ``stat``'s are
(:func:`~angr_ram.procedures.file_status.path_name`); a name a call creates (``rename``'s new name,
``mkdir``'s) that is symbolic forks once per value, up to ``MAX_NEW_NAMES``."""

from __future__ import annotations

import errno

import angr
import claripy

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.procedures.byte_scan import until_nul
from angr_ram.procedures.file_status import MADE_DIRECTORIES, MAX_PATH, MISSING, absolute, lookup, path_name
from angr_ram.procedures.libc import hook_models, set_errno, single_value

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


def install_file_changes(project) -> None:
    """Hook ``rename``, ``mkdir``, ``rmdir``, ``remove``, ``chmod`` and ``fchmod`` of ``project``."""
    hook_models(project, {"rename": Rename, "mkdir": Mkdir, "rmdir": Rmdir, "remove": Remove,
                          "chmod": Chmod, "fchmod": Fchmod})
