"""The values a pointer may take, as cases a procedure or the memory layer can work through one by
one: ``(condition, pointer, readable bytes)`` in program terms (a heap object's value is its
symbolic base plus an offset, so the cases stay valid when objects move)."""

from __future__ import annotations

import claripy

from angr_ram.memory.strategies.resolution import NULL_PAGE
from angr_ram.memory.strategies.value_sets import possible_values
from angr_ram.solver.z3_check import gave_up

MAX_POINTERS = 64   # a pointer with more possible values (or pairs of them) has no cases
MAX_CONSTANT_SCAN = 1 << 16     # bytes of a read-only segment a string function may scan


def read_only_extent(state, c: int) -> int | None:
    """Bytes from ``c`` to the end of the read-only segment of a loaded object holding it (at most
    ``MAX_CONSTANT_SCAN``), or None. Read-only memory holds constants, so scanning it for a NUL is
    cheap however far the NUL is: GNU make's 200-byte messages took angr's ``strlen``, whose fresh
    length symbol then reached every later query."""
    obj = state.project.loader.find_object_containing(c) if state.project is not None else None
    find = getattr(obj, "find_segment_containing", None)
    seg = find(c) if find is not None else None
    if seg is None or seg.is_writable:
        return None
    return min(seg.max_addr + 1 - c, MAX_CONSTANT_SCAN)


def readable_at(state, c: int, most: int | None = None, strings: bool = False) -> int | None:
    """How many bytes from the hidden concrete address ``c`` may be read without a fault the C
    function might not make (rest of its heap object; the rest of a read-only segment of a loaded
    object; ``max_str_len`` on the stack and writable globals), at most ``most`` (``max_str_len``
    when None) except in a read-only segment, or
    None in the null page or outside every live heap object. In an object of symbolic size,
    ``strings`` (a reader that stops at the string's NUL) gets :func:`terminated_in_bounds`."""
    space = state.ram
    most = state.libc.max_str_len if most is None else most
    if c < NULL_PAGE:
        return None
    if not space.in_heap_range(c):
        return max(read_only_extent(state, c) or 0, most)
    hit = space.find(c)
    if hit is None:
        return None
    obj, off = hit
    if obj.freed or obj.freed_when is not None:
        return None
    if obj.limit is not None:
        return terminated_in_bounds(state, obj, off, most) if strings else None
    return min(most, obj.size - off)


def terminated_in_bounds(state, obj, off: int, most: int) -> int | None:
    """For an object of symbolic size (``malloc(strlen(arg) + 1)``, then the string copied in): the
    bytes from offset ``off`` up to and including the first concrete NUL (within ``most`` and the
    largest size), when on every path the string's terminator lies inside the size that path gives
    the object (one solver query, none when the smallest size covers it); else None. A function
    that stops at the terminator then reads only in-bounds bytes, whatever lies beyond them."""
    n = min(most, obj.size - off)
    if n <= 0:
        return None
    data = obj.store.read(off, n).chop(8)
    symbolic = []
    for z, b in enumerate(data):
        if not b.symbolic:
            if b.concrete_value == 0:
                break
        elif len(symbolic) >= state.libc.max_str_len:
            return None
        else:
            symbolic.append((z, b))
    else:
        return None
    if obj.min_size is not None and off + z < obj.min_size:
        return z + 1
    length = claripy.BVV(z, 64)
    for j, b in reversed(symbolic):
        length = claripy.If(b == 0, claripy.BVV(j, 64), length)
    limit = obj.limit.zero_extend(64 - obj.limit.size()) if obj.limit.size() < 64 else obj.limit
    try:
        beyond = state.solver.satisfiable(extra_constraints=[claripy.UGE(length + off, limit)])
    except Exception as e:
        if gave_up(e) is None:
            raise
        return None
    return None if beyond else z + 1


def pointer_cases(state, ptr, most: int | None = None, strings: bool = False) -> list | None:
    """The values ``ptr`` can take, as ``(condition, pointer, readable)`` in program terms (a heap
    object's value is its symbolic base plus an offset, so the cases stay valid when objects move):
    one case with condition None for a pointer that is concrete after substitution; up to
    ``MAX_POINTERS`` cases for a selection (a table entry chosen by an input); None otherwise.
    ``readable`` is at most ``most`` (:func:`readable_at`, with ``strings``)."""
    if not state.has_plugin("ram"):
        return None
    space = state.ram
    a = space.substitute(ptr)
    if not a.symbolic:
        n = readable_at(state, a.concrete_value, most, strings)
        return None if n is None else [(None, ptr, n)]
    try:
        vals = state.solver.eval_upto(a, MAX_POINTERS + 1)
    except Exception as e:
        # z3 gave up: the values the pointer's expression can take, each case guarded (a superset)
        vals = possible_values(state, a) if gave_up(e) is not None else None
        if vals is None:
            raise
    if len(vals) > MAX_POINTERS:
        return None
    cases = []
    for v in sorted(vals):
        n = readable_at(state, v, most, strings)
        if n is None:
            return None
        if space.in_heap_range(v):
            obj, off = space.find(v)
            pv = obj.start + off if off else obj.start
        else:
            pv = claripy.BVV(v, state.arch.bits)
        cases.append((ptr == pv, pv, n))
    return cases
