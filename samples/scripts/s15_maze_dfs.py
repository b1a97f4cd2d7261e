"""A maze of moves from stdin under the ``DFS`` exploration technique, ``explore(find=)`` by
output, moves constrained to ``wasd``."""
import angr
import claripy

PROGRAM = "sc_maze_O0"
EXPECT = b"solved"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    moves = claripy.BVS("moves", 8 * 16)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=moves, size=16, has_end=True))
    for b in moves.chop(8):
        state.solver.add(claripy.Or(*(b == ord(c) for c in "wasd")))
    simgr = proj.factory.simulation_manager(state)
    simgr.use_technique(angr.exploration_techniques.DFS())
    attach(simgr)
    simgr.explore(find=lambda s: b"solved" in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(moves, cast_to=bytes)}
