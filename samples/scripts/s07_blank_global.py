"""``blank_state`` after the scanf, symbolic bytes stored into the global buffer with
``state.memory.store`` (angr_ctf's symbolic memory pattern)."""
import angr
import claripy

PROGRAM = "sc_globalbuf_O0"
EXPECT = b"Good Job."


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    main = proj.loader.find_symbol("main")
    scanf = proj.loader.main_object.plt["__isoc99_scanf"]
    insns = proj.factory.block(main.rebased_addr, size=main.size).capstone.insns
    call = next(i for i in insns if i.mnemonic == "call" and i.op_str == hex(scanf))
    buf = proj.loader.find_symbol("input").rebased_addr
    state = proj.factory.blank_state(addr=call.address + call.size,
                                     add_options={angr.options.SYMBOL_FILL_UNCONSTRAINED_MEMORY,
                                                  angr.options.SYMBOL_FILL_UNCONSTRAINED_REGISTERS})
    password = claripy.BVS("password", 8 * 16)
    state.memory.store(buf, password)
    for b in password.chop(8):
        state.solver.add(b >= ord("A"), b <= ord("Z"))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"Good Job." in s.posix.dumps(1), avoid=lambda s: b"Try again." in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(password, cast_to=bytes) + b"\n"}
