"""``call_state`` of a checker function with a symbolic argument, run to the end, and the return
value constrained (the "call_state" style of angr's state documentation)."""
import angr
import claripy

PROGRAM = "sc_callcheck_O0"
EXPECT = b"valid"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    check = proj.loader.find_symbol("check").rebased_addr
    x = claripy.BVS("x", 32)
    state = proj.factory.call_state(check, x, ret_addr=0xdead0000)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: s.addr == 0xdead0000 and s.solver.satisfiable(extra_constraints=[s.regs.eax != 0]))
    s = simgr.found[0]
    s.solver.add(s.regs.eax != 0)
    return {"args": [str(s.solver.eval(x)).encode()]}
