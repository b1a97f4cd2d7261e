"""Live registers and live stack-frame bytes at a block entry, from the VEX IR of a function.

Incremental state merging (section 4 of the state-merging-with-quantifiers paper) merges two
states when their stores agree on the *live* variables. This module computes that set with a
standard backward data-flow analysis over the blocks reachable from the function's entry:

- registers are tracked per byte of the VEX register file (``GET`` uses, ``PUT`` kills);
- stack memory is tracked per byte of the current frame, as offsets from the stack pointer at
  function entry (``SP0``, the callstack's ``stack_ptr``). A small forward pass gives ``rsp`` and
  ``rbp`` as ``SP0 + c`` at every statement, so ``[rbp - 8]`` is a frame byte at O0 and
  ``[rsp + 8]`` one at O2. Only bytes below ``SP0`` (offset < 0) are tracked: any other memory is
  always live. A load from an address that is not ``SP0 + c`` (``buf[i]``) makes every frame byte
  at or above the stack pointer live, and the red zone below it in a function without calls
  (compilers keep data there in leaf functions only).

Conservative rules: a call makes the argument registers and every frame byte above its return
address live and clobbers the caller-saved registers (System V ABI); the bytes below the return
address are the callee's frame, overwritten by the time the call returns, so they are dead there.
A call to a library function that angr runs as a SimProcedure with a declared prototype
(non-variadic, integer and pointer arguments) reads only its arguments' registers, so
``__ctype_b_loc()`` in a ``<ctype.h>`` loop leaves ``rdi`` and ``rax`` dead; so does a state
standing at the procedure or at its PLT stub. After ``ret`` the frame is dead and the live
registers are those live at the caller's return site (computed the same way, up the call stack),
or the ABI's return and callee-saved registers for the outermost frame; syscalls, indirect jumps
and unknown exits make everything live.

The condition-code thunk: an operation whose flags ignore ``cc_ndep`` (a compare, an addition, a
logical operation) makes the ``cc_ndep`` before it dead, even where VEX leaves the register
unwritten or passes it to its flag helper anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyvex

RET_REGS = ("rax", "rdx", "rsp", "rbp", "rbx", "r12", "r13", "r14", "r15", "xmm0", "xmm1", "fs")
CALL_USES = ("rdi", "rsi", "rdx", "rcx", "r8", "r9", "rax", "rsp", "rbp", "rbx", "r12", "r13", "r14", "r15",
             "fs", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7")
ARG_REGS = ("rdi", "rsi", "rdx", "rcx", "r8", "r9")
PROC_USES = ("rsp", "fs")       # besides its arguments: where a SimProcedure finds its return address
CALLER_SAVED = ("rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "cc_op", "cc_dep1", "cc_dep2",
                "cc_ndep") + tuple(f"ymm{i}" for i in range(16))
MAX_FRAMES = 4
RED_ZONE = 128      # bytes below the stack pointer that a leaf function may use (System V)
# VEX's amd64 flag thunks whose flags do not depend on cc_ndep (COPY, ADD, SUB, LOGIC, SHL, SHR,
# UMUL, SMUL, ANDN, BLSI, BLSMSK, BLSR); ADC, SBB, INC, DEC, ROL, ROR, ADCX and ADOX keep the old
# carry or flags there. A compare after an increment leaves cc_ndep unwritten but dead.
NDEP_UNUSED = frozenset((0, *range(1, 9), *range(17, 21), *range(29, 37), *range(45, 61)))
HOOK = object()     # FunctionLiveness.blocks' entry for a SimProcedure (or a PLT stub jumping to one)


NO_FLOOR = -(1 << 40)


@dataclass(frozen=True)
class Mem:
    """Live frame bytes: ``only`` the offsets in ``bytes_``, or all *except* them and except those
    below ``floor`` (the callee's side of the stack pointer after a call: see the module notes)."""

    only: bool
    bytes_: frozenset
    floor: int = NO_FLOOR

    def live(self, off: int) -> bool:
        """True if the frame byte at ``SP0 + off`` may be read later."""
        if self.only:
            return off in self.bytes_
        return off >= self.floor and off not in self.bytes_

    def gen(self, offs) -> Mem:
        """These bytes are read."""
        if self.only:
            return Mem(True, self.bytes_ | offs)
        low = min(offs, default=self.floor)
        if low >= self.floor:
            return Mem(False, self.bytes_ - offs, self.floor)
        between = frozenset(range(low, self.floor)) - offs     # still dead below the old floor
        return Mem(False, (self.bytes_ - offs) | between, low)

    def kill(self, offs) -> Mem:
        """These bytes are overwritten."""
        return Mem(True, self.bytes_ - offs) if self.only else Mem(False, self.bytes_ | offs, self.floor)

    def join(self, o: Mem) -> Mem:
        """Live on either path."""
        if self.only and o.only:
            return Mem(True, self.bytes_ | o.bytes_)
        if self.only:
            return o.gen(self.bytes_)
        if o.only:
            return self.gen(o.bytes_)
        lo, hi = (self, o) if self.floor <= o.floor else (o, self)
        # below the higher floor only the lower one's exceptions; above it, those of both
        dead = frozenset(b for b in lo.bytes_ if b < hi.floor or b in hi.bytes_)
        return Mem(False, dead, lo.floor)

    @staticmethod
    def from_(off: int | None) -> Mem:
        """Every byte at or above ``off`` (every byte when it is unknown)."""
        return TOP if off is None else Mem(False, frozenset(), off)


TOP = Mem(False, frozenset())
NONE = Mem(True, frozenset())


@dataclass(frozen=True)
class Live:
    """Live register bytes (a bit mask over VEX register offsets) and live frame bytes."""

    regs: int
    mem: Mem

    def join(self, o: Live) -> Live:
        """Live on either path."""
        return Live(self.regs | o.regs, self.mem.join(o.mem))


class _Block:
    """One lifted block: its statements as use/def events, and where it goes."""

    def __init__(self, project, addr: int):
        self.addr = addr
        irsb = project.factory.block(addr, opt_level=1).vex
        self.irsb = irsb
        self.size = irsb.size
        self.jumpkind = irsb.jumpkind
        self.next = irsb.next.con.value if isinstance(irsb.next, pyvex.expr.Const) else None
        self.exits = [(i, s.dst.value, s.jumpkind) for i, s in enumerate(irsb.statements)
                      if isinstance(s, pyvex.stmt.Exit)]
        self.unused_gets = _thunk_only_reads(irsb)


def _thunk_only_reads(irsb) -> frozenset:
    """Statement indices of the ``GET(cc_ndep)`` whose value only feeds flag helpers called with a
    constant operation that ignores it (VEX folds a compare's thunk into the helper call of the
    next instruction, an ``sbb`` after a ``cmp``, and passes the old cc_ndep along)."""
    ndep = irsb.arch.registers.get("cc_ndep", (None, None))[0]
    if ndep is None:
        return frozenset()
    gets = {s.tmp: i for i, s in enumerate(irsb.statements)
            if isinstance(s, pyvex.stmt.WrTmp) and isinstance(s.data, pyvex.expr.Get) and s.data.offset == ndep}
    if not gets:
        return frozenset()
    uses = dict.fromkeys(gets, 0)
    harmless = dict.fromkeys(gets, 0)
    for s in irsb.statements:
        for e in s.expressions:
            if isinstance(e, pyvex.expr.RdTmp) and e.tmp in uses:
                uses[e.tmp] += 1
            elif isinstance(e, pyvex.expr.CCall) and e.callee.name.startswith("amd64g_calculate_") \
                    and len(e.args) == 4 and isinstance(e.args[0], pyvex.expr.Const) \
                    and e.args[0].con.value in NDEP_UNUSED and isinstance(e.args[3], pyvex.expr.RdTmp) \
                    and e.args[3].tmp in harmless:
                harmless[e.args[3].tmp] += 1
    return frozenset(gets[t] for t in gets if uses[t] == harmless[t])


class FunctionLiveness:
    """Liveness inside one function, for one set of registers live after its ``ret``."""

    def __init__(self, analysis: Liveness, entry: int):
        self.a = analysis
        self.entry = entry
        self.blocks: dict[int, _Block] = {}
        self.sp_in: dict[int, tuple] = {}          # block -> (rsp, rbp) as SP0 offsets (None: unknown)
        self._add(entry)

    def _add(self, addr: int) -> None:
        work = [addr]
        while work:
            a = work.pop()
            if a in self.blocks:
                continue
            proc = self.a.procedure(a)
            if proc is not None and proc.returns:     # a SimProcedure, or the PLT stub that jumps to one
                self.blocks[a] = HOOK
                continue
            try:
                b = _Block(self.a.project, a)
            except Exception:  # noqa: BLE001 - unliftable code: treated as "everything live"
                self.blocks[a] = None
                continue
            self.blocks[a] = b
            work.extend(self._succs(b))
        self._stack_offsets()

    def ensure(self, addr: int) -> None:
        """Make ``addr`` (a block start reached by execution) part of the analysis."""
        if addr not in self.blocks:
            self._add(addr)

    def _succs(self, b: _Block) -> list[int]:
        out = [d for _, d, jk in b.exits if jk == "Ijk_Boring"]
        if b.jumpkind == "Ijk_Boring" and b.next is not None:
            out.append(b.next)
        elif b.jumpkind == "Ijk_Call":
            out.append(b.addr + b.size)
        return out

    # ------------------------------------------------------------------ forward: rsp/rbp vs SP0
    def _run_sp(self, b: _Block, rsp, rbp, on_stmt=None):
        """Walk ``b`` forward from (rsp, rbp) offsets; ``on_stmt(i, stmt, tmps, rsp, rbp)`` sees
        every statement with the SP0-offset of each temp known so far. Returns the exit offsets."""
        reg = self.a.reg_off
        tmps: dict[int, int] = {}

        def form(e):
            if isinstance(e, pyvex.expr.RdTmp):
                return tmps.get(e.tmp)
            return None

        for i, s in enumerate(b.irsb.statements):
            if on_stmt is not None:
                on_stmt(i, s, tmps, rsp, rbp)
            if isinstance(s, pyvex.stmt.WrTmp):
                d = s.data
                v = None
                if isinstance(d, pyvex.expr.Get) and d.ty == "Ity_I64":
                    v = rsp if d.offset == reg["rsp"] else rbp if d.offset == reg["rbp"] else None
                elif isinstance(d, pyvex.expr.RdTmp):
                    v = tmps.get(d.tmp)
                elif isinstance(d, pyvex.expr.Binop) and d.op in ("Iop_Add64", "Iop_Sub64"):
                    x, c = d.args
                    if isinstance(c, pyvex.expr.Const) and form(x) is not None:
                        k = c.con.value
                        k = k - (1 << 64) if k >= 1 << 63 else k
                        v = form(x) + (k if d.op == "Iop_Add64" else -k)
                if v is not None:
                    tmps[s.tmp] = v
            elif isinstance(s, pyvex.stmt.Put):
                if s.offset == reg["rsp"]:
                    rsp = form(s.data)
                elif s.offset == reg["rbp"]:
                    rbp = form(s.data)
        return rsp, rbp

    def _stack_offsets(self) -> None:
        self.sp_in = {self.entry: (0, None)}
        work = [self.entry]
        while work:
            a = work.pop()
            b = self.blocks.get(a)
            if b is None or b is HOOK:
                continue
            rsp, rbp = self._run_sp(b, *self.sp_in[a])
            outs = [(d, (rsp, rbp)) for _, d, jk in b.exits if jk == "Ijk_Boring"]
            if b.jumpkind == "Ijk_Boring" and b.next is not None:
                outs.append((b.next, (rsp, rbp)))
            elif b.jumpkind == "Ijk_Call":
                outs.append((b.addr + b.size, (None if rsp is None else rsp + 8, rbp)))
            for d, v in outs:
                old = self.sp_in.get(d)
                new = v if old is None else tuple(x if x == y else None for x, y in zip(old, v, strict=True))
                if new != old:
                    self.sp_in[d] = new
                    work.append(d)
        for a in self.blocks:                       # reached only by execution (not from entry)
            self.sp_in.setdefault(a, (None, None))

    # ------------------------------------------------------------------ backward: liveness
    def solve(self, ret_live: Live) -> dict[int, Live]:
        """Live-in of every block, given what is live after the function returns."""
        live_in: dict[int, Live] = {a: Live(0, NONE) for a in self.blocks}
        preds: dict[int, set] = {a: set() for a in self.blocks}
        for a, b in self.blocks.items():
            if b is not None and b is not HOOK:
                for d in self._succs(b):
                    preds.setdefault(d, set()).add(a)
        # what a load from an address not known as SP0 + c may read: with a call in the function,
        # nothing below the stack pointer (compilers keep data in the red zone of leaf functions only)
        self.red_zone = 0 if any(b is not None and b is not HOOK and b.jumpkind == "Ijk_Call"
                                 for b in self.blocks.values()) else RED_ZONE
        work = list(self.blocks)
        while work:
            a = work.pop()
            new = self._transfer(a, live_in, ret_live)
            if new != live_in[a]:
                live_in[a] = new
                work.extend(p for p in preds.get(a, ()) if p in self.blocks)
        return live_in

    def _transfer(self, a: int, live_in: dict, ret_live: Live) -> Live:
        b = self.blocks.get(a)
        everything = Live(self.a.all_regs, TOP)
        if b is None:
            return everything
        if b is HOOK:      # reads its arguments (and memory through them), then returns
            return Live((ret_live.regs & ~self.a.caller_saved) | self.a.call_uses_of(a), TOP)
        jk = b.jumpkind
        events = []
        rsp_out, _ = self._run_sp(b, *self.sp_in.get(a, (None, None)),
                                  on_stmt=lambda i, s, tmps, rsp, rbp: events.append((i, s, dict(tmps), rsp)))

        def at(d):
            return live_in.get(d, everything) if d in self.blocks else everything

        if jk == "Ijk_Boring":
            out = at(b.next) if b.next is not None else everything
        elif jk == "Ijk_Call":
            # the callee reads the frame through pointers, above its return address; below it is
            # the callee's own frame, which the caller finds overwritten after the call
            after = at(b.addr + b.size)
            out = Live((after.regs & ~self.a.caller_saved) | self.a.call_uses_of(b.next), Mem.from_(rsp_out))
        elif jk == "Ijk_Ret":
            out = ret_live
        else:
            out = everything
        regs, mem = out.regs, out.mem
        exits = {i: d for i, d, jk2 in b.exits}
        exit_kinds = {i: jk2 for i, _, jk2 in b.exits}
        for i, s, tmps, rsp in reversed(events):
            if i in exits:
                tgt = at(exits[i]) if exit_kinds[i] == "Ijk_Boring" else everything
                regs |= tgt.regs
                mem = mem.join(tgt.mem)
            if isinstance(s, pyvex.stmt.Put):
                regs &= ~self.a.mask(s.offset, s.data.result_size(b.irsb.tyenv) // 8)
                if s.offset == self.a.cc_op and isinstance(s.data, pyvex.expr.Const) \
                        and s.data.con.value in NDEP_UNUSED:
                    regs &= ~self.a.cc_ndep      # the flags of this operation do not read it
            elif isinstance(s, pyvex.stmt.Store):
                base = tmps.get(s.addr.tmp) if isinstance(s.addr, pyvex.expr.RdTmp) else None
                if base is not None and base < 0:
                    n = s.data.result_size(b.irsb.tyenv) // 8
                    mem = mem.kill(frozenset(range(base, min(base + n, 0))))
            elif isinstance(s, (pyvex.stmt.Dirty, pyvex.stmt.CAS, pyvex.stmt.LLSC, pyvex.stmt.PutI,
                                pyvex.stmt.LoadG, pyvex.stmt.StoreG)):
                regs |= self.a.all_regs
                mem = TOP
            for e in s.expressions:
                if isinstance(e, pyvex.expr.Get):
                    if i in b.unused_gets:
                        continue
                    regs |= self.a.mask(e.offset, e.result_size(b.irsb.tyenv) // 8)
                elif isinstance(e, pyvex.expr.GetI):
                    regs |= self.a.all_regs
                elif isinstance(e, pyvex.expr.Load):
                    base = tmps.get(e.addr.tmp) if isinstance(e.addr, pyvex.expr.RdTmp) else None
                    if base is None:
                        mem = mem.join(Mem.from_(None if rsp is None else rsp - self.red_zone))
                    elif base < 0:
                        n = e.result_size(b.irsb.tyenv) // 8
                        mem = mem.gen(frozenset(range(base, min(base + n, 0))))
        return Live(regs, mem)


class Liveness:
    """Liveness for every function of a project, computed on demand and cached."""

    def __init__(self, project):
        self.project = project
        regs = project.arch.registers
        self.reg_off = {n: o for n, (o, _) in regs.items()}
        self.width = max(o + s for o, s in regs.values())
        self.all_regs = (1 << self.width) - 1
        self.caller_saved = self._names(CALLER_SAVED)
        self.call_uses = self._names(CALL_USES)
        self.cc_op = self.reg_off.get("cc_op", -1)
        self.cc_ndep = self._names(("cc_ndep",))
        self._call_uses: dict[int | None, int] = {}
        self.ret_default = Live(self._names(RET_REGS), NONE)
        self._funcs: dict[int, FunctionLiveness] = {}
        self._solved: dict[tuple, dict] = {}
        self.range_memo: dict[int, list] = {}   # register mask -> runs of set bits (incremental.same_live_store)
        ip = regs["rip"]
        self.ip_mask = self.mask(*ip)
        self._names_at: dict[int, str] | None = None

    def register_name(self, off: int) -> str:
        """The name of the register that holds the register-file byte ``off``."""
        if self._names_at is None:
            self._names_at = {}
            for name, (o, size) in sorted(self.project.arch.registers.items(), key=lambda kv: -kv[1][1]):
                for b in range(o, o + size):
                    self._names_at[b] = name          # smaller registers overwrite: the most precise name
        return self._names_at.get(off, f"offset{off}")

    def mask(self, off: int, size: int) -> int:
        """Bit mask of the register bytes ``[off, off + size)``."""
        return ((1 << size) - 1) << off

    def _names(self, names) -> int:
        m = 0
        for n in names:
            if n in self.project.arch.registers:
                m |= self.mask(*self.project.arch.registers[n])
        return m

    def call_uses_of(self, target: int | None) -> int:
        """The registers a call to ``target`` may read: for a library function that angr runs as
        a SimProcedure with a declared, non-variadic prototype of at most six integer or pointer
        arguments, those arguments' registers (and ``rsp``); else every argument register, ``rax``
        (a variadic call's vector count) and the callee-saved registers."""
        if target not in self._call_uses:
            proc = self.procedure(target)
            k = _integer_arguments(proc) if proc is not None else None
            self._call_uses[target] = self.call_uses if k is None else self._names((*ARG_REGS[:k], *PROC_USES))
        return self._call_uses[target]

    def procedure(self, target: int | None):
        """The SimProcedure a call to ``target`` runs: a hook at ``target``, or the hook of the
        symbol whose PLT stub ``target`` is; None for program code or an unknown target."""
        if target is None:
            return None
        if self.project.is_hooked(target):
            return self.project.hooked_by(target)
        obj = self.project.loader.find_object_containing(target)
        name = getattr(obj, "reverse_plt", {}).get(target) if obj is not None else None
        sym = self.project.loader.find_symbol(name) if name else None
        if sym is None or not self.project.is_hooked(sym.rebased_addr):
            return None
        return self.project.hooked_by(sym.rebased_addr)

    def _func(self, entry: int) -> FunctionLiveness | None:
        if entry not in self._funcs:
            if self.procedure(entry) is None and self.project.loader.find_object_containing(entry) is None:
                self._funcs[entry] = None
            else:
                self._funcs[entry] = FunctionLiveness(self, entry)
        return self._funcs[entry]

    def live_in(self, func: int, addr: int, ret_live: Live) -> Live | None:
        """Live-in at block ``addr`` of the function at ``func``; None if it cannot be analysed."""
        f = self._func(func)
        if f is None:
            return None
        if addr not in f.blocks:
            f.ensure(addr)
            self._solved = {k: v for k, v in self._solved.items() if k[0] != func}
        key = (func, ret_live)
        if key not in self._solved:
            self._solved[key] = f.solve(ret_live)
        return self._solved[key].get(addr)

    def at(self, state) -> Live | None:
        """What is live when ``state`` starts its next block (None: unknown, treat all as live)."""
        frames = []
        for f in state.callstack:
            frames.append(f)
            if len(frames) > MAX_FRAMES:
                break
        if not frames or frames[0].func_addr in (0, None):
            return None
        # frames[0] is the innermost; its ret goes to frames[0].ret_addr inside frames[1]'s function
        ret_live = self.ret_default
        for j in range(len(frames) - 1, 0, -1):
            caller = frames[j]
            if not caller.func_addr:
                continue
            if self.procedure(caller.func_addr) is not None:
                ret_live = self.ret_default     # returning into a SimProcedure (main's caller): the ABI's
                continue
            got = self.live_in(caller.func_addr, frames[j - 1].ret_addr, ret_live)
            ret_live = Live(got.regs, NONE) if got is not None else self.ret_default
        return self.live_in(frames[0].func_addr, state.addr, ret_live)


def _integer_arguments(proc) -> int | None:
    """How many argument registers ``proc`` reads: its prototype's arguments when there are at most
    six, none variadic or floating-point; None when that is not known. A prototype angr guessed from
    ``run``'s parameters counts unless the procedure parses a format (the only SimProcedures that
    read arguments beyond ``run``'s, with ``va_arg``) or ``run`` takes ``*args``."""
    import inspect

    from angr.procedures.stubs.format_parser import FormatParser
    from angr.sim_type import SimStruct, SimTypeFloat

    proto = getattr(proc, "prototype", None)
    if proto is None or getattr(proto, "variadic", False) or isinstance(proc, FormatParser):
        return None
    if getattr(proc, "guessed_prototype", True):
        try:
            if inspect.getfullargspec(type(proc).run).varargs is not None:
                return None
        except TypeError:
            return None
    args = list(proto.args)
    if len(args) > len(ARG_REGS) or any(isinstance(a, (SimTypeFloat, SimStruct)) for a in args):
        return None
    return len(args)
