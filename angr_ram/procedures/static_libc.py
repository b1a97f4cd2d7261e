"""libc in statically linked programs: its functions recognised by their symbols.

A dynamically linked program calls libc through imports, and angr replaces each one it models by
its SimProcedure. A statically linked one (``gcc -static``) carries glibc's own code, and angr hooks
none of it: every ``printf`` then runs glibc's buffered stdio, whose buffer is flushed by ``exit``'s
handlers, which angr's ``exit`` (and angr-ram's ``__libc_start_main``) never run: every path
printed nothing, and each of its tests failed to replay.

:func:`install_static_libc` hooks, in a statically linked main object, every function symbol that
angr's libc models (after angr-ram's own procedures, which it leaves in place), at the symbol's
address, as angr hooks the same functions' imports in a dynamic program. glibc selects many string
and memory functions at start-up (GNU indirect functions): a call goes through a slot that CLE fills
with the implementation it chose (``__strlen_sse2``), not through the symbol (the selector), so the
implementation a slot holds gets the hook of the selector's symbol too, whoever installed it.
"""

from __future__ import annotations

import angr

# angr's procedures for these do not fit glibc's own code around them in a static program: the
# non-local jumps pair with glibc's internal ``__longjmp``/``__sigsetjmp``, and glibc's code reads
# errno from thread-local storage, not from angr's errno location
KEEP_NATIVE = frozenset({"setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp", "longjmp", "_longjmp",
                         "siglongjmp", "__longjmp_chk", "__errno_location"})


def is_static(project) -> bool:
    """True when the main object is a statically linked ELF (no dynamic libc to import from): CLE
    says so, or (``-static-pie``, which has a dynamic section) it needs no library and defines
    ``__libc_start_main`` itself."""
    obj = project.loader.main_object
    if getattr(obj, "linking", None) == "static":
        return True
    if getattr(obj, "deps", None) or getattr(obj, "interpreter", None):
        return False
    sym = obj.get_symbol("__libc_start_main") if hasattr(obj, "get_symbol") else None
    return sym is not None and sym.is_function and not sym.is_import


def _libc():
    lib = angr.SIM_LIBRARIES["libc.so.6"]
    return lib[0] if isinstance(lib, list | tuple) else lib


def indirect_slots(obj) -> dict[int, int]:
    """The GNU indirect functions of ``obj``: selector address -> the implementation CLE put in its
    slot (``R_X86_64_IRELATIVE`` relocations)."""
    out = {}
    mem = obj.loader.memory
    for r in obj.relocs:
        if type(r).__name__ != "R_X86_64_IRELATIVE":
            continue
        selector = r.addend - obj.linked_base + obj.mapped_base
        try:
            impl = mem.unpack_word(r.rebased_addr)
        except KeyError:
            continue
        if impl and impl != selector:
            out[selector] = impl
    return out


def install_static_libc(project) -> list[str]:
    """Hook the libc functions of a statically linked ``project`` by their symbols (see the module
    docstring); returns the names hooked (none for a dynamically linked program)."""
    if not is_static(project):
        return []
    obj = project.loader.main_object
    lib = _libc()
    hooked = []
    for sym in obj.symbols:
        name = sym.name
        if not sym.is_function or not name or name in KEEP_NATIVE or not lib.has_implementation(name):
            continue
        addr = sym.rebased_addr
        if project.is_hooked(addr):
            continue
        project.hook(addr, lib.get(name, project.arch))
        hooked.append(name)
    for selector, impl in indirect_slots(obj).items():
        if project.is_hooked(selector) and not project.is_hooked(impl):
            project.hook(impl, project.hooked_by(selector))
    return sorted(hooked)
