"""Read-only pages of the loaded objects: a program's store into them is a native ``SIGSEGV``.

Writing into a string literal or a ``const`` table (``.rodata``) or into the code kills the native
process with a segmentation fault; angr's memory lets the store through and the path goes on with
an outcome no native input produces. The ranges are the objects' segments that are mapped without
write permission, less the sections that are writable in the file (``.got``, ``.init_array`` and
``.dynamic`` sit in the RELRO part of the data segment: the dynamic linker, or a static binary's own
start-up code, writes them before making them read-only). An object without section headers
contributes only its executable segments. A program that imports ``mprotect`` may make any page
writable: it gets no ranges.

Only the program's own instructions are checked (:meth:`RelocatableMixin.store
<angr_ram.memory.relocatable.RelocatableMixin.store>` inside a step, outside any procedure): a
script patching code with ``state.memory.store`` or from a hook keeps doing so.
"""

from __future__ import annotations

import weakref

_RANGES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def read_only_ranges(project) -> tuple[tuple[int, int, str], ...]:
    """Sorted ``(lo, hi, name)`` ranges (``hi`` exclusive) the program may not write (cached per
    project)."""
    try:
        return _RANGES[project]
    except (KeyError, TypeError):
        pass
    out = _compute(project)
    try:
        _RANGES[project] = out
    except TypeError:
        pass
    return out


def _compute(project) -> tuple:
    elves = [o for o in project.loader.all_objects if hasattr(o, "segments") and hasattr(o, "imports")]
    if any("mprotect" in getattr(o, "imports", {}) for o in elves):
        return ()
    out = []
    for obj in elves:
        sections = [s for s in getattr(obj, "sections", ()) if s.memsize > 0 and s.vaddr]
        writable = sorted((s.min_addr, s.max_addr + 1) for s in sections if s.is_writable)
        name = obj.binary_basename or repr(obj)
        for seg in obj.segments:
            if seg.is_writable or seg.memsize <= 0 or (not sections and not seg.is_executable):
                continue
            out += [(lo, hi, name) for lo, hi in _minus(seg.min_addr, seg.max_addr + 1, writable)]
    return tuple(sorted(out))


def _minus(lo: int, hi: int, holes: list) -> list[tuple[int, int]]:
    """``[lo, hi)`` without the sorted ``holes``."""
    out = []
    for a, b in holes:
        if b <= lo or a >= hi:
            continue
        if a > lo:
            out.append((lo, a))
        lo = max(lo, b)
    if lo < hi:
        out.append((lo, hi))
    return out


def read_only_at(ranges, addr: int, size: int):
    """The range a ``size``-byte store at concrete ``addr`` writes into, or None."""
    for lo, hi, name in ranges:
        if addr < hi and addr + size > lo:
            return lo, hi, name
    return None


def describe(project, addr: int | None, size: int, name: str, inside: int) -> str:
    """What a store of ``size`` bytes at ``addr`` (None: a symbolic address) writing at ``inside``
    does wrong."""
    obj = project.loader.find_object_containing(inside, membership_check=False)
    sec = obj.find_section_containing(inside) if obj is not None and hasattr(obj, "find_section_containing") else None
    where = f"read-only {sec.name} of {name}" if sec is not None else f"a read-only segment of {name}"
    at = f"{addr:#x}" if addr is not None else "a symbolic address (on some inputs)"
    return f"write of {size} byte{'s' if size != 1 else ''} at {at} into {where}"
