"""The constants seeding places over the input bytes (:mod:`.seeding`): those of a query's own
expressions (the values it compares with, adds, masks) and the concrete words a program stores in
its heap objects (stored keys, hashes, lengths), each as bytes in both orders and as its halves."""

from __future__ import annotations

from angr_ram.core.scope import LRU, memo
from angr_ram.solver.evaluator import dag_nodes

STORE_SCAN_BYTES = 1 << 16   # bytes of one object's store scanned for constants


def store_constants(store) -> frozenset:
    """The concrete values (``(value, bytes)``, 1 to 8 bytes) an object store holds at concrete
    offsets, memoized per store content."""
    key = (id(store), store.seq, len(store.conc))
    m = memo("seeding.stores", lambda: LRU(4096))
    hit = m.lookup(key)
    if hit is not None and hit[0] is store:
        return hit[1]
    out = set()
    seen = set()
    for b, rec in store.conc.items():
        if b >= STORE_SCAN_BYTES:
            continue
        if id(rec) in seen:
            continue
        seen.add(id(rec))
        v = rec[2]
        if v is not None and v.op == "BVV" and 8 <= v.length <= 64 and v.length % 8 == 0:
            x = v.args[0]
            if x > 1:
                out.add((x, v.length // 8))
    r = frozenset(out)
    m.put(key, (store, r))
    return r


def _query_constants(exprs) -> list:
    """Constants of 1 to 8 bytes in ``exprs`` (the values compared with, added, masked...), in
    order of first appearance; memoized per expression (sibling queries share their constraints)."""
    m = memo("seeding.constants", lambda: LRU(8192))
    out: dict = {}
    for e in exprs:
        key = e.hash()
        consts = m.lookup(key)
        if consts is None:
            consts = _constants_of(e)
            m.put(key, consts)
        out.update(dict.fromkeys(consts))
    return list(out)


def _constants_of(e) -> tuple:
    """The constants of one expression (see :func:`_query_constants`)."""
    out: dict = {}
    for x in dag_nodes(e, _non_constant_children):
        for a in x.args:
            if hasattr(a, "op") and a.op == "BVV" and 8 <= a.length <= 64 and a.args[0] > 1:
                out[(a.args[0], (a.length + 7) // 8)] = None
    return tuple(out)


def _non_constant_children(x):
    return [a for a in x.args if hasattr(a, "op") and a.op != "BVV" and (a.depth > 1 or a.op not in ("BVS", "BoolS"))]


def _pieces(value: int, n: int):
    """``value`` as ``n`` bytes in both orders, and its 4- and 2-byte halves."""
    yield value.to_bytes(n, "little")
    if n > 1:
        yield value.to_bytes(n, "big")
    for k in (4, 2):
        if n > k:
            for lo in range(0, n, k):
                part = (value >> (8 * lo)) & ((1 << (8 * k)) - 1)
                if part > 1:
                    yield part.to_bytes(k, "little")
                    yield part.to_bytes(k, "big")
