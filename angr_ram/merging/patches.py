"""The patches merging needs (:mod:`angr_ram.core.patches`), declared in one place: three sets.

**merge-memory-diff** (:data:`MEMORY_DIFF`, inside runs): where two memories differ, without
building a byte expression for every stored byte.

angr's ``UltraPage.changed_bytes`` (behind ``changed_pages`` and every state merge) compares two
pages' symbolic bytes by slicing each byte out of both memory objects (``bytes_at(addr, 1)``, a new
claripy Extract each time) and comparing the slices. Incremental merging asks for it for every new
node (its digest and each comparison), and on pattern-merged strtok at M = 10 that slicing was 14 of
22 s of merging work. Two memory objects that wrap the same expression at the same base with the
same endness hold the same byte at every address they both include, so inside angr-ram's runs
:func:`changed_bytes` (a gated patch, :mod:`angr_ram.core.patches`) answers that case without slicing
and slices only the rest: the answer is the same as angr's.

**merge-uninit** (:data:`UNINIT`, while :data:`STABLE_UNINIT` is set): bytes that some merged
states never wrote get one symbol per address, not one per merge.

When angr merges states and a byte was written in some of them but never in the others, it gives
each unwritten side a fresh variable (``merge_uc_<memory>_<offset>``) in every merge. An unwritten
byte holds the content memory had when the program started, the same in every state, so fresh
variables only grow the merged formulas: a run-length decoder's output buffer (written up to a
different length on each path) ended with 10917 of them in its exit code at M = 10, and every
model query over it slowed down with them.

While :data:`STABLE_UNINIT` is set (by :class:`~.technique.QuantifiedMerging` around its merges),
the unwritten side of a byte at address ``a`` of memory ``m`` is the variable ``uninit_<m>_<a>``
instead, the same in every merge of the run. That is angr's own model of unwritten memory (any
initial content), with one name per byte: no path is lost, and two states that never wrote a byte
agree on it.

**merge-linear** (:data:`LINEAR`, while a pattern merge runs): angr's value merge gives ``a*k + b``
where the merged values are concrete and linear in the pattern's ``k_j``.
"""

from __future__ import annotations

import contextvars

import claripy
from angr.storage.memory_mixins.paged_memory.pages.list_page import ListPage
from angr.storage.memory_mixins.paged_memory.pages.ultra_page import UltraPage
from angr.storage.memory_mixins.symbolic_merger_mixin import SymbolicMergerMixin

from angr_ram.core.context import setting
from angr_ram.core.patches import PatchSet
from angr_ram.core.scope import in_run
from angr_ram.memory.uninitialized import uninit_value
from angr_ram.merging.synthesis import linear_fit

# ---------------------------------------------------------------------------- merge-memory-diff
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


# ---------------------------------------------------------------------------- merge-uninit
STABLE_UNINIT: contextvars.ContextVar = contextvars.ContextVar("angr_ram_stable_uninit", default=None)
_PAGE: contextvars.ContextVar = contextvars.ContextVar("angr_ram_merging_page", default=None)
_UC_PREFIX = "merge_uc_"


def _stable() -> bool:
    return STABLE_UNINIT.get() is not None


def _merge_page(original, self, others, merge_conditions, common_ancestor=None, page_addr=None, memory=None,
                changed_offsets=None):
    with setting(_PAGE, page_addr):
        return original(self, others, merge_conditions, common_ancestor=common_ancestor, page_addr=page_addr,
                        memory=memory, changed_offsets=changed_offsets)


def _default_value(original, self, addr, size, *args, memory=None, **kwargs):
    name = kwargs.get("name") or ""
    page = _PAGE.get()
    if addr is None and page is not None and memory is not None and name.startswith(_UC_PREFIX):
        offset = int(name.rsplit("_", 1)[1], 16)
        return uninit_value(memory.id, page + offset, size, memory.state.arch.byte_width)
    return original(self, addr, size, *args, memory=memory, **kwargs)


UNINIT = PatchSet("merge-uninit", _stable)
for _page in (UltraPage, ListPage):
    UNINIT.patch(_page, "merge")(_merge_page)
    UNINIT.patch(_page, "_default_value")(_default_value)


# ---------------------------------------------------------------------------- merge-linear
LINEAR_K: contextvars.ContextVar = contextvars.ContextVar("angr_ram_linear_merge", default=None)
"""While a pattern merge runs: ``(k, {hash of a leaf's merge condition: its k_j})``."""

LINEAR = PatchSet("merge-linear", lambda: LINEAR_K.get() is not None)


@LINEAR.patch(SymbolicMergerMixin, "_merge_values")
def linear_merge_values(stock_merge_values, self, values, merged_size, **kwargs):
    """angr's value merge, but a*k + b when the values are concrete and linear in k_j (while the
    pattern merge of :class:`QuantifiedMerging` runs)."""
    ctx = LINEAR_K.get()
    if ctx is not None:
        values = list(values)
        k, ks = ctx
        pts = []
        for tm, fv in values:
            d = ks.get(fv.hash()) if isinstance(fv, claripy.ast.Base) else None
            if d is None or not isinstance(tm, claripy.ast.BV) or tm.symbolic:
                pts = None
                break
            pts.append((d, tm.concrete_value))
        bits = merged_size * self.state.arch.byte_width
        fit = linear_fit([d for d, _ in pts], [v for _, v in pts], bits) if pts else None
        if fit is not None:
            kk = k[bits - 1:0] if bits < k.length else (k.zero_extend(bits - k.length) if bits > k.length else k)
            return kk * fit[0] + fit[1] if fit[0] else claripy.BVV(fit[1], bits)
    return stock_merge_values(self, values, merged_size, **kwargs)
