"""``LengthLimiter`` beside ``explore`` (paths longer than a bound are cut) on the write-watching
state machine at ``-O2``, the input one BVS."""
import angr
import claripy

PROGRAM = "sc_writewatch_O2"
EXPECT = b"accepted"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("data", 8 * 6)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=6, has_end=True))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.use_technique(angr.exploration_techniques.LengthLimiter(max_length=400))
    simgr.explore(find=lambda s: b"accepted" in s.posix.dumps(1), avoid=lambda s: b"refused" in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(data, cast_to=bytes)}
