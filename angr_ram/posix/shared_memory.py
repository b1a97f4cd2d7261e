"""System V shared memory: ``shmget``, ``shmat``, ``shmdt``, ``shmctl``, shared between a process
and the children it forks (:mod:`.child_processes`).

angr stubs the four (``shmat`` returned an arbitrary pointer), so a value a child wrote into a
segment for its parent (a "parallel program" logic bomb) never arrived. Here a segment is kernel
state kept in ``state.globals``: its key, size and contents (None: zero bytes, as Linux creates
it). ``shmat`` maps it at a fresh heap block holding its contents and records the mapping;
``shmdt`` and the end of a child process (:func:`sync_segments`) copy each mapping's bytes back
into the segment, and a parent resumed after its child's exit gets the segment's contents in every
mapping it had. One process's two mappings of one segment are two copies (they do not alias)."""

from __future__ import annotations

import angr
import claripy

from angr_ram.procedures.libc import ret_errno, single_value

_SEGMENTS = "angr_ram_shm"      # state.globals: ((id, key, size, contents or None, removed), ...)
_MAPPINGS = "angr_ram_shm_at"   # state.globals: ((address, id), ...) of this process
FIRST_ID = 32768
IPC_PRIVATE, IPC_CREAT, IPC_EXCL, IPC_RMID = 0, 0o1000, 0o2000, 0
MAX_SEGMENT = 1 << 24


def _segments(state) -> tuple:
    return state.globals.get(_SEGMENTS, ())


def _replace(state, seg_id: int, **changes) -> None:
    fields = ("id", "key", "size", "contents", "removed")
    state.globals[_SEGMENTS] = tuple(
        tuple(changes.get(f, v) for f, v in zip(fields, s, strict=True)) if s[0] == seg_id else s
        for s in _segments(state))


def _segment(state, seg_id: int):
    return next((s for s in _segments(state) if s[0] == seg_id and not s[4]), None)


class Shmget(angr.SimProcedure):
    """``shmget(key, size, flags)``."""

    def run(self, key, size, flags):  # pylint: disable=arguments-differ
        k, n, f = single_value(self.state, key[31:0]), single_value(self.state, size), single_value(self.state, flags[31:0])
        if k is None or n is None or f is None:
            raise angr.errors.SimProcedureError("shmget with a symbolic key, size or flags")
        found = next((s for s in _segments(self.state) if k != IPC_PRIVATE and s[1] == k and not s[4]), None)
        if found is not None:
            if f & IPC_CREAT and f & IPC_EXCL:
                return ret_errno(self.state, "EEXIST")
            return ret_errno(self.state, "EINVAL") if n > found[2] else claripy.BVV(found[0], 32)
        if k != IPC_PRIVATE and not f & IPC_CREAT:
            return ret_errno(self.state, "ENOENT")
        if n == 0 or n > MAX_SEGMENT:
            return ret_errno(self.state, "EINVAL")
        seg_id = FIRST_ID + len(_segments(self.state))
        self.state.globals[_SEGMENTS] = (*_segments(self.state), (seg_id, k, n, None, False))
        return claripy.BVV(seg_id, 32)


class Shmat(angr.SimProcedure):
    """``shmat(id, address, flags)`` (the address is the model's choice)."""

    def run(self, shmid, shmaddr, flags):  # pylint: disable=arguments-differ,unused-argument
        seg_id = single_value(self.state, shmid[31:0])
        seg = _segment(self.state, seg_id) if seg_id is not None else None
        if seg is None:
            ret_errno(self.state, "EINVAL")
            return claripy.BVV(-1 & ((1 << self.arch.bits) - 1), self.arch.bits)
        addr = self.state.heap._malloc(claripy.BVV(seg[2], self.arch.bits))
        self.state.memory.store(addr, seg[3] if seg[3] is not None else claripy.BVV(0, 8 * seg[2]))
        self.state.globals[_MAPPINGS] = (*self.state.globals.get(_MAPPINGS, ()), (addr, seg_id))
        return addr


def _save(state, addr, seg_id: int) -> None:
    seg = next((s for s in _segments(state) if s[0] == seg_id), None)
    if seg is not None:
        _replace(state, seg_id, contents=state.memory.load(addr, seg[2]))


class Shmdt(angr.SimProcedure):
    """``shmdt(address)``."""

    def run(self, shmaddr):  # pylint: disable=arguments-differ
        maps = self.state.globals.get(_MAPPINGS, ())
        i = next((i for i, (a, _) in enumerate(maps) if self.state.solver.is_true(a == shmaddr)), None)
        if i is None:
            return ret_errno(self.state, "EINVAL")
        _save(self.state, *maps[i])
        self.state.globals[_MAPPINGS] = maps[:i] + maps[i + 1:]
        return claripy.BVV(0, 32)


class Shmctl(angr.SimProcedure):
    """``shmctl(id, cmd, buf)``: ``IPC_RMID`` removes the segment (no new ``shmat``); other commands
    succeed and leave ``buf`` as it was."""

    def run(self, shmid, cmd, buf):  # pylint: disable=arguments-differ,unused-argument
        seg_id = single_value(self.state, shmid[31:0])
        if seg_id is None or _segment(self.state, seg_id) is None:
            return ret_errno(self.state, "EINVAL")
        if single_value(self.state, cmd[31:0]) == IPC_RMID:
            _replace(self.state, seg_id, removed=True)
        return claripy.BVV(0, 32)


def sync_segments(child, parent) -> None:
    """At ``child``'s exit: its mappings' bytes into the segments, the segments (kernel state) into
    ``parent``'s globals, and each of ``parent``'s mappings filled with its segment's contents."""
    for addr, seg_id in child.globals.get(_MAPPINGS, ()):
        _save(child, addr, seg_id)
    if _SEGMENTS not in child.globals:
        return
    parent.globals[_SEGMENTS] = child.globals[_SEGMENTS]
    for addr, seg_id in parent.globals.get(_MAPPINGS, ()):
        seg = next((s for s in _segments(parent) if s[0] == seg_id), None)
        if seg is not None and seg[3] is not None:
            parent.memory.store(addr, seg[3])


SHARED_MEMORY_PROCEDURES = {"shmget": Shmget, "shmat": Shmat, "shmdt": Shmdt, "shmctl": Shmctl}
