"""``stat`` and ``access`` by path, consistent with what ``open`` finds.

angr's ``stat`` gives a file that is not there a symbolic status (any mode, any size) and glibc's
older entry points (``__xstat``, ``__lxstat``, ``__fxstat``, which Debian's GNU make imports) are
stubs. These models answer from the files the run gives the program (``state.fs``, where
``--sym-file`` and templates put them), as angr's ``open`` does:

* a file in ``state.fs``: a regular file (``S_IFREG | 0644``) of its size, owned by the process's
  user, one link, times zero;
* the working directory, ``.``, ``..`` and ``/``: directories (``S_IFDIR | 0755``);
* any other path: -1 with ``ENOENT`` (``open`` fails on it too);
* ``access``/``eaccess``: 0 for what exists, except execute permission on a regular file
  (``EACCES``); -1 with ``ENOENT`` otherwise;
* ``readlink``/``readlinkat``: no file is a link: -1 with ``EINVAL`` for what exists, ``ENOENT``
  otherwise.

A pointer that selects among a few names forks once per name (:func:`path_name`); any other
symbolic path gets angr's model and is recorded as a stub (:mod:`.stubs`). A test's native run
finds the files at their real times and inode numbers: a program that prints those differs by
nature."""

from __future__ import annotations

import os
import posixpath

import angr
import claripy
from angr.storage.file import SimFile, SimFileDescriptorDuplex, SimFileStream, SimPackets

from angr_ram.core.errors import ForkRequest, Target
from angr_ram.memory.pointers import pointer_cases
from angr_ram.memory.strategies.fork import value_forking_enabled
from angr_ram.procedures.byte_scan import Bytes
from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.strings import concrete_string
from angr_ram.procedures.stubs import record

S_IFREG, S_IFDIR, S_IFIFO = 0o100000, 0o040000, 0o010000
FILE_MODE, DIR_MODE, PIPE_MODE = S_IFREG | 0o644, S_IFDIR | 0o755, S_IFIFO | 0o600
STAT_BYTES = 144                    # struct stat on x86-64
X_OK = 1
MAX_PATH = 4096
MADE_DIRECTORIES = "angr_ram_made_dirs"   # state.globals: the absolute names of directories the path made
MAX_SIZES = 16                      # a readlink size of up to this many values forks once per value


def _directories(state) -> set[bytes]:
    cwd = state.fs.cwd.rstrip(b"/") or b"/"
    return {b"/", b".", b"..", b"./", cwd, cwd + b"/"}


MISSING = b"\0"          # path_name's answer for a name that is none of the run's files: no file has it


def path_name(proc, path) -> bytes | None:
    """The concrete name at ``path``. A pointer that selects among a few names (``c ? "a" : "b"``,
    a conditional move at -O2) forks once per name inside an angr-ram step. A name of symbolic
    bytes is one of the names the run knows (its files, directories and ``/proc/self/exe``) or
    none of them (:data:`MISSING`): the path forks once per class that is feasible. None when the
    name cannot be read (a symbolic pointer that is no selection)."""
    p = concrete_string(proc, path, MAX_PATH)
    if p is not None or not value_forking_enabled():
        return p
    cases = pointer_cases(proc.state, path, MAX_PATH)
    if cases is None:
        return None
    if len(cases) > 1:
        raise ForkRequest([Target(cond, "value") for cond, _, _ in cases], f"{proc.display_name} path")
    return _name_class(proc, path, cases[0][2])


def _name_class(proc, path, readable: int) -> bytes:
    state = proc.state
    data = Bytes(state, path, readable)
    classes = []
    for name in sorted(_known_names(state)):
        got = [data[i] for i in range(len(name) + 1)]
        if got[-1] is None:
            continue
        cond = claripy.And(*(b == c for b, c in zip(got, name + b"\0", strict=True)))
        if state.solver.satisfiable(extra_constraints=[cond]):
            classes.append((name, cond))
    rest = claripy.And(*(claripy.Not(c) for _, c in classes)) if classes else claripy.true
    if not classes or state.solver.satisfiable(extra_constraints=[rest]):
        classes.append((MISSING, rest))
    if len(classes) > 1:
        raise ForkRequest([Target(cond, "value") for _, cond in classes], f"{proc.display_name} name")
    return classes[0][0]


def _known_names(state) -> set[bytes]:
    files = {bytes(f) for f in state.fs._files}
    cwd = (state.fs.cwd.rstrip(b"/") or b"") + b"/"
    here = {f[len(cwd):] for f in files if f.startswith(cwd)}           # their names relative to it
    names = files | here | {b"./" + f for f in here} | _directories(state) | {b"/proc/self/exe"}
    return {n for n in names if n and b"\0" not in n}


def absolute(state, name: bytes) -> bytes:
    """``name`` from the working directory, normalized."""
    return posixpath.normpath(posixpath.join(state.fs.cwd, name))


def lookup(state, path: bytes):
    """``("file", simfile)``, ``("dir", None)`` or None: what ``path`` names in the run's files (and
    the directories the path made, :mod:`.file_changes`)."""
    if path in _directories(state) or absolute(state, path) in state.globals.get(MADE_DIRECTORIES, ()):
        return ("dir", None)
    simfile = state.fs.get(path)
    return ("file", simfile) if simfile is not None else None


def store_status(state, buf, kind: str, simfile) -> None:
    """Write a ``struct stat`` for a file or directory at ``buf``."""
    le = state.arch.memory_endness
    state.memory.store(buf, claripy.BVV(0, STAT_BYTES * 8))
    size = simfile.size if kind == "file" else claripy.BVV(0 if kind == "pipe" else 4096, 64)
    size = claripy.BVV(size, 64) if isinstance(size, int) else size.zero_extend(64 - size.size()) if size.size() < 64 else size
    fields = ((16, claripy.BVV(2 if kind == "dir" else 1, 64)),
              (24, claripy.BVV({"file": FILE_MODE, "dir": DIR_MODE, "pipe": PIPE_MODE}[kind], 32)),
              (28, claripy.BVV(state.posix.uid, 32) if isinstance(state.posix.uid, int) else state.posix.uid[31:0]),
              (32, claripy.BVV(state.posix.gid, 32) if isinstance(state.posix.gid, int) else state.posix.gid[31:0]),
              (48, size), (56, claripy.BVV(4096, 64)), (64, ((size + 511) >> 9)))
    for off, v in fields:
        state.memory.store(buf + off, v, endness=le)


class Stat(angr.SimProcedure):
    """``stat(path, buf)`` (``lstat`` too: the run's files have no links)."""

    def run(self, path, buf):  # pylint: disable=arguments-differ
        return stat_path(self, path, buf)


def stat_path(proc, path, buf):
    p = path_name(proc, path)
    if p is None:
        record(proc.state, "stat")
        return proc.inline_call(angr.SIM_PROCEDURES["linux_kernel"]["stat"], path, buf).ret_expr
    found = lookup(proc.state, p)
    if found is None:
        return ret_errno(proc.state, "ENOENT")
    store_status(proc.state, buf, *found)
    return claripy.BVV(0, 32)


class Xstat(angr.SimProcedure):
    """``__xstat(version, path, buf)``, glibc's old entry point of ``stat`` (and ``__lxstat``)."""

    def run(self, version, path, buf):  # pylint: disable=arguments-differ,unused-argument
        return stat_path(self, path, buf)


def stat_descriptor(proc, fd, buf):
    """``fstat(fd, buf)``: a descriptor open on one of the run's files reports it as ``stat`` does
    (angr's ``fstat`` gave any size); ``EBADF`` for one not open; a stream (stdin, stdout and
    stderr as angr makes them) is a pipe (``S_IFIFO | 0600``, size 0), as a test's native run sees
    it: angr's status had any mode, and ``tail -c 2`` took a path for a regular stdin whose
    ``lseek`` failed, which no replay reaches. A symbolic ``fd`` keeps angr's model."""
    state = proc.state
    n = single_value(state, fd[31:0])
    if n is not None:
        n = n - (1 << 32) if n >= 1 << 31 else n
        if n not in state.posix.fd:
            return ret_errno(state, "EBADF")
        simfile = getattr(state.posix.fd[n], "file", None)
        standard = (state.posix.stdin, state.posix.stdout, state.posix.stderr)
        if isinstance(simfile, SimFile) and not any(simfile is f for f in standard):
            store_status(state, buf, "file", simfile)
            return claripy.BVV(0, 32)
        if isinstance(state.posix.fd[n], SimFileDescriptorDuplex) or isinstance(simfile, (SimFileStream, SimPackets)):
            store_status(state, buf, "pipe", None)
            return claripy.BVV(0, 32)
    return proc.inline_call(angr.SIM_PROCEDURES["linux_kernel"]["fstat"], fd, buf).ret_expr


class Fstat(angr.SimProcedure):
    """``fstat(fd, buf)`` (:func:`stat_descriptor`)."""

    def run(self, fd, buf):  # pylint: disable=arguments-differ
        return stat_descriptor(self, fd, buf)


class Fxstat(angr.SimProcedure):
    """``__fxstat(version, fd, buf)``: ``fstat(fd, buf)``."""

    def run(self, version, fd, buf):  # pylint: disable=arguments-differ,unused-argument
        return stat_descriptor(self, fd, buf)


class Access(angr.SimProcedure):
    """``access(path, mode)`` and ``eaccess``."""

    def run(self, path, mode):  # pylint: disable=arguments-differ
        p = path_name(self, path)
        if p is None:
            record(self.state, "access")
            return claripy.BVS("access", 32)
        found = lookup(self.state, p)
        if found is None:
            return ret_errno(self.state, "ENOENT")
        if found[0] == "file":
            wants_exec = (mode[31:0] & X_OK) != 0
            return claripy.If(wants_exec, claripy.BVV(-1, 32), claripy.BVV(0, 32)) if wants_exec.symbolic \
                else (ret_errno(self.state, "EACCES") if wants_exec.is_true() else claripy.BVV(0, 32))
        return claripy.BVV(0, 32)


class Readlink(angr.SimProcedure):
    """``readlink(path, buf, size)`` (and ``readlinkat(dirfd, path, buf, size)``, relative to the
    working directory): ``/proc/self/exe`` is the program's file (its absolute path, as a test's
    native run sees it); the run's files and directories are no links, -1 with ``EINVAL``; any other
    path does not exist, -1 with ``ENOENT`` (angr's stub returned any length and wrote nothing).
    A symbolic path is a recorded stub with an unconstrained result."""

    def run(self, path, buf, size):  # pylint: disable=arguments-differ,unused-argument
        p = path_name(self, path)
        if p is None:
            record(self.state, "readlink")
            return claripy.BVS("readlink", 64)
        if p == b"/proc/self/exe":          # the program's own file, as its native run has it
            target = os.path.abspath(self.project.filename or "").encode()
            n = single_value(self.state, size)
            if n is None:
                vals = self.state.solver.eval_upto(size, MAX_SIZES + 1)
                if len(vals) > MAX_SIZES or not value_forking_enabled():
                    raise angr.errors.SimProcedureError(f"readlink with a size of more than {MAX_SIZES} values")
                raise ForkRequest([Target(size == v, "value") for v in sorted(vals)], "readlink size")
            target = target[:n]
            if target:
                self.state.memory.store(buf, claripy.BVV(target))
            return claripy.BVV(len(target), 64)
        return ret_errno(self.state, "ENOENT" if lookup(self.state, p) is None else "EINVAL")


class Readlinkat(Readlink):
    def run(self, dirfd, path, buf, size):  # pylint: disable=arguments-differ,unused-argument
        return super().run(path, buf, size)


FIONREAD = 0x541B          # <asm-generic/ioctls.h>


def _bytes_left(state, n: int):
    """The bytes descriptor ``n`` has left to read (a 64-bit expression), or None when unknown:
    stdin's rest, a run's file from its position, nothing on stdout and stderr."""
    simfd = state.posix.fd[n]
    if isinstance(simfd, SimFileDescriptorDuplex):
        if n != 0:
            return claripy.BVV(0, 64)
        size, pos = simfd.read_storage.size, simfd.read_pos
    elif isinstance(getattr(simfd, "file", None), SimFile) and simfd.tell() is not None:
        size, pos = simfd.size(), simfd.tell()
    elif isinstance(getattr(simfd, "file", None), SimPackets):
        return claripy.BVV(0, 64) if n in (1, 2) else None
    else:
        return None
    wide = [claripy.BVV(v, 64) if isinstance(v, int) else v.zero_extend(64 - v.size()) if v.size() < 64 else v
            for v in (size, pos)]
    return wide[0] - wide[1]


class Ioctl(angr.SimProcedure):
    """``ioctl(fd, request, arg)`` on the run's descriptors, none of which is a terminal (``isatty``
    is 0: a replay runs on pipes): ``FIONREAD`` stores the bytes left to read (stdin: the rest of
    its input) and returns 0; any other request on an open descriptor is -1 with ``ENOTTY``, one
    not open ``EBADF``. angr's stub returned any value: ``cat -A`` ended with an error on half its
    paths (65 of 129 tests mismatched natively). A symbolic descriptor or request, or a descriptor
    whose rest is unknown, is a recorded stub with an unconstrained result."""

    def run(self, fd, request, arg):  # pylint: disable=arguments-differ
        state = self.state
        n, req = single_value(state, fd[31:0]), single_value(state, request[31:0])
        if n is not None:
            n = n - (1 << 32) if n >= 1 << 31 else n
        if n is not None and req is not None and n not in state.posix.fd:
            return ret_errno(state, "EBADF")
        if n is not None and req is not None and req != FIONREAD:
            return ret_errno(state, "ENOTTY")
        left = _bytes_left(state, n) if n is not None and req is not None else None
        if left is None:
            record(state, "ioctl")
            return claripy.BVS("ioctl", 32)
        state.memory.store(arg, left[31:0], endness=state.arch.memory_endness)
        return claripy.BVV(0, 32)


FILE_STATUS_PROCEDURES = {"stat": Stat, "lstat": Stat, "stat64": Stat, "lstat64": Stat, "__xstat": Xstat,
                          "__lxstat": Xstat, "__xstat64": Xstat, "__lxstat64": Xstat, "__fxstat": Fxstat,
                          "__fxstat64": Fxstat, "fstat": Fstat, "fstat64": Fstat, "access": Access, "eaccess": Access, "euidaccess": Access,
                          "ioctl": Ioctl, "readlink": Readlink, "readlinkat": Readlinkat}
