"""Blocks whose inputs are all concrete, run on Python integers, several to a step.

angr runs every VEX statement of a block on claripy expressions (a constant addition builds two
``BVV`` objects and an ``Add`` node; every register read goes through the whole memory-mixin
stack) and wraps every block in a step (a state copy, history, call-stack and successor
bookkeeping). On concrete code (SQLite opening a database and compiling its schema: some 80,000
blocks before the first symbolic byte is read; a library's start-up; a parser's tables) that was
almost all of the time.

While RelocatableMemory steps a state, a VEX block is first run here, on integers:

- temporaries are ints; a register or memory read goes through ``state.registers.load`` /
  ``state.memory.load`` as in angr's engine, and a symbolic value sends the block to angr;
- the operations are :mod:`.integer_ops`' (angr's own code on constants where not in its table);
  a clean helper call is angr's ``ccall`` on constants;
- register and memory writes are buffered (later reads see them) and applied when the step ends:
  the memory writes in program order, the registers' final bytes in runs of adjacent bytes;
- the block's exit (a guarded ``Exit`` taken or the default one), if a plain jump, call or return
  to code that is not hooked, not a stop point (``extra_stop_points``, Explorer's addresses) and
  lifts, is followed by the next block in the same step, up to
  :data:`~angr_ram.run.step_policy.MAX_CHAIN` blocks. Each followed jump does angr's call-stack bookkeeping on ints (a call pushes a frame with the call
  site, the function, the stack pointer and the return address; any other jump pops the frames
  below the stack pointer), and the blocks' addresses, count and instructions go into the history.
  The last exit becomes the successor through angr's ``add_successor``.

Nothing of an attempt stays in the state: a symbolic read, a statement, jump kind or type not
handled here (system calls, dirty helpers, compare-and-swap, floating-point constants), an
exception from a read, or a state option or breakpoint that wants angr's per-statement work
(action tracking, ``SUPER_FASTPATH``, ``STRICT_PAGE_ACCESS``, ``CALLLESS``, ...) sends a step's
first block to angr's engine unchanged, and ends a chain before any later block. Blocks are
followed only for the exploration techniques :func:`~.step_policy.chain_policy` knows look at
states' addresses only where they say (their stop points); with any other (a loop bound,
merging, an Explorer given a function), a step is one block (:mod:`.step_policy`).
:func:`~.step_policy.angr_blocks` turns all this off (for comparisons). An engine mixin (:mod:`angr_ram.core.engines`) right above angr's ``HeavyVEXMixin``; an exception
other than the expected hand-backs (:data:`EXPECTED`) is counted per run
(``stats.fast_path_failures``) and raised in debug mode.
"""

from __future__ import annotations

import collections

import claripy
import pyvex
from angr import sim_options as o
from angr.engines.vex.claripy import ccall
from angr.engines.vex.heavy.heavy import HeavyVEXMixin
from angr.errors import SimError
from angr.utils.constants import DEFAULT_STATEMENT
from claripy.errors import ClaripyError

from angr_ram.core.engines import debug_mode
from angr_ram.core.errors import AngrRamError, ForkRequest, InfeasibleAccess, MemoryFault
from angr_ram.memory.register_reads import breakpoints
from angr_ram.run.integer_ops import (
    INT_CONSTS,
    Fallback,
    angr_op,
    angr_value,
    cached_int_op,
    concrete,
    value_of,
)
from angr_ram.run.step_policy import chain_length, concrete_enabled
from angr_ram.solver.z3_check import gave_up

# "blocks" run here, "angr": steps sent to angr's engine, "failures": unexpected ones (process-wide)
RUNS = collections.Counter()


# exceptions that end a block on ints as expected: angr's engine runs the block and reports them
EXPECTED = (Fallback, SimError, ClaripyError, AngrRamError, ForkRequest, MemoryFault, InfeasibleAccess)

JUMPS = frozenset({"Ijk_Boring", "Ijk_Call", "Ijk_Ret"})
# options under which angr's engine does per-statement work this module does not do
UNHANDLED_OPTIONS = frozenset({o.TRACK_JMP_ACTIONS, o.TRACK_MEMORY_ACTIONS, o.TRACK_REGISTER_ACTIONS,
                               o.TRACK_TMP_ACTIONS, o.ACTION_DEPS, o.SUPER_FASTPATH, o.STRICT_PAGE_ACCESS,
                               o.CALLLESS, o.DO_RET_EMULATION, o.UNINITIALIZED_ACCESS_AWARENESS,
                               o.CONCRETIZE, o.UNICORN_HANDLE_SYMBOLIC_ADDRESSES,
                               o.UNICORN_HANDLE_SYMBOLIC_CONDITIONS})
# the stepping arguments that select statements (angr's slicing mixin) or give the code's bytes
_SLICING = ("skip_stmts", "last_stmt", "whitelist", "insn_bytes")
def follow_call_stack(stack, jumpkind: str, site: int, target: int, sp: int, ret: int | None) -> None:
    """angr's ``CallStack._manage`` after a jump on ints: a call from block ``site`` to ``target``
    pushes a frame with the stack pointer and return address; any other jump pops every frame whose
    stack pointer lies below ``sp`` (unsigned, as claripy compares)."""
    if jumpkind == "Ijk_Call":
        stack.push(type(stack)(call_site_addr=site, func_addr=target, stack_ptr=sp, ret_addr=ret,
                               jumpkind="Ijk_Call"))
        return
    while sp > stack.stack_ptr:
        stack = stack.pop()


def _symbolic(v) -> bool:
    return type(v) is not int


def _compose(entries: list, load):
    """The value of ``n`` bytes from buffered ``entries`` (an int byte, ``(value, k)`` for byte
    ``k`` of a symbolic value, None for a byte not written; low byte first), ``load()`` giving the
    unwritten ones: an int if every byte is constant, else a claripy bit-vector."""
    n = len(entries)
    if all(b is None for b in entries):
        return value_of(load())
    if all(type(b) is int for b in entries):
        v = 0
        for k, b in enumerate(entries):
            v |= b << (8 * k)
        return v
    first = entries[0]
    if type(first) is tuple and first[0].length == 8 * n and all(
            type(b) is tuple and b[0] is first[0] and b[1] == k for k, b in enumerate(entries)):
        return first[0]
    below = value_of(load()) if any(b is None for b in entries) else None
    if type(below) is int and all(type(b) is not tuple for b in entries):
        return _compose([(below >> (8 * k)) & 0xFF if b is None else b for k, b in enumerate(entries)], load)
    pieces = []
    for k in reversed(range(n)):
        b = entries[k]
        if type(b) is int:
            pieces.append(claripy.BVV(b, 8))
        else:
            whole, j = (b if b is not None else (below if _symbolic(below) else claripy.BVV(below, 8 * n), k))
            pieces.append(claripy.Extract(8 * j + 7, 8 * j, whole))
    return value_of(claripy.Concat(*pieces))


def _source(b):
    """The symbolic value a buffered byte is part of (None: a constant byte)."""
    return b[0] if type(b) is tuple else None


def _bytes(v, n: int) -> list:
    return [(v >> (8 * k)) & 0xFF for k in range(n)] if type(v) is int else [(v, k) for k in range(n)]


class ConcreteBlock:
    """One block run over a :class:`Chain`'s buffered writes; values are ints where constant and
    claripy bit-vectors (computed by angr's own code) where not. ``run`` returns the exit taken as
    ``(target, jumpkind, exit statement index, instruction address)`` or raises."""

    def __init__(self, chain: Chain, irsb: pyvex.IRSB):
        self.chain, self.state, self.irsb = chain, chain.state, irsb
        self.types = irsb.tyenv.types
        self.tmps: list = [None] * len(self.types)
        self.reg_bytes: dict = {}     # register-file offset -> byte written in this block (see _compose)
        self.mem_bytes: dict = {}     # address -> byte stored in this block
        self.stores: list[tuple] = []           # (address, bytes, value, instruction address, statement)
        self.insns: list[int] = []
        self.ins_addr: int | None = None

    def _atom(self, e):
        if e.tag == "Iex_RdTmp":
            return self.tmps[e.tmp]
        if e.tag == "Iex_Const" and e.con.type in INT_CONSTS:
            return e.con.value
        raise Fallback

    def _constant(self, e) -> int:
        v = self._atom(e)
        if _symbolic(v):
            raise Fallback
        return v

    def _type(self, e) -> str:
        return self.types[e.tmp] if e.tag == "Iex_RdTmp" else e.con.type

    def _address(self, e) -> int:
        """An access's address: a symbolic one (a heap pointer, ``base + offset``) by the address
        constraints' substitution, as the relocatable layer routes it; Fallback if that is symbolic."""
        a = self._atom(e)
        if _symbolic(a):
            if not self.state.has_plugin("ram"):
                raise Fallback
            a = concrete(self.state.ram.substitute(a))
        return a

    def _expr(self, e):
        tag = e.tag
        if tag == "Iex_RdTmp" or tag == "Iex_Const":
            return self._atom(e)
        if tag == "Iex_Get":
            return self.chain.read_register(e.offset, pyvex.get_type_size(e.ty) // 8, self.reg_bytes)
        if tag == "Iex_Load":
            if e.end != "Iend_LE":
                raise Fallback
            n = pyvex.get_type_size(e.ty) // 8
            return self.chain.read_memory(self._address(e.addr), n, self.mem_bytes)
        if tag in ("Iex_Unop", "Iex_Binop", "Iex_Triop", "Iex_Qop"):
            args = [self._atom(a) for a in e.args]
            f = cached_int_op(e.op)
            if f is not None and not any(_symbolic(a) for a in args):
                return f(*args)
            options = self.state.options
            simop = angr_op(e.op, o.EXTENDED_IROP_SUPPORT in options, o.SUPPORT_FLOATING_POINT in options)
            typed = (angr_value(v, self._type(a)) for v, a in zip(args, e.args, strict=True))
            return value_of(simop.calculate(*typed))
        if tag == "Iex_ITE":
            cond = self._atom(e.cond)
            if not _symbolic(cond):
                return self._atom(e.iftrue) if cond else self._atom(e.iffalse)
            ty = self._type(e.iftrue)
            then, other = angr_value(self._atom(e.iftrue), ty), angr_value(self._atom(e.iffalse), ty)
            return value_of(claripy.If(cond != 0, then, other))
        if tag == "Iex_CCall" and o.DO_CCALLS in self.state.options:
            func = getattr(ccall, e.cee.name, None)
            if func is not None:
                typed = (angr_value(self._constant(a), self._type(a)) for a in e.args)
                return concrete(func(self.state, *typed))
        raise Fallback

    def _write(self, written: dict, where: int, ty: str, v) -> int:
        n = pyvex.get_type_size(ty) // 8
        if n == 0 or (_symbolic(v) and v.length != 8 * n):
            raise Fallback
        for k, b in enumerate(_bytes(v, n)):
            written[where + k] = b
        return n

    def run(self) -> tuple:
        for idx, stmt in enumerate(self.irsb.statements):
            tag = stmt.tag
            if tag == "Ist_IMark":
                self.ins_addr = stmt.addr + stmt.delta
                self.insns.append(self.ins_addr)
            elif tag == "Ist_WrTmp":
                self.tmps[stmt.tmp] = self._expr(stmt.data)
            elif tag == "Ist_Put":
                self._write(self.reg_bytes, stmt.offset, self._type(stmt.data), self._atom(stmt.data))
            elif tag == "Ist_Store":
                if stmt.end != "Iend_LE":
                    raise Fallback
                addr, v = self._address(stmt.addr), self._atom(stmt.data)
                n = self._write(self.mem_bytes, addr, self._type(stmt.data), v)
                self.stores.append((addr, n, v, self.ins_addr, idx))
            elif tag == "Ist_Exit":
                if self._constant(stmt.guard):
                    if stmt.jk not in JUMPS:
                        raise Fallback
                    return stmt.dst.value, stmt.jk, idx, self.ins_addr
            elif tag not in ("Ist_NoOp", "Ist_AbiHint", "Ist_MBE"):
                raise Fallback
        if self.irsb.jumpkind not in JUMPS:
            raise Fallback
        return self._constant(self.irsb.next), self.irsb.jumpkind, DEFAULT_STATEMENT, self.ins_addr


class Chain:
    """The blocks one step runs, their buffered writes and call-stack changes."""

    def __init__(self, state):
        self.state = state
        self.reg_bytes: dict = {}
        self.mem_bytes: dict = {}
        self.stores: list[tuple] = []
        self.blocks: list[tuple] = []           # (address, irsb) of each block run
        self.insns: list[int] = []
        self.frames: list[tuple] = []           # (jumpkind, call site, target, stack pointer, return address)

    @staticmethod
    def _read(where: int, n: int, mine: dict, ours: dict, load):
        return _compose([mine.get(where + k, ours.get(where + k)) for k in range(n)], load)

    def read_register(self, offset: int, n: int, mine: dict | None = None):
        return self._read(offset, n, mine or {}, self.reg_bytes, lambda: self.state.registers.load(offset, n))

    def read_memory(self, addr: int, n: int, mine: dict | None = None):
        return self._read(addr, n, mine or {}, self.mem_bytes,
                          lambda: self.state.memory.load(addr, n, endness="Iend_LE"))

    def run(self, addr: int, irsb: pyvex.IRSB) -> tuple:
        """Run one more block; its writes join the chain only if it completes."""
        block = ConcreteBlock(self, irsb)
        exit_ = block.run()
        self.reg_bytes.update(block.reg_bytes)
        self.mem_bytes.update(block.mem_bytes)
        self.stores += block.stores
        self.insns += block.insns
        self.blocks.append((addr, irsb))
        return exit_

    def jump(self, jumpkind: str, target: int) -> tuple:
        """The call-stack change of following the last block's jump; Fallback if the stack pointer
        or the return address a call pushed is symbolic."""
        arch = self.state.arch
        sp = self.read_register(arch.sp_offset, arch.bytes)
        if _symbolic(sp):
            raise Fallback
        ret = self.read_memory(sp, arch.bytes) if jumpkind == "Ijk_Call" else None
        if ret is not None and _symbolic(ret):
            raise Fallback
        return jumpkind, self.blocks[-1][0], target, sp, ret

    def commit(self) -> None:
        """Apply the writes (memory in program order, then the registers' final bytes in runs of
        adjacent bytes, the instruction pointer left to the exit) and the followed jumps' call-stack
        changes. Nothing can observe the state between them: an exception from a write makes the
        step restart from the state before it."""
        state, scratch = self.state, self.state.scratch
        for where, n, v, ins_addr, stmt_idx in self.stores:
            scratch.ins_addr, scratch.stmt_idx = ins_addr, stmt_idx
            state.memory.store(where, claripy.BVV(v, 8 * n) if type(v) is int else v, endness="Iend_LE")
        written = self.reg_bytes
        for k in range(state.arch.bytes):
            written.pop(state.arch.ip_offset + k, None)
        offsets = sorted(written)
        start = 0
        while start < len(offsets):     # runs of adjacent bytes that are all constant, or of one value
            end = start + 1
            while end < len(offsets) and offsets[end] == offsets[end - 1] + 1 and \
                    _source(written[offsets[end]]) is _source(written[offsets[start]]):
                end += 1
            base = offsets[start]
            v = _compose([written[base + k] for k in range(end - start)], None)
            state.registers.store(base, claripy.BVV(v, 8 * (end - start)) if type(v) is int else v)
            start = end
        for jumpkind, site, target, sp, ret in self.frames:
            follow_call_stack(state.callstack, jumpkind, site, target, sp, ret)


def _wanted(engine, successors, kwargs) -> bool:
    state = engine.state
    if type(successors.addr) is not int or any(kwargs.get(k) is not None for k in _SLICING):
        return False
    if engine.project is not None and engine.project.selfmodifying_code:
        return False
    options = state.options
    if any(opt in options for opt in UNHANDLED_OPTIONS):
        return False
    return not breakpoints(state) and state.arch.name == "AMD64" and state.arch.register_endness == "Iend_LE"


def _lift(engine, addr: int, kwargs) -> pyvex.IRSB | None:
    try:
        irsb = engine.lift_vex(addr=addr, state=engine.state, thumb=kwargs.get("thumb", False),
                               size=kwargs.get("size"), num_inst=kwargs.get("num_inst"),
                               extra_stop_points=kwargs.get("extra_stop_points"),
                               opt_level=kwargs.get("opt_level"), strict_block_end=kwargs.get("strict_block_end"))
    except Exception:  # noqa: BLE001 - code angr cannot lift is angr's to report
        return None
    return None if irsb.size == 0 or irsb.jumpkind == "Ijk_NoDecode" else irsb


def _follow(engine, chain: Chain, exit_: tuple, kwargs) -> tuple | None:
    """The next block's (address, irsb) if the chain may go on through ``exit_``."""
    target, jumpkind = exit_[0], exit_[1]
    if len(chain.blocks) >= chain_length() or kwargs.get("num_inst") is not None or \
            kwargs.get("size") is not None:
        return None
    project = engine.project
    if project is None or project.is_hooked(target) or target in (kwargs.get("extra_stop_points") or ()):
        return None
    irsb = _lift(engine, target, kwargs)
    return None if irsb is None else (jumpkind, target, irsb)


def _handed_back(state, e: Exception) -> None:
    """An exception that ended a block on ints: an expected hand-back to angr's engine (a value or
    operation it does not do, a read angr reports, a fork or fault angr-ram raises again there), or a
    failure of this module that is counted (``stats.fast_path_failures``) and, in debug mode
    (:func:`~angr_ram.core.engines.debug_mode`), raised."""
    if isinstance(e, EXPECTED) or gave_up(e) is not None:
        return
    RUNS["failures"] += 1
    stats = state.ram.stats if state.has_plugin("ram") else None
    if stats is not None:
        stats.fast_path_failures += 1
    if debug_mode():
        raise e


class ConcreteBlocksMixin(HeavyVEXMixin):
    """angr's VEX engine; inside angr-ram steps, blocks whose reads are all concrete are run on
    ints (module docstring), anything else falls back to ``super()``."""

    def process_successors(self, successors, irsb=None, **kwargs):
        if not concrete_enabled() or not _wanted(self, successors, kwargs):
            return super().process_successors(successors, irsb=irsb, **kwargs)
        state, addr = self.state, successors.addr
        if irsb is None:
            irsb = _lift(self, addr, kwargs)
        if irsb is None:
            return super().process_successors(successors, irsb=irsb, **kwargs)
        state.scratch.guard = claripy.true()        # as angr's engine starts a block
        chain = Chain(state)
        try:
            exit_ = chain.run(addr, irsb)
        except Exception as e:  # noqa: BLE001 - anything this block cannot do on ints, angr's engine does
            _handed_back(state, e)
            RUNS["angr"] += 1
            return super().process_successors(successors, irsb=irsb, **kwargs)
        while (nxt := _follow(self, chain, exit_, kwargs)) is not None:
            jumpkind, target, next_irsb = nxt
            try:
                frame = chain.jump(jumpkind, target)
                following = chain.run(target, next_irsb)
            except Exception as e:  # noqa: BLE001 - the step ends before this block; angr's engine runs it next
                _handed_back(state, e)
                break
            chain.frames.append(frame)
            exit_ = following
        _finish(successors, state, chain, exit_)


def _finish(successors, state, chain: Chain, exit_: tuple) -> None:
    """The chain's history, scratch and artifacts as angr's steps would leave them, its writes
    applied, and its last exit the step's one successor."""
    RUNS["blocks"] += len(chain.blocks)
    last_addr, last_irsb = chain.blocks[-1]
    successors.sort = successors.description = "IRSB"
    history, scratch = state.history, state.scratch
    history.recent_block_count = len(chain.blocks)
    history.recent_bbl_addrs.extend(a for a, _ in chain.blocks[1:])
    # what angr's steps would count: each of its histories starts the count at -1
    history.recent_instruction_count += len(chain.insns) - (len(chain.blocks) - 1)
    scratch.sim_procedure = None
    scratch.bbl_addr = last_addr
    scratch.set_tyenv(last_irsb.tyenv)
    scratch.irsb = last_irsb
    scratch.num_insns += len(chain.insns)
    successors.artifacts.update(irsb=last_irsb, irsb_size=last_irsb.size,
                                irsb_direct_next=last_irsb.direct_next,
                                irsb_default_jumpkind=last_irsb.jumpkind, insn_addrs=chain.insns)
    chain.commit()
    target, jumpkind, exit_idx, ins_addr = exit_
    scratch.ins_addr, scratch.stmt_idx, scratch.guard = ins_addr, exit_idx, claripy.true()
    successors.add_successor(state, claripy.BVV(target, state.arch.bits), claripy.true(), jumpkind,
                             add_guard=exit_idx != DEFAULT_STATEMENT, exit_stmt_idx=exit_idx,
                             exit_ins_addr=ins_addr)
    successors.processed = True
