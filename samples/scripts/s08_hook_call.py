"""A user hook of a given length over the call to an expensive function (``@project.hook(addr,
length=5)``), setting ``rax`` to a symbolic comparison (angr_ctf's hook pattern)."""
import angr
import claripy

PROGRAM = "sc_hookcheck_O0"
EXPECT = b"Good Job."


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    main = proj.loader.find_symbol("main")
    target = proj.loader.find_symbol("check_equals").rebased_addr
    insns = proj.factory.block(main.rebased_addr, size=main.size).capstone.insns
    call = next(i for i in insns if i.mnemonic == "call" and i.op_str == hex(target))

    @proj.hook(call.address, length=5)
    def skip_check_equals(state):
        buf = state.regs.rdi
        content = state.memory.load(buf, 12)
        state.regs.rax = claripy.If(content == b"LKJHGFDSAPOI", claripy.BVV(1, 64), claripy.BVV(0, 64))

    stdin = claripy.BVS("stdin", 8 * 12)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=stdin, has_end=False))
    for b in stdin.chop(8):
        state.solver.add(b >= ord("A"), b <= ord("Z"))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"Good Job." in s.posix.dumps(1), avoid=lambda s: b"Try again." in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(stdin, cast_to=bytes) + b"\n"}
