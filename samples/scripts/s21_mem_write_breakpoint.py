"""A ``mem_write`` breakpoint (``state.inspect.b``) that records the writes to a global, then
``explore`` to the accepting output (angr's "Breakpoints" documentation)."""
import angr
import claripy

PROGRAM = "sc_writewatch_O0"
EXPECT = b"accepted"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    target = proj.loader.find_symbol("state_var").rebased_addr
    data = claripy.BVS("data", 8 * 6)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=6, has_end=True))
    state.globals["writes"] = 0

    def count(st):
        if st.solver.is_true(st.inspect.mem_write_address == target):
            st.globals["writes"] += 1

    state.inspect.b("mem_write", when=angr.BP_AFTER, action=count)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"accepted" in s.posix.dumps(1), avoid=lambda s: b"refused" in s.posix.dumps(1))
    found = simgr.found[0]
    assert found.globals["writes"] >= 4, found.globals["writes"]
    return {"stdin": found.solver.eval(data, cast_to=bytes)}
