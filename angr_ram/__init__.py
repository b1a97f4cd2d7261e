"""angr-ram: relocatable addressing and complete symbolic-pointer handling for angr.

Public API::

    import angr, angr_ram
    simgr.use_technique(angr_ram.RelocatableMemory(model="fork", symbolic_bases=True, context_k=4))
    simgr.run()
    angr_ram.stats(simgr)
"""

import logging as _logging

_logging.getLogger("angr.state_plugins.unicorn_engine").setLevel(_logging.CRITICAL)

from .errors import AngrRamError, MemoryErrorInfo, UnsupportedBinary  # noqa: E402
from .merging import QuantifiedMerging  # noqa: E402
from .plugins.address_space import AddressSpace, MemoryObject  # noqa: E402
from .technique import ERROR_STASH, RelocatableMemory, stats  # noqa: E402

__all__ = [
    "ERROR_STASH",
    "AddressSpace",
    "AngrRamError",
    "MemoryErrorInfo",
    "MemoryObject",
    "QuantifiedMerging",
    "RelocatableMemory",
    "UnsupportedBinary",
    "stats",
]
__version__ = "0.1.0"
