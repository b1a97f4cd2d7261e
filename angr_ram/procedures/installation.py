"""angr-ram's own models, what the relocatable memory needs: the heap, the string functions over
relocatable objects, ``__libc_start_main``, ``error``, the exit handlers, the aborting and the
fortified functions, as one :class:`~.model_library.ModelLibrary`; and the guard that keeps what
the user chose while angr-ram hooks (:func:`user_exclusions_kept`). The C library's other models
are :mod:`angr_ram.posix`'s; :func:`angr_ram.posix.installation.install_procedures` puts both on a
project."""

from __future__ import annotations

import contextlib
import functools

from angr_ram.procedures.aborts import ABORT_PROCEDURES
from angr_ram.procedures.copies import COPY_PROCEDURES, FORTIFIED_PROCEDURES
from angr_ram.procedures.exit_handlers import EXIT_HANDLER_PROCEDURES
from angr_ram.procedures.heap import HEAP_PROCEDURES
from angr_ram.procedures.libc import ERROR_PROCEDURES, RamLibcStartMain
from angr_ram.procedures.model_library import ModelLibrary, ModelSet, hooked_by_user, kept_by_user
from angr_ram.procedures.string_search import SEARCH_PROCEDURES
from angr_ram.procedures.strings import STRING_PROCEDURES


def core_sets(string_procedures: bool = True, heap: bool = True) -> list[ModelSet]:
    """angr-ram's own model sets. Without ``string_procedures`` the string functions stay angr's;
    without ``heap``, ``malloc`` and its family do (for a run without the ``ram`` plugin their
    objects need: :class:`angr_ram.merging.technique.QuantifiedMerging` alone)."""
    sets = [ModelSet("start-up", {"__libc_start_main": RamLibcStartMain}),
            ModelSet("error reports", ERROR_PROCEDURES),
            ModelSet("exit handlers", EXIT_HANDLER_PROCEDURES),
            ModelSet("aborts", ABORT_PROCEDURES),
            ModelSet("fortified copies", FORTIFIED_PROCEDURES)]
    if heap:
        sets.append(ModelSet("heap", HEAP_PROCEDURES))
    if string_procedures:
        sets += [ModelSet("strings", STRING_PROCEDURES), ModelSet("string search", SEARCH_PROCEDURES),
                 ModelSet("string copies", COPY_PROCEDURES)]
    return sets


@functools.cache
def core_library(string_procedures: bool = True, heap: bool = True) -> ModelLibrary:
    """The SimLibrary of :func:`core_sets` (built once per choice; angr copies a procedure out of
    it for each hook)."""
    return ModelLibrary("angr-ram", core_sets(string_procedures, heap))


@contextlib.contextmanager
def user_exclusions_kept(project):
    """Inside the block, angr-ram's hooks leave alone what the user chose:

    - a function the user hooked before attaching the technique with a procedure of their own or
      a Python function (:func:`~.libc.users_own`): their model stays, by symbol (``hook_symbol``)
      and by address (``hook``); one they hook after attaching replaces angr-ram's as angr does;
    - a function the user kept out of angr's procedures (``exclude_sim_procedures_list``/``_func``,
      ``ignore_functions``, ``use_sim_procedures=False``) where a loaded library gives its code: a
      script that loads glibc and excludes ``calloc`` runs glibc's allocator, as it asked
      (angr-ram's heap model hooked it anyway, and the overflow into the next chunk it looked for
      became an out-of-bounds error). A function with no code (an extern symbol) is still modelled.
    """
    original_symbol, original_hook = project.hook_symbol, project.hook

    def hook_symbol(symbol_name, *args, **kwargs):
        if isinstance(symbol_name, str) and kept_by_user(project, symbol_name,
                                                         project.loader.find_symbol(symbol_name)):
            return None
        return original_symbol(symbol_name, *args, **kwargs)

    def hook(addr, *args, **kwargs):
        if isinstance(addr, int) and hooked_by_user(project, addr):
            return None
        return original_hook(addr, *args, **kwargs)
    project.hook_symbol, project.hook = hook_symbol, hook
    try:
        yield
    finally:
        del project.hook_symbol, project.hook
