"""A line read from a stream as one state whose length is symbolic, as angr's own ``fgets`` keeps it.

A byte read from symbolic input may or may not be the newline. Forking the read on each such byte
gives one state per possible line length before the program has compared anything (a 100-byte
``fgets`` of angr's default stdin: 99 states per call, 16,385 states after a few calls in a
crackme that stock angr solves in seconds). Here the call reads the bytes the line may hold and
leaves its length ``L`` an expression over them:

* ``L`` is the index after the first byte that is a newline, or where the input ends, or the
  buffer's capacity, whichever comes first (C11 7.21.7.2; glibc stops at the newline it stores);
* the buffer's byte ``i`` is ``If(live_i, byte_i, old_i)``, the NUL written after the last live
  byte, where ``live_i`` (``i < L``) is a chain of Booleans, no newline before byte ``i`` and input
  left (a bit-blasting solver sees gates, not 64-bit comparisons of ``L``); the bytes past the NUL
  are left as they were, as natively;
* the stream is left at ``pos + L``: a SimFile or SimFileStream at that (possibly symbolic)
  position, angr's file memory reading there; a packet stream (angr's default stdin) takes the
  line as one packet whose size is ``L``, as angr's ``fgets`` does with ``SHORT_READS``;
* ``_IO_EOF_SEEN`` is set where the input ended before a newline and before the buffer filled,
  and the call's value is NULL where it read no byte: both as if-then-else over the same cases.

The program's own comparisons of the line then fork it, as under stock angr. :func:`read_line`
returns None where this does not apply (a stream that holds existing packets, a descriptor of
another kind): the caller reads byte by byte.
"""

from __future__ import annotations

import claripy
from angr import sim_options as o
from angr.storage.file import SimFile, SimFileDescriptor, SimFileDescriptorDuplex, SimFileStream, SimPackets

from angr_ram.procedures.libc import single_value

__all__ = ["Line", "read_line", "store_line"]


class Line:
    """What :func:`read_line` read: ``length`` (a bit-vector of the state's word size; 0 where no
    byte was left), the bytes the line may hold, ``live[i]`` (a Bool: byte ``i`` is part of the
    line, ``i < length``), and the condition under which the end of input was seen."""

    def __init__(self, length, data: list, live: list, eof):
        self.length = length
        self.data = data
        self.live = live
        self.eof = eof


def _read_side(simfd):
    """The file a descriptor reads from and the attribute that holds its read position."""
    if type(simfd) is SimFileDescriptor:
        return simfd.file, "_pos"
    if type(simfd) is SimFileDescriptorDuplex:
        return simfd._read_file, "_read_pos"  # pylint: disable=protected-access
    return None, None


def _cases(state, data: list, avail, limit: int):
    """``(length, live, eof)`` of a line over ``data`` (bytes that exist where their index is below
    ``avail``, None: unbounded) for a buffer of ``limit`` bytes. ``live`` are Booleans (whether
    byte ``i`` is in the line: before it no newline, and input left), so that the bytes stored
    compare no 64-bit length: a bit-blasting solver sees a chain of ANDs."""
    bits = state.arch.bits
    k = len(data)
    live = []
    here = claripy.true() if avail is None else claripy.UGT(avail, 0)
    ends = [] if avail is None else [avail == 0]      # where the end of input is seen
    for i in range(k):
        live.append(here)
        newline = data[i] == 10
        if i + 1 < k:
            more = claripy.Not(newline) if avail is None else claripy.And(claripy.Not(newline), claripy.UGT(avail, i + 1))
            # an if-then-else, not And: claripy flattens nested Ands, k(k-1)/2 arguments in all
            here = claripy.If(here, more, claripy.false())
        if avail is not None and i + 1 < limit:
            ends.append(claripy.And(live[i], claripy.Not(newline), avail == i + 1))
    eof = claripy.Or(*ends) if len(ends) > 1 else ends[0] if ends else claripy.false()
    length = claripy.BVV(k, bits)
    for i in range(k - 1, -1, -1):
        length = claripy.If(live[i], length, claripy.BVV(i, bits))
    return length, live, eof


def _settled(state, length, live: list, eof):
    """The line's parts as constants where the path allows one length (a template's bytes that
    cannot be a newline): one check instead of expressions every later use has to carry."""
    if length.symbolic:
        value = single_value(state, length)
        if value is not None:
            eof = claripy.true() if state.solver.is_true(eof) else claripy.false() if state.solver.is_false(eof) else eof
            length = claripy.BVV(value, length.length)
            live = [claripy.BoolV(i < value) for i in range(len(live))]
    return length, live, eof


def read_line(state, simfd, limit: int) -> Line | None:
    """Read a line of at most ``limit`` bytes from ``simfd`` without forking (see the module doc);
    None where the descriptor's stream cannot hold a symbolic position."""
    file, attr = _read_side(simfd)
    if file is None or limit <= 0:
        return None
    bits = state.arch.bits
    if isinstance(file, SimPackets):
        return _packet_line(state, simfd, file, attr, limit)
    if not isinstance(file, SimFile):
        return None
    pos = file.pos if isinstance(file, SimFileStream) else getattr(simfd, attr)
    if isinstance(pos, int):
        pos = claripy.BVV(pos, bits)
    if file.has_end:
        size = file.size
        avail = size - pos
        avail = claripy.If(claripy.SLE(avail, 0), claripy.BVV(0, bits), avail)
        if avail.symbolic:      # the most bytes any path can read: the limit, or the most input left
            k = limit if state.solver.satisfiable(extra_constraints=(claripy.UGT(avail, limit),)) \
                else min(limit, state.solver.max(avail))
        else:
            k = min(limit, avail.concrete_value)
            avail = None if avail.concrete_value >= limit else avail
    else:
        k, avail = limit, None
    data = list(file.load(pos, k).chop(8)) if k else []
    length, live, eof = _settled(state, *_cases(state, data, avail, limit))
    new_pos = pos + length
    if isinstance(file, SimFileStream):
        file.pos = new_pos
    if not file.has_end:
        file._size = claripy.If(new_pos > file._size, new_pos, file._size)  # pylint: disable=protected-access
    setattr(simfd, attr, new_pos)
    return Line(length, data, live, eof)


def _packet_line(state, simfd, file, attr, limit: int) -> Line | None:
    """A line as the next packet of a packet stream, its size the line's length (None where the
    stream already holds the packet, or has an end)."""
    pos = getattr(simfd, attr)
    if not isinstance(pos, int) or pos != len(file.content) or getattr(file, "has_end", False):
        return None
    data, size, new_pos = file.read(pos, limit, short_reads=True)
    chars = list(data.chop(8))
    length, live, _ = _settled(state, *_cases(state, chars, None, limit))
    state.add_constraints(size == length)
    setattr(simfd, attr, new_pos)
    return Line(length, chars, live, claripy.false())


def store_line(state, dst, line: Line, offset: int) -> None:
    """Store ``line`` at ``dst + offset`` with its NUL (where the line or ``offset`` is not empty),
    leaving the bytes past the NUL as they were."""
    k = len(line.data)
    olds = list(state.memory.load(dst + offset, k + 1).chop(8))
    live = line.live
    out = []
    for i in range(k + 1):
        # the NUL goes where the line ends: after the last live byte
        if k == 0:
            nul = claripy.BoolV(offset > 0)
        elif i == 0:
            nul = claripy.false() if offset == 0 else claripy.Not(live[0])
        elif i < k:
            nul = claripy.And(live[i - 1], claripy.Not(live[i]))
        else:
            nul = live[k - 1]
        old = olds[i]
        byte = claripy.If(live[i], line.data[i], old) if i < k else old
        if _false(nul) or (not old.symbolic and old.concrete_value == 0):    # the NUL is the old zero
            out.append(byte)
        else:
            out.append(claripy.If(nul, claripy.BVV(0, 8), byte))
    # built from simplified parts already: angr's write simplification of the whole line (z3 over
    # a hundred if-then-elses) changes nothing and cost 0.15 s a call
    simplify = o.SIMPLIFY_MEMORY_WRITES in state.options
    state.options.discard(o.SIMPLIFY_MEMORY_WRITES)
    try:
        state.memory.store(dst + offset, claripy.Concat(*out))
    finally:
        if simplify:
            state.options.add(o.SIMPLIFY_MEMORY_WRITES)


def _false(b) -> bool:
    """Whether ``b`` is the constant false (read from the node: claripy's ``is_false`` asks a backend)."""
    return b.op == "BoolV" and not b.args[0]
