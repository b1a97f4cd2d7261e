"""full_init_state, angr's default stdin, explore(find=, avoid=) by what the program printed
(angr's documentation: "Core concepts", "Simulation managers")."""
import angr

PROGRAM = "sc_linecheck_O0"
EXPECT = b"Correct!"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    state = proj.factory.full_init_state()
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"Correct" in s.posix.dumps(1), avoid=lambda s: b"Wrong" in s.posix.dumps(1))
    return {"stdin": simgr.found[0].posix.dumps(0).split(b"\n")[0] + b"\n"}
