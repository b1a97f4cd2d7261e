"""The ``profile`` patch set: the functions whose time :mod:`angr_ram.profile` attributes to its
sections (z3's own calls are timed by :mod:`angr_ram.z3_check`), timed only while the active run
is profiled."""

from __future__ import annotations

from .patches import PatchSet
from .plugins import object_store, query_cache, seeding, solver, substitution
from .plugins.memory import RelocatableMixin
from .profile import active, timed


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
    (solver.SubstitutingFrontend, "_query", "solver"),
    (seeding, "attempt", "seeding"),
)
for _owner, _name, _section in TIMED:
    PROFILE.patch(_owner, _name)(timed(_section))
