"""The angr stubs a path went through, so that no result that depends on one is silently wrong.

Loaded without its libraries, a program's imports are hooked with angr's SimProcedures; a
function angr has no model of gets a *stub*, ``ReturnUnconstrained`` (any return value, no
effect): ``setlocale``, ``bindtextdomain``, ``getopt_long``... A path through a stub may not
replay natively (Debian's ``base64`` under angr takes its usage path on every input). Each state
carries the names of the stubs its path called (:class:`StubTrail`, merged as a union); the run's
summary and every test name them."""

from __future__ import annotations

from angr import SimStatePlugin

PLUGIN = "ram_stubs"
STUB_TYPES = frozenset({"ReturnUnconstrained", "UnresolvableCallTarget", "UnresolvableJumpTarget"})


def stub_addresses(project) -> dict[int, str]:
    """Hooked address -> function name, for every hook that is an angr stub."""
    out = {}
    for addr, proc in project._sim_procedures.items():
        if getattr(proc, "is_stub", False) or type(proc).__name__ in STUB_TYPES:
            out[addr] = proc.display_name or type(proc).__name__
    return out


class StubTrail(SimStatePlugin):
    """The names of the stubs a path called (a frozenset: copies share it until one adds a name)."""

    def __init__(self, names=frozenset()):
        super().__init__()
        self.names = frozenset(names)

    @SimStatePlugin.memo
    def copy(self, memo):  # pylint: disable=unused-argument
        return StubTrail(self.names)

    def merge(self, others, merge_conditions, common_ancestor=None):  # pylint: disable=unused-argument
        names = self.names.union(*(o.names for o in others))
        changed, self.names = names != self.names, names
        return changed

    def widen(self, others):
        return self.merge(others, None)


def record(state, name: str) -> None:
    """Note that ``state``'s path called the stub ``name``."""
    trail = state.plugins.get(PLUGIN)
    if trail is None:
        state.register_plugin(PLUGIN, StubTrail({name}))
    elif name not in trail.names:
        trail.names = trail.names | {name}


def stubs_of(state) -> frozenset:
    """The stubs ``state``'s path called."""
    trail = state.plugins.get(PLUGIN)
    return trail.names if trail is not None else frozenset()
