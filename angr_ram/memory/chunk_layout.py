"""glibc's chunk layout on x86-64: how far apart consecutive allocations from a fresh heap are."""

from __future__ import annotations

MIN_CHUNK = 32          # glibc's smallest chunk
SIZE_FIELD = 8          # a chunk's size field, just below the user pointer (the chunk before may use the 8 below it)
# how far past a chunk a write may still land in the heap's mapped pages: glibc's first heap is its
# initial request plus a 128 KiB top pad; an access farther off is a wild one (natively it may fault)
HEAP_REACH = 128 * 1024


def chunk_span(size: int) -> int:
    """Bytes between the user pointers of two chunks glibc carves one after the other from a fresh
    heap, the first of ``size`` bytes: its chunk size, ``max(32, align16(size + 8))``."""
    return max(MIN_CHUNK, (size + SIZE_FIELD + 15) & ~15)
