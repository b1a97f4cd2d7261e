"""entry_state(stdin=claripy.BVS(...)), explore by output, -O2 (the solver page's ``eval(cast_to=bytes)``)."""
import angr
import claripy

PROGRAM = "sc_linecheck_O2"
EXPECT = b"Correct!"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    flag = claripy.BVS("flag", 8 * 24)
    state = proj.factory.entry_state(stdin=flag)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"Correct" in s.posix.dumps(1), avoid=lambda s: b"Wrong" in s.posix.dumps(1))
    found = simgr.found[0]
    return {"stdin": found.solver.eval(flag, cast_to=bytes)}
