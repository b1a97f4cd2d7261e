"""``call_state`` with a pointer argument: symbolic bytes stored in memory the script chose
(``state.memory.store``), constrained printable, the return value asked through ``state.regs``."""
import angr
import claripy

PROGRAM = "sc_bufcheck_O0"
EXPECT = b"verified"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    verify = proj.loader.find_symbol("verify").rebased_addr
    buf_addr = 0x500000
    key = claripy.BVS("key", 8 * 8)
    state = proj.factory.call_state(verify, buf_addr, 8, ret_addr=0xdead0000,
                                    add_options={angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY})
    state.memory.store(buf_addr, key)
    for b in key.chop(8):
        state.solver.add(b >= 0x21, b <= 0x7e)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: s.addr == 0xdead0000 and s.solver.satisfiable(extra_constraints=[s.regs.eax == 1]))
    s = simgr.found[0]
    s.add_constraints(s.regs.eax == 1)
    return {"args": [s.solver.eval(key, cast_to=bytes)]}
