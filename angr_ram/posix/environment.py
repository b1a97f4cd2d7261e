"""The program's environment: random bytes and clocks.

Stock angr has no model of ``getrandom``: the call returns an unconstrained value and writes
nothing, so a program that seeds a hash table from it (json-c, glib, CPython) sees the zero it
initialised the seed with on one path, and falls back to ``/dev/urandom`` or the clock on others.
angr-ram models it, as a libc function and as the system call, in one of two environments:

* ``"symbolic"`` (default): ``getrandom`` fills the buffer with fresh symbolic bytes and returns the
  length; ``time`` keeps angr's model (a fresh non-decreasing symbol). Every seed is explored, so
  no path that depends on the random value is lost, but hashing a seed is costly for the solver.
* ``"fixed"``: one fixed environment, as a replay would see it: ``getrandom`` writes the same
  pseudo-random bytes on every run (a pure function of the call's index on the path) and the clocks
  (``time``, ``gettimeofday``, ``clock_gettime``) read a fixed instant that advances by one second
  per call. Paths that depend on the random value or the time are explored for that value only.

In both, ``/proc`` holds nothing: angr opens an unknown file as one of symbolic size and content
(``ALL_FILES_EXIST``), so gnulib's stack-overflow handler (m4 at start-up) parsed a symbolic
``/proc/self/maps`` and forked at every byte; what the file holds is the native process's own map,
which no path can predict, and without it the handler asks ``mincore``. ``sysconf`` and ``getpagesize`` answer the x86-64 Linux machine's constants (stock angr:
unconstrained, so glib's slice allocator sized from the page size fails on some path), and
``rand_r`` computes glibc's generator from the seed it is given.
"""

from __future__ import annotations

import hashlib
import os

import angr
import claripy

from angr_ram.core.named_classes import module_class
from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.model_library import ModelLibrary, ModelSet, hook_library

ENVIRONMENTS = ("symbolic", "fixed")
FIXED_EPOCH = 1_700_000_000      # the fixed environment's clock (2023-11-14), seconds
MAX_RANDOM_BYTES = 1 << 16       # one getrandom call's length above this ends the path (error)
_KEY = "angr_ram_env_calls"


def _next_call(state) -> int:
    """Index of this environment call on the path (0, 1, ...), kept in ``state.globals``."""
    n = state.globals.get(_KEY, 0)
    state.globals[_KEY] = n + 1
    return n


# the symbolic environment's values by the prefix of their names: angr's clocks, our getrandom
ENVIRONMENT_VALUES = (("sys_time_", "clock"), ("tv_sec_", "clock"), ("tv_usec_", "clock"),
                      ("tv_nsec_", "clock"), ("getrandom_", "random bytes"))


def _kind(name: str) -> str | None:
    return next((kind for prefix, kind in ENVIRONMENT_VALUES if name.startswith(prefix)), None)


def environment_kinds(state) -> frozenset:
    """What of the symbolic environment ``state``'s path constraints mention (``"clock"``, ``"random
    bytes"``): the path was taken for some of its values, and a native run sees one of them. angr's
    own bounds on its clock (``time`` >= 0, >= the previous read) are not counted."""
    out: set = set()
    for c in state.solver.constraints:
        kinds = {_kind(n) for n in c.variables} - {None}
        if kinds and not (c.op == "SGE" and kinds == {"clock"} and all(_kind(n) for n in c.variables)):
            out |= kinds
    return frozenset(out)


def fixed_bytes(index: int, n: int) -> bytes:
    """The fixed environment's ``n`` random bytes for the ``index``-th call on a path."""
    out = b""
    block = 0
    while len(out) < n:
        out += hashlib.sha256(f"angr-ram getrandom {index} {block}".encode()).digest()
        block += 1
    return out[:n]


class RamGetrandom(angr.SimProcedure):
    """``getrandom(buf, buflen, flags)``: writes ``buflen`` random bytes to ``buf`` and returns
    ``buflen`` (symbolic bytes, or the fixed environment's bytes)."""

    environment = "symbolic"

    def run(self, buf, buflen, flags):  # pylint: disable=arguments-differ,unused-argument
        n = single_value(self.state, buflen)
        if n is None:
            raise angr.errors.SimProcedureError("getrandom with a symbolic length")
        if n > MAX_RANDOM_BYTES:
            raise angr.errors.SimProcedureError(f"getrandom of {n} bytes (more than {MAX_RANDOM_BYTES})")
        if n:
            index = _next_call(self.state)
            if self.environment == "fixed":
                data = claripy.BVV(fixed_bytes(index, n))
            else:
                data = self.state.solver.BVS(f"getrandom_{index}", n * 8, key=("api", "getrandom", index))
            self.state.memory.store(buf, data)
        return claripy.BVV(n, self.state.arch.bits)


def _fixed_seconds(state) -> int:
    """The fixed clock: ``FIXED_EPOCH`` plus one second per clock read on the path."""
    return FIXED_EPOCH + _next_call(state)


class RamFixedTime(angr.SimProcedure):
    """``time(tloc)`` in the fixed environment."""

    def run(self, tloc):  # pylint: disable=arguments-differ
        t = claripy.BVV(_fixed_seconds(self.state), self.state.arch.bits)
        if not (tloc.concrete and tloc.concrete_value == 0):
            self.state.memory.store(tloc, t, endness=self.state.arch.memory_endness, condition=tloc != 0)
        return t


class RamFixedGettimeofday(angr.SimProcedure):
    """``gettimeofday(tv, tz)`` in the fixed environment (``tz`` is ignored, as glibc does)."""

    def run(self, tv, tz):  # pylint: disable=arguments-differ,unused-argument
        bits, endness = self.state.arch.bits, self.state.arch.memory_endness
        self.state.memory.store(tv, claripy.BVV(_fixed_seconds(self.state), bits), endness=endness)
        self.state.memory.store(tv + bits // 8, claripy.BVV(0, bits), endness=endness)
        return claripy.BVV(0, bits)


class RamFixedClockGettime(angr.SimProcedure):
    """``clock_gettime(clock, ts)`` in the fixed environment (every clock reads the fixed instant)."""

    def run(self, clock, ts):  # pylint: disable=arguments-differ,unused-argument
        return self.inline_call(RamFixedGettimeofday, ts, 0).ret_expr


# clock ids Linux accepts (CLOCK_REALTIME .. CLOCK_TAI without the unsupported 10); a negative id is a
# process's or thread's CPU clock (clock_getcpuclockid)
LINUX_CLOCKS = frozenset((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11))


class RamClockGettime(angr.SimProcedure):
    """``clock_gettime(clock, ts)`` in the symbolic environment: any clock Linux has reads a fresh
    time (seconds not negative, nanoseconds below 10**9), an unknown one fails with EINVAL. angr's
    took CLOCK_REALTIME only and ended the path with an error for any other (Debian's dd reads
    CLOCK_MONOTONIC at start-up: 0 paths)."""

    def run(self, clock, ts):  # pylint: disable=arguments-differ
        c = single_value(self.state, clock)
        if c is None:
            raise angr.errors.SimProcedureError("clock_gettime of a symbolic clock id")
        c -= (1 << 32) if c >= 1 << 31 else 0
        if c >= 0 and c not in LINUX_CLOCKS:
            return claripy.BVV(-22, 64) if self.is_syscall else ret_errno(self.state, "EINVAL")
        bits, endness = self.state.arch.bits, self.state.arch.memory_endness
        sec = self.state.solver.BVS("tv_sec", bits, key=("api", "clock_gettime", "tv_sec"))
        nsec = self.state.solver.BVS("tv_nsec", bits, key=("api", "clock_gettime", "tv_nsec"))
        self.state.add_constraints(claripy.SGE(sec, 0), claripy.ULT(nsec, 10**9))
        self.state.memory.store(ts, sec, endness=endness)
        self.state.memory.store(ts + bits // 8, nsec, endness=endness)
        return claripy.BVV(0, 32)


def environment_models(environment: str) -> dict:
    """The environment's functions for ``environment`` (see module doc): name -> procedure class,
    the machine's constants (``sysconf``, ``getpagesize``) in both."""
    if environment not in ENVIRONMENTS:
        raise ValueError(f"environment must be one of {ENVIRONMENTS}, not {environment!r}")
    models = {"getrandom": module_class(globals(), f"RamGetrandom_{environment}", (RamGetrandom,),
                                        {"environment": environment}), **MACHINE}
    if environment == "fixed":
        models.update(time=RamFixedTime, gettimeofday=RamFixedGettimeofday, clock_gettime=RamFixedClockGettime)
    else:
        models.update(clock_gettime=RamClockGettime)
    return models


# the environment's functions that are also system calls
SYSTEM_CALLS = ("getrandom", "time", "gettimeofday", "clock_gettime")


def install_environment_calls(project, environment: str) -> None:
    """The system calls of the environment (``getrandom`` and the clocks) for ``environment``, in a
    copy of ``project``'s system-call library: what a statically linked binary calls directly."""
    calls = getattr(project.simos, "syscall_library", None)
    if calls is None:
        return
    models = environment_models(environment)
    lib = calls.copy()
    for name in SYSTEM_CALLS:
        if name in models:
            lib.add(name, models[name])
    project.simos.syscall_library = lib


def install_environment(project, environment: str) -> None:
    """Hook the environment functions of ``project`` for ``environment`` (see module doc) over
    any model but the user's, and its system calls (:func:`install_environment_calls`)."""
    hook_library(project, ModelLibrary("environment", [ModelSet("environment", environment_models(environment))]))
    install_environment_calls(project, environment)


# the processors this process may run on: a test's native run (on this machine) counts the same
HOST_CPUS = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]

# sysconf(name) on the x86-64 Linux machine the analysis assumes (glibc's values); other names -1
SYSCONF = {0: 2_097_152,      # _SC_ARG_MAX
           2: 100,            # _SC_CLK_TCK
           3: 65_536,         # _SC_NGROUPS_MAX
           4: 1024,           # _SC_OPEN_MAX
           30: 4096,          # _SC_PAGESIZE
           43: 2048,          # _SC_LINE_MAX
           69: 1024,          # _SC_GETGR_R_SIZE_MAX
           70: 1024,          # _SC_GETPW_R_SIZE_MAX
           75: 16_384,        # _SC_THREAD_STACK_MIN
           83: os.cpu_count() or len(HOST_CPUS),   # _SC_NPROCESSORS_CONF
           84: len(HOST_CPUS),                    # _SC_NPROCESSORS_ONLN
           85: 6_291_456,     # _SC_PHYS_PAGES (24 GiB)
           86: 3_145_728,     # _SC_AVPHYS_PAGES (half of it free)
           180: 64}           # _SC_HOST_NAME_MAX


class RamSysconf(angr.SimProcedure):
    """``sysconf(name)``: the machine's constant (page size 4096, the processors this process may
    run on, ...), -1 for a name not in :data:`SYSCONF` (stock angr returns an unconstrained value, so a page size could be
    anything and an allocation sized from it fails on some path)."""

    def run(self, name):  # pylint: disable=arguments-differ
        bits = self.state.arch.bits
        k = single_value(self.state, name[31:0])
        if k is None:
            raise angr.errors.SimProcedureError("sysconf with a symbolic name")
        return claripy.BVV(SYSCONF.get(k, -1) & ((1 << bits) - 1), bits)


class RamGetpagesize(angr.SimProcedure):
    """``getpagesize()``: 4096."""

    def run(self):  # pylint: disable=arguments-differ
        return claripy.BVV(4096, 32)


class RamRandR(angr.SimProcedure):
    """``rand_r(seedp)``: glibc's reentrant generator, exact (three steps of its linear
    congruential recurrence; the state is written back to ``*seedp``). Stock angr has no model: any
    value, and the seed is left unchanged (libxml2 seeds its dictionaries' hashes with it)."""

    def run(self, seedp):  # pylint: disable=arguments-differ
        e = self.state.arch.memory_endness
        nxt = self.state.memory.load(seedp, 4, endness=e)
        result = claripy.BVV(0, 32)
        for bits in (11, 10, 10):
            nxt = nxt * 1103515245 + 12345
            part = claripy.LShR(nxt, 16) & ((1 << bits) - 1)
            result = part if bits == 11 else (result << 10) ^ part
        self.state.memory.store(seedp, nxt, endness=e)
        return result


RLIM_INFINITY = (1 << 64) - 1
# getrlimit(resource): (soft, hard) as a Debian login has them; other resources unlimited
RLIMITS = {3: (8 << 20, RLIM_INFINITY),      # RLIMIT_STACK
           4: (0, RLIM_INFINITY),            # RLIMIT_CORE
           7: (1024, 1 << 20),               # RLIMIT_NOFILE
           8: (8 << 20, 8 << 20)}            # RLIMIT_MEMLOCK


class RamGetrlimit(angr.SimProcedure):
    """``getrlimit(resource, rlim)``: :data:`RLIMITS`, 0 (stock angr: a stub whose return value and
    limits were unconstrained; GNU sort sized its buffer from them and forked on every bound)."""

    def run(self, resource, rlim):  # pylint: disable=arguments-differ
        k = single_value(self.state, resource[31:0])
        if k is None or k >= 16:
            return ret_errno(self.state, "EINVAL")
        soft, hard = RLIMITS.get(k, (RLIM_INFINITY, RLIM_INFINITY))
        e = self.state.arch.memory_endness
        self.state.memory.store(rlim, claripy.BVV(soft, 64), endness=e)
        self.state.memory.store(rlim + 8, claripy.BVV(hard, 64), endness=e)
        return claripy.BVV(0, 32)


class RamSysinfo(angr.SimProcedure):
    """``sysinfo(info)``: the machine of :data:`SYSCONF` (24 GiB of memory, half free, no swap, one
    process, up for a day; ``mem_unit`` 1). Stock angr: a stub, the structure left as it was."""

    def run(self, info):  # pylint: disable=arguments-differ
        e = self.state.arch.memory_endness
        total = SYSCONF[85] * SYSCONF[30]
        words = [86_400, 0, 0, 0, total, total // 2, 0, 0, 0, 0]   # uptime, loads, RAM, swap
        for i, v in enumerate(words):
            self.state.memory.store(info + 8 * i, claripy.BVV(v, 64), endness=e)
        self.state.memory.store(info + 80, claripy.BVV(1, 64), endness=e)      # procs, padding
        self.state.memory.store(info + 88, claripy.BVV(0, 128))                # high memory
        self.state.memory.store(info + 104, claripy.BVV(1, 64), endness=e)     # mem_unit
        return claripy.BVV(0, 32)


MAX_CPU_SET = 1024          # bytes of a cpu_set_t the models write or count (glibc's is 128)


class RamSchedGetaffinity(angr.SimProcedure):
    """``sched_getaffinity(pid, size, mask)``: the processors of :data:`HOST_CPUS` (those within
    ``size`` bytes), the rest of the mask cleared (stock angr: a stub; ``nproc`` and GNU sort counted
    an unconstrained set)."""

    def run(self, pid, size, mask):  # pylint: disable=arguments-differ,unused-argument
        n = single_value(self.state, size)
        if n is None or n == 0 or n > MAX_CPU_SET:
            return ret_errno(self.state, "EINVAL")
        bits = sum(1 << cpu for cpu in HOST_CPUS if cpu < 8 * n)
        self.state.memory.store(mask, claripy.BVV(bits.to_bytes(n, "little")))
        return claripy.BVV(0, 32)


class RamSchedCpucount(angr.SimProcedure):
    """``__sched_cpucount(setsize, set)`` (``CPU_COUNT``): the bits set in the first ``setsize`` bytes."""

    def run(self, setsize, cpuset):  # pylint: disable=arguments-differ
        n = single_value(self.state, setsize)
        if n is None or n > MAX_CPU_SET:
            raise angr.errors.SimProcedureError("__sched_cpucount of a symbolic or oversized set")
        if not n:
            return claripy.BVV(0, 32)
        data = self.state.memory.load(cpuset, n)
        if not data.symbolic:       # the usual case: the set sched_getaffinity wrote
            return claripy.BVV(bin(data.concrete_value).count("1"), 32)
        count = claripy.BVV(0, 32)
        for b in data.chop(8):
            for i in range(8):
                count = count + b[i].zero_extend(31)
        return count


MACHINE = {"sysconf": RamSysconf, "getpagesize": RamGetpagesize, "rand_r": RamRandR, "getrlimit": RamGetrlimit,
           "sysinfo": RamSysinfo, "sched_getaffinity": RamSchedGetaffinity, "__sched_cpucount": RamSchedCpucount}


class NoFiles(angr.state_plugins.filesystem.SimMount):
    """A mount point under which no file exists and none can be created (``open`` returns -1)."""

    def get(self, path_elements):  # pylint: disable=unused-argument
        return None

    def insert(self, path_elements, simfile):  # pylint: disable=unused-argument
        return False

    def delete(self, path_elements):  # pylint: disable=unused-argument
        return False

    def lookup(self, sim_file):  # pylint: disable=unused-argument
        return None

    @angr.SimStatePlugin.memo
    def copy(self, memo):  # pylint: disable=unused-argument
        return NoFiles()

    def merge(self, others, merge_conditions, common_ancestor=None):  # pylint: disable=unused-argument
        return True         # nothing to merge

    def widen(self, others):  # pylint: disable=unused-argument
        return True


def hide_proc(state) -> None:
    """Mount :class:`NoFiles` at ``/proc`` unless the user mounted something there, or inserted a
    file under it."""
    key = state.fs._join_chunks(state.fs._normalize_path(b"/proc"))
    if key in state.fs._mountpoints or any(bytes(f).startswith(b"/proc/") for f in state.fs._files):
        return
    state.fs.mount(b"/proc", NoFiles())
