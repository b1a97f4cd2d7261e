"""The chained table lookups at ``-O2`` with ``explore(find=, avoid=)`` by output."""
import angr
import claripy

PROGRAM = "sc_sbox_O2"
EXPECT = b"right"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("data", 8 * 6)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=6, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"right" in s.posix.dumps(1), avoid=lambda s: b"wrong" in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(data, cast_to=bytes)}
