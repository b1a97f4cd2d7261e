"""A key=value parser (fgets, strcspn, strchr, strtol, strcmp) driven from stdin one wide BVS,
``-O2``, explore by output."""
import angr
import claripy

PROGRAM = "sc_kvparse_O2"
EXPECT = b"config ok"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("data", 8 * 12)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=12, has_end=True))
    for b in data.chop(8):
        state.solver.add(b >= 0x20, b <= 0x7e)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"config ok" in s.posix.dumps(1),
                  avoid=lambda s: b"rejected" in s.posix.dumps(1) or b"no pair" in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(data, cast_to=bytes)}
