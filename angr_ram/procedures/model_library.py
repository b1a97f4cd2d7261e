"""angr-ram's models as angr keeps its own: a SimLibrary keyed by the function's name, hooked over
angr's by one precedence rule.

A :class:`ModelSet` is one family of models (the heap, ``getopt``, the stdio flags) with its
:class:`Precedence`. A :class:`ModelLibrary` is an ``angr.SimLibrary`` built from model sets, each
name in one set only (a second set naming it is an error when the library is built, so no order of
installation decides anything). :func:`hook_library` hooks a project's functions from it:

1. a hook the user made (:func:`~.libc.users_own`) is never replaced, whenever it was made;
2. a function the user kept out of angr's procedures and whose code a loaded library gives
   (``exclude_sim_procedures_list``, ``use_sim_procedures=False``) keeps that code;
3. a model of precedence ``OVER_ANGR`` replaces angr's model of the function (and its stub);
4. a model of precedence ``UNDER_ANGR`` is hooked only where angr has no model or a stub.

Each procedure is angr's ``SimLibrary.get`` of its name, so ``project.hooked_by(addr).display_name``
is the function's name and ``library_name`` the library's, as for angr's own models.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import angr
from angr.procedures.definitions import SimLibrary

from angr_ram.procedures.libc import users_own


class Precedence(enum.IntEnum):
    """Where a model stands against angr's model of the same function (the user's always wins)."""

    UNDER_ANGR = 0      # only where angr has no model of the function, or a stub
    OVER_ANGR = 1       # in place of angr's model


@dataclass(frozen=True)
class ModelSet:
    """One family of models: function name -> SimProcedure class, with its precedence."""

    name: str
    procedures: Mapping[str, type[angr.SimProcedure]]
    precedence: Precedence = Precedence.OVER_ANGR


class ModelLibrary(SimLibrary):
    """A SimLibrary of angr-ram's models, built from :class:`ModelSet` s (each name in one set)."""

    def __init__(self, name: str, sets: Iterable[ModelSet] = ()):
        super().__init__()
        self.set_library_names(name)
        self.sets: list[ModelSet] = []
        self.precedence: dict[str, Precedence] = {}
        self.set_of: dict[str, str] = {}
        for s in sets:
            self.add_set(s)

    def add_set(self, models: ModelSet) -> None:
        """Add the models of ``models``; a name another set has already given raises ValueError."""
        for fn, cls in models.procedures.items():
            if fn in self.set_of:
                raise ValueError(f"{fn!r} is modelled by both {self.set_of[fn]!r} and {models.name!r}")
            self.add(fn, cls)
            self.precedence[fn] = models.precedence
            self.set_of[fn] = models.name
        self.sets.append(models)

    def merged(self, other: ModelLibrary, name: str | None = None) -> ModelLibrary:
        """One library of the sets of both (a name in both raises ValueError)."""
        return ModelLibrary(name or self.name, [*self.sets, *other.sets])

    def names_in_order(self) -> list[str]:
        """The library's names, those over angr's first (a name's place never decides between
        two models of it: each name has one)."""
        return sorted(self.procedures, key=lambda fn: -self.precedence[fn])


def hooked_by_user(project, addr: int) -> bool:
    """Whether the hook at ``addr`` is the user's own (:func:`~.libc.users_own`)."""
    hooked = project._sim_procedures.get(addr)     # pylint: disable=protected-access
    return hooked is not None and users_own(hooked)


def kept_by_user(project, fn: str, sym) -> bool:
    """Whether the user keeps function ``fn`` (symbol ``sym``) from angr-ram's models: hooked it
    themselves, or kept it out of angr's procedures where a loaded library gives its code."""
    if sym is not None and hooked_by_user(project, sym.rebased_addr):
        return True
    return bool(project._check_user_blacklists(fn)     # pylint: disable=protected-access
                and sym is not None and sym.owner is not project.loader.extern_object)


def _angr_models(project, sym) -> bool:
    hooked = project._sim_procedures.get(sym.rebased_addr)     # pylint: disable=protected-access
    return hooked is not None and not getattr(hooked, "is_stub", False)


def hook_library(project, library: ModelLibrary, names: Iterable[str] | None = None) -> list[str]:
    """Hook the functions of ``project`` that ``library`` models, by the rule of the module
    docstring (all of them, or those of ``names``); returns the names hooked."""
    done = []
    for fn in (library.names_in_order() if names is None else names):
        sym = project.loader.find_symbol(fn)
        if sym is None or kept_by_user(project, fn, sym):
            continue
        if library.precedence[fn] is Precedence.UNDER_ANGR and _angr_models(project, sym):
            continue
        project.hook_symbol(fn, library.get(fn, project.arch), replace=True)
        done.append(fn)
    return done
