"""The POSIX models as one SimLibrary: every family of :mod:`angr_ram.posix` with its precedence,
and :func:`install_posix`, which puts them on any angr project, stock angr's simulation managers
included (the models fork on a symbolic value only inside an angr-ram step; elsewhere they
answer as angr's own models do)."""

from __future__ import annotations

import functools

from angr_ram.posix.calendar import CALENDAR_PROCEDURES
from angr_ram.posix.charset_conversion import CHARSET_PROCEDURES
from angr_ram.posix.child_processes import CHILD_PROCESS_PROCEDURES
from angr_ram.posix.descriptors import DESCRIPTOR_PROCEDURES
from angr_ram.posix.environment import ENVIRONMENTS, environment_models, install_environment_calls
from angr_ram.posix.environment_variables import ENVIRONMENT_VARIABLE_PROCEDURES
from angr_ram.posix.err_reports import ERR_PROCEDURES
from angr_ram.posix.file_changes import FILE_CHANGE_PROCEDURES
from angr_ram.posix.file_status import FILE_STATUS_PROCEDURES
from angr_ram.posix.float_parsing import FLOAT_PARSING_PROCEDURES
from angr_ram.posix.getopt import GETOPT_PROCEDURES
from angr_ram.posix.large_files import install_large_files
from angr_ram.posix.line_reading import LINE_PROCEDURES
from angr_ram.posix.locale_objects import LOCALE_OBJECT_PROCEDURES
from angr_ram.posix.mathematics import MATH_PROCEDURES
from angr_ram.posix.number_parsing import NUMBER_PROCEDURES
from angr_ram.posix.pipes import PIPE_PROCEDURES
from angr_ram.posix.process import PROCESS_PROCEDURES
from angr_ram.posix.random_numbers import RANDOM_PROCEDURES
from angr_ram.posix.scanning import SCANF_PROCEDURES
from angr_ram.posix.shared_memory import SHARED_MEMORY_PROCEDURES
from angr_ram.posix.shell_commands import SHELL_PROCEDURES
from angr_ram.posix.signal_delivery import DELIVERY_PROCEDURES
from angr_ram.posix.signals import SIGNAL_PROCEDURES
from angr_ram.posix.sleeping import SLEEP_PROCEDURES
from angr_ram.posix.sorting import SORTING_PROCEDURES
from angr_ram.posix.startup import STARTUP_PROCEDURES
from angr_ram.posix.stdio_flags import STDIO_PROCEDURES
from angr_ram.posix.temp_files import TEMP_FILE_PROCEDURES
from angr_ram.posix.threads import THREAD_PROCEDURES
from angr_ram.posix.time_text import TIME_TEXT_PROCEDURES
from angr_ram.posix.varargs import VARARG_PROCEDURES
from angr_ram.posix.wide_chars import WIDE_CHAR_PROCEDURES
from angr_ram.posix.wide_streams import WIDE_STREAM_PROCEDURES
from angr_ram.procedures.installation import user_exclusions_kept
from angr_ram.procedures.model_library import ModelLibrary, ModelSet, Precedence, hook_library

UNDER = Precedence.UNDER_ANGR


def posix_sets(environment: str = "symbolic") -> list[ModelSet]:
    """The POSIX model sets, the environment's for ``environment`` (``symbolic`` or ``fixed``:
    :mod:`.environment`). Those of precedence ``UNDER_ANGR`` fill in where angr has a stub."""
    return [
        ModelSet("environment", environment_models(environment)),
        ModelSet("environment variables", ENVIRONMENT_VARIABLE_PROCEDURES),
        ModelSet("threads", THREAD_PROCEDURES),
        ModelSet("signals", SIGNAL_PROCEDURES),
        ModelSet("signal delivery", DELIVERY_PROCEDURES),
        ModelSet("start-up", STARTUP_PROCEDURES, UNDER),
        ModelSet("getopt", GETOPT_PROCEDURES, UNDER),
        ModelSet("descriptors", DESCRIPTOR_PROCEDURES),
        ModelSet("pipes", PIPE_PROCEDURES),
        ModelSet("child processes", CHILD_PROCESS_PROCEDURES),
        ModelSet("shared memory", SHARED_MEMORY_PROCEDURES),
        ModelSet("shell commands", SHELL_PROCEDURES),
        ModelSet("file changes", FILE_CHANGE_PROCEDURES),
        ModelSet("file status", FILE_STATUS_PROCEDURES),
        ModelSet("temporary files", TEMP_FILE_PROCEDURES),
        ModelSet("locale objects", LOCALE_OBJECT_PROCEDURES),
        ModelSet("process", PROCESS_PROCEDURES),
        ModelSet("random numbers", RANDOM_PROCEDURES),
        ModelSet("sleeping", SLEEP_PROCEDURES),
        ModelSet("stdio", STDIO_PROCEDURES),
        ModelSet("line reading", LINE_PROCEDURES),
        ModelSet("number parsing", NUMBER_PROCEDURES),
        ModelSet("float parsing", FLOAT_PARSING_PROCEDURES),
        ModelSet("mathematics", MATH_PROCEDURES),
        ModelSet("scanf", SCANF_PROCEDURES),
        ModelSet("varargs", VARARG_PROCEDURES),
        ModelSet("err reports", ERR_PROCEDURES),
        ModelSet("wide characters", WIDE_CHAR_PROCEDURES),
        ModelSet("charset conversion", CHARSET_PROCEDURES),
        ModelSet("wide streams", WIDE_STREAM_PROCEDURES),
        ModelSet("sorting", SORTING_PROCEDURES),
        ModelSet("calendar", CALENDAR_PROCEDURES),
        ModelSet("time text", TIME_TEXT_PROCEDURES),
    ]


@functools.cache
def posix_library(environment: str = "symbolic") -> ModelLibrary:
    """The SimLibrary of :func:`posix_sets` (built once per environment)."""
    if environment not in ENVIRONMENTS:
        raise ValueError(f"environment must be one of {ENVIRONMENTS}, not {environment!r}")
    return ModelLibrary("angr-ram posix", posix_sets(environment))


def install_posix(project, environment: str = "symbolic") -> list[str]:
    """Put the POSIX models on ``project`` (stock angr's or angr-ram's): the library's functions
    by the precedence rule of :mod:`angr_ram.procedures.model_library`, the environment's system
    calls, then the large-file names of the file functions (:mod:`.large_files`). Returns the
    names hooked."""
    with user_exclusions_kept(project):
        return install_posix_library(project, posix_library(environment), environment)


def install_posix_library(project, library: ModelLibrary, environment: str) -> list[str]:
    """:func:`install_posix` with ``library`` (the POSIX models, maybe merged with others)."""
    done = hook_library(project, library)
    install_environment_calls(project, environment)
    return done + install_large_files(project)
