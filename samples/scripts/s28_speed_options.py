"""The options angr's "Optimization considerations" page and many CTF scripts add for speed:
``unicorn`` for concrete code, ``LAZY_SOLVES``, and ``AVOID_MULTIVALUED_READS`` (angr-ram resolves
symbolic addresses itself and says in one line that it does not honour that one)."""
import angr
import claripy

PROGRAM = "sc_argkey_O2"
EXPECT = b"Access granted"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    arg = claripy.BVS("arg", 8 * 8)
    extra = angr.options.unicorn | {angr.options.LAZY_SOLVES, angr.options.AVOID_MULTIVALUED_READS}
    state = proj.factory.entry_state(args=[binary, arg], add_options=extra)
    for b in arg.chop(8):
        state.solver.add(b >= 0x21, b <= 0x7e)
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"Access granted" in s.posix.dumps(1))
    assert simgr.found, simgr
    return {"args": [simgr.found[0].solver.eval(arg, cast_to=bytes)]}
