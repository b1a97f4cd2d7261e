"""The crackme of angr's exploration example: ``explore(find=...)`` on what the program printed,
the answer read back with ``posix.dumps(0)`` (a word read with scanf, -O2)."""
import angr

PROGRAM = "sc_congrats_O2"
EXPECT = b"Congrats!"


def solve(binary, attach):
    proj = angr.Project(binary)
    simgr = proj.factory.simulation_manager(proj.factory.entry_state())
    attach(simgr)
    simgr.explore(find=lambda s: b"Congrats" in s.posix.dumps(1))
    assert simgr.found, simgr
    return {"stdin": simgr.found[0].posix.dumps(0)}
