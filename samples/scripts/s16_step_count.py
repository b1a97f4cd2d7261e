"""Stepping by hand: ``run(n=...)`` then ``step()`` in a loop until a state reaches ``win``,
checking ``state.addr`` after every step (the simulation manager's own loop, as in angr's
"Simulation Managers" page)."""
import angr
import claripy

PROGRAM = "sc_argkey_O0"
EXPECT = b"Access granted"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    arg = claripy.BVS("arg", 8 * 8)
    state = proj.factory.entry_state(args=[binary, arg])
    for b in arg.chop(8):
        state.solver.add(b >= 0x21, b <= 0x7e)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    win = proj.loader.find_symbol("win").rebased_addr
    simgr.run(n=3)
    for _ in range(400):
        hit = [s for s in simgr.active if s.addr == win]
        if hit:
            return {"args": [hit[0].solver.eval(arg, cast_to=bytes)]}
        simgr.step()
    raise AssertionError("win not reached")
