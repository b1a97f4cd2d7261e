"""A hash compared with a constant: one ``claripy.BVS`` stdin of the read's size, explore by
output, ``-O2``."""
import angr
import claripy

PROGRAM = "sc_fnvhash_O2"
EXPECT = b"match"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("data", 32)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=4, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: s.posix.dumps(1).startswith(b"match"),
                  avoid=lambda s: b"no match" in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(data, cast_to=bytes)}
