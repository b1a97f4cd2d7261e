"""``QuantifiedMerging``: an exploration technique that merges the states leaving a fragment.

``mode="ite"`` is standard state merging (Definition 2.1 of the state-merging-with-quantifiers
paper): the leaves of one fragment run that reach the same exit are merged into one state whose
path constraint is ``pc_root /\\ (tpc_1 \\/ ... \\/ tpc_n)`` and whose registers and memory are
if-then-else chains over the tree path conditions.

``mode="pat"`` is pattern-based merging (sections 3.1-3.3): the leaves' words are partitioned by
regular patterns ``(w1, w2, w3)``; for each partition a formula pattern is synthesised and the
merged path constraint becomes ``pc_root /\\ phi1 /\\ k in {k_j} /\\ forall i <= k. phi2(i) /\\ phi3(k)``
(a quantified clause, :mod:`.quantified`); registers and memory become ``a*k + b`` where the
leaves' values are linear in ``k_j``, else if-then-else over ``k == k_j``. Leaves without a pattern
fall back to standard merging.

A pattern merge is kept only when it is smaller (``patterns="smaller"``, the default): the merged
states it gives (one per pattern, plus the leaves no pattern matches) have fewer path-constraint
nodes together than the one ``ite`` merge of the same leaves. Otherwise the patterns cost without
paying back: each merged state runs the rest of the program on its own, and every query of a
pattern-merged state goes through the quantified solving procedure. A loop whose leaves a few
patterns cover (a span, a digit loop) keeps them; patterns of two leaves each, with most leaves
left over (strtok's delimiter scan), do not. ``patterns="always"`` merges with every pattern found,
as the paper does.
"""

from __future__ import annotations

import inspect
import itertools

import claripy
from angr import ExplorationTechnique, sim_options
from angr.errors import SimMergeError
from angr.storage.file import SimPackets

from angr_ram.core.context import setting
from angr_ram.core.dag import count_nodes
from angr_ram.core.engines import EngineCache
from angr_ram.core.errors import AngrRamError, ForkRequest
from angr_ram.core.option_docs import parameters_doc
from angr_ram.core.scope import RunScope
from angr_ram.memory.extended_precision import ExtendedPrecisionMixin
from angr_ram.memory.strategies.fork import value_forking
from angr_ram.memory.uninitialized import apply_uninitialized, check_uninitialized
from angr_ram.merging.clauses import PREFIX, ClauseTable, QuantifiedClause, SolveSettings
from angr_ram.merging.fragment_budget import MAX_FRAGMENT_STATES, FragmentBudget
from angr_ram.merging.fragments import FRAGMENT_KEY, WAIT_STASH, Fragment, resolve_merge_points
from angr_ram.merging.fragments import TERMINAL_STASHES as _TERMINAL
from angr_ram.merging.frontend import QuantifiedFrontend
from angr_ram.merging.incremental import NODE_KEY, Tree
from angr_ram.merging.liveness import Liveness
from angr_ram.merging.merge_stats import MergeStats
from angr_ram.merging.options import MERGE_OPTIONS
from angr_ram.merging.patches import LINEAR, LINEAR_K, MEMORY_DIFF, STABLE_UNINIT, UNINIT
from angr_ram.merging.patterns import ShapeHasher, formula_patterns, regular_partitions
from angr_ram.merging.policies import MODES, PATTERN_POLICIES, tpc
from angr_ram.merging.synthesis import family_of
from angr_ram.merging.validation import check_theorem
from angr_ram.posix.child_processes import process_key
from angr_ram.posix.installation import install_procedures
from angr_ram.procedures.libc import FORMAT, RamLibcStartMain
from angr_ram.solver import patches as solver_patches
from angr_ram.solver.frontends import adopt
from angr_ram.solver.z3_setup import quiet_half_built_z3_objects

MAX_PARTITIONS_TRIED = 16   # regular partitions whose formula patterns are tried per merge, best first


# the patch sets (angr_ram.core.patches) in place while QuantifiedMerging works: z3's check, claripy's
# z3 backend, format arguments, and the merge's own (pages' differences, unwritten bytes, linear
# value merges)
PATCH_SETS = (*solver_patches.NAMES, *(s.name for s in (FORMAT, MEMORY_DIFF, UNINIT, LINEAR)))
# alone, its states are stepped with x87 extended loads and stores (RelocatableMemory's engine has them)
ENGINE_MIXINS = ((), (ExtendedPrecisionMixin,))


def _heap_signature(state) -> tuple:
    """Identity of angr-ram's heap objects: only states with the same heap are merged (angr-ram's
    address space refuses others)."""
    ram = state.plugins.get("ram")
    if ram is None:
        return ()
    return id(ram.bindings), tuple(sorted((k, id(v)) for k, v in ram.objects.items()))


class _Guard:
    """A merge condition in the form ``SimState.merge`` expects (it calls ``to_claripy``)."""

    def __init__(self, ast):
        self.ast = ast

    def to_claripy(self):
        """The condition as a claripy AST."""
        return self.ast


def _packet_widths(state) -> tuple:
    """The widths of the packets of ``state``'s packet streams: angr's merge of two streams whose
    packets differ in width fails inside claripy (a width mismatch, not a SimMergeError)."""
    files = [state.posix.stdin, state.posix.stdout, state.posix.stderr] if state.has_plugin("posix") else []
    return tuple((f.name, tuple(len(data) for data, _ in f.content)) for f in files if isinstance(f, SimPackets))


def _merge(states: list, conds: list, ancestor):
    """angr's merge of ``states``, the i-th under ``conds[i]``, since ``ancestor``. angr's history
    plugin would z3-simplify each state's recent constraints for the merged event log
    (``SIMPLIFY_MERGED_CONSTRAINTS``), which no path constraint uses: a fifth of a merge-heavy
    run (rle, M = 10). The merged state keeps the option off."""
    if len({_packet_widths(s) for s in states}) > 1:
        raise SimMergeError("packets of different widths")
    states[0].options.discard(sim_options.SIMPLIFY_MERGED_CONSTRAINTS)
    merged, _, _ = states[0].merge(*states[1:], merge_conditions=[[_Guard(c)] for c in conds],
                                   common_ancestor=ancestor)
    return merged


class QuantifiedMerging(FragmentBudget, ExplorationTechnique):
    """Merge the states that leave a merge point (a function or a loop) at the same exit.

    The parameters below are written from :data:`angr_ram.merging.options.MERGE_OPTIONS` when this
    module is imported (the options reference in ``docs/reference/options.md`` prints the same text).
    """

    def __init__(self, mode: str = "ite", merge_points=(), max_patterns: int = 10, validate: bool = False,
                 incremental: bool | None = None, patterns: str = "smaller", uninitialized: str | None = None,
                 solving: SolveSettings | None = None, max_fragment_states: int | None = MAX_FRAGMENT_STATES):
        super().__init__()
        if max_fragment_states is not None and max_fragment_states < 2:
            raise AngrRamError(f"max_fragment_states must be at least 2 (or None), not {max_fragment_states}")
        self.max_fragment_states = max_fragment_states
        self._given_up: set = set()        # merge points whose fragments grew beyond the bound
        self.uninitialized = None if uninitialized is None else check_uninitialized(uninitialized)
        if mode not in MODES:
            raise AngrRamError(f"unknown merging mode {mode!r}; supported: {', '.join(MODES)}")
        if patterns not in PATTERN_POLICIES:
            raise AngrRamError(f"unknown pattern policy {patterns!r}; supported: {', '.join(PATTERN_POLICIES)}")
        self.patterns = patterns
        self.pattern_policy = PATTERN_POLICIES[patterns]
        self.mode = mode
        self.merge_mode = MODES[mode]
        self.max_patterns = max_patterns
        self.validate = validate
        self.incremental = self.merge_mode.incremental if incremental is None else bool(incremental)
        self._liveness: Liveness | None = None
        self._spec = merge_points
        self.entries: dict = {}
        self._fragments: dict[int, Fragment] = {}
        self._ids = itertools.count(1)
        self.stats = MergeStats()
        if solving is not None and not isinstance(solving, SolveSettings):
            raise AngrRamError(f"solving must be a SolveSettings, not {type(solving).__name__}")
        self.table = ClauseTable(validate, self.stats.solve, solving)
        self.scope = RunScope(patch_sets=PATCH_SETS)
        quiet_half_built_z3_objects()
        self._engines = EngineCache(*ENGINE_MIXINS)

    def __repr__(self) -> str:
        st = self.stats
        return (f"<QuantifiedMerging mode={self.mode} merge_points={list(self._spec)!r} "
                f"incremental={self.incremental}: {st.fragments} fragments, {st.merges_ite} ite merges, "
                f"{st.merges_pat} pattern merges, {st.incremental} incremental merges>")

    def setup(self, simgr):
        proj = simgr._project
        if not any(getattr(t, "forks_values", False) for t in simgr._techniques):
            # alone: angr-ram's libc models (angr's stubs gave a wide-stream program an unconstrained
            # FILE * forever), but angr's heap, as there is no ram plugin for angr-ram's objects; a
            # RelocatableMemory attached after this installs its own set over these
            install_procedures(proj, heap=False)
        self.entries = resolve_merge_points(proj, self._spec)
        if proj.loader.find_symbol("__libc_start_main") is not None:
            # main's return value is the exit code (stock angr exits with 0): a merged path's
            # outcomes are compared with the program's, alone as under RelocatableMemory
            hooked = proj.hooked_by(proj.loader.find_symbol("__libc_start_main").rebased_addr)
            if not isinstance(hooked, RamLibcStartMain):
                proj.hook_symbol("__libc_start_main", RamLibcStartMain(display_name="__libc_start_main"), replace=True)
        simgr.stashes.setdefault(WAIT_STASH, [])
        for state in (s for stash in simgr.stashes.values() for s in stash):
            adopt(state)        # stock angr's frontends: angr-ram's, with the exact model cache
        if self.incremental:
            self._liveness = Liveness(simgr._project)

    def step(self, simgr, stash="active", **kwargs):
        self.scope.begin()      # the patch sets stay in place until the run ends (complete)
        with self.scope.active():
            return self._step(simgr, stash, **kwargs)

    def step_state(self, simgr, state, **kwargs):
        """Alone (no RelocatableMemory, which does this itself): a procedure that must know a
        symbolic value (``printf("%d", n)``) forks the state once per value, as under
        RelocatableMemory; stock angr printed one arbitrary value, so a merged path printed
        the same digits for every exit code."""
        ram = next((t for t in simgr._techniques if getattr(t, "forks_values", False)), None)
        if ram is not None:
            if self.uninitialized is not None and self.uninitialized != ram.uninitialized:
                raise AngrRamError(f"QuantifiedMerging(uninitialized={self.uninitialized!r}) differs from "
                                   f"RelocatableMemory(uninitialized={ram.uninitialized!r}); give it there only")
            return simgr.step_state(state, **kwargs)
        apply_uninitialized(state, self.uninitialized or "auto")
        try:
            with value_forking():
                return simgr.step_state(state, **self._engines.step_args(simgr, kwargs))
        except ForkRequest as fr:
            return {None: [t.fork(state) for t in fr.targets]}

    def _step(self, simgr, stash, **kwargs):
        simgr = simgr.step(stash=stash, **kwargs)
        if stash != "active":
            return simgr
        running = []
        merged = False
        for s in simgr.active:
            fid = s.globals[FRAGMENT_KEY] if FRAGMENT_KEY in s.globals else None
            if fid is None:
                if self._opens(s.addr):
                    self._open(s, None)
                running.append(s)
                continue
            fr = self._fragments.get(fid)
            tree = fr.tree if fr is not None else None
            if tree is not None and not tree.alive(s):
                continue                     # its ancestor was merged away: the merged state redoes it
            if fr is not None and fr.is_leaf(s):
                fr.leaves.append(s)
                simgr.stashes[WAIT_STASH].append(s)
                continue
            if tree is not None:
                n1 = tree.add(s, tree.node_of(s))
                if tree.try_merge(n1) is not None:
                    self.stats.incremental += 1
                    merged = True
            if fr is not None and self._nests(s, fr):
                self._open(s, fr)
            running.append(s)
        simgr.stashes["active"] = running
        if merged:
            self._drop_replaced(simgr)
        if self.max_fragment_states is not None:
            self._give_up_big(simgr)
        self._close_finished(simgr)
        if not simgr.active:
            self._resume_set_aside(simgr)
        return simgr

    def _resume_set_aside(self, simgr) -> None:
        """With no state running, let the other techniques resume the states they set aside
        (:meth:`angr_ram.RelocatableMemory.resume_deferred`: paths deferred for a slow z3 call).
        They do so when a step leaves nothing active, but their step ends before this one moves the
        leaves to the waiting stash; without this, a deferred state's fragment never closes, its
        leaves wait forever and the run ends with their outcomes missing."""
        for tech in simgr._techniques:
            resume = getattr(tech, "resume_deferred", None)
            if tech is not self and resume is not None:
                resume(simgr)

    def _nests(self, state, fr: Fragment) -> bool:
        """True if ``state`` (running in ``fr``) enters another merge point: in a function called
        from the fragment, or a loop of the fragment's own function entered from outside that loop
        (an inner loop, reached from the outer loop's body). It then opens a nested fragment, whose
        merged states go on in ``fr``: the inner loop's exits are merged once per outer iteration,
        so an outer loop whose inner loop leaves in several ways (a run length, a search over a
        delimiter set) keeps one state per exit instead of multiplying them iteration by
        iteration."""
        point = self.entries.get(state.addr)
        if point is None or point is fr.point or point in self._given_up:
            return False
        depth = len(state.callstack)
        if depth > fr.depth:
            return True
        if depth < fr.depth or point.kind != "loop":
            return False
        came_from = state.history.addr
        return came_from is None or not point.inside(came_from)

    def _close_finished(self, simgr) -> None:
        """Close every fragment with no state left running in it or in a fragment nested in it
        (innermost first); their merged states go on in the enclosing fragment, if any."""
        while True:
            live: set[int] = set()
            for name, states in simgr.stashes.items():
                if name in _TERMINAL:
                    continue
                for s in states:
                    fid = s.globals[FRAGMENT_KEY] if FRAGMENT_KEY in s.globals else None
                    while fid is not None and fid not in live:
                        live.add(fid)
                        fr = self._fragments.get(fid)
                        fid = fr.parent if fr is not None else None
            parents = {fr.parent for fr in self._fragments.values()}
            done = [f for f in self._fragments if f not in live and f not in parents]
            if not done:
                return
            for fid in done:
                fr = self._fragments.pop(fid)
                waiting = {id(s) for s in fr.leaves}
                simgr.stashes[WAIT_STASH] = [s for s in simgr.stashes[WAIT_STASH] if id(s) not in waiting]
                outer = self._fragments.get(fr.parent) if fr.parent is not None else None
                for s in self._close(fr):
                    self._place(simgr, s, fr, outer)

    def _place(self, simgr, state, inner: Fragment, outer: Fragment | None) -> None:
        """Put a state that left the fragment ``inner`` back into its enclosing fragment ``outer``
        (as a leaf of it, if it left that one too), or outside any fragment."""
        if outer is None:
            if self._opens(state.addr):
                self._open(state, None)
            simgr.stashes["active"].append(state)
            return
        state.globals[FRAGMENT_KEY] = outer.id
        if outer.tree is not None:
            state.globals[NODE_KEY] = inner.parent_node
            if not outer.tree.alive(state):
                return                       # the node it entered from was merged away
        if outer.is_leaf(state):
            outer.leaves.append(state)
            simgr.stashes[WAIT_STASH].append(state)
            return
        if self._nests(state, outer):
            self._open(state, outer)
        simgr.stashes["active"].append(state)

    def complete(self, simgr):
        if not simgr.active:        # nothing left to step: the run's patch sets are let go
            self.scope.end()
        return False

    # ------------------------------------------------------------------ fragments
    def _open(self, state, outer: Fragment | None) -> None:
        fid = next(self._ids)
        node = state.globals[NODE_KEY] if outer is not None and NODE_KEY in state.globals else None
        state.globals[FRAGMENT_KEY] = fid
        root = state.copy()
        fr = Fragment(fid, self.entries[state.addr], root, state.callstack.ret_addr, len(state.callstack),
                      parent=outer.id if outer is not None else None, parent_node=node)
        if self._liveness is not None:
            fr.tree = Tree(self._liveness, root)
            state.globals[NODE_KEY] = fr.tree.root.id
        self._fragments[fid] = fr
        self.stats.fragments += 1
        self.stats.nested_fragments += outer is not None

    def _drop_replaced(self, simgr) -> None:
        """Remove the states (running, waiting or finished) below nodes that a merge replaced."""
        def keep(s):
            fid = s.globals[FRAGMENT_KEY] if FRAGMENT_KEY in s.globals else None
            fr = self._fragments.get(fid) if fid is not None else None
            return fr is None or fr.tree is None or fr.tree.alive(s)

        for name in list(simgr.stashes):
            states = simgr.stashes[name]
            kept = [s for s in states if keep(s)]
            if len(kept) != len(states):
                simgr.stashes[name] = kept
        for fr in self._fragments.values():
            if fr.tree is not None:
                fr.leaves = [s for s in fr.leaves if fr.tree.alive(s)]

    def _close(self, fr: Fragment) -> list:
        """Merge the leaves of a finished fragment run, one merged state per exit."""
        if fr.tree is not None:
            self.stats.incremental_compared += fr.tree.compared
            self.stats.incremental_capped += fr.tree.capped
            for why, c in fr.tree.refusals.items():
                self.stats.incremental_refused[why] = self.stats.incremental_refused.get(why, 0) + c
        groups: dict[tuple, list] = {}
        for s in fr.leaves:
            groups.setdefault((s.addr, tuple(f.func_addr for f in s.callstack), _heap_signature(s), process_key(s)),
                                  []).append(s)
        out = []
        for leaves in groups.values():
            # a leaf merged with quantifiers in a nested fragment first: its frontend merges the others
            leaves.sort(key=lambda st: not isinstance(st.solver._solver, QuantifiedFrontend))
            self.stats.leaves += len(leaves)
            for s in leaves:
                del s.globals._backer[FRAGMENT_KEY]
                s.globals._backer.pop(NODE_KEY, None)
            if len(leaves) == 1:
                out.append(leaves[0])
                continue
            try:
                # a nested fragment merges with if-then-else only: its merged states go on in the
                # enclosing fragment, whose merge conditions would put a quantified placeholder
                # under a disjunction, where the solving procedure cannot keep it exact
                pat = self.merge_mode.patterns and fr.parent is None
                out.extend(self._merge_pat(fr, leaves) if pat else [self._merge_ite(fr, leaves)])
            except SimMergeError:
                self.stats.merge_refused += 1        # a plugin cannot merge them: keep every leaf
                out.extend(leaves)
        return out

    def _merge_ite(self, fr: Fragment, leaves: list, tails: list | None = None, nodes: int | None = None):
        """Standard merging: ``pc_root /\\ Or(tpc_j)``, values as ITE over the tpc_j (``tails``: the
        leaves' tails when the caller has them; ``nodes``: the disjunction's size when it has that)."""
        tpcs = [tpc(t) for t in (tails if tails is not None else [fr.tail(s) for s in leaves])]
        with setting(STABLE_UNINIT, True):
            merged = _merge(leaves, tpcs, fr.root)
        self.stats.merges_ite += 1
        self.stats.merged_states += len(leaves)
        self.stats.constraint(nodes if nodes is not None else count_nodes(claripy.Or(*tpcs)))
        return merged

    # ------------------------------------------------------------------ pattern-based merging
    def _merge_pat(self, fr: Fragment, leaves: list) -> list:
        """Pattern-based merging of one exit's leaves (standard merging where no pattern fits)."""
        tails = [fr.tail(s) for s in leaves]
        sh = ShapeHasher()
        prepared = "no-regular-partition"
        if any(v.startswith(PREFIX) for t in tails for c in t for v in c.variables):
            prepared = "nested-quantified"   # a clause inside a clause: standard merging keeps it exact
        ranked = [] if prepared == "nested-quantified" else \
            regular_partitions([sh.word(t) for t in tails], max_patterns=self.max_patterns)
        for tried, rp in enumerate(ranked):
            if tried == MAX_PARTITIONS_TRIED:
                break
            prepared = formula_patterns(tails, rp)
            if not isinstance(prepared, str):
                break
        if isinstance(prepared, str):
            self.stats.declined(prepared)
            return [self._merge_ite(fr, leaves, tails)]
        phi1, phi2, groups = prepared
        members = {}
        for t in tails:
            for c in t:
                for leaf in c.leaf_asts():
                    if leaf.op == "BVS":
                        f = family_of(leaf.args[0])
                        if f is not None:
                            members[(f[0], f[1], leaf.length)] = leaf
        found, rest = [], []
        for group, phi3 in groups:
            if len(group) == 1 or phi3 is None:
                rest.extend(i for i, _ in group)     # no formula pattern: standard merging, below
                continue
            ks = tuple(k for _, k in group)
            found.append((group, QuantifiedClause(k=claripy.BVS("qm_k", 64), ks=ks, phi1=phi1, phi2=phi2,
                                                  phi3=phi3, members=members)))
        ite_nodes = self.pattern_policy.ite_instead(tails, [c for _, c in found], rest) if found else None
        if ite_nodes is not None:
            self.stats.declined("larger-than-ite")
            return [self._merge_ite(fr, leaves, tails, ite_nodes)]
        out = []
        for group, clause in found:
            states = [leaves[i] for i, _ in group]
            self.stats.patterns += 1
            clause = self.table.register(clause)
            k, ks = clause.k, clause.ks
            conds = [k == kj for kj in ks]
            with setting(LINEAR_K, (k, {c.hash(): kj for c, kj in zip(conds, ks, strict=True)})), \
                    setting(STABLE_UNINIT, True):
                merged = _merge(states, conds, fr.root)
            inner = fr.root.solver._solver
            inner = inner.inner if isinstance(inner, QuantifiedFrontend) else inner
            fe = inner.branch()
            fe.add([clause.placeholder])
            merged.solver._stored_solver = QuantifiedFrontend(fe, self.table)
            self.stats.merges_pat += 1
            self.stats.merged_states += len(states)
            self.stats.constraint(clause.size())
            if self.validate:
                check_theorem(clause, merged, [tails[i] for i, _ in group], states)
            out.append(merged)
        if len(rest) > 1:
            self.stats.declined("residual")
            out.append(self._merge_ite(fr, [leaves[i] for i in rest], [tails[i] for i in rest]))
        else:
            out.extend(leaves[i] for i in rest)
        return out


QuantifiedMerging.__doc__ += "\n" + parameters_doc(
    MERGE_OPTIONS, {k: p.default for k, p in inspect.signature(QuantifiedMerging.__init__).parameters.items()})
