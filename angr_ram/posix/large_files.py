"""The large-file (``*64``), fortified (``__open_2``) and ``*at`` names of the file functions.

A program built with ``-D_FILE_OFFSET_BITS=64`` (GNU coreutils, and most of Debian: 60 of
``/usr/bin``'s programs import ``fopen64``) calls ``fopen64``, ``open64``, ``lseek64``, ``readdir64``...
and with ``-D_FORTIFY_SOURCE`` ``__open_2``; angr models none of these names, so each was a stub:
``fopen64`` returned an unconstrained ``FILE *`` and opened nothing, and every read of the file
read garbage. On x86-64 each ``*64`` function *is* the function without the suffix (``off_t`` is 64
bits, ``struct stat64`` is ``struct stat``), so each is hooked with the model of its base name:
angr-ram's own (:data:`MODELS`), else angr's. ``__open_2(path, flags)`` is ``open`` (glibc aborts on
``O_CREAT`` without a mode: a ``buffer-overflow-detected``-style fortify error, :mod:`.aborts`).
``openat(dirfd, path, ...)`` with ``AT_FDCWD`` or an absolute path is ``open``; relative to another
directory descriptor it stays angr's stub and is recorded as one (:mod:`.stubs`)."""

from __future__ import annotations

import angr
import claripy

from angr_ram.posix.descriptors import DESCRIPTOR_PROCEDURES
from angr_ram.posix.file_status import FILE_STATUS_PROCEDURES
from angr_ram.posix.process import PROCESS_PROCEDURES
from angr_ram.posix.startup import STARTUP_PROCEDURES
from angr_ram.posix.stdio_flags import STDIO_PROCEDURES
from angr_ram.posix.temp_files import TEMP_FILE_PROCEDURES
from angr_ram.procedures.aborts import abort_path
from angr_ram.procedures.libc import single_value
from angr_ram.procedures.stubs import record

AT_FDCWD = -100
O_CREAT = 0o100
O_TMPFILE = 0o20000000 | 0o200000

LARGE_FILE_NAMES = {
    "fopen64": "fopen", "freopen64": "freopen", "open64": "open", "creat64": "creat", "lseek64": "lseek",
    "pread64": "pread", "pwrite64": "pwrite", "fseeko64": "fseeko", "ftello64": "ftello",
    "fgetpos64": "fgetpos", "fsetpos64": "fsetpos", "stat64": "stat", "lstat64": "lstat", "fstat64": "fstat",
    "fstatat64": "fstatat", "__xstat64": "__xstat", "__lxstat64": "__lxstat", "__fxstat64": "__fxstat",
    "readdir64": "readdir", "fcntl64": "fcntl", "ftruncate64": "ftruncate", "truncate64": "truncate",
    "mmap64": "mmap", "mkstemp64": "mkstemp", "mkostemp64": "mkostemp", "mkstemps64": "mkstemps",
    "mkostemps64": "mkostemps", "tmpfile64": "tmpfile", "getrlimit64": "getrlimit",
    "setrlimit64": "setrlimit", "posix_fadvise64": "posix_fadvise", "openat64": "openat",
    "__open64_2": "__open_2", "__openat64_2": "__openat_2",
}


def _open_flags_checked(proc, flags) -> None:
    f = single_value(proc.state, flags[31:0])
    if f is not None and (f & O_CREAT or f & O_TMPFILE == O_TMPFILE):
        abort_path(proc, "buffer-overflow-detected", "*** invalid open call: O_CREAT or O_TMPFILE without mode ***")


class Open2(angr.SimProcedure):
    """``__open_2(path, flags)``: ``open`` without a mode (``O_CREAT`` here: glibc's fortify abort)."""

    def run(self, path, flags):  # pylint: disable=arguments-differ
        _open_flags_checked(self, flags)
        return self.inline_call(angr.SIM_PROCEDURES["posix"]["open"], path, flags, claripy.BVV(0, 32)).ret_expr


class Openat(angr.SimProcedure):
    """``openat(dirfd, path, flags, mode)``: ``open`` where ``dirfd`` is ``AT_FDCWD`` or ``path`` is
    absolute; otherwise angr's stub, recorded."""

    def run(self, dirfd, path, flags, mode):  # pylint: disable=arguments-differ
        return self.open_at(dirfd, path, flags, mode)

    def open_at(self, dirfd, path, flags, mode):
        d = single_value(self.state, dirfd[31:0])
        first = single_value(self.state, self.state.memory.load(path, 1))
        if (d is not None and d - (1 << 32) == AT_FDCWD) or first == ord("/"):
            return self.inline_call(angr.SIM_PROCEDURES["posix"]["open"], path, flags, mode).ret_expr
        record(self.state, "openat")
        return claripy.BVS("openat", 32)


class Openat2(Openat):
    """``__openat_2(dirfd, path, flags)``."""

    def run(self, dirfd, path, flags):  # pylint: disable=arguments-differ
        _open_flags_checked(self, flags)
        return self.open_at(dirfd, path, flags, claripy.BVV(0, 32))


OPEN_PROCEDURES = {"__open_2": Open2, "openat": Openat, "__openat_2": Openat2}


def _models() -> dict:
    """angr-ram's models by name (the base names the ``*64`` names stand for)."""
    return {**STARTUP_PROCEDURES, **STDIO_PROCEDURES, **DESCRIPTOR_PROCEDURES, **FILE_STATUS_PROCEDURES,
            **PROCESS_PROCEDURES, **OPEN_PROCEDURES, **TEMP_FILE_PROCEDURES}


def _libc():
    lib = angr.SIM_LIBRARIES["libc.so.6"]
    return lib[0] if isinstance(lib, list) else lib


def _unmodelled(project, name: str) -> bool:
    sym = project.loader.find_symbol(name)
    if sym is None or sym.owner is not project.loader.extern_object:   # defined in the program: static_libc decides
        return False
    hooked = project._sim_procedures.get(sym.rebased_addr)
    return hooked is None or getattr(hooked, "is_stub", False)


def install_large_files(project) -> list[str]:
    """Hook ``__open_2``/``openat``/``__openat_2`` and each ``*64`` name ``project`` imports that has no
    model yet with its base name's model; returns the names hooked."""
    done = []
    models, lib = _models(), _libc()
    for name, cls in OPEN_PROCEDURES.items():
        if _unmodelled(project, name):
            project.hook_symbol(name, cls(display_name=name), replace=True)
            done.append(name)
    for name, base in LARGE_FILE_NAMES.items():
        if not _unmodelled(project, name):
            continue
        if base in models:
            project.hook_symbol(name, models[base](display_name=name), replace=True)
        elif lib.has_implementation(base):
            project.hook_symbol(name, lib.get(base, project.arch), replace=True)
        else:
            continue
        done.append(name)
    return sorted(done)
