"""States as bytes: pickle a simulation manager's states without the run-wide objects they point to.

A state refers to objects that belong to its run, not to itself: the angr project and its loaded
binaries, and angr-ram's run scope, statistics, query cache, resolution and split policies. Pickled
as they are, they would travel with every state (the project is megabytes) and arrive as private
copies. :class:`StatePacker` pickles each of them as a *role* instead (``("project",)``,
``("scope",)``, ...) and, when unpickling, puts the receiving run's own object of that role in its
place: a state shipped to another process joins that process's run (its project, caches, counters).

The one run-wide table a state needs values from, the base-name -> object-size map that the
address-aware cache reads, travels as the entries of the state's own objects and is merged into the
receiver's map. Placeholders of quantified merging refer to a clause table and are refused.
"""

from __future__ import annotations

import inspect
import io
import pickle

from angr_ram.core.errors import AngrRamError
from angr_ram.merging import QuantifiedMerging
from angr_ram.run.technique import RelocatableMemory

_ROLES = ("stats", "scope", "cache", "model_policy", "splitter")


class StatePacker:
    """Pickles and unpickles the states of one simulation manager (its project and its
    RelocatableMemory technique, if any, are the run-wide objects that are replaced by roles)."""

    def __init__(self, simgr):
        if any(isinstance(t, QuantifiedMerging) for t in simgr._techniques):
            raise AngrRamError("states of a QuantifiedMerging run carry clauses of its run-wide table "
                               "and cannot be shipped to another process")
        self.project = simgr._project
        self.tech = next((t for t in simgr._techniques if isinstance(t, RelocatableMemory)), None)
        self._by_role: dict[tuple, object] = {}
        self._add(("project",), self.project)
        loader = self.project.loader
        self._add(("loader",), loader)
        self._add(("clemory",), loader.memory)
        for i, obj in enumerate(loader.all_objects):
            self._add(("binary", i), obj)
            if getattr(obj, "memory", None) is not None:
                self._add(("binary-memory", i), obj.memory)
        self._add(("simos",), self.project.simos)
        if self.tech is not None:
            for role in _ROLES:
                if getattr(self.tech, role) is not None:
                    self._add((role,), getattr(self.tech, role))
        self._roles = {id(obj): role for role, obj in self._by_role.items()}
        self.bytes_out = 0
        self.states_out = 0

    def _add(self, role: tuple, obj) -> None:
        self._by_role[role] = obj

    # ------------------------------------------------------------------ out
    def dumps(self, state, trim_history: bool = True) -> bytes:
        """``state`` as bytes; ``trim_history`` drops its ancestry (the parents' histories), which
        angr-ram's outcomes and error reports do not read."""
        if trim_history:        # angr's history.trim() registers on the history's own state, which may be a sibling
            h = state.history.copy({})
            h.parent = None
            vars(state).setdefault("history", state.history)    # an unpickled state holds it in its hub only
            state.register_plugin("history", h)
        sizes = self._base_sizes(state)
        roles = self._roles
        base_sizes = self.tech.base_sizes if self.tech is not None else None

        class _Pickler(pickle.Pickler):
            def persistent_id(self, obj):
                if base_sizes is not None and obj is base_sizes:
                    return ("base_sizes", sizes)
                return roles.get(id(obj))

        buf = io.BytesIO()
        _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
        data = buf.getvalue()
        self.bytes_out += len(data)
        self.states_out += 1
        return data

    def _base_sizes(self, state) -> dict[str, int]:
        if self.tech is None or not state.has_plugin("ram"):
            return {}
        known = self.tech.base_sizes
        return {o.name: known[o.name] for o in state.ram.objects.values()
                if o.name is not None and o.name in known}

    # ------------------------------------------------------------------ in
    def loads(self, data: bytes):
        """The state pickled in ``data``, joined to this packer's run."""
        by_role, tech = self._by_role, self.tech

        class _Unpickler(pickle.Unpickler):
            def persistent_load(self, pid):
                if pid[0] == "base_sizes":
                    if tech is None:
                        raise AngrRamError("an angr-ram state cannot join a stock-angr run")
                    tech.base_sizes.update(pid[1])
                    return tech.base_sizes
                try:
                    return by_role[pid]
                except KeyError:
                    raise AngrRamError(f"the receiving run has no {pid[0]!r}: a state of an angr-ram run "
                                       "can only join a run with the same engine and options") from None

        return _Unpickler(io.BytesIO(data)).load()


def prime_continuations(project) -> int:
    """Give every continuation a hooked SimProcedure may return to (the methods its class defines
    besides ``run``) its extern address now, in address order, and return how many were made.

    angr allocates a continuation's address on first use, so two processes that load the same binary
    would otherwise number them in the order their paths met them, and a return address pushed in
    one process would name another procedure in the other. Primed right after the hooks are
    installed, every process of a run has the same continuations at the same addresses.
    """
    import angr
    base = set(dir(angr.SimProcedure))
    made = 0
    for addr in sorted(project._sim_procedures):
        proc = project._sim_procedures[addr]
        if proc.is_continuation or proc.canonical is not proc:
            continue
        names = sorted(n for n, _ in inspect.getmembers(type(proc), inspect.isfunction)
                       if n not in base and not n.startswith("_"))
        if names and proc.project is None:
            proc.project = project      # what angr gives the procedure when it first runs
        for name in names:
            if name not in proc.continuations:
                proc.make_continuation(name)
                made += 1
    return made
