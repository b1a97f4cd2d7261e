"""``fork``/``vfork`` and ``wait``/``waitpid``/``wait4``: a child process runs to its end first,
then its parent goes on.

angr's ``fork`` returns ``If(fork_parent, 1338, 0)`` in one address space, so the parent never sees
what the child did: a value the child computed and wrote to a pipe reached the parent as nothing,
and ``waitpid`` is a stub (a "covert propagation" logic bomb: every test mismatched natively).

Here ``fork`` returns 0 on the path, which goes on as the child, and keeps a snapshot of the parent
as it is when ``fork`` returns the child's pid (its memory, registers, heap and the libc state of
its process). When the child's path ends with ``exit``/``_exit`` (or returns from ``main``),
:func:`resume_parent` gives the path back to the parent: the snapshot, with what belongs to the
kernel taken from the child: the path's constraints (the child's branches decide the input too),
the files and their contents (pipes, stdout, files the child wrote), the read and write offsets
of the descriptors both share (after ``fork`` they share their open file descriptions), System V
shared memory (:mod:`.shared_memory`) and the record of the path. The child's exit status waits to be reaped by ``wait``/``waitpid``/``wait4``
(``status``: the code shifted left by 8, as Linux reports a normal exit). The path's outcome is
the parent's exit.

This is the schedule of a parent that waits for its child or reads what the child writes, which is
what such programs do. A child that reads from its parent through a pipe (the parent writes after
``fork``) reads the end of the pipe here, where natively it would wait. A child whose path ends
in an error is reported as that error path, and its parent goes on as if the child had been killed
by ``SIGSEGV`` (``SIGABRT`` for an abort or a failed check)."""

from __future__ import annotations

import dataclasses

import angr
import claripy

from angr_ram.core.errors import ABORTING_ERRORS
from angr_ram.posix.shared_memory import sync_segments
from angr_ram.procedures.exit_handlers import exit_handlers_key
from angr_ram.procedures.libc import ret_errno, single_value
from angr_ram.procedures.stubs import PLUGIN as STUB_TRAIL

_PARENTS = "angr_ram_parents"       # state.globals in a child: ((parent snapshot, child pid), ...), innermost last
_CHILDREN = "angr_ram_children"     # state.globals in a parent: ((pid, status), ...) of children not yet reaped
_FORKS = "angr_ram_forks"           # state.globals: processes this path created
RESUMED_EVENT = "child_exited"      # the history event a resumed parent starts with
KERNEL_PLUGINS = ("solver", "posix", "fs", "history")
SIGABRT, SIGSEGV = 6, 11
IN_CHILD = " (in a child process: the native run's parent goes on)"   # an error path's message ends so


class Fork(angr.SimProcedure):
    """``fork()`` / ``vfork()``: see the module doc."""

    def run(self):  # pylint: disable=arguments-differ
        st = self.state
        count = st.globals.get(_FORKS, 0) + 1
        pid = st.posix.pid + count
        st.globals[_FORKS] = count
        parent = st.copy()
        width = self.prototype.returnty.with_arch(self.arch).size or 32
        ret_addr = self.cc.teardown_callsite(parent, return_val=claripy.BVV(pid, width), prototype=self.prototype)
        parent.regs.ip = ret_addr
        parent.history.jumpkind = "Ijk_Ret"
        parent.callstack._manage()  # pylint: disable=protected-access
        st.globals[_PARENTS] = (*st.globals.get(_PARENTS, ()), (parent, pid))
        st.globals[_CHILDREN] = ()          # the child has no children of its own yet
        st.posix.ppid, st.posix.pid = st.posix.pid, pid
        return claripy.BVV(0, 32)


def _files_by_name(state) -> dict:
    """Every file ``state``'s process can reach, by (kind, name)."""
    posix = state.posix
    found = [posix.stdin, posix.stdout, posix.stderr]
    for fd in posix.fd.values():
        found += [getattr(fd, a) for a in ("file", "_read_file", "_write_file") if hasattr(fd, a)]
    found += list(getattr(state.fs, "_files", {}).values())
    return {(type(f).__name__, f.name): f for f in found if f is not None}


def _file_keys(fd) -> tuple:
    return tuple((type(f).__name__, f.name) for f in
                 (getattr(fd, a, None) for a in ("file", "_read_file", "_write_file")) if f is not None)


def _parent_descriptors(parent, child) -> dict:
    """The parent's descriptor table over the child's files: a descriptor both still have open is
    the child's (their offsets are shared); one the child closed is the parent's, on the child's
    copy of its file; those the child opened are not the parent's."""
    files = _files_by_name(child)
    table = {}
    for k, pfd in parent.posix.fd.items():
        cfd = child.posix.fd.get(k)
        if cfd is not None and _file_keys(cfd) == _file_keys(pfd):
            table[k] = cfd
            continue
        fd = pfd.copy({})
        for a in ("file", "_read_file", "_write_file"):
            f = getattr(fd, a, None)
            if f is not None and (type(f).__name__, f.name) in files:
                setattr(fd, a, files[(type(f).__name__, f.name)])
        table[k] = fd
    return table


def suspended_parent(state):
    """The (parent snapshot, child pid) ``state``'s process returns to when it exits, or None."""
    stack = state.globals.get(_PARENTS, ()) if state.has_plugin("globals") else ()
    return stack[-1] if stack else None


def process_key(state) -> tuple:
    """What two states must share to be merged: the parents they return to (the same snapshots),
    the exited children not yet reaped, with their statuses, and the exit handlers registered."""
    if not state.has_plugin("globals"):
        return ()
    return (tuple(id(parent) for parent, _ in state.globals.get(_PARENTS, ())),
            tuple((pid, status.hash()) for pid, status in state.globals.get(_CHILDREN, ())),
            exit_handlers_key(state))


def resume_parents_of_errors(out: dict, stash: str) -> None:
    """Add to ``out[None]`` (a step's successors) the parent of each forked process whose path ends
    in ``out[stash]`` as an error: natively the child is killed by a signal (``SIGABRT`` for the
    aborting errors, else ``SIGSEGV``) and its parent goes on, ``wait`` reporting the signal."""
    for s in out.get(stash, ()):
        if suspended_parent(s) is not None:
            error = s.ram.error if s.has_plugin("ram") else None
            signal = SIGABRT if error is not None and error.kind in ABORTING_ERRORS else SIGSEGV
            if error is not None:
                s.ram.error = dataclasses.replace(error, message=error.message + IN_CHILD)
            out.setdefault(None, []).append(resume_parent(s, None, signal))


def resume_parent(child, exit_code, signal: int | None = None):
    """The parent of the process whose path ``child`` ended with ``exit_code`` (an 8-bit expression),
    resumed where its ``fork`` returned, or None when ``child`` is no forked process (``exit_code``
    None: the child ended without one, read as 0; ``signal``: the child was killed by it)."""
    top = suspended_parent(child)
    if top is None:
        return None
    snapshot, pid = top
    donor = child.copy()
    parent = snapshot.copy()
    table = _parent_descriptors(parent, donor)
    for name in KERNEL_PLUGINS:
        parent.register_plugin(name, donor.plugins[name])
    posix = parent.posix
    posix.pid, posix.ppid, posix.brk = snapshot.posix.pid, snapshot.posix.ppid, snapshot.posix.brk
    posix.fd = table
    posix.set_state(parent)
    parent.history.jumpkind = "Ijk_Ret"
    parent.history.add_event(RESUMED_EVENT, pid=pid)
    code = claripy.BVV(0, 8) if exit_code is None else exit_code
    status = claripy.BVV(signal, 32) if signal is not None else claripy.ZeroExt(16, claripy.Concat(code, claripy.BVV(0, 8)))
    parent.globals[_CHILDREN] = (*parent.globals.get(_CHILDREN, ()), (pid, status))
    for key in ("angr_ram_pipes", _FORKS):           # names and pids the kernel gave out on this path
        parent.globals[key] = max(parent.globals.get(key, 0), donor.globals.get(key, 0))
    sync_segments(donor, parent)
    trail = donor.plugins.get(STUB_TRAIL)
    if trail is not None:
        parent.register_plugin(STUB_TRAIL, trail)
    return parent


class Waitpid(angr.SimProcedure):
    """``waitpid(pid, status, options)``: the first exited child ``pid`` names (-1 or a process
    group: any), with its status; -1 with ``ECHILD`` when there is none."""

    def run(self, pid, status, options):  # pylint: disable=arguments-differ,unused-argument
        return self._reap(pid, status)

    def _reap(self, pid, status):
        want = single_value(self.state, pid[31:0]) if pid is not None else None
        want = None if want is None else (want - (1 << 32) if want >= 1 << 31 else want)
        kids = self.state.globals.get(_CHILDREN, ())
        i = next((i for i, (kid, _) in enumerate(kids) if want is None or want <= 0 or want == kid), None)
        if i is None:
            return ret_errno(self.state, "ECHILD")
        kid, code = kids[i]
        self.state.globals[_CHILDREN] = kids[:i] + kids[i + 1:]
        if not (self.state.solver.is_true(status == 0)):
            self.state.memory.store(status, code, endness=self.state.arch.memory_endness,
                                    condition=status != 0)
        return claripy.BVV(kid, 32)


class Wait(Waitpid):
    """``wait(status)``."""

    def run(self, status):  # pylint: disable=arguments-differ
        return self._reap(None, status)


class Wait4(Waitpid):
    """``wait4(pid, status, options, rusage)`` (``rusage`` is left as it was)."""

    def run(self, pid, status, options, rusage):  # pylint: disable=arguments-differ,unused-argument
        return self._reap(pid, status)


CHILD_PROCESS_PROCEDURES = {"fork": Fork, "vfork": Fork, "__libc_fork": Fork, "waitpid": Waitpid, "wait": Wait, "wait4": Wait4, "__waitpid": Waitpid}
