"""A program's own libraries: the shared libraries it needs beyond glibc and the C++ runtime.

angr-ram answers glibc's functions (libc, libm, libpthread, ...) with models and angr answers the
C++ runtime's with its procedures, so a program is loaded without those (``auto_load_libs=False``).
Any other library a program needs (Debian's ``expr`` and ``factor`` compute with libgmp, ``ls``
asks libselinux) has no model: without it every call is an angr stub that returns any value, and
the paths through it do not replay (``expr 1 + 1`` printed an unconstrained number). The CLI and
:func:`angr_ram.explore` load these libraries as code (``force_load_libs``: their own calls into
glibc still reach the models); a user's script that loaded none is told which library defines the
stubs its paths called, and how to load it (:func:`unloaded_library_notes`).
"""

from __future__ import annotations

import re

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from angr_ram.procedures.weak_imports import find_library, library_functions

# glibc's libraries (angr-ram's models) and the C++ runtime (angr's procedures): never loaded as code
MODELLED = re.compile(r"(ld-linux[\w.-]*|lib(c|m|mvec|pthread|dl|rt|util|resolv|anl|nsl|BrokenLocale|"
                      r"stdc\+\+|gcc_s)\.so(\.\d+)*)$")


def needed_libraries(binary: str) -> list[str]:
    """The ``DT_NEEDED`` names of ``binary`` (empty for a static or unreadable file)."""
    try:
        with open(binary, "rb") as f:
            dynamic = ELFFile(f).get_section_by_name(".dynamic")
            if dynamic is None:
                return []
            return [t.needed for t in dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"]
    except (OSError, ELFError):
        return []


def own_libraries(binary: str) -> list[str]:
    """This host's paths of the libraries ``binary`` needs that are neither glibc's nor the C++
    runtime's (see the module doc), in ``DT_NEEDED`` order; a library not on this host is left out."""
    paths = (find_library(name) for name in needed_libraries(binary) if not MODELLED.match(name))
    return [p for p in paths if p is not None]


def unloaded_library_notes(project, stubs) -> list[str]:
    """One line per library of the program's own that was not loaded but defines some of ``stubs``
    (names of the angr stubs the run's paths called)."""
    binary = getattr(project.loader.main_object, "binary", None)
    if not binary:                      # loaded from a stream: no file to read the needs of
        return []
    loaded = {getattr(o, "binary_basename", None) for o in project.loader.all_objects}
    notes = []
    for path in own_libraries(binary):
        name = path.rsplit("/", 1)[-1]
        if name in loaded:
            continue
        defined = sorted(set(stubs) & library_functions(path))
        if defined:
            shown = ", ".join(defined[:4]) + (f" and {len(defined) - 4} more" if len(defined) > 4 else "")
            notes.append(f"{name} defines stubs the paths called ({shown}) but was not loaded: load it with "
                         f"angr.Project(..., force_load_libs=[{path!r}]) (angr-ram run and explore() do)")
    return notes
