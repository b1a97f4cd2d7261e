"""scanf replaced by the script's own SimProcedure that stores symbolic integers (the classic
angr_ctf pattern: ``hook_symbol`` with a class, ``state.globals`` to keep the variables)."""
import angr
import claripy

PROGRAM = "sc_scanhook_O0"
EXPECT = b"Good Job."


class ReplacementScanf(angr.SimProcedure):
    def run(self, fmt, a, b, c):
        vals = [claripy.BVS(f"v{i}", 32) for i in range(3)]
        for ptr, v in zip((a, b, c), vals, strict=True):
            self.state.memory.store(ptr, v, endness=self.arch.memory_endness)
        self.state.globals["vals"] = vals
        return 3


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    proj.hook_symbol("__isoc99_scanf", ReplacementScanf())
    state = proj.factory.entry_state()
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"Good Job." in s.posix.dumps(1), avoid=lambda s: b"Try again." in s.posix.dumps(1))
    found = simgr.found[0]
    nums = [found.solver.eval(v) for v in found.globals["vals"]]
    return {"stdin": " ".join(map(str, nums)).encode() + b"\n"}
