"""Bytes that some merged states never wrote: one symbol per address, not one per merge.

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
"""

from __future__ import annotations

import contextvars

from angr.storage.memory_mixins.paged_memory.pages.list_page import ListPage
from angr.storage.memory_mixins.paged_memory.pages.ultra_page import UltraPage

from angr_ram.core.context import setting
from angr_ram.core.patches import PatchSet
from angr_ram.memory.uninitialized import uninit_value

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
