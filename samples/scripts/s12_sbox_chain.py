"""Chained lookups in a 256-byte table computed at run time (symbolic reads at symbolic indices),
``simgr.run()`` then the deadended state that printed the answer."""
import angr
import claripy

PROGRAM = "sc_sbox_O0"
EXPECT = b"right"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("data", 8 * 6)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=6, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.run()
    good = [s for s in simgr.deadended if b"right" in s.posix.dumps(1)]
    return {"stdin": good[0].solver.eval(data, cast_to=bytes)}
