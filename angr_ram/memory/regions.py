"""The address ranges around angr-ram's heap objects: what is not a heap object, and how much of
angr's own heap is mapped up front."""

from __future__ import annotations

import angr

# angr's brk heap (SimHeapBrk) maps its whole default region (8 MiB, 2048 pages) the first time a
# procedure touches it, and every state copy then walks those pages (reference counts on copy and
# on release): a third of the run time on small programs. Heap objects live in angr-ram's address
# space, so angr's own heap only holds what its procedures allocate internally (ctype tables);
# angr-ram maps this much of it up front and leaves the rest of the range to be mapped on use.
BRK_HEAP_MAPPED = 64 * 1024


def fixed_regions(project, state) -> list[tuple[int, int, str]]:
    """Address ranges that are not heap objects: loaded objects, the stack, angr's own heap."""
    regions = []
    for obj in project.loader.all_objects:
        if obj.max_addr > obj.min_addr:
            regions.append((obj.min_addr, obj.max_addr + 1, obj.binary_basename or repr(obj)))
    mem = state.memory
    stack_end = getattr(mem, "_stack_end", None) or state.arch.initial_sp
    stack_size = getattr(mem, "_stack_size", None) or 8 * 1024 * 1024
    regions.append((stack_end - max(stack_size, 0x800000) * 4, stack_end + 0x10000, "stack"))
    heap_base = angr.state_plugins.heap.heap_base.DEFAULT_HEAP_LOCATION
    regions.append((heap_base, heap_base + angr.state_plugins.heap.heap_base.DEFAULT_HEAP_SIZE, "angr-heap"))
    regions.sort()
    merged: list[list] = []
    for lo, hi, name in regions:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
            merged[-1][2] += "+" + name
        else:
            merged.append([lo, hi, name])
    return [tuple(r) for r in merged]
