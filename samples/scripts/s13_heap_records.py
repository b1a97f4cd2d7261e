"""Heap records reached through an index computed from the input (``malloc``/``calloc`` objects),
explore by output."""
import angr
import claripy

PROGRAM = "sc_heapkey_O2"
EXPECT = b"opened"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("data", 8 * 4)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=4, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"opened" in s.posix.dumps(1), avoid=lambda s: b"locked" in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(data, cast_to=bytes)}
