"""Incremental state merging (section 4 of the state-merging-with-quantifiers paper).

While a fragment's execution tree grows, every new node ``n1`` (a state after one step) is
compared with the earlier nodes at the same address and call stack. If a node ``n2`` that is not
an ancestor of ``n1`` has the same store as ``n1`` on the live registers and live frame bytes
(:mod:`.liveness`), both are replaced by one node under their lowest common ancestor ``lca``:

    state  = n1's state, path constraint  pc(lca) /\\ (tpc(lca, n1) \\/ tpc(lca, n2))

and the subtree below ``n2`` is dropped (the merged node explores it again, for both). The
highest such ``n2`` (closest to the root) is chosen. Internal nodes are snapshots: angr's engine
steps a copy of a state, so the state object of a stepped node is never changed again.

Candidates are indexed by address, call stack and a digest of the live registers' values, so a new
node is compared only with the earlier nodes that can match (equal live stores have equal digests).
Every comparison that does not end in a merge is counted by its first difference
(:attr:`Tree.refusals`: ``reg:<name>``, ``frame``, ``memory``, ``heap``, ``globals``, ``files``,
``lca``), which says why a loop does not merge.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import claripy

from angr_ram.merging.liveness import Live, Liveness
from angr_ram.merging.patches import byte_key
from angr_ram.posix.child_processes import process_key

NODE_KEY = "angr_ram_node"
MAX_MERGES_PER_SITE = 512     # guard against merge cycles: then the fragment stops merging there
RED_ZONE = 128                # bytes below the stack pointer a leaf function may use (System V)
MAX_FRAME = 4096              # frame bytes the candidate index reads at most


@dataclass(eq=False)
class Node:
    """A state of the fragment's execution tree."""

    id: int
    state: object
    parent: Node | None
    depth: int
    key: tuple
    live_digest: int | None = None
    children: list = field(default_factory=list)
    dead: bool = False

    def ancestors(self) -> set[int]:
        """Ids of this node and every node above it."""
        out, n = set(), self
        while n is not None:
            out.add(n.id)
            n = n.parent
        return out


def state_key(state) -> tuple:
    """Merge-compatibility key: address and call stack."""
    return (state.addr, tuple((f.func_addr, f.stack_ptr, f.ret_addr) for f in state.callstack))


class Tree:
    """The nodes of one fragment run and the incremental merges among them."""

    _ids = itertools.count(1)

    def __init__(self, liveness: Liveness, root_state):
        self.liveness = liveness
        self.nodes: dict[int, Node] = {}
        self.by_key: dict[tuple, list[Node]] = {}
        self.index: dict[tuple, list[Node]] = {}     # (key, live-register digest) -> nodes
        self.undigested: dict[tuple, list[Node]] = {}  # key -> nodes not in the index yet
        self.root = self.add(root_state, None)
        self.merges = 0
        self.compared = 0
        self.per_site: dict[tuple, int] = {}
        self.capped = 0
        self.refusals: dict[str, int] = {}

    def add(self, state, parent: Node | None) -> Node:
        """A new node for ``state`` (below ``parent``); the state remembers it."""
        n = Node(next(self._ids), state, parent, 0 if parent is None else parent.depth + 1, state_key(state))
        self.nodes[n.id] = n
        self.by_key.setdefault(n.key, []).append(n)
        self.undigested.setdefault(n.key, []).append(n)
        if parent is not None:
            parent.children.append(n)
        state.globals[NODE_KEY] = n.id
        return n

    def _digest(self, n: Node, live: Live) -> int:
        """Digest of ``n``'s live register values and live frame bytes between the stack pointer
        (less the red zone) and the frame's base (computed once per node), its index key."""
        if n.live_digest is None:
            st = n.state
            parts = [st.registers.load(off, size).hash()
                     for off, size in _ranges(live.regs & ~self.liveness.ip_mask, self.liveness.range_memo)]
            sp0, rsp = st.callstack.stack_ptr, st.regs.rsp
            if not rsp.symbolic and sp0:
                lo = max(rsp.concrete_value - RED_ZONE - sp0, -MAX_FRAME)
                mask = sum(1 << (o - lo) for o in range(lo, 0) if live.mem.live(o))
                parts.extend(st.memory.load(sp0 + lo + off, size, endness="Iend_BE").hash()
                             for off, size in _ranges(mask, self.liveness.range_memo))
            parts.extend(self._outside_frame(st, sp0))
            n.live_digest = hash(tuple(parts))
            self.index.setdefault((n.key, n.live_digest), []).append(n)
        return n.live_digest

    def _outside_frame(self, st, sp0: int) -> list:
        """The memory above the frame (caller frames, globals, heap) where ``st`` differs from the
        fragment's root: new pages by number, changed bytes by address and value. Stores that agree
        there differ from the root in the same places."""
        out = []
        page = st.memory.page_size
        root = self.root.state.memory
        for pageno, offs in sorted(st.memory.changed_pages(root).items()):
            if offs is None:
                out.append(pageno)
                continue
            for o in sorted(offs):
                a = pageno * page + o
                if a >= sp0:
                    out.append((a, byte_key(st.memory, a)))
        return out

    def node_of(self, state) -> Node | None:
        """The node a state was created as (None if it is not in this tree)."""
        nid = state.globals[NODE_KEY] if NODE_KEY in state.globals else None
        return self.nodes.get(nid)

    def alive(self, state) -> bool:
        """False if the state descends from a node that a merge replaced."""
        n = self.node_of(state)
        return n is not None and not n.dead

    def refuse(self, reason: str) -> None:
        """Count one comparison that did not merge, by its reason."""
        self.refusals[reason] = self.refusals.get(reason, 0) + 1

    # ------------------------------------------------------------------ merging
    def try_merge(self, n1: Node):
        """Merge the new node ``n1`` with the highest compatible node; the merged state or None.

        States that executed nothing since their parent (angr-ram's forking model re-executes an
        access in one copy per target; angr forks some SimProcedures the same way) are never
        merged: merging them would only undo the fork and repeat it forever.
        """
        if _refork(n1):
            return None
        if self.per_site.get(n1.key, 0) >= MAX_MERGES_PER_SITE:
            self.capped += 1
            return None
        if not any(n is not n1 and not n.dead for n in self.by_key.get(n1.key, ())):
            return None
        live = self.liveness.at(n1.state)
        if live is None:
            self.refuse("liveness-unknown")
            return None
        for n in self.undigested.pop(n1.key, ()):   # index the new nodes of this site (same live set)
            self._digest(n, live)
        cands = [n for n in self.index.get((n1.key, self._digest(n1, live)), ())
                 if n is not n1 and not n.dead and not _refork(n)]
        above = n1.ancestors()
        cands = [n for n in cands if n.id not in above]
        if not cands:
            self._why_no_match(n1, live, above)
            return None
        for n2 in sorted(cands, key=lambda n: n.depth):
            self.compared += 1
            why = live_store_difference(self.liveness, live, n1.state, n2.state)
            if why is None:
                merged = self._merge(n1, n2)
                if merged is not None:
                    return merged
                why = "lca"
            self.refuse(why)
        return None

    def _why_no_match(self, n1: Node, live: Live, above: set) -> None:
        """Count what keeps ``n1`` from the nearest earlier node at its site (one comparison, for
        the refusal statistics) when the index has no candidate."""
        near = [n for n in self.by_key[n1.key] if n is not n1 and not n.dead and n.id not in above
                and not _refork(n)]
        if near:
            n2 = max(near, key=lambda n: n.id)
            self.refuse(live_store_difference(self.liveness, live, n1.state, n2.state) or "index")

    def _merge(self, n1: Node, n2: Node):
        lca = n2.parent
        above = n1.ancestors()
        while lca is not None and lca.id not in above:
            lca = lca.parent
        if lca is None:
            return None
        base = lca.state
        if not _same_heap(base, n1.state):
            return None
        kinds = {type(st.solver._solver) for st in (base, n1.state, n2.state)}
        if len(kinds) != 1:
            return None                      # a nested fragment merged with quantifiers on one side
        seen = {c.hash() for c in base.solver.constraints}
        t1 = [c for c in n1.state.solver.constraints if c.hash() not in seen]
        t2 = [c for c in n2.state.solver.constraints if c.hash() not in seen]
        cond = claripy.Or(claripy.And(*t1) if t1 else claripy.true(), claripy.And(*t2) if t2 else claripy.true())
        merged = n1.state
        merged.solver._stored_solver = base.solver._solver.branch()
        merged.solver.add(cond)
        self._kill(n2)
        n1.dead = True
        self.merges += 1
        self.per_site[n1.key] = self.per_site.get(n1.key, 0) + 1
        node = self.add(merged, lca)
        node.depth = n2.depth
        return merged

    def _kill(self, n: Node) -> None:
        work = [n]
        while work:
            x = work.pop()
            x.dead = True
            work.extend(x.children)


def _refork(n: Node) -> bool:
    """True if ``n``'s state is a copy of its parent's with one more constraint (no step)."""
    p = n.parent
    return p is not None and p.key == n.key and n.state.history.depth == p.state.history.depth


def _same_heap(a, b) -> bool:
    """Both states have the same heap objects (angr-ram's address space), or neither has one."""
    ra, rb = a.plugins.get("ram"), b.plugins.get("ram")
    if ra is None or rb is None:
        return ra is rb
    return (ra.bindings is rb.bindings or ra.bindings == rb.bindings) and ra.objects.keys() == rb.objects.keys() \
        and all(ra.objects[i] is rb.objects[i] for i in ra.objects)


def _ranges(mask: int, memo: dict) -> list[tuple[int, int]]:
    """The runs of set bits of ``mask`` as (offset, length), memoized in ``memo``."""
    hit = memo.get(mask)
    if hit is None:
        hit, off = [], 0
        m = mask
        while m:
            if m & 1:
                start = off
                while m & 1:
                    m >>= 1
                    off += 1
                hit.append((start, off - start))
            else:
                low = (m & -m).bit_length() - 1
                m >>= low
                off += low
        memo[mask] = hit
    return hit


def _files(state) -> tuple:
    """Positions and contents of the standard streams (hashes)."""
    out = []
    posix = state.plugins.get("posix")
    if posix is None:
        return ()
    for fd in (0, 1, 2):
        f = posix.fd.get(fd)
        if f is None:
            out.append(None)
            continue
        for obj in (getattr(f, "file", None), getattr(f, "read_storage", None), getattr(f, "write_storage", None)):
            if obj is None:
                continue
            pos = getattr(obj, "pos", None)
            out.append(pos.hash() if isinstance(pos, claripy.ast.Base) else pos)
            content = getattr(obj, "content", None)
            if isinstance(content, list):
                out.append(tuple((d.hash() if isinstance(d, claripy.ast.Base) else d,
                                  z.hash() if isinstance(z, claripy.ast.Base) else z) for d, z in content))
    return tuple(out)


def live_store_difference(liveness: Liveness, live: Live, s1, s2) -> str | None:
    """None if ``s1`` and ``s2`` agree on every live register and live frame byte, on all other
    memory, the heap objects, the standard streams and the globals; else the first difference
    (``reg:<name>``, ``globals``, ``process``, ``heap``, ``files``, ``frame`` or ``memory``)."""
    for off, size in _ranges(live.regs & ~liveness.ip_mask, liveness.range_memo):
        if s1.registers.load(off, size).hash() != s2.registers.load(off, size).hash():
            for o in range(off, off + size):             # name the first differing register
                if s1.registers.load(o, 1).hash() != s2.registers.load(o, 1).hash():
                    return "reg:" + liveness.register_name(o)
            return "reg:" + liveness.register_name(off)
    g1 = {k: v for k, v in s1.globals.items() if not str(k).startswith("angr_ram_")}
    g2 = {k: v for k, v in s2.globals.items() if not str(k).startswith("angr_ram_")}
    if g1 != g2:
        return "globals"
    if process_key(s1) != process_key(s2):
        return "process"
    if not _same_heap(s1, s2):
        return "heap"
    if _files(s1) != _files(s2):
        return "files"
    sp0 = s1.callstack.stack_ptr
    page = s1.memory.page_size
    for pageno, offs in s1.memory.changed_pages(s2.memory).items():
        addrs = range(pageno * page, (pageno + 1) * page) if offs is None else (pageno * page + o for o in offs)
        for a in addrs:
            off = a - sp0
            if off >= 0:
                return "memory"
            if live.mem.live(off):
                return "frame"
    return None


def same_live_store(liveness: Liveness, live: Live, s1, s2) -> bool:
    """True if ``s1`` and ``s2`` agree on everything live (:func:`live_store_difference`)."""
    return live_store_difference(liveness, live, s1, s2) is None
