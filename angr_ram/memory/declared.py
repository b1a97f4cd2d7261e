"""Stack and global arrays as objects with bounds, from the program's DWARF debug information.

A heap object has bounds angr-ram knows (its allocation); a stack array does not: at binary level
the frame is one region, so ``a[x]`` with a negative ``x`` read the neighbouring slot and the path
went on with no error (AddressSanitizer reports a stack-buffer-overflow). Where the binary has
DWARF (``gcc -g``), every array, structure or union variable at a fixed frame offset
(``DW_OP_fbreg`` against a ``DW_OP_call_frame_cfa`` frame base) or at a fixed address
(``DW_OP_addr``) is a declared object. :meth:`DeclaredObjects.at` gives the object an access
is based on: the one whose *start* is the concrete summand of the address (``&a[0] + 4*x``);
the memory layer then forks the accesses that leave it off as ``out-of-bounds`` error paths,
as for heap objects. An address whose constant part is not an object's start (a field of a
structure, an offset folded into the constant) is not checked, so a folded ``a[x - 2]`` is never
blamed on the variable below ``a``. A binary without DWARF has no declared objects.
"""

from __future__ import annotations

import logging
import weakref
from dataclasses import dataclass

log = logging.getLogger(__name__)

_WRAPPERS = frozenset({"DW_TAG_typedef", "DW_TAG_const_type", "DW_TAG_volatile_type", "DW_TAG_restrict_type",
                       "DW_TAG_atomic_type"})
_AGGREGATES = frozenset({"DW_TAG_array_type", "DW_TAG_structure_type", "DW_TAG_union_type"})
MAX_TYPE_DEPTH = 16
MAX_FRAMES = 16               # innermost frames whose locals an access may be based on (every access asks)
MAX_DEBUG_INFO = 32 << 20     # bytes of .debug_info walked (pyelftools reads about 10 MB/s)


@dataclass(frozen=True)
class Declared:
    """One declared variable: ``offset`` from the frame's CFA (locals) or an absolute address."""

    name: str
    offset: int
    size: int
    function: str | None = None      # None: a global or static variable

    def describe(self) -> str:
        where = f"stack array {self.name} of {self.function}" if self.function else f"global {self.name}"
        return f"{where} ({self.size} bytes)"


def _type_size(die, depth: int = 0) -> tuple[int | None, bool]:
    """(byte size, is an aggregate) of the type DIE ``die``."""
    if die is None or depth > MAX_TYPE_DEPTH:
        return None, False
    at = die.attributes
    if die.tag in _WRAPPERS:
        return _type_size(die.get_DIE_from_attribute("DW_AT_type") if "DW_AT_type" in at else None, depth + 1)
    aggregate = die.tag in _AGGREGATES
    if "DW_AT_byte_size" in at:
        return at["DW_AT_byte_size"].value, aggregate
    if die.tag != "DW_TAG_array_type" or "DW_AT_type" not in at:
        return None, aggregate
    elem, _ = _type_size(die.get_DIE_from_attribute("DW_AT_type"), depth + 1)
    n = 1
    for sub in die.iter_children():
        if sub.tag != "DW_TAG_subrange_type":
            continue
        sa = sub.attributes
        if "DW_AT_count" in sa and isinstance(sa["DW_AT_count"].value, int):
            n *= sa["DW_AT_count"].value
        elif "DW_AT_upper_bound" in sa and isinstance(sa["DW_AT_upper_bound"].value, int):
            n *= sa["DW_AT_upper_bound"].value + 1 - (sa["DW_AT_lower_bound"].value if "DW_AT_lower_bound" in sa else 0)
        else:
            return None, True           # a variable-length array: no fixed size
    return (elem * n if elem is not None else None), True


def read_declared(path: str, delta: int) -> tuple[dict[int, list[Declared]], list[tuple[int, Declared]]]:
    """(locals by function entry address, globals by address) of the ELF file at ``path``, its
    addresses moved by ``delta`` (where the loader mapped it)."""
    from elftools.dwarf.dwarf_expr import DWARFExprParser
    from elftools.elf.elffile import ELFFile

    frames: dict[int, list[Declared]] = {}
    globs: list[tuple[int, Declared]] = []
    with open(path, "rb") as f:
        elf = ELFFile(f)
        info = elf.get_section_by_name(".debug_info")
        if info is None or not elf.has_dwarf_info():
            return frames, globs
        if info.data_size > MAX_DEBUG_INFO:       # a bound on the one-time walk of every DIE
            log.warning("angr-ram: %s has %d bytes of DWARF (over %d): no declared arrays read", path,
                        info.data_size, MAX_DEBUG_INFO)
            return frames, globs
        dwarf = elf.get_dwarf_info()
        parser = DWARFExprParser(dwarf.structs)
        for cu in dwarf.iter_CUs():
            top = cu.get_top_DIE()
            _walk(top, None, None, parser, delta, frames, globs)
    return frames, globs


def _walk(die, entry, fname, parser, delta, frames, globs) -> None:
    for child in die.iter_children():
        at = child.attributes
        if child.tag == "DW_TAG_subprogram":
            fb = at.get("DW_AT_frame_base")
            ok = fb is not None and fb.form == "DW_FORM_exprloc" and \
                [op.op_name for op in parser.parse_expr(fb.value)] == ["DW_OP_call_frame_cfa"]
            low = at.get("DW_AT_low_pc")
            if ok and low is not None and "DW_AT_inline" not in at:
                name = at["DW_AT_name"].value.decode("latin-1") if "DW_AT_name" in at else f"{low.value:#x}"
                _walk(child, low.value + delta, name, parser, delta, frames, globs)
            continue
        if child.tag == "DW_TAG_lexical_block":
            _walk(child, entry, fname, parser, delta, frames, globs)
            continue
        if child.tag != "DW_TAG_variable" or "DW_AT_type" not in at:
            continue
        loc = at.get("DW_AT_location")
        if loc is None or loc.form != "DW_FORM_exprloc":
            continue
        size, aggregate = _type_size(child.get_DIE_from_attribute("DW_AT_type"))
        if not aggregate or not size:
            continue
        ops = parser.parse_expr(loc.value)
        if len(ops) != 1:
            continue
        name = at["DW_AT_name"].value.decode("latin-1") if "DW_AT_name" in at else "?"
        if ops[0].op_name == "DW_OP_fbreg" and entry is not None:
            frames.setdefault(entry, []).append(Declared(name, ops[0].args[0], size, fname))
        elif ops[0].op_name == "DW_OP_addr":
            globs.append((ops[0].args[0] + delta, Declared(name, ops[0].args[0] + delta, size)))


class DeclaredObjects:
    """The declared objects of a project's main binary (read once, on first use)."""

    def __init__(self, project):
        # the binary and its load offset, not the project: this object is the value of a weak
        # dictionary keyed by the project, and a reference back would keep the project (its engine's
        # last state, that state's solver and history: 60,000 expressions after a uthash run) alive
        main = project.loader.main_object
        self._binary, self._delta = main.binary, main.mapped_base - main.linked_base
        self._frames: dict[int, list[Declared]] | None = None
        self._globals: dict[int, Declared] = {}

    def _load(self) -> None:
        try:
            frames, globs = read_declared(self._binary, self._delta)
        except Exception as e:  # noqa: BLE001 - unreadable DWARF: no declared objects, as without DWARF
            log.warning("angr-ram: debug information of %s not read (%s); no stack array bounds", self._binary, e)
            frames, globs = {}, []
        self._frames = frames
        self._globals = dict(globs)

    def containing(self, state, lo: int, end: int) -> bool:
        """Whether ``[lo, end)`` lies inside one declared global, or local of a function on the call stack."""
        if self._frames is None:
            self._load()
        for start, g in self._globals.items():
            if start <= lo and end <= start + g.size:
                return True
        return any(cfa + d.offset <= lo and end <= cfa + d.offset + d.size for cfa, d in self._locals(state))

    def _locals(self, state):
        """``(frame CFA, variable)`` of the declared locals of the functions on the call stack (a
        callee reads its caller's arrays through pointers), the innermost :data:`MAX_FRAMES`; a
        frame's CFA is the stack pointer at the function's entry + 8."""
        if not self._frames:
            return
        for depth, frame in enumerate(state.callstack):
            if depth >= MAX_FRAMES:
                return
            ds = self._frames.get(frame.func_addr)
            if ds is None or frame.stack_ptr is None:
                continue
            for d in ds:
                yield frame.stack_ptr + 8, d

    def at(self, state, base: int) -> tuple[int, Declared] | None:
        """``(start address, variable)`` of the declared object that starts at ``base``: a global
        or a local of a function on ``state``'s call stack; None if there is none."""
        if self._frames is None:
            self._load()
        g = self._globals.get(base)
        if g is not None:
            return base, g
        for cfa, d in self._locals(state):
            if cfa + d.offset == base:
                return base, d
        return None


_BY_PROJECT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def declared_objects(project) -> DeclaredObjects:
    """The :class:`DeclaredObjects` of ``project`` (one per project)."""
    d = _BY_PROJECT.get(project)
    if d is None:
        d = _BY_PROJECT[project] = DeclaredObjects(project)
    return d

