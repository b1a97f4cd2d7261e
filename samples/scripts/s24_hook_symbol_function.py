"""Program functions replaced by the script's own SimProcedures (``hook_symbol`` on
``complex_function``, writing the transformed bytes itself, and on ``check_equals``, returning a
symbolic comparison), explore by output."""
import angr
import claripy

PROGRAM = "sc_hookcheck_O0"
EXPECT = b"Good Job."


class Transform(angr.SimProcedure):
    def run(self, s):
        for i in range(12):
            c = self.state.memory.load(s + i, 1)
            v = (c.zero_extend(8) * 3 + 7 * i) % 26
            self.state.memory.store(s + i, (v + ord("A"))[7:0])


class CheckEquals(angr.SimProcedure):
    def run(self, s, n):
        content = self.state.memory.load(s, 12)
        return claripy.If(content == b"LKJHGFDSAPOI", claripy.BVV(1, 32), claripy.BVV(0, 32))


def solve(binary, attach):
    proj = angr.Project(binary, auto_load_libs=False)
    proj.hook_symbol("complex_function", Transform())
    proj.hook_symbol("check_equals", CheckEquals())
    stdin = claripy.BVS("stdin", 8 * 12)
    state = proj.factory.entry_state(stdin=angr.SimFileStream(name="stdin", content=stdin, size=12, has_end=True))
    for b in stdin.chop(8):
        state.solver.add(b >= ord("A"), b <= ord("Z"))
    simgr = proj.factory.simulation_manager(state)
    attach(simgr)
    simgr.explore(find=lambda s: b"Good Job." in s.posix.dumps(1), avoid=lambda s: b"Try again." in s.posix.dumps(1))
    return {"stdin": simgr.found[0].solver.eval(stdin, cast_to=bytes) + b"\n"}
