"""``explore(..., enable_veritesting=True)`` over a counting loop whose paths double with every
byte (angr's Veritesting technique merges them)."""
import angr
import claripy

PROGRAM = "sc_countloop_O0"
EXPECT = b"counted"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("data", 8 * 16)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=16, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.use_technique(angr.exploration_techniques.Veritesting())
    simgr.explore(find=lambda s: b"counted" in s.posix.dumps(1), avoid=lambda s: b"no" in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(data, cast_to=bytes)}
