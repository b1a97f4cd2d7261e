"""Joint images of narrow cuts (:mod:`.narrow_cut`): every tuple of values the cut nodes take
together, computed exactly. Nodes over disjoint input bits combine by products, nodes that share
bits are enumerated together over them (or through *ports*, narrower sub-expressions they are all
built from), and an operation over independent operands folds its operands' images.
"""

from __future__ import annotations

import itertools

import claripy
import numpy as np

from angr_ram.core.scope import LRU, memo
from angr_ram.solver.bit_extraction import canonical
from angr_ram.solver.columns import column, unique_rows
from angr_ram.solver.evaluator import MAX_BITS, Evaluator, _leaves, dag_nodes
from angr_ram.solver.narrow_cut import (
    MAX_IMAGE,
    MAX_JOINT_BITS,
    MAX_PORT_STEPS,
    MAX_PORTS,
    MAX_PRODUCT,
    MAX_ROWS,
    NoCut,
    _children,
    _low,
    used_bits,
)
from angr_ram.solver.semantics import PAIRWISE


def _overlap(a: dict, b: dict) -> bool:
    return any(n in b and m & b[n] for n, m in a.items())


def _width(bits: dict) -> int:
    return sum(bin(m).count("1") for m in bits.values())


def _merged(nodes) -> dict:
    out: dict = {}
    for x in nodes:
        for n, m in used_bits(x).items():
            out[n] = out.get(n, 0) | m
    return out


def _components(nodes: list, filters: list) -> list[tuple[list, list]]:
    """``nodes`` and ``filters`` grouped by shared input bits: (nodes, filters) per group."""
    items = [(x, False) for x in nodes] + [(c, True) for c in filters]
    groups: list[tuple[dict, list]] = []
    for x, is_filter in items:
        bits = dict(used_bits(x))
        joined = [g for g in groups if _overlap(g[0], bits)]
        groups = [g for g in groups if not _overlap(g[0], bits)]
        members = [(x, is_filter)]
        for g in joined:
            for n, m in g[0].items():
                bits[n] = bits.get(n, 0) | m
            members += g[1]
        groups.append((bits, members))
    return [([x for x, f in m if not f], [x for x, f in m if f]) for _, m in groups]


def _columns(bits: dict, variables: dict):
    """Every assignment of the input bits ``bits`` (others zero): (number of rows, variable name
    -> column of its values)."""
    total = _width(bits)
    idx = np.arange(1 << total, dtype=np.uint64)
    cols = {}
    j = 0
    for n in sorted(bits):
        m, col, p = bits[n], np.zeros(1 << total, dtype=np.uint64), 0
        while m:
            if m & 1:               # a run of consecutive bits of the mask: one shift and mask
                run = ((m + 1) & ~m).bit_length() - 1
                col |= ((idx >> np.uint64(j)) & np.uint64((1 << run) - 1)) << np.uint64(p)
                j += run
                m >>= run
                p += run
            else:
                m >>= 1
                p += 1
        cols[n] = col
    for n in variables or ():
        if n not in cols:               # mentioned, but no bit of it matters (masked away): zero
            cols[n] = np.zeros(1 << total, dtype=np.uint64)
    return 1 << total, cols


def _enumerate_together(nodes: list, filters: list) -> np.ndarray:
    """Rows (one column per node) of the values ``nodes`` take together over every assignment of
    the input bits they use that satisfies ``filters``. Kept per (nodes, filters) while at most
    :data:`MAX_ROWS` rows: a step that is set aside and resumed asks for the same image again."""
    cache = memo("narrow_cut.together", lambda: LRU(32))
    key = (tuple(x.hash() for x in nodes), tuple(c.hash() for c in filters))
    r = cache.lookup(key)
    if r is None:
        r = _enumerate(nodes, filters)
        if len(r) <= MAX_ROWS:
            cache.put(key, r)
    return r


def _enumerate(nodes: list, filters: list) -> np.ndarray:
    leaves = _leaves([*nodes, *filters])
    if any(v.op != "BVS" or v.length > 64 for v in leaves.values()):
        raise NoCut("an input that is not a bit-vector variable")
    bits = _merged([*nodes, *filters])
    width = _width(bits)
    if width > MAX_BITS:
        try:
            return _through_ports(nodes, filters, min(width, MAX_JOINT_BITS))
        except NoCut:
            pass
    if width > MAX_JOINT_BITS:
        raise NoCut("a component too wide to enumerate")
    size, cols = _columns(bits, leaves)
    ev = Evaluator.over(cols, size, {}, shared=False)
    return _rows(ev, size, nodes, filters)


def _ports(roots) -> list | None:
    """Input-only sub-terms (*ports*) of ``roots`` that use pairwise disjoint input bits and
    through which every input bit reaches the roots, or None. Starting from the roots, a term that
    shares input bits with another is replaced by its operands, the widest first, until none
    share (at most :data:`MAX_PORT_STEPS` replacements, :data:`MAX_PORTS` terms). Disjoint ports
    take their values independently: their joint image is the product of their images. Kept per
    roots: the queries of a path ask about the same nodes again and again."""
    cache = memo("narrow_cut.ports", lambda: LRU(256))
    key = tuple(x.hash() for x in roots)
    r = cache.lookup(key)
    if r is None:
        r = _search_ports(roots)
        if r is None:
            r = _variable_slices(roots)
        cache.put(key, r if r is not None else ())
    return list(r) if r else None


def _search_ports(roots) -> list | None:
    frontier = {x.hash(): x for x in roots if hasattr(x, "op") and x.variables}
    bits = {h: used_bits(x) for h, x in frontier.items()}
    rank = {h: (_width(b), frontier[h].depth) for h, b in bits.items()}
    for _ in range(MAX_PORT_STEPS):
        x = _widest_clash(frontier, bits, rank)
        if x is None:
            return list(frontier.values())
        if x is False:
            return None
        frontier.pop(x.hash())
        kids = _children(x)
        if not kids:
            return None
        for k in kids:
            h = k.hash()
            if h not in frontier:
                frontier[h] = k
                bits[h] = used_bits(k)
                rank[h] = (_width(bits[h]), k.depth)
        if len(frontier) > MAX_PORTS:
            return None
    return None


MAX_SLICE_WALK = 1 << 16   # nodes :func:`_variable_slices` visits


def _to_slices(y) -> list:
    return [] if y.op in ("BVS", "BoolS") or (y.op == "Extract" and y.args[2].op == "BVS") else _children(y)


def _variable_slices(roots) -> list | None:
    """Ports when the search finds none: the variables and variable slices (``Extract`` of a
    variable) the roots use, if those of one variable are pairwise disjoint. Each byte of one wide
    input compared on its own (a chain of if-then-else over whole texts, as a model of ``strtod``
    returns) unfolds into more terms than the search keeps, but its bytes are few ports."""
    ports: dict = {}
    visited = 0
    for root in (x for x in roots if hasattr(x, "op") and x.variables):
        for y in dag_nodes(root, _to_slices):
            visited += 1
            if visited > MAX_SLICE_WALK:
                return None
            if y.op in ("BVS", "BoolS"):
                ports[y.hash()] = (y.args[0], 0, (y.length or 1) - 1, y)
            elif y.op == "Extract" and y.args[2].op == "BVS":
                ports[y.hash()] = (y.args[2].args[0], y.args[1], y.args[0], y)
    spans = sorted(ports.values(), key=lambda p: (p[0], p[1]))
    for a, b in itertools.pairwise(spans):
        if a[0] == b[0] and b[1] <= a[2]:
            return None
    return [p[3] for p in spans] if 0 < len(spans) <= MAX_PORTS else None


def _widest_clash(frontier: dict, bits: dict, rank: dict):
    """The widest term of ``frontier`` that is not a variable and shares input bits with another
    term; None if no two terms share bits, False if only variables do. Linear in the terms'
    variables: per variable, the bits used by two or more terms."""
    owners: dict = {}
    for h, b in bits.items():
        if h in frontier:
            for n, m in b.items():
                owners.setdefault(n, []).append((h, m))
    best = None
    clash = False
    for lst in owners.values():
        if len(lst) < 2:
            continue
        seen = dup = 0
        for _, m in lst:
            dup |= seen & m
            seen |= m
        if not dup:
            continue
        for h, m in lst:
            if m & dup:
                clash = True
                x = frontier[h]
                if x.op not in ("BVS", "BoolS") and (best is None or rank[h] > rank[best]):
                    best = h
    if best is None:
        return False if clash else None
    return frontier[best]


def _built_from(x, known: set) -> bool:
    """Whether ``x`` is a function of the terms whose hashes are ``known`` (and constants)."""
    stack, seen = [x], set()
    while stack:
        y = stack.pop()
        h = y.hash()
        if h in known or h in seen or not y.variables:
            continue
        seen.add(h)
        kids = _children(y) if y.op not in ("BVS", "BoolS") else []
        if not kids:
            return False
        stack.extend(kids)
    return True


def _through_ports(nodes: list, filters: list, bits: int) -> np.ndarray:
    """The rows of :func:`_enumerate_together` computed over the product of the images of the
    nodes' ports (:func:`_ports`) instead of over the input bits, when that product has fewer than
    ``2 ** bits`` rows: a 64-bit input xor-folded into an 11-bit index is 2048 rows, not 2 ** 44.
    A filter that is a function of the ports is checked on the rows; one that shares input bits
    with one port only (a byte of the fold kept printable) restricts that port's image instead;
    otherwise the filters take part in the port search."""
    canon = [canonical(x) for x in nodes]
    if any(x.length > 64 for x in canon if not isinstance(x, claripy.ast.Bool)):
        raise NoCut("a node wider than 64 bits")
    ports = _ports(canon)
    if ports is not None and filters:
        try:
            return _filtered_ports(canon, filters, ports, bits)
        except NoCut:
            pass
    if filters:
        ports = _ports([*canon, *filters])
    if ports is None:
        raise NoCut("no disjoint ports")
    if filters:
        try:
            return _filtered_ports(canon, filters, ports, bits)
        except NoCut:
            pass
    return _over_ports(canon, filters, ports, [() for _ in ports], bits)


def _filtered_ports(canon: list, filters: list, ports: list, bits: int) -> np.ndarray:
    """:func:`_over_ports` where a filter that is a function of the ports is checked on the rows
    and one that is not restricts the one port whose bits it shares; failing that, every filter
    on one port's bits alone restricts that port (a byte of a wide input kept to a few values,
    when the ports are the bytes: their product unfiltered is too large)."""
    known = {p.hash() for p in ports}
    for alone in (False, True):
        covered = [f for f in filters if _built_from(f, known) and not (alone and _on_one(f, ports))]
        own = _attach(ports, [f for f in filters if all(f is not c for c in covered)])
        if own is not None:
            try:
                return _over_ports(canon, covered, ports, own, bits)
            except NoCut:
                pass
    raise NoCut("filters that neither restrict one port nor are functions of the ports")


def _on_one(f, ports: list) -> bool:
    """Whether the filter ``f`` uses the input bits of one port alone (it then restricts that
    port's image, which is cheaper than checking it on the rows of the product)."""
    fb = used_bits(f)
    return sum(_overlap(fb, used_bits(p)) for p in ports) == 1


def _over_ports(canon: list, filters: list, ports: list, own: list, bits: int) -> np.ndarray:
    """The rows of ``canon`` over the product of the images of ``ports`` (each under its filters
    ``own``) on which ``filters`` hold; NoCut when the product has ``2 ** bits`` rows or more."""
    roots = [*canon, *filters]
    if len(ports) == 1 and len(roots) == 1 and ports[0].hash() == roots[0].hash():
        raise NoCut("the node is its own port")
    total = 1
    images = []
    for p, fs in zip(ports, own, strict=True):
        im = image(p, None, tuple(fs))
        images.append(im)
        total *= len(im)
        if total >= (1 << bits):
            raise NoCut("ports' product too large")
    idx = np.arange(total, dtype=np.uint64)
    ev = Evaluator.over({}, total, {}, shared=False)
    stride = 1
    for p, im in zip(ports, images, strict=True):
        col = column(p, im[(idx // np.uint64(stride)) % np.uint64(len(im))]) if len(im) else column(p, im)
        ev.cuts[p.hash()] = col
        if p.op in ("BVS", "BoolS"):
            ev.vars[p.args[0]] = col         # a whole variable is read as a variable, too
        stride *= max(1, len(im))
    return _rows(ev, total, canon, filters)


def _rows(ev, size: int, nodes: list, filters: list) -> np.ndarray:
    """The distinct rows of the values of ``nodes`` over the ``size`` rows of ``ev`` on which every
    constraint of ``filters`` holds."""
    mask = np.ones(size, dtype=bool)
    for c in filters:
        mask &= np.broadcast_to(ev.bool(c), mask.shape)
    out = [np.broadcast_to(np.asarray(ev.ev(x), dtype=np.uint64), mask.shape)[mask] for x in nodes]
    if not out:
        return np.zeros((1 if mask.any() else 0, 0), dtype=np.uint64)
    return unique_rows(out)


def image(x, demand: int | None = None, filters: tuple = ()) -> np.ndarray:
    """Every value the input-only node ``x`` takes (sorted, unique), computed exactly; with
    ``demand``, every value of ``x & demand`` (the bits a consumer reads: ``(a ^ b) & 0x7ff`` needs
    eleven bits of ``a`` and ``b``, not all of them); with ``filters`` (input-only constraints that
    share bits with ``x``), only over the inputs that satisfy them: ``b0 ^ b2`` with ``b0`` a letter."""
    full = 1 if isinstance(x, claripy.ast.Bool) else (1 << x.length) - 1
    demand = full if demand is None else demand & full
    filters = tuple(filters)
    cache = memo("narrow_cut.image", lambda: LRU(128))    # at most 2 MiB each
    key = (x.hash(), demand, tuple(f.hash() for f in filters))
    r = cache.lookup(key)
    if r is None:
        r = _image(x, demand, full, filters)
        if len(r) > MAX_IMAGE:
            r = False               # more values than any cut could use (and than a memo should keep)
        cache.put(key, r)
    if r is False:
        raise NoCut("image too large")
    return r


def _attach(parts: list, filters) -> list | None:
    """``filters`` distributed over ``parts`` (terms over pairwise disjoint input bits): the
    filters of each part, or None where that would not keep the parts independent (a filter
    sharing bits with no part or with several, or two parts' filters sharing bits)."""
    bits = [dict(used_bits(p)) for p in parts]
    own: list = [[] for _ in parts]
    for f in filters:
        fb = used_bits(f)
        hits = [i for i, b in enumerate(bits) if _overlap(fb, b)]
        if len(hits) != 1:
            return None
        own[hits[0]].append(f)
        for n, m in fb.items():
            bits[hits[0]][n] = bits[hits[0]].get(n, 0) | m
    if any(_overlap(a, b) for a, b in itertools.combinations(bits, 2)):
        return None
    return own


_filtered_image = image


def _column_values(rows: np.ndarray, d) -> np.ndarray:
    """The distinct values of the one column of ``rows``, masked by ``d`` (none if no row)."""
    if not len(rows):
        return np.zeros(0, dtype=np.uint64)
    return np.unique(rows[:, 0] & d)


def _fold(op, images: list, demand: int) -> np.ndarray:
    acc = images[0]
    for im in images[1:]:
        if len(acc) * len(im) > MAX_PRODUCT:
            raise NoCut("operand images too large")
        a, b = np.meshgrid(acc, im, indexing="ij")
        acc = np.unique(PAIRWISE[op](a.reshape(-1), b.reshape(-1)) & np.uint64(demand))
    return np.unique(acc & np.uint64(demand))


def _image(x, demand: int, full: int, filters: tuple = ()) -> np.ndarray:  # noqa: C901 - one rule per operation
    kids = _children(x) if x.op not in ("BVS", "BoolS") else []
    width = _width(_merged([x, *filters]))
    d = np.uint64(demand)
    if width <= MAX_BITS or not kids:
        if width > MAX_JOINT_BITS:
            raise NoCut("a filtered variable too wide to enumerate")
        return _column_values(_enumerate_together([x], list(filters)), d)
    if demand == 0 and not filters:
        return np.zeros(1, dtype=np.uint64)
    var_sets = [used_bits(k) for k in kids]
    independent = not any(_overlap(a, b) for a, b in itertools.combinations(var_sets, 2))
    own = _attach(kids, filters) if independent else None
    if filters and own is None:
        independent = False
    fs = {k.hash(): tuple(f) for k, f in zip(kids, own or [[] for _ in kids], strict=True)}

    def image(k, dem=None):         # a kid's image, under the filters attached to it
        return _filtered_image(k, dem, fs.get(k.hash(), ()))

    op, args = x.op, x.args
    if independent and not isinstance(x, claripy.ast.Bool):
        consts = [a for a in args if not (hasattr(a, "op") and a.variables)]
        if op in ("__xor__", "__or__", "__and__"):
            if op == "__and__":
                for c in consts:
                    demand &= c.args[0]
            ims = [image(k, demand) for k in kids]
            for c in consts:
                ims.append(np.array([c.args[0] & demand], dtype=np.uint64))
            return _fold(op, ims, demand)
        if op in ("__add__", "__mul__") and len(args) >= 2:
            low = _low(demand)
            ims = [image(k, low) for k in kids] + [np.array([c.args[0] & low], dtype=np.uint64) for c in consts]
            return _fold(op, ims, demand)
        if op == "__lshift__" and len(kids) == 1 and args[1].op == "BVV":
            c = args[1].args[0]
            if c >= x.length:
                return np.zeros(1, dtype=np.uint64)
            return np.unique((image(args[0], demand >> c) << np.uint64(c)) & d)
        if op == "LShR" and len(kids) == 1 and args[1].op == "BVV":
            c = args[1].args[0]
            if c >= x.length:
                return np.zeros(1, dtype=np.uint64)
            return np.unique((image(args[0], (demand << c) & full) >> np.uint64(c)) & d)
        if op == "ZeroExt":
            return image(args[1], demand & ((1 << args[1].length) - 1))
        if op == "Extract":
            hi, lo, inner = args
            return np.unique((image(inner, (demand << lo) & ((1 << inner.length) - 1)) >> np.uint64(lo)) & d)
        if op == "Concat" and x.length <= 64:
            ims, pos = [], x.length
            for a in args:
                pos -= a.length
                part = (demand >> pos) & ((1 << a.length) - 1)
                if hasattr(a, "op") and a.variables:
                    ims.append(image(a, part) << np.uint64(pos))
                else:
                    ims.append(np.array([(a.args[0] & part) << pos], dtype=np.uint64))
            return _fold("__or__", ims, demand)
    if not independent:
        if width <= MAX_JOINT_BITS:
            return _column_values(_enumerate_together([x], list(filters)), d)
        raise NoCut("operands share variables")
    images = [image(k) for k in kids]
    total = 1
    for im in images:
        total *= len(im)
    if total > MAX_PRODUCT:
        raise NoCut("operand images too large")
    grids = np.meshgrid(*images, indexing="ij")
    ev = Evaluator.over({}, total, {}, shared=False)
    ev.cuts = {k.hash(): column(k, g.reshape(-1)) for k, g in zip(kids, grids, strict=True)}
    return np.unique(np.broadcast_to(np.asarray(ev.ev(x), dtype=np.uint64), (total,)) & d)


def joint_image(nodes: list, filters: list) -> np.ndarray:
    """Rows (one column per node, in order) of the values ``nodes`` take together under the
    input-only constraints ``filters``; raises :class:`NoCut` when that is not computed exactly."""
    blocks = []
    order = []
    for group, fs in _components(nodes, filters):
        if len(group) == 1 and not fs:
            rows = image(group[0])[:, None]
        else:
            rows = _enumerate_together(group, fs)
        if not len(rows):
            return np.zeros((0, len(nodes)), dtype=np.uint64)
        blocks.append(rows)
        order += group
    total = 1
    for b in blocks:
        total *= len(b)
    if total > MAX_ROWS:
        raise NoCut("joint image too large")
    idx = np.meshgrid(*[np.arange(len(b)) for b in blocks], indexing="ij")
    cols = [b[i.reshape(-1)] for b, i in zip(blocks, idx, strict=True)]
    table = np.concatenate(cols, axis=1) if cols else np.zeros((1, 0), dtype=np.uint64)
    pos = {x.hash(): k for k, x in enumerate(order)}
    return table[:, [pos[x.hash()] for x in nodes]]
