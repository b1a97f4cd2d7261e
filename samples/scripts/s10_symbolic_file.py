"""A symbolic file in the state's file system (``angr.SimFile`` in ``fs={...}``), its name given
as argv[1], bytes constrained printable."""
import angr
import claripy

PROGRAM = "sc_fileauth_O0"
EXPECT = b"key accepted"


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    key = claripy.BVS("key", 8 * 6)
    simfile = angr.SimFile("key.txt", content=key, size=6)
    state = proj.factory.entry_state(args=[binary, "key.txt"], fs={"key.txt": simfile})
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"key accepted" in s.posix.dumps(1),
                  avoid=lambda s: b"bad key" in s.posix.dumps(1) or b"short" in s.posix.dumps(1))
    return {"args": [b"key.txt"], "files": {"key.txt": simgr.found[0].solver.eval(key, cast_to=bytes)}}
