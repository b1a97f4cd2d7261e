"""Classes a factory makes at import time, found by name in their module, as pickle needs.

angr-ram makes some SimProcedure classes with ``type()`` (one per modelled function of a family:
``memcpy``/``memmove``, the fortified ``__*_chk``, system-call wrappers, maths functions). A state
holds instances of them (its call stack, its history's procedure), and pickle stores a class by its
module and qualified name: a class no module attribute names cannot be pickled, and writing such a
state to disk (:class:`~angr_ram.run.spilling.Spilling`) or shipping it to a worker failed
(Debian's expr at 520 s with ``--spill-rss-mb``: "Can't pickle RamMemcpy", the whole run lost).
:func:`module_class` makes the class and names it in its module.
"""

from __future__ import annotations

from angr_ram.core.errors import AngrRamError

_MADE = "_angr_ram_made"        # (bases, attributes) a module_class was made from


def module_class(namespace: dict, name: str, bases: tuple, attrs: dict) -> type:
    """``type(name, bases, attrs)`` set as ``namespace[name]`` (``namespace``: the defining module's
    ``globals()``) with that module and name, so that pickle finds it. The same name asked again with
    the same bases and attributes gives the same class; with others, an error (two classes, one name)."""
    key = (tuple(bases), dict(attrs))
    old = namespace.get(name)
    if old is not None:
        if getattr(old, _MADE, None) == key:
            return old
        raise AngrRamError(f"{namespace.get('__name__')}.{name} already names something else")
    cls = type(name, tuple(bases), {**attrs, "__module__": namespace["__name__"], "__qualname__": name, _MADE: key})
    namespace[name] = cls
    return cls
