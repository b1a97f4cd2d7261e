"""Dynamic splitting: a big object accessed at a symbolic offset becomes adjacent small chunks.

An object larger than ``threshold`` bytes that is accessed at a symbolic offset is replaced by
chunks of ``size`` bytes (a multiple of 8, so aligned fields never straddle two chunks) through
relocation: the object's base is re-bound to the first chunk. The access is then re-resolved and
reaches only the chunks its offset can hit, each with a small if-then-else. Chunks keep fixed
places: the segment models never merge them again (they fork or build an ITE across chunks).
"""

from __future__ import annotations


class Splitter:
    """Split policy: chunk size and the size above which an object is split."""

    def __init__(self, size: int = 128, threshold: int = 300):
        if size <= 0 or size % 8:
            raise ValueError(f"split size must be a positive multiple of 8, not {size}")
        self.size = size
        self.threshold = threshold

    def maybe_split(self, space, hit) -> bool:
        """Split the object behind a single symbolic-offset hit if it is big enough."""
        obj = hit.obj
        if (hit.kind != "object" or obj.kind != "heap" or obj.name is None or obj.limit is not None
                or obj.freed_when is not None):      # (its chunks would not know on which inputs it is freed)
            return False
        if obj.size <= self.threshold or obj.size <= self.size:
            return False
        space.split(obj.id, self.size)
        return True
