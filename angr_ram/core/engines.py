"""angr-ram's engine: the project's own engine class line with angr-ram's mixins in it.

angr's engines are class lines of mixins (``UberEngine``), and a step may be given an engine
(``project.factory.successors(state, engine=...)``, which a simulation manager's ``step`` passes
on). The exploration techniques step the states they manage with the engine built here, and every
other step (a script's own ``state.step()``, a stock simulation manager) goes through the
project's default engine untouched:

- *top* mixins come first in the line: they see every step (hooks, system calls and blocks);
- *VEX* mixins (subclasses of ``HeavyVEXMixin``) sit directly above ``HeavyVEXMixin``, where angr
  interprets a block after its hooks, system calls, unicorn and breakpoint mixins have passed it
  on, and each falls back to ``super()``.

The class is built once per engine class and mixin set; the engine once per owner, project and
thread (angr keeps its default engine per thread too: an engine holds the step's state). A
project whose engine has no ``HeavyVEXMixin`` (P-code) gets the top mixins only.
"""

from __future__ import annotations

import os
import threading

from angr.engines.vex.heavy.heavy import HeavyVEXMixin

from angr_ram.core.errors import AngrRamError

_CLASSES: dict[tuple, type] = {}
DEBUG_ENV = "ANGR_RAM_DEBUG"        # set (not "0"): an engine mixin's unexpected failure is raised


def debug_mode() -> bool:
    """True when ``$ANGR_RAM_DEBUG`` is set and not ``0``: a fast path's unexpected failure is
    raised instead of counted and handed to angr."""
    return os.environ.get(DEBUG_ENV, "0") not in ("", "0")


def engine_class(base: type, top: tuple[type, ...] = (), vex: tuple[type, ...] = ()) -> type:
    """``base`` (an engine class) with ``top`` first in its line and ``vex`` directly above its
    ``HeavyVEXMixin`` (left out when it has none)."""
    if not issubclass(base, HeavyVEXMixin):
        vex = ()
    key = (base, top, vex)
    cls = _CLASSES.get(key)
    if cls is None:
        bad = [m.__name__ for m in vex if not issubclass(m, HeavyVEXMixin)]
        if bad:
            raise AngrRamError(f"VEX engine mixins must subclass HeavyVEXMixin: {', '.join(bad)}")
        cls = type(f"Ram{base.__name__}", (*top, base, *vex), {"__module__": __name__})
        mro = cls.__mro__
        if vex and mro[mro.index(HeavyVEXMixin) - len(vex):mro.index(HeavyVEXMixin)] != vex:
            raise AngrRamError(f"{base.__name__}'s class line does not let angr-ram's VEX mixins sit "
                               "above HeavyVEXMixin")
        _CLASSES[key] = cls
    return cls


class EngineCache:
    """The engine with these mixins for a project (:func:`engine_class` over the project's own
    engine class), made on first use, one per thread; kept by its owner (a technique), so that it
    goes with the run."""

    def __init__(self, top: tuple[type, ...] = (), vex: tuple[type, ...] = ()):
        self.top, self.vex = top, vex
        self._local = threading.local()

    def __call__(self, project):
        engine = getattr(self._local, "engine", None)
        if engine is None or engine.project is not project:
            cls = engine_class(project.factory.default_engine_factory, self.top, self.vex)
            engine = self._local.engine = cls(project)
        return engine

    def __getstate__(self):
        return self.top, self.vex

    def __setstate__(self, state):
        self.__init__(*state)

    def step_args(self, simgr, kwargs: dict) -> dict:
        """``kwargs`` for ``simgr.step_state`` with this engine, unless the caller chose one or
        gave a ``successor_func`` (it is called with the arguments, not the engine)."""
        if kwargs.get("engine") is None and kwargs.get("successor_func") is None:
            kwargs = {**kwargs, "engine": self(simgr._project)}
        return kwargs
