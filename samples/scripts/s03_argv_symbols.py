"""A symbolic argv[1] (``entry_state(args=[...])``) with printable bytes, explore(find=win,
avoid=lose) by the functions' addresses."""
import angr
import claripy

PROGRAM = "sc_argkey_O0"
EXPECT = b"Access granted"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    arg = claripy.BVS("arg", 8 * 8)
    state = proj.factory.entry_state(args=[binary, arg])
    for b in arg.chop(8):
        state.solver.add(b >= 0x21, b <= 0x7e)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    win = proj.loader.find_symbol("win").rebased_addr
    lose = proj.loader.find_symbol("lose").rebased_addr
    simgr.explore(find=win, avoid=lose)
    return {"args": [simgr.found[0].solver.eval(arg, cast_to=bytes)]}
