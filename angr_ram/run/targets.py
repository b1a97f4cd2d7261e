"""``find`` and ``avoid`` targets: symbols or addresses, checked against what angr loaded.

angr's ``Explorer`` compares each state's address with the targets and never says that one
cannot match. An address from ``nm`` of a position-independent binary is an offset (``0x1159``)
where angr maps the program at ``0x400000``; an address outside every loaded object, in data, or
inside an instruction is never a state's address. Each is refused here in one line, with the
address it probably meant. A target that is code but that no path reached (a function gcc -O2
inlined into its callers runs as their code, never at its own symbol) is only known after the
run: :func:`unreached_notes` words it.
"""

from __future__ import annotations

import angr
from cle.backends import ELF

from angr_ram.core.errors import AngrRamError

MAX_DECODE_BYTES = 1 << 16      # a function longer than this is not decoded to check a target in it


def _parse(proj: angr.Project, t) -> int:
    if isinstance(t, int):
        return t
    sym = proj.loader.find_symbol(t)
    if sym is not None:
        return sym.rebased_addr
    try:
        return int(t, 0)
    except ValueError:
        raise AngrRamError(f"{t!r} is neither an address nor a symbol of {proj.filename}") from None


def _instruction_starts(proj: angr.Project, start: int, size: int) -> set[int] | None:
    """Addresses of the instructions of ``[start, start + size)`` decoded one after the other
    (None if a byte there does not decode: data in code, where the check says nothing)."""
    try:
        code = proj.loader.memory.load(start, size)
    except KeyError:
        return None
    starts, end = set(), start
    for insn in proj.arch.capstone.disasm(code, start):
        starts.add(insn.address)
        end = insn.address + insn.size
    return starts if end >= start + size else None


def check_target(proj: angr.Project, addr: int, what: str) -> None:
    """Raise AngrRamError if ``addr`` can never be a state's address: not mapped (with the address
    a position-independent binary's offset is at), not code, or inside an instruction."""
    obj = proj.loader.find_object_containing(addr)
    main = proj.loader.main_object
    if obj is None:
        hint = ""
        if main.pic and 0 <= addr < main.mapped_base:
            moved = addr + main.mapped_base
            seg = proj.loader.find_segment_containing(moved)
            if seg is not None and seg.is_executable:
                hint = (f"; the program is position-independent and angr loads it at {main.mapped_base:#x}, "
                        f"so the offset {addr:#x} (as nm and objdump print it) is at {moved:#x}")
        raise AngrRamError(f"{what} {addr:#x} is not an address of {main.binary_basename} or its libraries{hint}")
    if not isinstance(obj, ELF):
        return              # angr's extern and kernel objects: addresses of hooked functions
    seg = obj.find_segment_containing(addr)
    if seg is None or not seg.is_executable:
        raise AngrRamError(f"{what} {addr:#x} is in {obj.binary_basename}'s data, not in its code")
    sym = proj.loader.find_symbol(addr, fuzzy=True)
    if sym is None or not sym.is_function or not sym.size or sym.size > MAX_DECODE_BYTES:
        return
    start = sym.rebased_addr
    if not start <= addr < start + sym.size:
        return
    starts = _instruction_starts(proj, start, sym.size)
    if starts is not None and addr not in starts:
        before = max(a for a in starts if a < addr)
        after = min((a for a in starts if a > addr), default=None)
        near = f"{before:#x}" + (f" or {after:#x}" if after is not None else "")
        raise AngrRamError(f"{what} {addr:#x} is inside an instruction of {sym.name} "
                           f"(no path's address can be it; the instructions around it start at {near})")


def resolve_targets(proj: angr.Project, targets, what: str = "target") -> list[int]:
    """Addresses of ``targets`` (ints, hex/decimal strings or symbol names) in ``proj``, each
    checked by :func:`check_target`."""
    addrs = []
    for t in targets:
        addr = _parse(proj, t)
        check_target(proj, addr, f"{what} {t}" if not isinstance(t, int) and _named(t) else what)
        addrs.append(addr)
    return addrs


def _named(t: str) -> bool:
    try:
        int(t, 0)
    except ValueError:
        return True
    return False


def unreached_notes(find, found: int, stopped: str | None) -> list[str]:
    """A one-line note when a run that explored every path found none of ``find``."""
    if not find or found or stopped is not None:
        return []
    names = ", ".join(str(t) if not isinstance(t, int) else f"{t:#x}" for t in find)
    return [f"no path reached the find target {names}: no input of this size gets there, or the code is "
            "never run at that address (a function the compiler inlined runs inside its callers)"]
