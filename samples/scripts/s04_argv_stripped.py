"""A stripped -O2 binary: the success string's reference found with the CFG, explore to it."""
import angr
import claripy

PROGRAM = "sc_argkey_stripped"
EXPECT = b"Access granted"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    arg = claripy.BVS("arg", 8 * 8)
    state = proj.factory.entry_state(args=[binary, arg])
    for b in arg.chop(8):
        state.solver.add(b >= 0x21, b <= 0x7e)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"granted" in s.posix.dumps(1), avoid=lambda s: b"denied" in s.posix.dumps(1))
    return {"args": [simgr.found[0].solver.eval(arg, cast_to=bytes)]}
