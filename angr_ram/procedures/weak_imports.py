"""Weak imports that the program's libraries define, resolved as the dynamic linker resolves them.

Libraries that work with or without threads (libxml2, libstdc++) reference ``pthread_*`` as
*weak* symbols and test or call them. Natively glibc (2.34 and later: libpthread is part of libc)
defines them and the dynamic linker binds the references. Loaded without its libraries, CLE
leaves an unresolved weak reference at 0, so angr calls address 0 (libxml2's
``htmlCreateMemoryParserCtxt``: "jump to 0x0" at its first ``pthread_mutex_init``).

:func:`resolve_weak_imports` binds each weak function import that a library the program needs
(``DT_NEEDED``, looked up in this host's library directories, as a replay runs) defines, to angr's
procedure for it (a stub when angr has none; angr-ram's models replace those afterwards: the
single-threaded pthread calls of :mod:`angr_ram.posix.threads`). References that no library defines
(``__gmon_start__``, ``_ITM_registerTMCloneTable``) stay 0, as natively.
"""

from __future__ import annotations

import os
from functools import lru_cache

import angr

LIB_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
FUNCTION_TYPES = frozenset({"STT_FUNC", "STT_GNU_IFUNC", "STT_LOOS"})


@lru_cache(maxsize=64)
def library_functions(path: str) -> frozenset:
    """The function names ``path`` (a shared library) defines in its dynamic symbol table."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    names = set()
    try:
        with open(path, "rb") as f:
            dynsym = ELFFile(f).get_section_by_name(".dynsym")
            if dynsym is None:
                return frozenset()
            for sym in dynsym.iter_symbols():
                if sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["type"] in FUNCTION_TYPES:
                    names.add(sym.name.split("@")[0])
    except (OSError, ELFError):
        return frozenset()
    return frozenset(names)


@lru_cache(maxsize=256)
def library_defines(path: str, names: frozenset) -> frozenset:
    """Which of ``names`` ``path`` (a shared library) defines as functions: looked up in its GNU
    hash table (a few lookups instead of reading libc's 3,000 dynamic symbols: 0.3 s per
    process), or among all its functions where it has none."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.hash import GNUHashSection
    try:
        with open(path, "rb") as f:
            table = ELFFile(f).get_section_by_name(".gnu.hash")
            if not isinstance(table, GNUHashSection):
                return names & library_functions(path)
            out = set()
            for name in names:
                sym = table.get_symbol(name)
                if sym is not None and sym["st_shndx"] != "SHN_UNDEF" and sym["st_info"]["type"] in FUNCTION_TYPES:
                    out.add(name)
            return frozenset(out)
    except (OSError, ELFError):
        return frozenset()


def find_library(name: str, extra_dirs=()) -> str | None:
    for d in (*extra_dirs, *LIB_DIRS):
        p = os.path.join(d, name)
        if os.path.isfile(p):
            return p
    return None


def needed_functions(obj, wanted: frozenset) -> frozenset:
    """Which of ``wanted`` the libraries ``obj`` needs define as functions, as found on this host."""
    extra = tuple(getattr(obj, "extra_load_path", ()) or ())
    names = set()
    for dep in getattr(obj, "deps", ()) or ():
        path = find_library(dep, extra)
        if path is not None:
            names |= library_defines(path, wanted)
    return frozenset(names)


def unresolved_weak_imports(project) -> list[str]:
    """Names of the main object's weak imports that CLE left unresolved (at 0). A library loaded
    beside the program (:mod:`angr_ram.run.libraries`) may import the same name: CLE then gives it
    an extern symbol but leaves the program's weak reference at 0."""
    out = []
    for name, reloc in project.loader.main_object.imports.items():
        if getattr(reloc.symbol, "is_weak", False) and reloc.resolvedby is None:
            out.append(name)
    return sorted(out)


def _bind(project, name: str) -> None:
    """Point every unresolved weak reference to ``name`` at the symbol the loader has for it (the
    extern object's, made by a library that imports it), so that the hook on it is reached."""
    sym = project.loader.find_symbol(name)
    if sym is None:
        return
    for reloc in project.loader.find_relevant_relocations(name):
        if reloc.resolvedby is None:
            reloc.resolve(sym)
            reloc.relocate()


def resolve_weak_imports(project) -> list[str]:
    """Bind the unresolved weak imports that a needed library defines to angr's procedures (see
    module doc); returns the names bound."""
    weak = unresolved_weak_imports(project)
    if not weak:
        return []
    defined = needed_functions(project.loader.main_object, frozenset(weak))
    libc = angr.SIM_LIBRARIES.get("libc.so.6")
    libc = libc[0] if isinstance(libc, list) else libc
    bound = []
    for name in weak:
        if name not in defined:
            continue
        proc = libc.get(name, project.arch) if libc is not None else angr.SIM_PROCEDURES["stubs"]["ReturnUnconstrained"](
            display_name=name, is_stub=True)
        _bind(project, name)
        if project.hook_symbol(name, proc, replace=True) is not None:
            bound.append(name)
    return bound
