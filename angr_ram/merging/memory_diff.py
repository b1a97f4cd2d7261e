"""Where two memories differ, without building a byte expression for every stored byte.

angr's ``UltraPage.changed_bytes`` (behind ``changed_pages`` and every state merge) compares two
pages' symbolic bytes by slicing each byte out of both memory objects (``bytes_at(addr, 1)``, a new
claripy Extract each time) and comparing the slices. Incremental merging asks for it for every new
node (its digest and each comparison), and on pattern-merged strtok at M = 10 that slicing was 14 of
22 s of merging work. Two memory objects that wrap the same expression at the same base with the
same endness hold the same byte at every address they both include, so inside angr-ram's runs
:func:`changed_bytes` (a gated patch, :mod:`angr_ram.core.patches`) answers that case without slicing
and slices only the rest: the answer is the same as angr's.
"""

from __future__ import annotations

from angr.storage.memory_mixins.paged_memory.pages.ultra_page import UltraPage

from angr_ram.core.patches import PatchSet
from angr_ram.core.scope import in_run

MEMORY_DIFF = PatchSet("merge-memory-diff", in_run)


def _same_object(a, b) -> bool:
    return a is b or (a.object is b.object and a.base == b.base and a.endness == b.endness
                      and a.length == b.length)


def _symbolic_at(page: UltraPage, offset: int):
    try:
        return page.symbolic_data[next(page.symbolic_data.irange(maximum=offset, reverse=True))]
    except StopIteration:
        return None


@MEMORY_DIFF.patch(UltraPage, "changed_bytes")
def changed_bytes(original, self, other, page_addr=None) -> set[int]:
    """The offsets where pages ``self`` and ``other`` hold different bytes: angr's answer, with
    equal memory objects compared without slicing."""
    if page_addr is None or not isinstance(other, UltraPage):
        return original(self, other, page_addr=page_addr)
    candidates = super(UltraPage, self).changed_bytes(other)
    if candidates is None:
        candidates = self._ultra_changed_candidates(other)
    changes: set[int] = set()
    for off in candidates:
        sym = self.symbolic_bitmap[off]
        if sym != other.symbolic_bitmap[off]:
            changes.add(off)
        elif not sym:
            if self.concrete_data[off] != other.concrete_data[off]:
                changes.add(off)
        else:
            a, b = _symbolic_at(self, off), _symbolic_at(other, off)
            real = page_addr + off
            ina = a is not None and a.includes(real)
            inb = b is not None and b.includes(real)
            if ina != inb:
                changes.add(off)
            elif ina and not _same_object(a, b) and a.bytes_at(real, 1) is not b.bytes_at(real, 1):
                changes.add(off)
    return changes


@MEMORY_DIFF.patch(UltraPage, "_replace_memory_object")
def replace_memory_object(original, self, old, new_content, memory=None):
    """angr's replacement of a memory object in a page (how a merge stores a merged value over an
    object the merged state already holds), also recorded in the page's write history.

    angr's history-based ``changed_bytes`` compares only the bytes written since two pages' common
    ancestor page, and its replacement writes none: a state that came out of an earlier merge then
    looked unchanged there, and a later merge of it with another state kept one side's value of
    such a byte (a register that held a loop counter, say) under every merge condition."""
    new = original(self, old, new_content, memory=memory)
    for off, obj in self.symbolic_data.items():
        if obj is new:
            self._changed_offsets.occupy(off, min(old.length, len(self.concrete_data) - off), "")
    return new


def byte_key(mem, addr: int):
    """A hashable key of the byte ``mem`` holds at ``addr``, equal for equal bytes: its value if
    concrete, else the hash of its expression (read from the page, not through the memory's
    mixins, which would also fill a byte never stored; that byte's key is ``None``)."""
    pageno, off = divmod(addr, mem.page_size)
    page = mem._pages.get(pageno)
    if not isinstance(page, UltraPage):
        return mem.load(addr, 1).hash()
    if not page.symbolic_bitmap[off]:
        return page.concrete_data[off]
    obj = _symbolic_at(page, off)
    if obj is None or not obj.includes(addr):
        return None
    byte = obj.bytes_at(addr, 1)
    return byte.concrete_value if byte.op == "BVV" else byte.hash()
