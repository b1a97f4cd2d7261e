"""``entry_state(addr=...)`` inside a function after its scanf, the frame built by hand
(``state.regs.rbp``, ``state.mem[rbp - k].int``), ``LAZY_SOLVES`` (angr_ctf's symbolic stack)."""
import angr
import claripy

PROGRAM = "sc_stackvars_O0"
EXPECT = b"Good Job."


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    handle = proj.loader.find_symbol("handle")
    insns = list(proj.factory.block(handle.rebased_addr, size=handle.size).capstone.insns)
    k = next(n for n, i in enumerate(insns) if i.mnemonic == "call")
    start = insns[k + 1].address
    # the two locals scanf wrote: the lea's before the call give their offsets from rbp
    offsets = [int(i.op_str.split("rbp - ")[1].split("]")[0], 16) for i in insns[:k]
               if i.mnemonic == "lea" and "rbp -" in i.op_str]
    state = proj.factory.entry_state(addr=start, add_options={angr.options.LAZY_SOLVES})
    state.regs.rbp = state.regs.rsp
    state.regs.rsp = state.regs.rsp - 0x20
    a, b = claripy.BVS("a", 32), claripy.BVS("b", 32)
    # scanf("%d %d", &a, &b): the first lea loads &b (rdx), the second &a (rsi)
    state.mem[state.regs.rbp - offsets[1]].int = a
    state.mem[state.regs.rbp - offsets[0]].int = b
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"Good Job." in s.posix.dumps(1), avoid=lambda s: b"Try again." in s.posix.dumps(1))
    found = simgr.found[0]
    signed = [v - (1 << 32) if v >= 1 << 31 else v for v in (found.solver.eval(a), found.solver.eval(b))]
    return {"stdin": f"{signed[0]} {signed[1]}\n".encode()}
