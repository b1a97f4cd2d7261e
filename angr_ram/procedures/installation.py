"""angr-ram's procedures put on a project: the one call a technique makes at setup."""

from __future__ import annotations

import contextlib

from angr_ram.procedures.aborts import install_aborts
from angr_ram.procedures.calendar import install_calendar
from angr_ram.procedures.child_processes import install_child_processes
from angr_ram.procedures.copies import install_copies
from angr_ram.procedures.descriptors import install_descriptors
from angr_ram.procedures.environment import install_environment
from angr_ram.procedures.environment_variables import install_environment_variables
from angr_ram.procedures.err_reports import install_err_reports
from angr_ram.procedures.exit_handlers import EXIT_HANDLER_PROCEDURES
from angr_ram.procedures.file_changes import install_file_changes
from angr_ram.procedures.file_status import install_file_status
from angr_ram.procedures.float_parsing import install_float_parsing
from angr_ram.procedures.heap import HEAP_PROCEDURES
from angr_ram.procedures.large_files import install_large_files
from angr_ram.procedures.libc import RamLibcStartMain, hook_models, install_error_fix, users_own
from angr_ram.procedures.line_reading import install_line_reading
from angr_ram.procedures.locale_objects import install_locale_objects
from angr_ram.procedures.mathematics import install_mathematics
from angr_ram.procedures.number_parsing import install_number_parsing
from angr_ram.procedures.pipes import install_pipes
from angr_ram.procedures.process import install_process
from angr_ram.procedures.random_numbers import install_random_numbers
from angr_ram.procedures.scanning import install_scanning
from angr_ram.procedures.shared_memory import install_shared_memory
from angr_ram.procedures.shell_commands import install_shell_commands
from angr_ram.procedures.signal_delivery import install_signal_delivery
from angr_ram.procedures.sleeping import install_sleeping
from angr_ram.procedures.sorting import install_sorting
from angr_ram.procedures.startup import install_startup
from angr_ram.procedures.static_libc import install_static_libc
from angr_ram.procedures.stdio_flags import install_stdio
from angr_ram.procedures.string_search import SEARCH_PROCEDURES
from angr_ram.procedures.strings import STRING_PROCEDURES
from angr_ram.procedures.temp_files import install_temp_files
from angr_ram.procedures.threads import install_threads
from angr_ram.procedures.time_text import install_time_text
from angr_ram.procedures.varargs import install_varargs
from angr_ram.procedures.weak_imports import resolve_weak_imports
from angr_ram.procedures.wide_chars import install_wide_chars
from angr_ram.procedures.wide_streams import install_wide_streams


def install_procedures(project, string_procedures: bool = True, environment: str = "symbolic",
                       heap: bool = True) -> None:
    """Everything angr-ram hooks in ``project``: weak imports resolved, the heap and start-up
    procedures (:func:`install_hooks`), the environment (:mod:`.environment`), threads, start-up
    data, aborting functions (:mod:`.aborts`), string copies (:mod:`.copies`), stdio, number parsing (integers; ``strtod``/``atof``: :mod:`.float_parsing`), ``libm`` (:mod:`.mathematics`),
    ``getline``/``getdelim`` (:mod:`.line_reading`), variadic calls, ``<err.h>``'s reports (:mod:`.err_reports`), glibc's ``rand``/``random`` (:mod:`.random_numbers`), ``raise``/``kill`` (:mod:`.signal_delivery`), sleeps (:mod:`.sleeping`), ``pipe`` (:mod:`.pipes`), wide characters in the C locale (:mod:`.wide_chars`), ``qsort`` (:mod:`.sorting`), ``gmtime``/``localtime`` (:mod:`.calendar`), ``strftime`` (:mod:`.time_text`), temporary files (:mod:`.temp_files`) and the large-file names of the file functions (:mod:`.large_files`); in a
    statically linked program, the rest of libc that angr models, by symbol (:mod:`.static_libc`).
    Without ``heap``, ``malloc`` and its family stay angr's (for a run without the ``ram`` plugin
    their objects need: :class:`angr_ram.merging.technique.QuantifiedMerging` alone)."""
    with user_exclusions_kept(project):
        _install_all(project, string_procedures, environment, heap)


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

    def users(addr) -> bool:
        hooked = project._sim_procedures.get(addr)   # pylint: disable=protected-access
        return hooked is not None and users_own(hooked)

    def hook_symbol(symbol_name, *args, **kwargs):
        if isinstance(symbol_name, str):
            sym = project.loader.find_symbol(symbol_name)
            if sym is not None and users(sym.rebased_addr):
                return None
            if project._check_user_blacklists(symbol_name):  # pylint: disable=protected-access
                if sym is not None and sym.owner is not project.loader.extern_object:
                    return None
        return original_symbol(symbol_name, *args, **kwargs)

    def hook(addr, *args, **kwargs):
        if isinstance(addr, int) and users(addr):
            return None
        return original_hook(addr, *args, **kwargs)
    project.hook_symbol, project.hook = hook_symbol, hook
    try:
        yield
    finally:
        del project.hook_symbol, project.hook


def _install_all(project, string_procedures: bool, environment: str, heap: bool) -> None:
    resolve_weak_imports(project)
    install_hooks(project, string_procedures, heap)
    install_environment(project, environment)
    install_threads(project)
    install_signal_delivery(project)
    install_startup(project)
    hook_models(project, EXIT_HANDLER_PROCEDURES)
    install_descriptors(project)
    install_pipes(project)
    install_child_processes(project)
    install_shared_memory(project)
    install_shell_commands(project)
    install_file_changes(project)
    install_locale_objects(project)
    install_environment_variables(project)
    install_aborts(project)
    install_copies(project, string_procedures)
    install_process(project)
    install_random_numbers(project)
    install_sleeping(project)
    install_file_status(project)
    install_temp_files(project)
    install_stdio(project)
    install_line_reading(project)
    install_number_parsing(project)
    install_float_parsing(project)
    install_mathematics(project)
    install_scanning(project)
    install_varargs(project)
    install_err_reports(project)
    install_wide_chars(project)
    install_wide_streams(project)
    install_sorting(project)
    install_calendar(project)
    install_time_text(project)
    install_large_files(project)       # after the models their base names take
    install_static_libc(project)       # last: a static program's other libc functions, by symbol


def install_hooks(project, string_procedures: bool = True, heap: bool = True) -> None:
    """Hook the heap functions and ``__libc_start_main`` of ``project`` with angr-ram's procedures
    (and the string comparisons, :mod:`angr_ram.procedures.strings`, with ``string_procedures``)."""
    procs = dict(HEAP_PROCEDURES) if heap else {}
    if string_procedures:
        procs.update(STRING_PROCEDURES)
        procs.update(SEARCH_PROCEDURES)
    for name, cls in procs.items():
        if project.loader.find_symbol(name) is not None:
            project.hook_symbol(name, cls(display_name=name), replace=True)
    install_error_fix(project)
    if project.loader.find_symbol("__libc_start_main") is not None:
        project.hook_symbol("__libc_start_main", RamLibcStartMain(display_name="__libc_start_main"), replace=True)
