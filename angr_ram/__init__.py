"""angr-ram: relocatable addressing and complete symbolic-pointer handling for angr.

Public API::

    import angr, angr_ram
    simgr.use_technique(angr_ram.RelocatableMemory(model="fork", symbolic_bases=True, context_k=4))
    simgr.run()
    simgr.use_technique(angr_ram.DepthFirst())   # or RandomPath(), CoverageNew(cov), ... (default: all at once)
    angr_ram.stats(simgr)
    angr_ram.emit_tests(simgr, "tests-out")      # then: angr-ram replay tests-out BINARY
"""

import logging as _logging

_logging.getLogger("angr.state_plugins.unicorn_engine").setLevel(_logging.CRITICAL)

from angr_ram.core.errors import AngrRamError, MemoryErrorInfo, UnsupportedBinary  # noqa: E402
from angr_ram.core.version import __version__ as __version__  # noqa: E402
from angr_ram.memory.address_space import AddressSpace  # noqa: E402
from angr_ram.memory.memory_object import MemoryObject  # noqa: E402
from angr_ram.merging import QuantifiedMerging  # noqa: E402
from angr_ram.run.coverage import Coverage  # noqa: E402
from angr_ram.run.inputs import Template, make_state  # noqa: E402
from angr_ram.run.replay import replay  # noqa: E402
from angr_ram.run.search import BreadthFirst, CoverageDives, CoverageNew, DepthFirst, Interleaved, RandomPath  # noqa: E402
from angr_ram.run.technique import ERROR_STASH, RelocatableMemory, stats  # noqa: E402
from angr_ram.run.testcases import TestCase, collect_tests, emit_tests  # noqa: E402

__all__ = [
    "ERROR_STASH",
    "AddressSpace",
    "AngrRamError",
    "BreadthFirst",
    "Coverage",
    "CoverageDives",
    "CoverageNew",
    "DepthFirst",
    "Interleaved",
    "MemoryErrorInfo",
    "MemoryObject",
    "QuantifiedMerging",
    "RandomPath",
    "RelocatableMemory",
    "Template",
    "TestCase",
    "UnsupportedBinary",
    "collect_tests",
    "emit_tests",
    "make_state",
    "replay",
    "stats",
]
