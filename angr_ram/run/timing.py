"""The ``profile`` patch set: the functions whose time :mod:`angr_ram.core.profile` attributes to its
sections (z3's own calls are timed by :mod:`angr_ram.solver.z3_check`), timed only while the active run
is profiled."""

from __future__ import annotations

from angr_ram.core.patches import PatchSet
from angr_ram.core.profile import active, timed
from angr_ram.memory import object_store
from angr_ram.memory.relocatable import RelocatableMixin
from angr_ram.solver import chain, query_cache, seeding, substitution


def _profiling() -> bool:
    return active() is not None


PROFILE = PatchSet("profile", _profiling)

TIMED = (
    (RelocatableMixin, "load", "memory"), (RelocatableMixin, "store", "memory"),
    (RelocatableMixin, "_resolve", "resolution"),
    (object_store.ObjectStore, "read", "store"), (object_store.ObjectStore, "write", "store"),
    (substitution.Substitution, "__call__", "substitution"), (substitution.Substitution, "many", "substitution"),
    (query_cache.QueryCache, "satisfiable", "cache"), (query_cache.QueryCache, "model", "cache"),
    (query_cache.QueryCache, "solutions", "cache"),
    (chain.RunLayer, "ask", "solver"),
    (seeding, "attempt", "seeding"),
)
for _owner, _name, _section in TIMED:
    PROFILE.patch(_owner, _name)(timed(_section))
