"""Signals raised by angr-ram's memory layer and the records kept for error paths.

:class:`ForkRequest` and :class:`MemoryFault` derive from plain ``Exception`` on purpose: angr's
engines and simulation manager swallow ``SimError``/``AngrError``/``ClaripyError``, and these must
reach :class:`angr_ram.RelocatableMemory`, which turns them into forks and error paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class AngrRamError(Exception):
    """Base class of angr-ram's own errors (bad options, unsupported binaries)."""


class UnsupportedBinary(AngrRamError):
    """The binary cannot be analysed by angr-ram (missing, not ELF, not x86-64)."""


@dataclass
class Target:
    """One way a memory operation can go: its constraint, and an error description if it faults."""

    constraint: object                 # claripy Bool, relocation-safe where the target is an object
    kind: str = "object"               # object | region | error | value
    error: str | None = None           # error kind for kind == "error"
    message: str = ""
    obj_id: int | None = None
    # (key, value) the fork finds in its ``globals`` when it re-executes the step: what the call that
    # asked for the fork already knows of this way (strtod's text), so it is not worked out again
    hint: tuple | None = None

    def fork(self, state):
        """A copy of ``state`` that goes this way: the constraint added, the hint left."""
        s = state.copy()
        s.add_constraints(self.constraint)
        if self.hint is not None:
            s.globals[self.hint[0]] = self.hint[1]
        return s


@dataclass(frozen=True)
class CallHint:
    """What a call that forks by value leaves each fork, so the fork's re-execution of the call does
    not work it out again (strtod's text, a libm result). The call is identified by the step's depth,
    its address and its arguments' ASTs; ``key`` names the kind of value in ``globals``."""

    key: str

    @staticmethod
    def identity(state, *args) -> tuple:
        return (state.history.depth, state.addr, tuple(a.hash() for a in args))

    def take(self, state, ident):
        """The value left for this call by the fork that made ``state`` (removed), or None."""
        hint = state.globals.pop(self.key, None)
        return hint[1] if hint is not None and hint[0] == ident else None

    def target(self, constraint, ident, value) -> Target:
        """The way where ``constraint`` holds, its fork finding ``value`` for this call."""
        return Target(constraint, "value", hint=(self.key, (ident, value)))


class ForkRequest(Exception):  # noqa: N818 - a control-flow signal, not an error
    """Raised inside a step: the state must be forked once per target and each fork re-executed."""

    def __init__(self, targets: list[Target], what: str, constraints: tuple = ()):
        super().__init__(what)
        self.targets = targets
        self.what = what
        # the path constraints of the in-step state that raised it (guards of earlier exits of
        # the block): error forks get them too, so their input is a model of exactly that path
        self.constraints = constraints


# the error kinds of a path that ends in SIGABRT (abort, a failed assert, glibc's stack-protector and
# fortify checks: angr_ram.procedures.aborts); a test of one replays as confirmed if the native run is
# killed by SIGABRT
ABORTING_ERRORS = frozenset({"abort", "assertion-failure", "stack-smashing", "buffer-overflow-detected"})
# a path that raise()/kill() ends by a signal whose default action terminates the process; its message
# is "killed by signal N (NAME)", and its test replays as confirmed if the native run dies of signal N
FATAL_SIGNAL = "fatal-signal"


class MemoryFault(Exception):  # noqa: N818 - reported as an error path, not a crash
    """A memory operation that certainly faults on this path (out of bounds, use after free...)."""

    def __init__(self, kind: str, message: str, address: int | None = None, constraints: tuple = ()):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.address = address
        self.constraints = constraints   # see ForkRequest.constraints


class InfeasibleAccess(Exception):  # noqa: N818 - a control-flow signal
    """A memory operation on a path that is already infeasible (for example the rest of a VEX block
    after an exit taken for sure, which angr executes under ``COPY_STATES``): it must do nothing
    and report nothing; angr prunes the state afterwards."""


@dataclass
class MemoryErrorInfo:
    """What an error path carries: the error kind, a message, where, and a reproducing stdin."""

    kind: str
    message: str
    ins_addr: int | None = None
    stdin: bytes | None = None
    extra: dict = field(default_factory=dict)

    @classmethod
    def of(cls, state, kind: str, message: str) -> MemoryErrorInfo:
        """The error of ``state`` (an error path) at its address, with its stdin as the reproducing
        input (None when the path has no model)."""
        try:
            stdin = state.posix.dumps(0)
        except Exception:  # noqa: BLE001 - the error is still reported, without an input
            stdin = None
        return cls(kind, message, state.addr, stdin)

    def __str__(self) -> str:
        where = f" at {self.ins_addr:#x}" if self.ins_addr is not None else ""
        return f"{self.kind}{where}: {self.message}"

    def __repr__(self) -> str:
        return f"<MemoryErrorInfo {self}; stdin={self.stdin!r}>"
