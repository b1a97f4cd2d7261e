"""angr-ram's procedures put on a project: the one call a technique makes at setup."""

from __future__ import annotations

from angr_ram.posix.library import install_posix_library, posix_library
from angr_ram.procedures.installation import core_library, user_exclusions_kept
from angr_ram.procedures.model_library import ModelLibrary
from angr_ram.procedures.static_libc import install_static_libc
from angr_ram.procedures.weak_imports import resolve_weak_imports


def ram_library(string_procedures: bool = True, environment: str = "symbolic", heap: bool = True) -> ModelLibrary:
    """Every model angr-ram hooks by name, as one SimLibrary: its own
    (:func:`~angr_ram.procedures.installation.core_library`) and the POSIX models
    (:func:`~angr_ram.posix.library.posix_library`); a name in both raises ValueError."""
    return core_library(string_procedures, heap).merged(posix_library(environment), "angr-ram")


def install_procedures(project, string_procedures: bool = True, environment: str = "symbolic",
                       heap: bool = True) -> None:
    """Everything angr-ram hooks in ``project``, keeping the user's own hooks and exclusions
    (:func:`~angr_ram.procedures.installation.user_exclusions_kept`): weak imports bound, the
    models of :func:`ram_library` by their precedence, the environment's system calls, the
    large-file names; in a statically linked program, last, the rest of libc that angr models, by
    symbol (:mod:`angr_ram.procedures.static_libc`)."""
    with user_exclusions_kept(project):
        resolve_weak_imports(project)
        install_posix_library(project, ram_library(string_procedures, environment, heap), environment)
        install_static_libc(project)
